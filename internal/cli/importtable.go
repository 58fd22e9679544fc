package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/importtable"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/scratch"
)

// runImport restores tables of a physical backup into the running server
// the connection flags name (restore --table ... --apply-to).
func runImport(cmd *cobra.Command, g *globals, d *datadirFlags, l *logicalRestoreFlags, args []string, as string) error {
	if d.target != "" || d.prepare {
		return usagef("--table with --apply-to imports into the running server that --host/--socket name: it takes no --target-dir or --prepare")
	}
	if f := firstChanged(cmd.Flags(), l.onlyLogical()); f != "" && f != "table" && f != "database" && f != "no-binlog" && f != "json" && !slices.Contains(connFlagNames, f) {
		return usagef("--%s does not go with --table/--database --apply-to, which imports tables of a physical backup", f)
	}
	if as != "" && len(l.databases) > 0 {
		return usagef("--as names one table: it does not go with --database")
	}
	tables, err := importTables(l.tables, as)
	if err != nil {
		return err
	}
	conn, err := l.conn.resolve(cmd.Flags())
	if err != nil {
		return err
	}
	r, m, ctx, release, err := g.resolveLocked(cmd.Context(), args, archive.KindPhysical, repo.OpRestore)
	if err != nil {
		return err
	}
	defer release()
	if m.Kind == archive.KindLogical {
		return usagef("backup %s is logical: restore its tables with --table alone (it loads into the server the connection flags name)", m.ID)
	}
	if err := r.CheckReadable(ctx, m); err != nil {
		return err
	}
	fileKey, err := physical.UserFileKey(d.serverDefaults)
	if err != nil {
		return err
	}
	work, err := scratch.Dir()
	if err != nil {
		return err
	}
	job, err := d.job(g, cmd.Flags())
	if err != nil {
		return err
	}
	t := g.tracker("restore "+strings.Join(append(slices.Clone(l.tables), l.databases...), ", ")+" of "+m.ID, m.Stats.StoredBytes)
	t.SetBackup(m.ID)
	job.Progress, job.FileKey = t, fileKey
	imported, err := importtable.Run(ctx, importtable.Job{
		Repo: r, Backup: m, Tables: tables, Databases: l.databases, Conn: conn, WorkDir: work, ServerDefaults: d.serverDefaults, Restore: job.Options, NoBinlog: l.noBinlog,
	})
	t.Finish(err)
	if l.asJSON && err == nil {
		type table struct {
			Table       string   `json:"table"` // in the backup
			As          string   `json:"as"`    // on the target
			Checksum    int64    `json:"checksum"`
			Triggers    []string `json:"triggers,omitempty"`
			Skipped     []string `json:"triggers_not_created,omitempty"`
			ForeignKeys []string `json:"foreign_keys_not_created,omitempty"`
		}
		out := struct {
			Backup string  `json:"backup"`
			Target string  `json:"target"`
			Tables []table `json:"tables"`
		}{Backup: m.ID, Target: conn.String()}
		for _, i := range imported {
			out.Tables = append(out.Tables, table{i.Table.String(), i.Table.As(), i.Checksum, i.Triggers, i.Skipped, i.ForeignKeys})
		}
		return printJSON(g.stdout, out)
	}
	for _, i := range imported {
		fmt.Fprintf(g.stdout, "table %s of backup %s imported as %s into %s: CHECKSUM TABLE %d, equal to the backup's\n", i.Table, m.ID, i.Table.As(), conn, i.Checksum)
		if len(i.Triggers) > 0 {
			fmt.Fprintf(g.stdout, "  with its triggers %s\n", strings.Join(i.Triggers, ", "))
		}
		if len(i.ForeignKeys) > 0 {
			fmt.Fprintf(g.stdout, "  its foreign keys %s were not created: under another name their constraint names would clash with the original's, and they would bind the copy to the original's parent tables\n", strings.Join(i.ForeignKeys, ", "))
		}
		if len(i.Skipped) > 0 {
			fmt.Fprintf(g.stdout, "  its triggers %s were not created: under another name they would clash with the original's; create them by hand from the backup's definitions (restore --target-dir)\n", strings.Join(i.Skipped, ", "))
		}
	}
	return refused(err)
}

// importTables reads --table (db.table, one or more) and --as (db.table,
// for one table only).
func importTables(names []string, as string) ([]importtable.Table, error) {
	if as != "" && len(names) != 1 {
		return nil, usagef("--as names one table: give one --table with it")
	}
	var out []importtable.Table
	for _, n := range names {
		db, name, ok := strings.Cut(n, ".")
		if !ok || db == "" || name == "" {
			return nil, usagef("table %q: give it as database.table", n)
		}
		t := importtable.Table{DB: db, Name: name, AsDB: db, AsName: name}
		if as != "" {
			if t.AsDB, t.AsName, ok = strings.Cut(as, "."); !ok || t.AsDB == "" || t.AsName == "" {
				return nil, usagef("--as %q: give it as database.table", as)
			}
		}
		for _, o := range out {
			if o.As() == t.As() {
				return nil, usagef("table %s is named twice", t.As())
			}
		}
		out = append(out, t)
	}
	return out, nil
}

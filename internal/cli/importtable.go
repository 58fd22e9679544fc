package cli

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/importtable"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restorecase"
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
	req, err := importRequest(cmd, g, d, l, m)
	if err != nil {
		return err
	}
	req.Repo, req.Tables, req.Conn = r, tables, conn
	res, err := restorecase.ImportTables(ctx, req)
	if l.asJSON && err == nil {
		return printJSON(g.stdout, res.JSON())
	}
	if res != nil {
		res.WriteText(g.stdout)
	}
	return refused(err)
}

// importRequest is the request of an import of tables of m, but for the
// repository, the tables and the target.
func importRequest(cmd *cobra.Command, g *globals, d *datadirFlags, l *logicalRestoreFlags, m *archive.Manifest) (restorecase.ImportRequest, error) {
	var req restorecase.ImportRequest
	job, err := d.job(g, cmd.Flags()) // with the key file's password
	if err != nil {
		return req, err
	}
	req.Job = importtable.Job{Backup: m, Databases: l.databases, ServerDefaults: d.serverDefaults, Restore: job.Options, NoBinlog: l.noBinlog}
	title := "restore " + strings.Join(append(slices.Clone(l.tables), l.databases...), ", ") + " of " + m.ID
	req.Progress = func() *progress.Tracker { return g.tracker(title, m.Stats.StoredBytes) }
	return req, nil
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

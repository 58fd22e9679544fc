package restorecase

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical"
)

// The results as restore prints them: each has a JSON form (what --json
// prints, marshalled) and writes its text (WriteText).

// DatadirJSON is the JSON form of a physical backup restored into a
// directory.
type DatadirJSON struct {
	Backup    string   `json:"backup"`
	Chain     []string `json:"chain"` // the links written, base first
	Target    string   `json:"target"`
	Prepared  bool     `json:"prepared"`
	ReadBytes int64    `json:"read_bytes"` // stored bytes read from the repository
	Seconds   float64  `json:"seconds"`
}

// JSON is r's JSON form.
func (r *DatadirResult) JSON() DatadirJSON {
	return DatadirJSON{Backup: r.Backup.ID, Chain: r.Chain, Target: r.Target, Prepared: r.Prepared, ReadBytes: r.ReadBytes, Seconds: r.Elapsed.Seconds()}
}

// WriteText says where the backup was restored and whether a server can
// start on it.
func (r *DatadirResult) WriteText(w io.Writer) {
	state := "restored (not prepared: run with --prepare, or mariabackup --prepare, before starting a server)"
	if r.Prepared {
		state = "restored and prepared: a server can start on it"
	}
	fmt.Fprintf(w, "backup %s %s: %s\n", r.Backup.ID, state, r.Target)
	if gp := r.Backup.Positions.Galera; gp != nil && r.Prepared {
		fmt.Fprintf(w, "Galera: its grastate.dat holds %s: a node started on it joins its cluster by IST while a donor's gcache still holds the write sets after it (else by a snapshot), or bootstraps a new cluster with --wsrep-new-cluster\n", gp)
	}
}

// InPlaceJSON is the JSON form of a physical backup restored into place:
// the restore, then what was moved aside and the server started. Once the
// restore is done it is printed also when what follows failed, with the
// error.
type InPlaceJSON struct {
	DatadirJSON // target is the datadir
	Placed
	Error string `json:"error,omitempty"`
}

// JSON is r's JSON form, with err, the error of the swap or the start.
func (r *InPlaceResult) JSON(err error) InPlaceJSON {
	out := InPlaceJSON{DatadirJSON: r.DatadirResult.JSON(), Placed: r.Placed}
	if err != nil {
		out.Error = err.Error()
	}
	return out
}

// PointInTimeJSON is the JSON form of a point-in-time restore.
type PointInTimeJSON struct {
	Backup   string   `json:"backup"`
	Binlogs  []string `json:"binlogs"`
	Replayed string   `json:"replayed"` // the position replay stopped at, as asked
	// Workers of the server's parallel applier that replayed; 0 for
	// mariadb-binlog | mariadb.
	Workers int     `json:"replay_workers"`
	Target  string  `json:"target"`
	Seconds float64 `json:"seconds"`
}

// JSON is r's JSON form.
func (r *PointInTimeResult) JSON() PointInTimeJSON {
	return PointInTimeJSON{r.Backup.ID, r.Binlogs, r.Replayed, r.Workers, r.Target, r.Elapsed.Seconds()}
}

// WriteText says what was restored and replayed.
func (r *PointInTimeResult) WriteText(w io.Writer) {
	how := "mariadb-binlog | mariadb"
	if r.Workers > 0 {
		how = fmt.Sprintf("the server's parallel applier, %d workers", r.Workers)
	}
	fmt.Fprintf(w, "restored backup %s and replayed %s up to %s (through %s): %s is ready\n", r.Backup.ID, strings.Join(r.Binlogs, ", "), r.Replayed, how, r.Target)
}

// ApplyJSON is the JSON form of a replay onto a running server.
type ApplyJSON struct {
	Server  string   `json:"server"` // whose binary logs, hostname-server_id
	Target  string   `json:"target"` // the server applied onto
	Binlogs []string `json:"binlogs"`
	From    string   `json:"from"` // the target's GTID position before and after
	To      string   `json:"to"`
}

// JSON is r's JSON form.
func (r *ApplyResult) JSON() ApplyJSON {
	return ApplyJSON{r.Server, r.Conn.String(), r.Binlogs, r.From.String(), r.To.String()}
}

// WriteText says what was applied, or that nothing was.
func (r *ApplyResult) WriteText(w io.Writer) {
	if r.Nothing() {
		fmt.Fprintf(w, "%s is at GTID %s: nothing of %s to apply up to %s\n", r.Conn, r.From, r.Server, r.Target)
		return
	}
	fmt.Fprintf(w, "applied %s of %s onto %s: GTID %s to %s (up to %s)\n", strings.Join(r.Binlogs, ", "), r.Server, r.Conn, r.From, r.To, r.Target)
}

// ImportJSON is the JSON form of tables imported into a running server.
type ImportJSON struct {
	Backup string              `json:"backup"`
	Target string              `json:"target"`
	Tables []ImportedTableJSON `json:"tables"`
}

// ImportedTableJSON is one table of ImportJSON.
type ImportedTableJSON struct {
	Table       string   `json:"table"` // in the backup
	As          string   `json:"as"`    // on the target
	Checksum    int64    `json:"checksum"`
	Triggers    []string `json:"triggers,omitempty"`
	Skipped     []string `json:"triggers_not_created,omitempty"`
	ForeignKeys []string `json:"foreign_keys_not_created,omitempty"`
}

// JSON is r's JSON form.
func (r *ImportResult) JSON() ImportJSON {
	out := ImportJSON{Backup: r.Backup.ID, Target: r.Conn.String()}
	for _, i := range r.Imported {
		out.Tables = append(out.Tables, ImportedTableJSON{i.Table.String(), i.Table.As(), i.Checksum, i.Triggers, i.Skipped, i.ForeignKeys})
	}
	return out
}

// WriteText writes the tables imported (also those before a failure).
func (r *ImportResult) WriteText(w io.Writer) {
	for _, i := range r.Imported {
		fmt.Fprintf(w, "table %s of backup %s imported as %s into %s: CHECKSUM TABLE %d, equal to the backup's\n", i.Table, r.Backup.ID, i.Table.As(), r.Conn, i.Checksum)
		if len(i.Triggers) > 0 {
			fmt.Fprintf(w, "  with its triggers %s\n", strings.Join(i.Triggers, ", "))
		}
		if len(i.ForeignKeys) > 0 {
			fmt.Fprintf(w, "  its foreign keys %s were not created: under another name their constraint names would clash with the original's, and they would bind the copy to the original's parent tables\n", strings.Join(i.ForeignKeys, ", "))
		}
		if len(i.Skipped) > 0 {
			fmt.Fprintf(w, "  its triggers %s were not created: under another name they would clash with the original's; create them by hand from the backup's definitions (restore --target-dir)\n", strings.Join(i.Skipped, ", "))
		}
	}
}

// LoadJSON is the JSON form of a logical backup loaded.
type LoadJSON struct {
	Backup       string         `json:"backup"`
	Target       logical.Target `json:"target"`
	Tables       int            `json:"tables"`
	DataFiles    int            `json:"data_files"`
	LoadedBefore int            `json:"data_files_loaded_before"`
	Rows         int64          `json:"rows"`
	LoadDetails
	MaskedInBackup []string `json:"masked_in_backup"`        // by the dump, under the backup's names
	GTIDPosition   string   `json:"gtid_position,omitempty"` // the backup's, for restore --until --apply-to
}

// LoadDetails are the lists of what a load did, in the JSON forms of
// restore and of copy alike.
type LoadDetails struct {
	CreatedAccounts  []string `json:"created_accounts"`
	ReplacedAccounts []string `json:"replaced_accounts"`
	KeptAccounts     []string `json:"kept_accounts"`
	Passwordless     []string `json:"passwordless_accounts"`
	LeftOut          []string `json:"left_out"`
	ReloadedTables   []string `json:"reloaded_tables"`
	DefinitionOnly   []string `json:"definition_only"`
	HistoryLeftOut   []string `json:"history_left_out"`
	Masked           []string `json:"masked"` // by this load, as db.table.column=function
}

// DetailsOf is the LoadDetails of a load (lists empty, not null).
func DetailsOf(res *logical.LoadResult) LoadDetails {
	return LoadDetails{
		CreatedAccounts: orEmpty(res.CreatedAccounts), ReplacedAccounts: orEmpty(res.ReplacedAccounts),
		KeptAccounts: orEmpty(res.KeptAccounts), Passwordless: orEmpty(res.Passwordless), LeftOut: orEmpty(res.LeftOut),
		ReloadedTables: orEmpty(res.Reloaded), DefinitionOnly: orEmpty(res.DefinitionOnly), HistoryLeftOut: orEmpty(res.HistoryLeftOut),
		Masked: orEmpty(res.Masked),
	}
}

// JSON is r's JSON form.
func (r *LoadResult) JSON() LoadJSON {
	m := r.Backup
	return LoadJSON{
		Backup: m.ID, Target: r.Target, Tables: r.Tables, DataFiles: r.Chunks, LoadedBefore: r.Skipped, Rows: r.Rows,
		LoadDetails: DetailsOf(&r.LoadResult), MaskedInBackup: orEmpty(archive.MaskedColumns(m.Databases)), GTIDPosition: m.Positions.GTID,
	}
}

// WriteText writes what the load did: its counts, the backup's GTID
// position, what was masked, then WriteLoaded's lines.
func (r *LoadResult) WriteText(w io.Writer) {
	m := r.Backup
	fmt.Fprintf(w, "backup %s loaded: %d tables, %d data files, %d rows", m.ID, r.Tables, r.Chunks, r.Rows)
	if r.Skipped > 0 {
		fmt.Fprintf(w, " (%d data files were loaded before)", r.Skipped)
	}
	fmt.Fprintln(w)
	if m.Positions.GTID != "" {
		// What restore --until --apply-to needs to start from; a load
		// sets no replication position by itself.
		fmt.Fprintf(w, "GTID position of the backup: %s (before restore --until ... --apply-to onto this server: SET GLOBAL gtid_slave_pos = '%s')\n", m.Positions.GTID, m.Positions.GTID)
	}
	if cols := archive.MaskedColumns(m.Databases); len(cols) > 0 {
		fmt.Fprintf(w, "masked in the backup: %s\n", strings.Join(cols, ", "))
	}
	WriteLoaded(w, &r.LoadResult, r.Users, "restore", "restores")
}

// WriteLoaded writes, after a load's first line, what else it did: tables
// reloaded, kept, dropped, made without rows or history, the accounts
// (users says whether they were asked for), and what it left out. what
// names the command, does what it does ("restore", "restores").
func WriteLoaded(w io.Writer, res *logical.LoadResult, users bool, what, does string) {
	for _, s := range slices.Concat(res.Reloaded, res.Kept, res.Dropped, res.DefinitionOnly, res.HistoryLeftOut) {
		fmt.Fprintln(w, s)
	}
	if len(res.Masked) > 0 {
		fmt.Fprintf(w, "masked as loaded: %s\n", strings.Join(res.Masked, ", "))
	}
	if !users {
		fmt.Fprintln(w, "accounts: none created or changed (--users "+does+" them)")
	}
	if len(res.CreatedAccounts) > 0 {
		fmt.Fprintf(w, "accounts created: %s\n", strings.Join(res.CreatedAccounts, ", "))
	}
	if len(res.ReplacedAccounts) > 0 {
		fmt.Fprintf(w, "accounts replaced: %s\n", strings.Join(res.ReplacedAccounts, ", "))
	}
	if len(res.KeptAccounts) > 0 {
		fmt.Fprintf(w, "accounts already on the target, kept as they were (--replace-users replaces them): %s\n", strings.Join(res.KeptAccounts, ", "))
	}
	if len(res.LeftOut) > 0 {
		fmt.Fprintf(w, "left out %d objects and grants that refer to what this %s does not load:\n", len(res.LeftOut), what)
		for _, s := range res.LeftOut {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
}

// WarnPasswordless warns of accounts a load made that log in without a
// password.
func WarnPasswordless(w io.Writer, res *logical.LoadResult) {
	for _, a := range res.Passwordless {
		fmt.Fprintf(w, "warning: account %s has no password: anyone who reaches the server can log in as it\n", a)
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Print prints r, but for a restore into place (InPlace, whose text
// names the caller's options): with asJSON its JSON form through
// printJSON, else its text on stdout; a load warns on stderr of the
// accounts it made without a password. It returns what the restore ends
// with: err, the restore's (the tables imported are said also when a
// later one failed, in text only), or the error printing.
func (r *Result) Print(stdout, stderr io.Writer, asJSON bool, printJSON func(io.Writer, any) error, err error) error {
	var form any
	var text func(io.Writer)
	switch {
	case r.Import != nil:
		if asJSON && err == nil {
			return printJSON(stdout, r.Import.JSON())
		}
		r.Import.WriteText(stdout)
		return err
	case r.Load != nil:
		WarnPasswordless(stderr, &r.Load.LoadResult)
		form, text = r.Load.JSON(), r.Load.WriteText
	case r.Datadir != nil:
		form, text = r.Datadir.JSON(), r.Datadir.WriteText
	case r.PointInTime != nil:
		form, text = r.PointInTime.JSON(), r.PointInTime.WriteText
	case r.Apply != nil:
		form, text = r.Apply.JSON(), r.Apply.WriteText
	default:
		return err
	}
	if asJSON {
		return printJSON(stdout, form)
	}
	text(stdout)
	return nil
}

// Package restoretest proves that a backup restores: it restores the backup
// into a throwaway sandbox server, starts it, runs CHECK TABLE on every
// table, compares the row counts and row sums the backup recorded, and
// removes the sandbox.
//
// Checksums prove that the stored bytes are the bytes written; a restore
// test proves that the bytes written were a database: it catches what a
// writer bug, a bad prepare or a version mismatch would make, which no
// checksum can.
//
// It composes restore, pitr (for a point-in-time restore test) and
// restoredserver (the server on the restored datadir). Prove is the use
// case verify --restore-test runs: the test with its progress, its
// verdict recorded in the repository; the Report writes itself as text
// and marshals as JSON. It knows nothing of flags or exit codes.
package restoretest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/pitr"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/restoredserver"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/toolpath"
	"github.com/backstream/backstream/internal/verify"
)

// Job is one restore test.
type Job struct {
	Repo *repo.Repo
	// Backup is the backup to test. With Until set it is ignored: the
	// point-in-time restore chooses its backup.
	Backup *archive.Manifest
	Until  *pitr.Target
	// WorkDir is where the sandbox's directory is made; "" means the
	// system's temporary directory. It needs room for the restored data.
	WorkDir   string
	UseMemory string // --use-memory for prepare, and the sandbox's buffer pool
	// ServerDefaults is an option file whose server groups the sandbox of
	// a physical backup reads after the options the backup recorded
	// (restoredserver.ServerOptions); "" for none.
	ServerDefaults string
	// FileKey is the password of the encryption plugin's key file, for a
	// backup that withheld it (restore.Options.FileKey).
	FileKey     string
	Mariabackup string
	// MariadbPath is searched before PATH for the tools and the server
	// of the backup's version (restore.Options.MariadbPath).
	MariadbPath toolpath.Path
	Workers     int             // decoding threads, loading connections and CHECK TABLE connections
	Memory      *archive.Memory // the budget of what reading the backup holds at once (nil: archive.DefaultMemory)
	Keep        bool            // leave the sandbox's directory for a look after the test
	Log         io.Writer
	Progress    *progress.Tracker
}

// Table is one table's result.
type Table struct {
	Name string `json:"table"` // database.table
	// Check is what CHECK TABLE said: "OK", or its messages.
	Check string `json:"check"`
	// Error says why the table could not be checked or read back.
	Error string `json:"error,omitempty"`
	// Rows and RowSum are read back from the restored table when the
	// backup recorded them (logical backups); Expected* are the recorded
	// values.
	Rows           *int64 `json:"rows,omitempty"`
	ExpectedRows   *int64 `json:"expected_rows,omitempty"`
	RowSum         string `json:"row_sum,omitempty"`
	ExpectedRowSum string `json:"expected_row_sum,omitempty"`
	Passed         bool   `json:"passed"`
}

// Report is the outcome of a restore test.
type Report struct {
	Backup  string   `json:"backup"`
	Kind    string   `json:"kind"`
	Chain   []string `json:"chain,omitempty"` // the backups below Backup, base first
	Until   string   `json:"until,omitempty"`
	Binlogs []string `json:"binlogs,omitempty"` // replayed for Until
	Passed  bool     `json:"passed"`
	// Server is the version of the server the test ran on: for a
	// physical backup the backup's own (restoredserver.FindServer).
	Server string `json:"server,omitempty"`
	// Problems says in words what failed, each naming the table or the
	// step; empty when Passed.
	Problems []string `json:"problems,omitempty"`
	Tables   []Table  `json:"tables"`
	Seconds  float64  `json:"seconds"`
	// Dir is the sandbox's directory when Job.Keep left it.
	Dir string `json:"dir,omitempty"`
}

func (r *Report) fail(format string, a ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, a...))
}

// Run runs the test. A backup that does not restore, a server that does
// not start on it, a table that fails its check or does not hold what was
// recorded make a Report that did not pass; the error is for what kept the
// test from running at all (no sandbox binaries, no room for a work
// directory, a repository that cannot be read).
func Run(ctx context.Context, job Job) (*Report, error) {
	start := time.Now()
	if job.Until == nil {
		// Damaged metadata is damage whatever the restore would do.
		if err := verify.Meta(ctx, job.Repo, job.Backup); err != nil {
			return nil, err
		}
	}
	work, err := os.MkdirTemp(job.WorkDir, "backstream-restore-test-*")
	if err != nil {
		return nil, fmt.Errorf("restore test: work directory: %w", err)
	}
	rep := &Report{}
	if job.Keep {
		rep.Dir = work
	} else {
		defer os.RemoveAll(work)
	}
	if job.Until != nil {
		rep.Until = job.Until.String()
		err = runPhysical(ctx, job, work, rep)
	} else {
		rep.Backup, rep.Kind = job.Backup.ID, job.Backup.Kind
		switch job.Backup.Kind {
		case archive.KindPhysical:
			err = runPhysical(ctx, job, work, rep)
		case archive.KindLogical:
			err = runLogical(ctx, job, work, rep)
		default:
			err = fmt.Errorf("backup %s is a %s backup: only physical and logical backups restore", job.Backup.ID, job.Backup.Kind)
		}
	}
	if err != nil {
		if job.Keep {
			err = fmt.Errorf("%w (the work directory is kept: %s)", err, work)
		}
		return nil, err
	}
	rep.Passed = len(rep.Problems) == 0
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

func (job *Job) stage(name string) {
	if job.Progress != nil {
		job.Progress.Stage(name)
	}
}

// runPhysical restores the backup (its chain, or up to the point in time,
// from whichever base pitr.Run chooses: a logical one is loaded into a
// datadir made for it) with prepare, and starts a server on the result
// with the options the backup recorded: without its encryption plugin and
// key file, a good backup of an encrypted server would fail every
// encrypted table.
func runPhysical(ctx context.Context, job Job, work string, rep *Report) error {
	datadir := filepath.Join(work, "data")
	server, version, restored, err := restorePhysical(ctx, job, datadir, rep)
	if err != nil || !restored {
		return err
	}
	job.stage("starting a server on the restored datadir")
	mariadbd, err := restoredserver.FindServer(ctx, job.MariadbPath, version)
	if err != nil {
		return fmt.Errorf("restore test: %w", err)
	}
	srv, err := restoredserver.Start(ctx, restoredserver.Options{Dir: filepath.Join(work, "server"), Datadir: datadir, UseMemory: job.UseMemory, Server: mariadbd, Options: server})
	if err != nil {
		var refused *restoredserver.StartError
		if ctx.Err() != nil || !errors.As(err, &refused) || errors.Is(err, sandbox.ErrNotInstalled) {
			return fmt.Errorf("restore test: %w", err)
		}
		rep.fail("the server did not start on the restored datadir: %v", err)
		return nil
	}
	defer srv.Close()
	if rep.Server, err = srv.Version(ctx); err != nil {
		return fmt.Errorf("restore test: %w", err)
	}
	db, err := connect(ctx, srv, job.Workers)
	if err != nil {
		return err
	}
	defer db.Close()
	tables, err := serverTables(ctx, db)
	if err != nil {
		return err
	}
	rep.add(checkTables(ctx, job, db, tables, nil))
	db.Close()
	return serverStopped(ctx, srv, rep)
}

// restorePhysical restores what runPhysical tests into datadir and
// returns the options its server takes and the backup's server version.
// A restore that failed because of the backup fails the test (restored
// is false); err is for what kept it from running.
func restorePhysical(ctx context.Context, job Job, datadir string, rep *Report) (server []mariadb.Option, version string, restored bool, err error) {
	opt := restore.Options{Prepare: true, UseMemory: job.UseMemory, Mariabackup: job.Mariabackup, MariadbPath: job.MariadbPath, Workers: job.Workers, Memory: job.Memory, Log: job.Log,
		FileKey: job.FileKey, NoSync: true} // a scratch datadir, removed after the test
	if job.Progress != nil {
		opt.Progress = job.Progress
	}
	var restoreErr error
	if job.Until != nil {
		res, err := pitr.Run(ctx, job.Repo, *job.Until, restore.Job{TargetDir: datadir, Options: opt}, job.ServerDefaults)
		if res != nil {
			rep.Backup, rep.Kind, rep.Binlogs, server = res.Backup.ID, res.Backup.Kind, res.Binlogs, res.ServerOptions
			version = res.Backup.Server.Version
		}
		restoreErr = err
	} else {
		links, err := restore.Links(ctx, job.Repo, job.Backup)
		if err != nil {
			return nil, "", false, err
		}
		for _, l := range links[:len(links)-1] {
			rep.Chain = append(rep.Chain, l.Manifest.ID)
		}
		if server, err = restoredserver.ServerOptions(ctx, job.Repo, links, job.ServerDefaults, job.FileKey); err != nil {
			return nil, "", false, fmt.Errorf("restore test: %w", err)
		}
		restoreErr = restore.Datadir(ctx, restore.Job{Links: links, TargetDir: datadir, Options: opt})
		version = job.Backup.Server.Version
	}
	if restoreErr != nil {
		if !againstBackup(restoreErr) {
			return nil, "", false, fmt.Errorf("restore test: %w", restoreErr)
		}
		rep.fail("restore: %v", restoreErr)
		return nil, "", false, nil
	}
	return server, version, true, nil
}

// runLogical loads the backup into a fresh sandbox server.
func runLogical(ctx context.Context, job Job, work string, rep *Report) error {
	m := job.Backup
	data, err := job.Repo.ReadMeta(ctx, m, logical.CatalogName)
	if err != nil {
		return err
	}
	cat, err := logical.ParseCatalog(data)
	if err != nil {
		return archive.Corruptf("backup %s: %v", m.ID, err)
	}
	job.stage("starting a sandbox server")
	srv, err := sandbox.Start(ctx, sandbox.Options{Dir: filepath.Join(work, "server"), NoBinlog: true, BufferPool: job.UseMemory})
	if err != nil {
		return fmt.Errorf("restore test: %w", err)
	}
	defer srv.Close()
	_, err = logical.Load(ctx, logical.LoadJob{
		Conn:  sandboxConfig(srv),
		Input: job.Repo.Input(m), Manifest: m, Catalog: cat, Parallel: max(job.Workers, 1), NoBinlog: true, Progress: job.Progress, Memory: job.Memory,
		// A throwaway server: its accounts harm nothing, and loading them tests them.
		Users: true,
	})
	if err != nil {
		if !againstBackup(err) {
			return fmt.Errorf("restore test: %w", err)
		}
		rep.fail("load: %v", err)
		return nil
	}
	db, err := connect(ctx, srv, job.Workers)
	if err != nil {
		return err
	}
	defer db.Close()
	checked := checkTables(ctx, job, db, catalogTables(cat), compareRecorded(cat))
	rep.add(checked)
	db.Close()
	return serverStopped(ctx, srv, rep)
}

// catalogTables lists the tables a logical backup's catalog defines,
// less sequences.
func catalogTables(cat *logical.Catalog) []tableRef {
	var tables []tableRef
	for _, d := range cat.Schema.Databases {
		for _, t := range d.Tables {
			if !t.Sequence {
				tables = append(tables, tableRef{db: d.Name, t: t})
			}
		}
	}
	return tables
}

// compareRecorded reads back the rows and row sum of each table whose
// backup recorded them.
func compareRecorded(cat *logical.Catalog) compare {
	recorded := map[string]logical.TableData{}
	for _, t := range cat.Tables {
		recorded[t.Database+"."+t.Table] = t
	}
	return func(ctx context.Context, c *sql.Conn, ref tableRef, res *Table) error {
		td, ok := recorded[ref.name()]
		if !ok {
			td = logical.TableData{Database: ref.db, Table: ref.t.Name} // no data files: no rows
		}
		wantRows, wantSum, recordedSum := td.Sum()
		if !recordedSum || ref.t.RowsElsewhere() { // its rows are other tables' (and may be another server's)
			return nil
		}
		rows, sum, err := logical.SumTable(ctx, c, ref.db, ref.t, cat.DataFormat)
		if err != nil {
			return err
		}
		res.Rows, res.ExpectedRows = &rows, &wantRows
		res.RowSum, res.ExpectedRowSum = sum.String(), wantSum.String()
		return nil
	}
}

// againstBackup tells a restore or load that failed because of the backup
// (damaged data, a prepare that fails on its files, statements the server
// refuses) from one that could not run here (the repository unreachable,
// no room, a missing program): the first fails the test, the second ends
// it without a verdict.
func againstBackup(err error) bool {
	var prepare *physical.PrepareError
	var refused *mysql.MySQLError
	return archive.IsCorrupt(err) || errors.As(err, &prepare) || errors.As(err, &refused)
}

// tableRef names a table, with its definition when the backup has one.
type tableRef struct {
	db string
	t  *schema.Table
}

func (r tableRef) name() string { return r.db + "." + r.t.Name }

// sandboxConfig connects to the sandbox as root over its socket, the way
// backstream connects to any server (values as the server sends them).
func sandboxConfig(srv *sandbox.Server) mariadb.Config {
	return mariadb.Config{Socket: srv.Socket, User: "root", PasswordSet: true, Protocol: "socket"}
}

func connect(ctx context.Context, srv *sandbox.Server, workers int) (*sql.DB, error) {
	db, err := mariadb.Open(ctx, sandboxConfig(srv), "")
	if err != nil {
		return nil, fmt.Errorf("restore test: connect to the sandbox: %w", err)
	}
	db.SetMaxIdleConns(max(workers, 1))
	return db, nil
}

// serverTables lists every base table the server knows, system schemas
// (mysql included) too: a restored datadir must hold a working server.
func serverTables(ctx context.Context, db *sql.DB) ([]tableRef, error) {
	rows, err := db.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES
		WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') AND TABLE_SCHEMA NOT IN ('information_schema', 'performance_schema')
		ORDER BY TABLE_SCHEMA, TABLE_NAME`)
	if err != nil {
		return nil, fmt.Errorf("list the restored tables: %w", err)
	}
	defer rows.Close()
	var out []tableRef
	for rows.Next() {
		var r tableRef
		r.t = &schema.Table{}
		if err := rows.Scan(&r.db, &r.t.Name); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// compare reads what a table holds beyond CHECK TABLE's verdict.
type compare func(ctx context.Context, c *sql.Conn, ref tableRef, res *Table) error

// checkTables runs CHECK TABLE (and compare, if given) on every table over
// job.Workers connections.
func checkTables(ctx context.Context, job Job, db *sql.DB, tables []tableRef, cmp compare) []Table {
	job.stage(fmt.Sprintf("checking %d tables", len(tables)))
	results := make([]Table, len(tables))
	next := make(chan int, len(tables))
	for i := range tables {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range max(job.Workers, 1) {
		wg.Go(func() {
			// A connection that failed is dropped and the next table gets
			// a new one: if the server died, every later table says so.
			var c *sql.Conn
			defer func() {
				if c != nil {
					c.Close()
				}
			}()
			for i := range next {
				res := &results[i]
				res.Name = tables[i].name()
				var err error
				if c == nil {
					if c, err = db.Conn(ctx); err != nil {
						c, res.Error = nil, "not checked: "+err.Error()
						continue
					}
				}
				if res.Check, err = checkTable(ctx, c, tables[i]); err == nil && cmp != nil {
					err = cmp(ctx, c, tables[i], res)
				}
				if err != nil {
					res.Error = err.Error()
					c.Close()
					c = nil
				}
			}
		})
	}
	wg.Wait()
	return results
}

// checkTable runs CHECK TABLE and returns "OK" or the server's messages.
func checkTable(ctx context.Context, c *sql.Conn, ref tableRef) (string, error) {
	rows, err := c.QueryContext(ctx, "CHECK TABLE "+mariadb.QuoteIdent(ref.db)+"."+mariadb.QuoteIdent(ref.t.Name))
	if err != nil {
		return "", fmt.Errorf("CHECK TABLE failed: %w", err)
	}
	defer rows.Close()
	var msgs []string
	status := ""
	for rows.Next() {
		var table, op, typ, text sql.NullString
		if err := rows.Scan(&table, &op, &typ, &text); err != nil {
			return "", err
		}
		switch strings.ToLower(typ.String) {
		case "status":
			status = text.String
		case "note":
			// "The storage engine for the table doesn't support check"
		default:
			msgs = append(msgs, typ.String+": "+text.String)
		}
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("CHECK TABLE failed: %w", err)
	}
	if status != "" && !strings.EqualFold(status, "OK") {
		msgs = append(msgs, "status: "+status)
	}
	if len(msgs) == 0 {
		return "OK", nil
	}
	return strings.Join(msgs, "; "), nil
}

// add records the checked tables and names every failure.
func (r *Report) add(tables []Table) {
	for i := range tables {
		t := &tables[i]
		t.Passed = t.Check == "OK" && t.Error == ""
		switch {
		case t.Error != "":
			r.fail("%s: %s", t.Name, t.Error)
		case !t.Passed:
			r.fail("%s: CHECK TABLE: %s", t.Name, t.Check)
		}
		if t.Rows != nil && *t.Rows != *t.ExpectedRows {
			t.Passed = false
			r.fail("%s: %d rows, but the backup recorded %d", t.Name, *t.Rows, *t.ExpectedRows)
		} else if t.RowSum != t.ExpectedRowSum {
			t.Passed = false
			r.fail("%s: the rows differ from what the backup recorded (row sum %s, recorded %s)", t.Name, t.RowSum, t.ExpectedRowSum)
		}
	}
	r.Tables = append(r.Tables, tables...)
	slices.SortFunc(r.Tables, func(a, b Table) int { return strings.Compare(a.Name, b.Name) })
}

// serverStopped stops the sandbox and fails the test if the server went
// away by itself (a crash on a damaged page shows up here).
func serverStopped(ctx context.Context, srv *sandbox.Server, rep *Report) error {
	if err := srv.Stop(ctx); err != nil {
		if ctx.Err() != nil {
			return err
		}
		rep.fail("the server did not stop cleanly: %v", err)
	}
	return nil
}

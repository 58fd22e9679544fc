package logical

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/go-sql-driver/mysql"
	"golang.org/x/sync/errgroup"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/throttle"
)

// DefaultChunkBytes is the size a data file is cut at: big enough that
// one LOAD DATA amortises its round trip and commit, small enough that
// several files of one table load at once and a resumed load redoes little.
const DefaultChunkBytes = 16 << 20

// DumpJob is one logical backup.
type DumpJob struct {
	Conn       mariadb.Config
	Dest       archive.Destination
	Parallel   int // dump connections, and stream objects
	Codec      codec.Codec
	Hash       string
	Filter     schema.Filter
	Skip       schema.Skip
	BlockDDL   bool  // hold a metadata lock on every table for the whole dump
	ChunkBytes int64 // 0 means DefaultChunkBytes
	MaxRate    int64 // bytes of table data per second over all connections; 0 is no bound
	Progress   *progress.Tracker
	Version    string              // backstream's, for the manifest
	Encryption *archive.Encryption // recorded in the manifest when the destination encrypts

	// afterSnapshot, in tests, runs once every snapshot is open.
	afterSnapshot func(ctx context.Context) error
}

// Dump takes a consistent logical backup: every table is read in one
// snapshot, opened by all connections while commits are blocked, and the
// manifest is committed only after every data file is durable and no DDL
// changed a dumped table meanwhile. On failure nothing is committed and
// what was written is removed.
func Dump(ctx context.Context, job DumpJob) (*archive.Manifest, error) {
	started := time.Now().UTC()
	if job.Parallel < 1 {
		return nil, fmt.Errorf("parallel must be at least 1, got %d", job.Parallel)
	}
	if job.Hash == "" {
		job.Hash = archive.DefaultHash
	}
	if job.ChunkBytes <= 0 {
		job.ChunkBytes = DefaultChunkBytes
	}
	db, err := mariadb.Open(ctx, job.Conn, "")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(job.Parallel + 2)
	db.SetMaxIdleConns(job.Parallel + 2)
	server, err := mariadb.Inspect(ctx, db)
	if err != nil {
		return nil, err
	}
	if job.Progress != nil {
		job.Progress.Stage("reading the schema")
	}
	s, err := openSession(ctx, db, job)
	if err != nil {
		return nil, err
	}
	defer s.close()

	id := backupid.New(started)
	header := &archive.Manifest{
		Format: archive.FormatVersion, ID: id, Kind: archive.KindLogical, Started: started,
		Server: archive.Server{Version: server.Version, Hostname: server.Hostname, ServerID: server.ServerID},
		Tools:  archive.Tools{Backstream: job.Version},
		Codec:  job.Codec.String(), Hash: job.Hash, Encryption: job.Encryption,
	}
	for i := range job.Parallel {
		header.Streams = append(header.Streams, archive.Stream{Object: archive.Object{Name: archive.StreamName(i, job.Codec)}})
	}
	return archive.WriteTo(ctx, job.Dest, header, func() (*archive.Manifest, error) { return s.run(ctx, header) })
}

// session is one dump in progress: the coordinator connection, the
// workers' snapshot connections, and what they share.
type session struct {
	job     DumpJob
	coord   *sql.Conn
	workers []*sql.Conn
	catalog *schema.Catalog
	tables  []*tableWork
	sqlMode string
}

// setReadSession sets up a connection that reads rows the way data files
// hold them: exact bytes, times in UTC, no statement or write timeouts.
func setReadSession(ctx context.Context, c *sql.Conn) error {
	for _, q := range []string{
		"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
		"SET SESSION character_set_results = binary",
		"SET SESSION time_zone = '+00:00'",
		"SET SESSION max_statement_time = 0",
		"SET SESSION net_write_timeout = 3600",
	} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

func openSession(ctx context.Context, db *sql.DB, job DumpJob) (_ *session, err error) {
	s := &session{job: job}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.coord, err = db.Conn(ctx); err != nil {
		return nil, err
	}
	if err := s.coord.QueryRowContext(ctx, "SELECT @@GLOBAL.sql_mode").Scan(&s.sqlMode); err != nil {
		return nil, fmt.Errorf("read sql_mode: %w", err)
	}
	for range job.Parallel {
		c, err := db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		s.workers = append(s.workers, c)
		if err := setReadSession(ctx, c); err != nil {
			return nil, err
		}
	}
	// The catalog is read before the snapshot opens: any DDL from here to
	// the end of the dump shows as a difference when it is read again.
	if s.catalog, err = schema.Read(ctx, s.coord, job.Filter, job.Skip); err != nil {
		return nil, explainPrivileges(err)
	}
	if job.Progress != nil {
		for _, a := range s.catalog.IgnoredAccounts {
			job.Progress.Logf("account %s is in mysql.user but the server ignores it (skip-name-resolve, or an invalid entry): not in the backup", a)
		}
	}
	for _, d := range s.catalog.Databases {
		for _, t := range d.Tables {
			if !t.Sequence {
				s.tables = append(s.tables, newTableWork(d.Name, t))
			}
		}
	}
	// Biggest tables first: they bound the dump's and the load's length.
	slices.SortStableFunc(s.tables, func(a, b *tableWork) int { return int64Cmp(b.t.DataBytes, a.t.DataBytes) })
	return s, nil
}

func int64Cmp(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *session) close() {
	for _, c := range s.workers {
		c.Close()
	}
	if s.coord != nil {
		s.coord.Close()
	}
}

// explainPrivileges adds what a logical backup needs to an access error.
func explainPrivileges(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1044, 1045, 1142, 1143, 1227, 1370:
			return fmt.Errorf("%w (a logical backup needs SELECT, SHOW VIEW, TRIGGER, EVENT and, for the consistent snapshot, RELOAD; with users, SELECT on the mysql database)", err)
		}
	}
	return err
}

func (s *session) run(ctx context.Context, header *archive.Manifest) (*archive.Manifest, error) {
	job := s.job
	pos, err := s.openSnapshots(ctx)
	if err != nil {
		return nil, err
	}
	if job.afterSnapshot != nil {
		if err := job.afterSnapshot(ctx); err != nil {
			return nil, err
		}
	}
	if job.Progress != nil {
		var total int64
		for _, t := range s.tables {
			total += t.t.DataBytes
		}
		job.Progress.SetTotal(total)
		job.Progress.SetTables(int64(len(s.tables)))
		job.Progress.Stage("dumping")
	}
	w, err := archive.NewWriter(ctx, archive.WriterOptions{
		Output: job.Dest.Output(header.ID, job.Hash), Streams: job.Parallel,
		Codec: job.Codec, Hash: job.Hash, Counter: counterOf(job.Progress),
		// A table's files in one stream, other tables in the others: a load
		// then works on as many tables at once as there are streams. Loads
		// into one table do not run in parallel anyway when it has an
		// AUTO_INCREMENT column (LOAD DATA takes InnoDB's table-level
		// AUTO-INC lock under the default innodb_autoinc_lock_mode=1).
		Group: tableOfPath,
	})
	if err != nil {
		return nil, err
	}
	em := newEmitter(w)
	em.limit = throttle.NewLimiter(job.MaxRate)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return em.run(gctx) })
	sched := newScheduler(s.tables)
	g.Go(func() error {
		defer em.finish()
		if err := s.writeSchemaFiles(gctx, em); err != nil {
			return err
		}
		dg, dctx := errgroup.WithContext(gctx)
		for _, c := range s.workers {
			dg.Go(func() error { return dumpLoop(dctx, c, sched, em, job.ChunkBytes, job.Progress) })
		}
		return dg.Wait()
	})
	if err := g.Wait(); err != nil {
		w.Abort(err)
		return nil, err
	}
	// Also with --block-ddl: DDL between reading the catalog and taking
	// the metadata locks is not held off, only seen.
	if err := s.checkNoDDL(ctx); err != nil {
		w.Abort(err)
		return nil, err
	}
	for _, c := range s.workers {
		if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
			w.Abort(err)
			return nil, err
		}
	}
	written, err := w.Close()
	if err != nil {
		return nil, err
	}
	if job.Progress != nil {
		job.Progress.Stage("committing")
	}
	cat := &Catalog{Schema: s.catalog, SQLMode: s.sqlMode}
	for _, t := range s.tables {
		cat.Tables = append(cat.Tables, TableData{Database: t.db, Table: t.t.Name, Columns: t.columnNames(), Chunks: t.chunks})
	}
	data, err := json.Marshal(cat)
	if err != nil {
		return nil, err
	}
	o, err := job.Dest.PutMeta(ctx, header.ID, CatalogName, data, job.Hash)
	if err != nil {
		return nil, err
	}
	m := *header
	m.Positions = pos
	m.Meta = append(m.Meta, o)
	m.Databases = summarise(cat)
	m.Complete(written)
	if err := job.Dest.Commit(ctx, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// summarise counts tables, rows and bytes per database for the manifest,
// so that list can show them without reading the catalog.
func summarise(c *Catalog) []archive.DatabaseStats {
	byName := map[string]*archive.DatabaseStats{}
	var out []archive.DatabaseStats
	for _, d := range c.Schema.Databases {
		out = append(out, archive.DatabaseStats{Name: d.Name})
	}
	for i := range out {
		byName[out[i].Name] = &out[i]
	}
	for _, t := range c.Tables {
		d := byName[t.Database]
		if d == nil {
			continue
		}
		d.Tables++
		for _, ch := range t.Chunks {
			d.Rows += ch.Rows
			d.Bytes += ch.Bytes
		}
	}
	return out
}

func counterOf(t *progress.Tracker) archive.Counter {
	if t == nil {
		return nil
	}
	return t
}

// openSnapshots opens every worker's snapshot at one moment: commits are
// blocked (BACKUP STAGE BLOCK_COMMIT, or FLUSH TABLES WITH READ LOCK on a
// server without backup stages) only while the workers start their
// transactions and the binary log position is read.
func (s *session) openSnapshots(ctx context.Context) (archive.Positions, error) {
	var pos archive.Positions
	release, err := s.blockCommits(ctx)
	if err != nil {
		return pos, err
	}
	defer func() {
		if release != nil {
			release()
		}
	}()
	for i, c := range s.workers {
		if _, err := c.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
			return pos, fmt.Errorf("dump connection %d: start the snapshot: %w", i, err)
		}
	}
	if s.job.BlockDDL {
		// A table read in a transaction stays under a shared metadata lock
		// until the transaction ends: no DDL can change it meanwhile.
		for _, t := range s.tables {
			if _, err := s.workers[0].ExecContext(ctx, "SELECT 1 FROM "+t.from+" LIMIT 0"); err != nil {
				return pos, fmt.Errorf("lock %s: %w", t.name(), err)
			}
		}
	}
	rows, err := s.coord.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		return pos, err
	}
	if rows.Next() {
		cols, _ := rows.Columns()
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			rows.Close()
			return pos, err
		}
		pos.BinlogFile = string(vals[0])
		fmt.Sscan(string(vals[1]), &pos.BinlogPosition)
	}
	rows.Close()
	if err := s.coord.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_pos").Scan(&pos.GTID); err != nil {
		return pos, err
	}
	r := release
	release = nil
	return pos, r()
}

// blockCommits takes the server-wide lock that stops commits and returns
// what releases it.
func (s *session) blockCommits(ctx context.Context) (func() error, error) {
	unlock := func(q string) func() error {
		return func() error {
			_, err := s.coord.ExecContext(context.WithoutCancel(ctx), q)
			return err
		}
	}
	_, err := s.coord.ExecContext(ctx, "BACKUP STAGE START")
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1064 {
		// A server older than 10.4.1 has no backup stages.
		if _, err := s.coord.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
			return nil, explainPrivileges(fmt.Errorf("FLUSH TABLES WITH READ LOCK: %w", err))
		}
		return unlock("UNLOCK TABLES"), nil
	}
	if err != nil {
		return nil, explainPrivileges(fmt.Errorf("BACKUP STAGE START: %w", err))
	}
	if _, err := s.coord.ExecContext(ctx, "BACKUP STAGE BLOCK_COMMIT"); err != nil {
		unlock("BACKUP STAGE END")()
		return nil, explainPrivileges(fmt.Errorf("BACKUP STAGE BLOCK_COMMIT: %w", err))
	}
	return unlock("BACKUP STAGE END"), nil
}

// writeSchemaFiles puts each table's CREATE statement into the streams, so
// that a backup extracted with stock tools is a usable dump directory.
func (s *session) writeSchemaFiles(ctx context.Context, em *emitter) error {
	for _, d := range s.catalog.Databases {
		for _, t := range d.Tables {
			f := em.create(schemaPath(d.Name, t.Name))
			if err := f.write(ctx, []byte(t.Create+";\n")); err != nil {
				return err
			}
			if err := f.close(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

var autoIncrement = regexp.MustCompile(` AUTO_INCREMENT=\d+`)

// checkNoDDL reads the definitions of the dumped tables again: one that
// changed (or went) since the catalog was read was altered during the
// dump, and its data may not match the definition saved.
func (s *session) checkNoDDL(ctx context.Context) error {
	now, err := schema.Read(ctx, s.coord, s.job.Filter, schema.Skip{Views: true, Triggers: true, Routines: true, Events: true, Users: true})
	if err != nil {
		return err
	}
	after := map[string]string{}
	for _, d := range now.Databases {
		for _, t := range d.Tables {
			after[d.Name+"\x00"+t.Name] = autoIncrement.ReplaceAllString(t.Create, "")
		}
	}
	for _, t := range s.tables {
		def, ok := after[t.db+"\x00"+t.t.Name]
		switch {
		case !ok:
			return fmt.Errorf("table %s was dropped or renamed during the dump; run the backup again (or use --block-ddl)", t.name())
		case def != autoIncrement.ReplaceAllString(t.t.Create, ""):
			return fmt.Errorf("table %s was altered during the dump, so its data may not match its saved definition; run the backup again (or use --block-ddl)", t.name())
		}
	}
	return nil
}

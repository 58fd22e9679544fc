package logical

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"golang.org/x/sync/errgroup"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/mask"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/throttle"
)

// DefaultChunkBytes is the size a data file is cut at: big enough that
// one LOAD DATA amortises its round trip and commit, small enough that
// several files of one table load at once and a resumed load redoes little.
const DefaultChunkBytes = 16 << 20

// DumpOptions say what a dump reads and how: the server, the
// connections, the filters, the size data files are cut at and the rate.
// A backup (DumpJob) and a copy into another server (OpenDump) share them.
type DumpOptions struct {
	Conn     mariadb.Config
	Parallel int // dump connections
	Filter   schema.Filter
	Skip     schema.Skip
	BlockDDL bool // hold a metadata lock on every table for the whole dump
	// VersionedCurrentOnly dumps the current rows only of tables versioned
	// by transaction id, whose history a restore cannot take back; without
	// it such a table makes the dump refuse before it writes anything.
	VersionedCurrentOnly bool
	ChunkBytes           int64 // 0 means DefaultChunkBytes
	MaxRate              int64 // bytes of table data per second over all connections; 0 is no bound
	// Progress hears the bytes of data files made; which rows and tables
	// are done the Output says (a backup's when it wrote them, a load's
	// when it loaded them).
	Progress *progress.Tracker
	// Mask masks the columns its rules name as rows are dumped, so that
	// their values never reach the destination; nil masks nothing. A
	// rule that names no column dumped, or one that cannot hold what it
	// makes, fails the dump before it writes anything (a *mask.Error).
	Mask *mask.Rules

	// In tests: afterCatalog runs once the catalog is read, before any
	// lock; afterSnapshot once every snapshot is open.
	afterCatalog, afterSnapshot func(ctx context.Context) error
	// legacyText, in tests, writes DataFormatText data files, as
	// backups made before DataFormatNumeric existed.
	legacyText bool
}

// DumpJob is one logical backup: a dump into a repository's streams, one
// stream object per connection.
type DumpJob struct {
	DumpOptions
	Dest       archive.Destination
	Codec      codec.Codec
	Hash       string
	Memory     *archive.Memory     // bounds the backup data held at once; nil: the queues alone
	Version    string              // backstream's, for the manifest
	Encryption *archive.Encryption // recorded in the manifest when the destination encrypts
}

// Dump takes a consistent logical backup: every table is read in one
// snapshot, opened by all connections while commits are blocked, and the
// manifest is committed only after every data file is durable and no DDL
// changed a dumped table meanwhile. On failure nothing is committed and
// what was written is removed.
func Dump(ctx context.Context, job DumpJob) (*archive.Manifest, error) {
	started := time.Now().UTC()
	if job.Hash == "" {
		job.Hash = archive.DefaultHash
	}
	if job.Progress != nil {
		job.Progress.Stage("reading the schema")
	}
	d, err := OpenDump(ctx, job.DumpOptions)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	id := backupid.New(started)
	if job.Progress != nil {
		job.Progress.SetBackup(id)
	}
	header := &archive.Manifest{
		Format: archive.FormatVersion, ID: id, Kind: archive.KindLogical, Started: started,
		Server: archive.Server{Version: d.server.Version, Hostname: d.server.Hostname, ServerID: d.server.ServerID},
		Tools:  archive.Tools{Backstream: job.Version},
		Codec:  job.Codec.String(), Hash: job.Hash, Encryption: job.Encryption,
	}
	header.Streams = archive.Streams(job.Parallel, job.Codec)
	return archive.WriteTo(ctx, job.Dest, header, func() (*archive.Manifest, error) { return d.toArchive(ctx, job, header) })
}

// DumpSession is one consistent dump of a server: OpenDump connects and
// reads the catalog, Run takes the snapshot and hands every data file to
// an Output, Close ends it. A backup writes the files into its streams
// (Dump); a copy loads them into another server as they come.
type DumpSession struct {
	s      *session
	db     *sql.DB
	server *mariadb.Server
}

// OpenDump connects the dump's coordinator and opt.Parallel snapshot
// connections and reads the catalog of what opt selects; it refuses
// what cannot be dumped before any lock is taken.
func OpenDump(ctx context.Context, opt DumpOptions) (_ *DumpSession, err error) {
	if opt.Parallel < 1 {
		return nil, fmt.Errorf("parallel must be at least 1, got %d", opt.Parallel)
	}
	if opt.ChunkBytes <= 0 {
		opt.ChunkBytes = DefaultChunkBytes
	}
	d := &DumpSession{}
	if d.db, err = mariadb.Open(ctx, opt.Conn, ""); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	d.db.SetMaxOpenConns(opt.Parallel + 3) // workers, the coordinator, and one more (holdSequences)
	d.db.SetMaxIdleConns(opt.Parallel + 3)
	if d.server, err = mariadb.Inspect(ctx, d.db); err != nil {
		return nil, err
	}
	if d.s, err = openSession(ctx, d.db, opt); err != nil {
		return nil, err
	}
	return d, nil
}

// Server is what the dump's source said of itself.
func (d *DumpSession) Server() *mariadb.Server { return d.server }

// Catalog is the dump's catalog: the schema, the source's sql_mode, the
// data format, and for each table the columns its data files hold, with
// the data files made so far (all of them once Run has returned).
func (d *DumpSession) Catalog() *Catalog {
	s := d.s
	cat := &Catalog{Schema: s.catalog, DataFormat: s.format, Whole: s.whole}
	for _, t := range s.tables {
		cat.Tables = append(cat.Tables, t.data())
		if t.masks != nil {
			cat.MaskKey = s.opt.Mask.Key()
		}
	}
	return cat
}

// Run takes the snapshot and dumps every table into out, biggest first:
// the non-transactional ones while writes to them are stopped, the others
// in the snapshot all connections opened while commits were blocked. It
// then checks that no DDL changed a dumped table and ends the snapshot,
// and returns the binary log position the data stands for.
func (d *DumpSession) Run(ctx context.Context, out Output) (archive.Positions, error) {
	s := d.s
	var pos archive.Positions
	sources, note, err := mariadb.BackupSources(ctx, s.coord, d.server.Hostname)
	if err != nil {
		return pos, err
	}
	if note != "" && s.opt.Progress != nil {
		s.opt.Progress.Logf("note: %s", note)
	}
	s.replica = len(sources) > 0
	s.progress = newDumpProgress(s.opt.Progress, s.tables)
	if s.opt.afterCatalog != nil {
		if err := s.opt.afterCatalog(ctx); err != nil {
			return pos, err
		}
	}
	pos, rest, err := s.openSnapshots(ctx, out)
	if err != nil {
		return pos, err
	}
	if s.opt.afterSnapshot != nil {
		if err := s.opt.afterSnapshot(ctx); err != nil {
			return pos, err
		}
	}
	if err := s.dumpTables(ctx, out, rest); err != nil {
		return pos, err
	}
	// Also with --block-ddl: DDL between reading the catalog and taking
	// the metadata locks is not held off, only seen.
	if err := s.checkNoDDL(ctx); err != nil {
		return pos, err
	}
	for _, c := range s.workers {
		if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
			return pos, err
		}
	}
	if s.opt.BlockDDL {
		// The snapshots' metadata locks held DDL off until now.
		s.ddlUntil = time.Now()
	}
	return pos, nil
}

// Blocked is how long the dump kept the server from running DDL, and
// from committing (and writing non-transactional tables), from its
// requests of the locks until it let go of them (with BlockDDL, DDL of
// the dumped tables until the dump ended): what its writers waited for
// it at most. Zero before Run.
func (d *DumpSession) Blocked() (ddl, commit time.Duration) {
	s := d.s
	if s.unlocked.IsZero() {
		return 0, 0
	}
	if ddlEnd := s.unlocked; !s.ddlFrom.IsZero() {
		if !s.ddlUntil.IsZero() {
			ddlEnd = s.ddlUntil
		}
		ddl = ddlEnd.Sub(s.ddlFrom)
	}
	if !s.commitFrom.IsZero() {
		commit = s.unlocked.Sub(s.commitFrom)
	}
	return ddl, commit
}

// Close ends the dump's connections.
func (d *DumpSession) Close() {
	if d.s != nil {
		d.s.close()
	}
	d.db.Close()
}

// session is one dump in progress: the coordinator connection, the
// workers' snapshot connections, and what they share.
type session struct {
	opt     DumpOptions
	db      *sql.DB
	coord   *sql.Conn
	workers []*sql.Conn
	catalog *schema.Catalog
	tables  []*tableWork
	// progress reports the tables' dump; nil without a tracker.
	progress *dumpProgress
	// limit, shared by every worker, bounds the bytes of data files made
	// per second (--max-rate); nil is no bound.
	limit  *throttle.Limiter
	ids    atomic.Int64 // numbers data files across the dump
	format int          // of the data files (Catalog.DataFormat)
	// whole: the dump takes the whole server (Catalog.Whole).
	whole bool
	// replica is true when the server replicates: the position in its
	// primary's history is read with its own.
	replica bool
	// ddlFrom and commitFrom are when the dump asked for the locks that
	// block DDL and commits, unlocked when it let go (see Blocked), and
	// ddlUntil, with BlockDDL, when its snapshots let go of the tables.
	ddlFrom, commitFrom, unlocked, ddlUntil time.Time
}

// nextID numbers data files across the dump.
func (s *session) nextID() int { return int(s.ids.Add(1)) }

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

func openSession(ctx context.Context, db *sql.DB, opt DumpOptions) (_ *session, err error) {
	f := opt.Filter
	// A masked dump is no base for a point-in-time restore: the binary
	// logs replayed on it hold the values unmasked.
	whole := len(f.Databases)+len(f.ExcludeDatabases)+len(f.Tables)+len(f.ExcludeTables) == 0 && opt.Skip == schema.Skip{} && opt.Mask == nil
	// The load journal is a target's record of what was loaded into it
	// (and of copies), not data: a dump of that server leaves it out.
	opt.Filter.ExcludeDatabases = append(slices.Clone(f.ExcludeDatabases), journalDB)
	s := &session{opt: opt, db: db, format: dataFormat, limit: throttle.NewLimiter(opt.MaxRate), whole: whole}
	if opt.legacyText {
		s.format = DataFormatText
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.coord, err = db.Conn(ctx); err != nil {
		return nil, err
	}
	for range opt.Parallel {
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
	if s.catalog, err = schema.Read(ctx, s.coord, s.workers, opt.Filter, opt.Skip); err != nil {
		return nil, explainPrivileges(err)
	}
	if err := s.checkSelection(ctx, f); err != nil {
		return nil, err
	}
	if opt.Progress != nil {
		for _, a := range s.catalog.IgnoredAccounts {
			opt.Progress.Logf("account %s is in mysql.user but the server ignores it (skip-name-resolve, or an invalid entry): not in the backup", a)
		}
	}
	var byTransaction []string
	for _, d := range s.catalog.Databases {
		for _, t := range d.Tables {
			if t.VersionedByTransaction() {
				byTransaction = append(byTransaction, d.Name+"."+t.Name)
				t.HistoryLeftOut = opt.VersionedCurrentOnly
			}
			// A sequence's state is read with the position; a table whose
			// rows are other tables' has none to dump.
			if !t.Sequence && !t.RowsElsewhere() {
				w := newTableWork(d.Name, t, s.format)
				// A table the server estimates at a fraction of one data
				// file is read in one scan: planning ranges of it costs a
				// query more and gives nothing to share (on a server of
				// many small tables, a query per table). An estimate that
				// is low (statistics not yet updated after a load) costs
				// only parallelism: a scan is still cut into data files.
				if t.DataBytes < opt.ChunkBytes/4 {
					w.ranged, w.keyset = false, false
				}
				s.tables = append(s.tables, w)
			}
		}
	}
	if err := s.checkReadable(ctx); err != nil {
		return nil, err
	}
	if !opt.Skip.Events {
		if err := s.checkEventsVisible(ctx); err != nil {
			return nil, err
		}
	}
	if !opt.Skip.Triggers || !opt.Skip.Routines {
		g, err := s.readGrants(ctx)
		if err != nil {
			return nil, err
		}
		if !opt.Skip.Triggers {
			if err := s.checkTriggersVisible(ctx, g); err != nil {
				return nil, err
			}
		}
		if !opt.Skip.Routines {
			if err := s.checkRoutinesVisible(ctx, g); err != nil {
				return nil, err
			}
		}
	}
	if opt.Mask != nil {
		plan := opt.Mask.Plan()
		for _, w := range s.tables {
			if w.masks, err = planMasks(plan, w.db, w.t, w.columnNames()); err != nil {
				return nil, err
			}
		}
		warnMasks(plan, opt.Progress)
		if err := plan.Check(); err != nil {
			return nil, err
		}
	}
	if len(byTransaction) > 0 && !opt.VersionedCurrentOnly {
		return nil, fmt.Errorf("%s: system-versioned by transaction id, whose history a restore cannot take back (every history row would come back as a current row); --versioned-current-only dumps the current rows only, --exclude-table leaves a table out",
			strings.Join(byTransaction, ", "))
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

// toArchive writes the dump into a backup's streams: the CREATE statement
// of each table first, then the data files, then the catalog, and commits
// the manifest.
func (d *DumpSession) toArchive(ctx context.Context, job DumpJob, header *archive.Manifest) (*archive.Manifest, error) {
	w, err := archive.NewWriter(ctx, archive.WriterOptions{
		Output: job.Dest.Output(header.ID, job.Hash), Streams: job.Parallel,
		Codec: job.Codec, Hash: job.Hash, Counter: outCounterOf(job.Progress),
		// A table's files in one stream, other tables in the others: a load
		// then works on as many tables at once as there are streams. Loads
		// into one table do not run in parallel anyway when it has an
		// AUTO_INCREMENT column (LOAD DATA takes InnoDB's table-level
		// AUTO-INC lock under the default innodb_autoinc_lock_mode=1).
		Group:  tableOfPath,
		Memory: job.Memory,
	})
	if err != nil {
		return nil, err
	}
	em := newEmitter(w)
	if job.Progress != nil {
		job.Progress.Stage("dumping")
		job.Progress.SetTables(int64(len(d.s.tables)))
	}
	var pos archive.Positions
	var cat *Catalog
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return em.run(gctx) })
	g.Go(func() error {
		defer em.finish()
		if err := d.s.writeSchemaFiles(gctx, em); err != nil {
			return err
		}
		var err error
		if pos, err = d.Run(gctx, archiveOutput{em: em, tr: job.Progress}); err != nil {
			return err
		}
		cat = d.Catalog()
		return d.s.writeStockFiles(gctx, em, cat, header, pos)
	})
	if err := g.Wait(); err != nil {
		w.Abort(err)
		return nil, err
	}
	written, err := w.Close()
	if err != nil {
		return nil, err
	}
	if job.Progress != nil {
		job.Progress.Stage("committing")
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
	ddl, commit := d.Blocked()
	m.Stats.DDLBlockedSeconds, m.Stats.CommitsBlockedSeconds = ddl.Seconds(), commit.Seconds()
	m.Meta = append(m.Meta, o)
	m.Databases = summarise(cat)
	m.Partial = !cat.Whole
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
	for _, d := range c.Schema.Databases {
		for _, t := range d.Tables {
			if t.HistoryLeftOut {
				byName[d.Name].NoHistory = append(byName[d.Name].NoHistory, t.Name)
			}
		}
	}
	for _, t := range c.Tables {
		d := byName[t.Database]
		if d == nil {
			continue
		}
		for _, m := range t.Masked {
			d.Masked = append(d.Masked, t.Table+"."+m.Column+"="+m.Function)
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

// outCounterOf is counterOf for a writer whose bytes in are counted
// elsewhere.
func outCounterOf(t *progress.Tracker) archive.Counter {
	if t == nil {
		return nil
	}
	return outCounter{t}
}

// dumpTables dumps tables through every worker connection, less those
// out already holds.
func (s *session) dumpTables(ctx context.Context, out Output, tables []*tableWork) error {
	tables, err := s.unkept(ctx, out, tables)
	if err != nil {
		return err
	}
	sched := newScheduler(tables)
	g, gctx := errgroup.WithContext(ctx)
	for _, c := range s.workers {
		g.Go(func() error { return s.dumpLoop(gctx, c, sched, out) })
	}
	return g.Wait()
}

// unkept asks out, over every worker connection at once, whether it holds
// each table already (Output.Keep), and returns the tables it does not.
func (s *session) unkept(ctx context.Context, out Output, tables []*tableWork) ([]*tableWork, error) {
	kept := make([]bool, len(tables))
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for _, c := range s.workers {
		g.Go(func() error {
			for i := int(next.Add(1) - 1); i < len(tables); i = int(next.Add(1) - 1) {
				w := tables[i]
				k, err := out.Keep(gctx, w.db, w.t.Name, func(ctx context.Context) (int64, RowSum, error) { return w.sum(ctx, c) })
				if err != nil {
					return fmt.Errorf("table %s: %w", w.name(), explainLost(err))
				}
				kept[i] = k
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var rest []*tableWork
	for i, w := range tables {
		if kept[i] {
			s.progress.kept(w)
		} else {
			rest = append(rest, w)
		}
	}
	return rest, nil
}

// openSnapshots makes every table's data stand for one moment, the binary
// log position it returns with the tables still to dump (in the workers'
// snapshots):
//
//   - Writes to non-transactional tables (MyISAM, Aria, ...) stop
//     (BACKUP STAGE BLOCK_DDL: running ones finish first; DDL waits too),
//     while InnoDB commits go on, and those tables are dumped whole: no
//     snapshot can hold them.
//   - Then commits stop (BLOCK_COMMIT) only while the workers start their
//     snapshot transactions and the position and the sequences' state are
//     read.
//
// On a server without backup stages, FLUSH TABLES WITH READ LOCK holds
// everything for both steps. The sequences are kept open meanwhile (see
// holdSequences), so that the server keeps their cached values.
func (s *session) openSnapshots(ctx context.Context, out Output) (archive.Positions, []*tableWork, error) {
	var pos archive.Positions
	stage, release, err := s.freezeWrites(ctx)
	if err != nil {
		return pos, nil, err
	}
	defer func() {
		if release != nil {
			release()
		}
	}()
	var trans, nontrans []*tableWork
	engines, err := s.transactionalEngines(ctx)
	if err != nil {
		return pos, nil, err
	}
	for _, t := range s.tables {
		if engines[strings.ToLower(t.t.Engine)] {
			trans = append(trans, t)
		} else {
			nontrans = append(nontrans, t)
		}
	}
	if err := s.dumpTables(ctx, out, nontrans); err != nil {
		return pos, nil, err
	}
	if err := stage("BLOCK_COMMIT"); err != nil {
		return pos, nil, err
	}
	for i, c := range s.workers {
		if _, err := c.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
			return pos, nil, fmt.Errorf("dump connection %d: start the snapshot: %w", i, err)
		}
	}
	if s.opt.BlockDDL {
		// A table read in a transaction stays under a shared metadata lock
		// until the transaction ends: no DDL can change it meanwhile.
		for _, t := range trans {
			if _, err := s.workers[0].ExecContext(ctx, "SELECT 1 FROM "+t.from+" LIMIT 0"); err != nil {
				return pos, nil, fmt.Errorf("lock %s: %w", t.name(), err)
			}
		}
	}
	if pos, err = s.position(ctx); err != nil {
		return pos, nil, err
	}
	for _, d := range s.catalog.Databases {
		for _, t := range d.Tables {
			if t.Sequence {
				if err := schema.ReadSequenceState(ctx, s.coord, d.Name, t); err != nil {
					return pos, nil, fmt.Errorf("sequence %s.%s: %w", d.Name, t.Name, err)
				}
			}
		}
	}
	r := release
	release = nil
	return pos, trans, r()
}

// position reads the binary log coordinates and GTID position.
func (s *session) position(ctx context.Context) (archive.Positions, error) {
	var pos archive.Positions
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
	if s.replica {
		// Commits are blocked, those of the replication threads too: what
		// they have applied stands still with the snapshots.
		var err error
		if pos.Primary, err = s.primaryPosition(ctx); err != nil {
			return pos, err
		}
	}
	return pos, nil
}

// primaryPosition reads where the replica stands in its primaries'
// history, as mariabackup --slave-info records it, with each
// connection's file and position as well: gtid_slave_pos (when a
// connection replicates by GTID) and SHOW ALL SLAVES STATUS. It runs
// under BLOCK_COMMIT, as mariabackup's own SHOW ALL SLAVES STATUS does.
func (s *session) primaryPosition(ctx context.Context) (*archive.PrimaryPosition, error) {
	sources, err := mariadb.ReplicationSources(ctx, s.coord)
	if err != nil {
		return nil, err
	}
	if len(sources) == 0 {
		return nil, fmt.Errorf("the replica's replication changed during the backup: it has no replication connection any more")
	}
	p := &archive.PrimaryPosition{}
	byGTID := false
	for _, c := range sources {
		byGTID = byGTID || (c.UsingGTID != "" && c.UsingGTID != "No")
		p.Connections = append(p.Connections, archive.PrimaryConnection{
			Name: c.Name, Host: c.Host, Port: c.Port, ServerID: c.ServerID, UsingGTID: c.UsingGTID,
			BinlogFile: c.RelayMasterLogFile, BinlogPosition: c.ExecMasterLogPos,
		})
	}
	if byGTID {
		if err := s.coord.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_slave_pos").Scan(&p.GTID); err != nil {
			return nil, fmt.Errorf("read @@gtid_slave_pos: %w", err)
		}
	}
	return p, nil
}

// transactionalEngines returns the server's engines with transactions, by
// lower-case name. A table of any other engine is dumped while writes to
// it are stopped.
func (s *session) transactionalEngines(ctx context.Context) (map[string]bool, error) {
	rows, err := s.coord.QueryContext(ctx, "SELECT ENGINE FROM information_schema.ENGINES WHERE TRANSACTIONS = 'YES'")
	if err != nil {
		return nil, fmt.Errorf("list engines: %w", err)
	}
	defer rows.Close()
	engines := map[string]bool{}
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			return nil, fmt.Errorf("list engines: %w", err)
		}
		engines[strings.ToLower(e)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list engines: %w", err)
	}
	return engines, nil
}

// freezeWrites stops writes to non-transactional tables and DDL: BACKUP
// STAGE START, then, with the sequences held open (holdSequences),
// BLOCK_DDL. It returns a function that moves to a later backup stage, and
// what ends the backup stages and the hold. On a server without backup
// stages it takes FLUSH TABLES WITH READ LOCK, which stops every write at
// once (and closes every table, so holding sequences would gain nothing
// and only make it wait); moving to a later stage then does nothing.
func (s *session) freezeWrites(ctx context.Context) (stage func(string) error, release func() error, err error) {
	unlock := func(q string) func() error {
		return func() error {
			_, err := s.coord.ExecContext(context.WithoutCancel(ctx), q)
			s.unlocked = time.Now()
			return err
		}
	}
	_, err = s.coord.ExecContext(ctx, "BACKUP STAGE START")
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1064 {
		// A server older than 10.4.1 has no backup stages.
		s.ddlFrom = time.Now()
		s.commitFrom = s.ddlFrom
		if _, err := s.coord.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
			return nil, nil, explainPrivileges(fmt.Errorf("FLUSH TABLES WITH READ LOCK: %w", err))
		}
		return func(string) error { return nil }, unlock("UNLOCK TABLES"), nil
	}
	if err != nil {
		return nil, nil, explainPrivileges(fmt.Errorf("BACKUP STAGE START: %w", err))
	}
	end := unlock("BACKUP STAGE END")
	unhold, err := s.holdSequences(ctx)
	if err != nil {
		end()
		return nil, nil, err
	}
	release = func() error {
		err := end()
		unhold()
		return err
	}
	stage = func(name string) error {
		switch name {
		case "BLOCK_DDL":
			s.ddlFrom = time.Now()
		case "BLOCK_COMMIT":
			s.commitFrom = time.Now()
		}
		if _, err := s.coord.ExecContext(ctx, "BACKUP STAGE "+name); err != nil {
			return explainPrivileges(fmt.Errorf("BACKUP STAGE %s: %w", name, err))
		}
		return nil
	}
	if err := stage("BLOCK_DDL"); err != nil {
		release()
		return nil, nil, err
	}
	return stage, release, nil
}

// holdSequences keeps every sequence of the catalog open on a connection
// of its own until the returned function ends it. The backup stages close
// the tables no statement is using, and a sequence closed loses the values
// it had cached: the next NEXTVAL would skip them, a change to the source
// the backup must not make. A statement that reads every sequence and then
// sleeps keeps them in use without a lock that would stop NEXTVAL; the
// returned function kills that statement (and a server ends it by itself
// within seconds when the connection goes).
func (s *session) holdSequences(ctx context.Context) (func(), error) {
	var reads []string
	for _, d := range s.catalog.Databases {
		for _, t := range d.Tables {
			if t.Sequence {
				reads = append(reads, "SELECT 1 FROM "+qualified(d.Name, t.Name))
			}
		}
	}
	if len(reads) == 0 {
		return func() {}, nil
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var id int64
	if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		c.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Ends with "query execution was interrupted" once killed.
		c.ExecContext(ctx, "SELECT SLEEP("+strconv.Itoa(int(sequenceHold/time.Second))+") FROM ("+strings.Join(reads, " UNION ALL ")+") AS held LIMIT 1")
	}()
	stop := func() {
		s.coord.ExecContext(context.WithoutCancel(ctx), "KILL QUERY "+strconv.FormatInt(id, 10))
		<-done
		c.Close()
	}
	// Only a statement that has opened the sequences holds them: wait until
	// it sleeps.
	deadline := time.Now().Add(sequenceHoldWait)
	for {
		var state string
		err := s.coord.QueryRowContext(ctx, "SELECT IFNULL(STATE, '') FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&state)
		if err == nil && state == "User sleep" {
			return stop, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			stop()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if s.opt.Progress != nil {
				s.opt.Progress.Logf("the sequences could not be kept open (state %q): the source may skip the values they had cached", state)
			}
			return func() {}, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sequenceHold bounds how long the statement that holds the sequences open
// runs if backstream cannot kill it; sequenceHoldWait, how long the dump
// waits for it to start holding.
const (
	sequenceHold     = 24 * time.Hour
	sequenceHoldWait = 10 * time.Second
)

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

// writeStockFiles puts the way out (stockFiles) into the streams. An
// object's text is put into its character set by the source server.
func (s *session) writeStockFiles(ctx context.Context, em *emitter, cat *Catalog, header *archive.Manifest, pos archive.Positions) error {
	encode := func(stmt, cs string) (string, error) { return schema.EncodeFor(ctx, s.coord, stmt, cs) }
	files, err := stockFiles(cat, header, pos, encode)
	if err != nil {
		return fmt.Errorf("the scripts for restoring with stock tools: %w", err)
	}
	for _, sf := range files {
		f := em.create(sf.path)
		for data := sf.data; len(data) > 0; {
			n := min(len(data), stockChunk)
			if err := f.write(ctx, []byte(data[:n])); err != nil {
				return err
			}
			data = data[n:]
		}
		if err := f.close(ctx); err != nil {
			return err
		}
	}
	return nil
}

// stockChunk bounds the payload of one chunk of a stock file.
const stockChunk = 1 << 20

var autoIncrement = regexp.MustCompile(` AUTO_INCREMENT=\d+`)

// checkNoDDL reads the definitions of the dumped tables again: one that
// changed (or went) since the catalog was read was altered during the
// dump, and its data may not match the definition saved.
func (s *session) checkNoDDL(ctx context.Context) error {
	now, err := schema.Read(ctx, s.coord, s.workers, s.opt.Filter, schema.Skip{Views: true, Triggers: true, Routines: true, Events: true, Users: true})
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

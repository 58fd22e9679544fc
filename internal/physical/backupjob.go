package physical

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/scratch"
	"github.com/backstream/backstream/internal/throttle"
	"github.com/backstream/backstream/internal/toolpath"
	"github.com/backstream/backstream/internal/xbstream"
)

// Progress is what a long job reports to; a progress.Tracker fits.
type Progress interface {
	archive.Counter
	SetTotal(n int64)
	// SetBackup names the backup being made, once its id is known.
	SetBackup(id string)
	Stage(name string)
	Restart()
	Logf(format string, args ...any)
}

// BackupJob is one physical backup.
type BackupJob struct {
	Dest        archive.Destination
	Conn        mariadb.Config
	Mariabackup string        // explicit mariabackup path; "" searches MariadbPath, then PATH
	MariadbPath toolpath.Path // searched before PATH for mariabackup
	Parallel    int           // streams and mariabackup copy threads
	Workers     int           // compression goroutines; 0 means GOMAXPROCS
	Codec       codec.Codec
	Hash        string
	Memory      *archive.Memory // bounds the backup data held at once; nil: the queues alone
	ExtraArgs   []string        // passed to mariabackup as given
	Log         io.Writer       // optional live copy of mariabackup's stderr
	Progress    Progress        // optional
	Version     string          // backstream's version, for the manifest
	// Encryption, when the destination encrypts, is recorded in the manifest.
	Encryption *archive.Encryption
	// MaxRate bounds the bytes per second read from mariabackup's stream;
	// 0 is no bound. Reading slower makes mariabackup, blocked on its full
	// pipe, read the datadir slower too.
	MaxRate int64
	// MaxIO is mariabackup's --throttle (I/O operations per second); 0 is
	// none.
	MaxIO int
	// Parent, if set, names the backup an incremental builds on, given the
	// server being backed up; it returns nil for a full backup.
	Parent func(ctx context.Context, server *mariadb.Server) (*archive.Manifest, error)
	// Checkpoint has the server advance its redo log checkpoint before
	// mariabackup starts. mariabackup copies the redo log from the
	// checkpoint it finds at its start, and on a server whose checkpoint
	// lags that is everything written since, in every backup, however
	// little changed. Its own --innodb-log-checkpoint-now asks too late
	// for the backup it runs (10.11 still copies from the old
	// checkpoint), and MariaDB turned it off by default (MDEV-36159)
	// because the flush is a burst of writes: so it is asked for, never
	// done by default.
	Checkpoint bool
}

// maxMetadataFile bounds the copies of small metadata files kept from the
// stream (backup-my.cnf, xtrabackup_info, ...).
const maxMetadataFile = 1 << 20

// LogName is the meta object holding mariabackup's stderr.
const LogName = "meta/mariabackup.log"

// RunBackup takes a hot physical backup: mariabackup streams, the archive
// writer fans the stream out into compressed stream objects, and the
// manifest is committed only after mariabackup exited 0 with "completed
// OK!", the stream ended cleanly and every object is durable. On any failure
// the backup's objects are removed and no manifest exists.
//
// On a Galera node it runs mariabackup with --galera-info, records the
// cluster position in the manifest, and has the node desynced
// (wsrep_desync) while it runs.
func RunBackup(ctx context.Context, job BackupJob) (m *archive.Manifest, err error) {
	started := time.Now().UTC()
	if job.Parallel < 1 {
		return nil, fmt.Errorf("parallel must be at least 1, got %d", job.Parallel)
	}
	if job.Hash == "" {
		job.Hash = archive.DefaultHash
	}
	a := &attempt{job: job}
	galera, err := a.inspect(ctx)
	if err != nil {
		return nil, err
	}
	if a.bin, err = FindBinary(ctx, job.Mariabackup, job.MariadbPath, a.server.Major, a.server.Minor, ForServer); err != nil {
		return nil, err
	}
	if job.Parent != nil {
		if a.parent, err = job.Parent(ctx, a.server); err != nil {
			return nil, err
		}
		if a.parent != nil {
			if err := CheckParent(a.parent, a.server); err != nil {
				return nil, err
			}
		}
	}
	if galera.Node {
		resync, err := desync(ctx, job.Conn, galera, job.Progress)
		if err != nil {
			return nil, err
		}
		defer func() {
			if rerr := resync(); rerr != nil {
				if m != nil {
					rerr = fmt.Errorf("backup %s is complete, but %w", m.ID, rerr)
				}
				err = errors.Join(err, rerr)
			}
		}()
		a.galera = true
		a.job.ExtraArgs = append(slices.Clone(job.ExtraArgs), GaleraArg)
	}
	return a.retryTransient(ctx, started)
}

// attempt is what one try at a physical backup works with: the job, and
// what RunBackup learned of the server before mariabackup runs, which
// every try shares; then the try's own id, header, log and counter.
type attempt struct {
	job     BackupJob
	server  *mariadb.Server
	fileKey string                      // the password of the server's key file, which the backup withholds ("" for none)
	sources []mariadb.ReplicationSource // the server's replication connections (none when it is no replica)
	galera  bool                        // the server is a Galera node
	bin     *Binary
	parent  *archive.Manifest // nil for a full backup

	// This try's own.
	started time.Time
	count   *copyCounter // nil without progress
	header  *archive.Manifest
	log     io.Writer // mariabackup's stderr: logFile, and the job's Log
	logFile *os.File
}

// inspect reads what the backup needs to know of the server before
// mariabackup runs, checks that it may take it here, and advances the
// checkpoint when the job asks.
func (a *attempt) inspect(ctx context.Context) (mariadb.Galera, error) {
	var galera mariadb.Galera
	db, err := mariadb.Open(ctx, a.job.Conn, "")
	if err != nil {
		return galera, err
	}
	defer db.Close()
	if a.server, err = mariadb.Inspect(ctx, db); err != nil {
		return galera, err
	}
	if err = mariadb.CheckBackupPrivileges(ctx, db, a.server); err != nil {
		return galera, err
	}
	if err = CheckLocal(a.job.Conn, a.server.Datadir, "/proc"); err != nil {
		return galera, err
	}
	if a.fileKey, err = serverFileKey(ctx, db); err != nil {
		return galera, err
	}
	if a.sources, err = replicaSources(ctx, db, a.server, a.job.Progress); err != nil {
		return galera, err
	}
	if galera, err = mariadb.ReadGalera(ctx, db); err != nil {
		return galera, err
	}
	if a.job.Checkpoint {
		if err = mariadb.AdvanceCheckpoint(ctx, db, a.server); err != nil {
			return galera, fmt.Errorf("--checkpoint: %w", err)
		}
	}
	return galera, nil
}

// retryTransient takes the backup, again under a new id while an attempt
// meets a failure the next may not (transient), up to attempts times, and
// while the destination takes another (receivers on other hosts, told
// that the backup failed, do not: the first failure is the job's).
func (a *attempt) retryTransient(ctx context.Context, started time.Time) (*archive.Manifest, error) {
	p := a.job.Progress
	for n := 1; ; n++ {
		try := *a
		try.started, try.count = started, nil
		if p != nil {
			stage := "streaming"
			if n > 1 {
				// This attempt copies the datadir again from its start (and
				// the DDL may have changed its size): it is counted alone.
				p.Restart()
				stage = fmt.Sprintf("streaming, attempt %d of %d", n, attempts)
			}
			try.count = newCopyCounter(p, estimateCopy(a.server))
			p.Stage(stage)
		}
		m, err := try.backupOnce(ctx)
		if !transient(err) || n == attempts || archive.Ended(a.job.Dest) {
			return m, err
		}
		if p != nil {
			p.Logf("%v; taking the backup again (attempt %d of %d)", err, n+1, attempts)
		}
		started = time.Now().UTC()
	}
}

// backupOnce takes the backup once, under a new id.
func (a *attempt) backupOnce(ctx context.Context) (*archive.Manifest, error) {
	a.header = a.newHeader()
	id := a.header.ID
	if a.job.Progress != nil {
		a.job.Progress.SetBackup(id)
	}
	logFile, err := scratch.CreateTemp("mariabackup-*.log")
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", id, err)
	}
	defer os.Remove(logFile.Name())
	defer logFile.Close()
	a.logFile, a.log = logFile, logFile
	if a.job.Log != nil {
		a.log = io.MultiWriter(logFile, a.job.Log)
	}
	return archive.WriteTo(ctx, a.job.Dest, a.header, func() (*archive.Manifest, error) {
		return a.runBackup(ctx)
	})
}

// newHeader is the manifest of this try as far as it is known before
// mariabackup runs, under a new id.
func (a *attempt) newHeader() *archive.Manifest {
	id := backupid.New(a.started)
	job, server := a.job, a.server
	header := &archive.Manifest{
		Format: archive.FormatVersion, ID: id, Kind: archive.KindPhysical, Started: a.started,
		Server: archive.Server{Version: server.Version, Hostname: server.Hostname, ServerID: server.ServerID, Datadir: server.Datadir},
		Tools:  archive.Tools{Backstream: job.Version, Mariabackup: a.bin.Version},
		Codec:  job.Codec.String(), Hash: job.Hash, Encryption: job.Encryption,
	}
	header.Chain = id
	if a.fileKey != "" {
		// The header says so from the start: a receiver restoring as the
		// backup arrives needs the password before it prepares.
		header.Withheld = []string{FileKeyVariable}
	}
	if parent := a.parent; parent != nil {
		header.Parent, header.Chain, header.Depth = parent.ID, parent.Chain, parent.Depth+1
		if header.Chain == "" {
			header.Chain = parent.ID
		}
	}
	header.Streams = archive.Streams(job.Parallel, job.Codec)
	return header
}

// copyOutcome is what mariabackup's copy left: its result, the stream's
// metadata files, and what the checks after it need.
type copyOutcome struct {
	res        *Result
	meta       map[string][]byte
	hadFileKey bool                     // backup-my.cnf set the key file's password
	before     map[string]*catalogTable // the catalog before the copy
	launched   time.Time                // when mariabackup started
	primary    *archive.PrimaryPosition // a replica's position in its primary's history
	retake     *retake                  // the tables DDL touched, taken again under BLOCK_COMMIT
	redo       RedoCopy                 // the copy of the redo log, followed
}

func (a *attempt) runBackup(ctx context.Context) (*archive.Manifest, error) {
	job := a.job
	var counter archive.Counter
	if job.Progress != nil {
		counter = inUncounted{job.Progress}
	}
	w, err := archive.NewWriter(ctx, archive.WriterOptions{
		Output: job.Dest.Output(a.header.ID, job.Hash), Streams: job.Parallel, Workers: job.Workers,
		Codec: job.Codec, Hash: job.Hash, Counter: counter, Memory: job.Memory,
	})
	if err != nil {
		return nil, err
	}
	c, err := a.copyInto(ctx, w)
	if err != nil {
		return nil, err
	}
	defer c.retake.remove()
	if err := a.checkCopy(ctx, c, w); err != nil {
		w.Abort(err)
		return nil, err
	}
	written, err := w.Close()
	if err != nil {
		return nil, err
	}
	logData, err := readAllFrom(a.logFile)
	if err != nil {
		return nil, fmt.Errorf("read mariabackup log: %w", err)
	}
	m, err := a.manifest(ctx, c, written, logData)
	if err != nil {
		return nil, err
	}
	if err := a.commit(ctx, m, c.meta, logData, written); err != nil {
		return nil, err
	}
	return m, nil
}

// copyInto runs mariabackup and pumps its stream into w; on failure it
// has aborted w.
func (a *attempt) copyInto(ctx context.Context, w *archive.Writer) (*copyOutcome, error) {
	job := a.job
	childCtx, stopChild := context.WithCancel(ctx)
	defer stopChild()
	args := job.ExtraArgs
	if a.parent != nil {
		// The parent's end LSN comes from its manifest, never from a file
		// the user keeps.
		args = append([]string{fmt.Sprintf("--incremental-lsn=%d", IncrementalLSN(a.parent))}, args...)
	}
	if len(a.sources) > 0 {
		// A replica's backup records where it stood in its primary's
		// history, read while commits are blocked, as the binlog info is.
		args = append([]string{"--slave-info"}, args...)
	}
	c := &copyOutcome{}
	var err error
	// The catalog before the copy: the table guard's first reading.
	if c.before, err = readCatalog(ctx, job.Conn); err != nil {
		w.Abort(err)
		return nil, err
	}
	c.launched = time.Now()
	c.retake = &retake{datadir: a.server.Datadir, launched: c.launched}
	mb, err := StartBackup(childCtx, BackupOptions{
		Binary: a.bin, Conn: job.Conn, Datadir: a.server.Datadir, Parallel: job.Parallel,
		Throttle: job.MaxIO, ExtraArgs: args, Log: a.log, Withhold: []string{a.fileKey},
		AtBlockCommit: c.retake.take,
	})
	if err != nil {
		w.Abort(err)
		return nil, err
	}
	xr := xbstream.NewReader(throttle.NewReader(childCtx, mb.Stdout, throttle.NewLimiter(job.MaxRate)))
	xr.Alloc = w.Buffer
	var streamErr error
	c.meta, c.hadFileKey, streamErr = pump(xr, w, a.fileKey, a.count, &c.redo)
	if streamErr != nil && !mb.stdoutEnded() {
		// mariabackup may still be writing: stop it, or it blocks on the
		// full pipe. One that closed its stdout is ending by itself (it
		// was killed, or failed), and its exit status says why; stopping
		// it would only report that we did.
		stopChild()
	}
	res, waitErr := mb.Wait()
	if err := copyFailed(w, streamErr, waitErr); err != nil {
		c.retake.remove()
		// DDL that ran meanwhile may be why (mariabackup cannot open a
		// file that a table's ALTER or DROP took away): taken again.
		if raced, rerr := racedDDL(a.server.Datadir, c.launched); waitErr != nil && rerr == nil && len(raced) > 0 {
			return nil, &DDLRaceError{Tables: entryNames(raced), Failed: err}
		}
		return nil, err
	}
	c.res = res
	if err := a.endWithRetake(mb, c.retake, w); err != nil {
		c.retake.remove()
		w.Abort(err)
		return nil, err
	}
	return c, nil
}

// endWithRetake ends the stream with the tables DDL touched as they stood
// while mariabackup held BLOCK_COMMIT, when it could be held there (else
// the retake is dropped, and checkCopy refuses what DDL touched).
func (a *attempt) endWithRetake(mb *Backup, rt *retake, w *archive.Writer) error {
	ran, held, err := mb.Held()
	if err != nil {
		return fmt.Errorf("taking again the tables DDL touched during the copy: %w", err)
	}
	if !ran {
		rt.remove()
		*rt = retake{}
		return nil
	}
	if len(rt.owners) > 0 && a.job.Progress != nil {
		a.job.Progress.Logf("%d tables and databases that DDL or writes touched during the copy taken again under BACKUP STAGE BLOCK_COMMIT (%d files, %d bytes; commits held %v)",
			len(rt.owners), len(rt.files), rt.bytes, held.Round(time.Millisecond))
	}
	if err := rt.apply(w); err != nil {
		return fmt.Errorf("%w: %w", errSink, err)
	}
	return nil
}

// copyFailed says, after mariabackup exited, whether the copy failed and
// why, from the stream's error and mariabackup's; when it failed, it
// aborts w.
func copyFailed(w *archive.Writer, streamErr, waitErr error) error {
	var across *archive.RenameAcrossStreamsError
	switch {
	case streamErr != nil && waitErr != nil && !errors.Is(streamErr, errSink):
		// The stream broke because mariabackup failed: its message is the one to read.
		w.Abort(waitErr)
		return fmt.Errorf("%w (the stream ended early: %v)", waitErr, streamErr)
	case errors.As(streamErr, &across):
		// DDL renamed a non-InnoDB table during the copy: the same race
		// the DDL log shows, met before the log can be read.
		err := &DDLRaceError{Tables: []string{fmt.Sprintf("%s (file %s renamed to %s)", tableOfFile(across.Path), across.Path, across.NewPath)}}
		w.Abort(err)
		return err
	case streamErr != nil:
		w.Abort(streamErr)
		return streamErr
	case waitErr != nil:
		w.Abort(waitErr)
		return waitErr
	}
	return nil
}

// checkCopy checks, before the stream objects are closed, what the copy
// must hold to be committed: its redo log reaches where its checkpoints
// say the backup ends, no DDL raced it, the key file's password did
// not pass unseen, and a replica still replicates from the primaries it
// did (whose position it then adds to the stream).
func (a *attempt) checkCopy(ctx context.Context, c *copyOutcome, w *archive.Writer) error {
	if err := c.redo.Check(c.res.Checkpoints); err != nil {
		return err
	}
	// mariabackup has ended its backup stages: the server's DDL log holds
	// what ran during the copy.
	raced, err := racedDDL(a.server.Datadir, c.launched)
	left := entryNames(slices.DeleteFunc(raced, c.retake.covers))
	if err == nil && len(left) > 0 {
		err = &DDLRaceError{Tables: left}
	}
	if err != nil {
		return err
	}
	if c.hadFileKey && a.fileKey == "" {
		// backup-my.cnf held a password the server did not show: the
		// stream's copy went without it, but the manifest cannot tell a
		// restore that it must be given.
		return fmt.Errorf("the stream's %s sets %s, which the server did not show: the backup is not committed", BackupMyCnf, FileKeyVariable)
	}
	if len(a.sources) > 0 {
		if c.primary, err = addSourceInfo(ctx, a.job, a.server, a.sources, c.meta, w); err != nil {
			return err
		}
	}
	return nil
}

// manifest builds the backup's manifest from the header, the copy and
// the tables written, and checks its positions against the stream's
// metadata files and mariabackup's extra-lsndir (which then replace
// them in c.meta).
func (a *attempt) manifest(ctx context.Context, c *copyOutcome, written archive.Result, logData []byte) (*archive.Manifest, error) {
	m := *a.header
	var err error
	if m.Tables, err = checkTables(ctx, a.job.Conn, c.before, written.Files, a.server.Datadir, c.launched, logData); err != nil {
		return nil, err
	}
	res, meta := c.res, c.meta
	m.Positions = archive.Positions{FromLSN: res.Checkpoints.FromLSN, ToLSN: res.Checkpoints.ToLSN, LastLSN: res.Checkpoints.LastLSN}
	m.Stats.DDLBlockedSeconds, m.Stats.CommitsBlockedSeconds = res.DDLBlocked.Seconds(), res.CommitsBlocked.Seconds()
	for _, name := range []string{"xtrabackup_binlog_info", "mariadb_backup_binlog_info"} {
		if b, ok := meta[name]; ok && len(strings.TrimSpace(string(b))) > 0 {
			bi, err := ParseBinlogInfo(b)
			if err != nil {
				return nil, fmt.Errorf("%s in the stream: %w", name, err)
			}
			m.Positions.BinlogFile, m.Positions.BinlogPosition, m.Positions.GTID = bi.File, bi.Position, bi.GTID
		}
	}
	m.Positions.Primary = c.primary
	if m.Positions.Galera, err = galeraPosition(meta); err != nil {
		return nil, fmt.Errorf("%w in the stream", err)
	}
	if a.galera && m.Positions.Galera == nil {
		return nil, fmt.Errorf("backup %s: mariabackup %s wrote no galera info on this Galera node: the backup is not committed", m.ID, GaleraArg)
	}
	// The stream's copies are what --prepare reads in a restored datadir;
	// the extra-lsndir's replace them as meta objects. The manifest must
	// agree with both, or it is not committed.
	if err := CheckPositions(&m, a.parent, meta); err != nil {
		return nil, fmt.Errorf("%w (in the stream)", err)
	}
	if res.CheckpointsName != "" {
		meta[res.CheckpointsName] = res.RawCheckpoints
	}
	if res.InfoName != "" {
		meta[res.InfoName] = withholdInfo(res.RawInfo, a.fileKey)
	}
	if err := CheckPositions(&m, a.parent, meta); err != nil {
		return nil, err
	}
	return &m, nil
}

// commit stores the meta objects and mariabackup's log, then commits m.
func (a *attempt) commit(ctx context.Context, m *archive.Manifest, meta map[string][]byte, logData []byte, written archive.Result) error {
	job := a.job
	if job.Progress != nil {
		job.Progress.Stage("committing")
	}
	for _, name := range slices.Sorted(maps.Keys(meta)) {
		o, err := job.Dest.PutMeta(ctx, m.ID, "meta/"+name, meta[name], job.Hash)
		if err != nil {
			return err
		}
		m.Meta = append(m.Meta, o)
	}
	o, err := job.Dest.PutMeta(ctx, m.ID, LogName, logData, job.Hash)
	if err != nil {
		return err
	}
	m.Meta = append(m.Meta, o)
	m.Complete(written)
	return job.Dest.Commit(ctx, m)
}

// replicaSources lists the replication connections of the server db
// reaches (mariadb.BackupSources), so that the backup of a replica
// records its position in its primary's history. A replica with
// temporary tables open in its SQL thread gets a note: a server started
// on the backup lacks them (see --safe-slave-backup in docs/guide.md).
func replicaSources(ctx context.Context, db *sql.DB, server *mariadb.Server, p Progress) ([]mariadb.ReplicationSource, error) {
	sources, note, err := mariadb.BackupSources(ctx, db, server.Hostname)
	if note != "" && p != nil {
		p.Logf("note: %s", note)
	}
	if err != nil || len(sources) == 0 {
		return nil, err
	}
	if n, err := mariadb.GlobalStatus(ctx, db, "Slave_open_temp_tables"); err == nil && n != "" && n != "0" && p != nil {
		p.Logf("note: the replica's SQL thread holds %s temporary tables (statement-based replication): a server started on this backup lacks them, and replicating from this replica's primary may fail on a statement that uses them; --mariabackup-option=--safe-slave-backup makes mariabackup wait until there are none", n)
	}
	return sources, nil
}

// addSourceInfo builds the backup's position in its primary's history
// from the slave info mariabackup wrote (in meta) and the replication
// connections the server listed when the backup started, checks that the
// server still replicates from the same primaries, and adds the source's
// identity to the stream as SourceInfoName (and to meta).
func addSourceInfo(ctx context.Context, job BackupJob, server *mariadb.Server, sources []mariadb.ReplicationSource, meta map[string][]byte, w *archive.Writer) (*archive.PrimaryPosition, error) {
	var raw []byte
	var name string
	for _, n := range SlaveInfoNames {
		if b, ok := meta[n]; ok {
			raw, name = b, n
		}
	}
	if name == "" {
		return nil, fmt.Errorf("%s: mariabackup --slave-info wrote no slave info (was replication reset?): the backup is not committed", errPrimaryChanged)
	}
	si, err := ParseSlaveInfo(raw)
	if err != nil {
		return nil, fmt.Errorf("%s in the stream: %w", name, err)
	}
	primary, err := PrimaryPositionOf(si, sources)
	if err != nil {
		return nil, fmt.Errorf("%w: the backup is not committed", err)
	}
	db, err := mariadb.Open(ctx, job.Conn, "")
	if err != nil {
		return nil, err
	}
	after, err := mariadb.ReplicationSources(ctx, db)
	db.Close()
	if err != nil {
		return nil, err
	}
	if diff := SameSources(sources, after); diff != "" {
		return nil, fmt.Errorf("%s: %s: the backup is not committed", errPrimaryChanged, diff)
	}
	if _, ok := meta[SourceInfoName]; ok {
		return nil, fmt.Errorf("the server's datadir holds a file named %s, which backstream adds to a backup of a replica: move it away", SourceInfoName)
	}
	b, err := MarshalSourceInfo(SourceInfo{ServerID: server.ServerID, Hostname: server.Hostname, Version: server.Version, Primary: primary})
	if err != nil {
		return nil, err
	}
	if err := w.AddFile(SourceInfoName, bytes.NewReader(b), len(b)); err != nil {
		return nil, fmt.Errorf("%w: %w", errSink, err)
	}
	meta[SourceInfoName] = b
	return primary, nil
}

// errSink marks pump errors that came from the archive writer, not the stream.
var errSink = errors.New("archive writer")

// pump moves every chunk from the stream into the archive writer and keeps
// copies of the small metadata files it passes. The files that may hold
// the key file's password (see withheld) pass only once they ended, with
// the password taken out (fileKey is the one the server shows, "" for
// none); hadFileKey says whether backup-my.cnf set it. count, if not
// nil, counts every chunk toward the backup's progress; redo follows the
// redo log's.
func pump(r *xbstream.Reader, w *archive.Writer, fileKey string, count *copyCounter, redo *RedoCopy) (meta map[string][]byte, hadFileKey bool, err error) {
	meta = map[string][]byte{}
	held := map[string]*heldFile{}
	for {
		c, raw, err := r.Next()
		if err == io.EOF {
			// The reader refuses a stream that ends with a file open, so no
			// withheld file is left held here.
			return meta, hadFileKey, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("mariabackup stream at byte %d: %w", r.Offset(), err)
		}
		count.chunk(&c)
		_ = redo.Chunk(&c)
		if hidden(c.Path) {
			continue
		}
		if withheld(c.Path) {
			name := strings.TrimPrefix(c.Path, "./")
			h, err := hold(held, &c)
			if err != nil {
				return nil, false, fmt.Errorf("mariabackup stream at byte %d: %w", r.Offset(), err)
			}
			if h == nil {
				continue
			}
			content, had := withhold(name, h.content, fileKey)
			hadFileKey = hadFileKey || had
			meta[name] = content
			if err := addFile(w, h.flags, &c, raw, content); err != nil {
				return nil, false, fmt.Errorf("%w: %w", errSink, err)
			}
			continue
		}
		if c.Type == xbstream.TypePayload && IsMetadata(c.Path) {
			name := strings.TrimPrefix(c.Path, "./")
			if end := int(c.Offset) + len(c.Payload); end <= maxMetadataFile {
				b := meta[name]
				if len(b) < end {
					b = append(b, make([]byte, end-len(b))...)
				}
				copy(b[c.Offset:], c.Payload)
				meta[name] = b
			}
		}
		if err := w.Add(&c, raw); err != nil {
			return nil, false, fmt.Errorf("%w: %w", errSink, err)
		}
	}
}

// heldFile is a withheld file's content while its chunks arrive.
type heldFile struct {
	flags   xbstream.Flags // of its first chunk (a rewrite flag stays)
	content []byte
}

// hold takes chunk c of a withheld file into held; at its end chunk it
// returns the whole file, before it nil. mariabackup writes these small
// files front to back in payload chunks, then ends them: anything else is
// refused, since only a whole file can be rid of the password.
func hold(held map[string]*heldFile, c *xbstream.Chunk) (*heldFile, error) {
	h := held[c.Path]
	if h == nil {
		h = &heldFile{flags: c.Flags}
		held[c.Path] = h
	}
	switch {
	case c.Type == xbstream.TypeEOF:
		delete(held, c.Path)
		return h, nil
	case c.Type != xbstream.TypePayload || c.Offset != uint64(len(h.content)):
		return nil, fmt.Errorf("%s: a %v chunk at offset %d; backstream takes this file only as written front to back", c.Path, c.Type, c.Offset)
	case len(h.content)+len(c.Payload) > maxMetadataFile:
		return nil, fmt.Errorf("%s: more than %d bytes", c.Path, maxMetadataFile)
	}
	h.content = append(h.content, c.Payload...)
	return nil, nil
}

// addFile adds a withheld file to w: its content as one payload chunk
// with flags (encoded anew, so its length and checksum are the new
// content's), then its end chunk end (raw its encoding), as before.
func addFile(w *archive.Writer, flags xbstream.Flags, end *xbstream.Chunk, raw, content []byte) error {
	if len(content) > 0 {
		c, craw, err := w.Encode(&xbstream.Chunk{Flags: flags, Type: xbstream.TypePayload, Path: end.Path, Payload: content})
		if err != nil {
			return err
		}
		if err := w.Add(&c, craw); err != nil {
			return err
		}
	}
	return w.Add(end, raw)
}

func readAllFrom(f *os.File) ([]byte, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

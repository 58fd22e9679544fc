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
	ExtraArgs   []string  // passed to mariabackup as given
	Log         io.Writer // optional live copy of mariabackup's stderr
	Progress    Progress  // optional
	Version     string    // backstream's version, for the manifest
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
	db, err := mariadb.Open(ctx, job.Conn, "")
	if err != nil {
		return nil, err
	}
	server, err := mariadb.Inspect(ctx, db)
	if err == nil {
		err = mariadb.CheckBackupPrivileges(ctx, db, server)
	}
	if err == nil {
		err = CheckLocal(job.Conn, server.Datadir, "/proc")
	}
	fileKey := ""
	if err == nil {
		fileKey, err = serverFileKey(ctx, db)
	}
	var sources []mariadb.ReplicationSource
	if err == nil {
		sources, err = replicaSources(ctx, db, server, job.Progress)
	}
	var galera mariadb.Galera
	if err == nil {
		galera, err = mariadb.ReadGalera(ctx, db)
	}
	if err == nil && job.Checkpoint {
		// The statement returns once the checkpoint is written.
		if _, err = db.ExecContext(ctx, "SET GLOBAL innodb_log_checkpoint_now = ON"); err != nil {
			err = fmt.Errorf("--checkpoint: the server did not advance its checkpoint: %w", err)
		}
	}
	db.Close()
	if err != nil {
		return nil, err
	}
	bin, err := FindBinary(ctx, job.Mariabackup, job.MariadbPath, server.Major, server.Minor, ForServer)
	if err != nil {
		return nil, err
	}
	var parent *archive.Manifest
	if job.Parent != nil {
		if parent, err = job.Parent(ctx, server); err != nil {
			return nil, err
		}
		if parent != nil {
			if err := CheckParent(parent, server); err != nil {
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
		job.ExtraArgs = append(slices.Clone(job.ExtraArgs), GaleraArg)
	}
	for attempt := 1; ; attempt++ {
		var count *copyCounter
		if job.Progress != nil {
			stage := "streaming"
			if attempt > 1 {
				// This attempt copies the datadir again from its start (and
				// the DDL may have changed its size): it is counted alone.
				job.Progress.Restart()
				stage = fmt.Sprintf("streaming, attempt %d of %d", attempt, ddlRaceAttempts)
			}
			count = newCopyCounter(job.Progress, estimateCopy(server))
			job.Progress.Stage(stage)
		}
		m, err = backupOnce(ctx, job, started, parent, server, sources, galera.Node, bin, fileKey, count)
		var race *DDLRaceError
		if !errors.As(err, &race) || attempt == ddlRaceAttempts {
			return m, err
		}
		if job.Progress != nil {
			job.Progress.Logf("%v; taking the backup again (attempt %d of %d)", err, attempt+1, ddlRaceAttempts)
		}
		started = time.Now().UTC()
	}
}

// backupOnce takes the backup once, under a new id. fileKey is the
// password of the server's key file, which the backup withholds ("" for
// none); sources are the server's replication connections (none when it
// is no replica); galera says the server is a Galera node.
func backupOnce(ctx context.Context, job BackupJob, started time.Time, parent *archive.Manifest, server *mariadb.Server, sources []mariadb.ReplicationSource, galera bool, bin *Binary, fileKey string, count *copyCounter) (*archive.Manifest, error) {
	id := backupid.New(started)
	if job.Progress != nil {
		job.Progress.SetBackup(id)
	}
	header := &archive.Manifest{
		Format: archive.FormatVersion, ID: id, Kind: archive.KindPhysical, Started: started,
		Server: archive.Server{Version: server.Version, Hostname: server.Hostname, ServerID: server.ServerID, Datadir: server.Datadir},
		Tools:  archive.Tools{Backstream: job.Version, Mariabackup: bin.Version},
		Codec:  job.Codec.String(), Hash: job.Hash, Encryption: job.Encryption,
	}
	header.Chain = id
	if fileKey != "" {
		// The header says so from the start: a receiver restoring as the
		// backup arrives needs the password before it prepares.
		header.Withheld = []string{FileKeyVariable}
	}
	if parent != nil {
		header.Parent, header.Chain, header.Depth = parent.ID, parent.Chain, parent.Depth+1
		if header.Chain == "" {
			header.Chain = parent.ID
		}
	}
	header.Streams = archive.Streams(job.Parallel, job.Codec)
	logFile, err := scratch.CreateTemp("mariabackup-*.log")
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", id, err)
	}
	defer os.Remove(logFile.Name())
	defer logFile.Close()
	var log io.Writer = logFile
	if job.Log != nil {
		log = io.MultiWriter(logFile, job.Log)
	}
	return archive.WriteTo(ctx, job.Dest, header, func() (*archive.Manifest, error) {
		return runBackup(ctx, job, header, parent, server, sources, galera, bin, fileKey, log, logFile, count)
	})
}

func runBackup(ctx context.Context, job BackupJob, header, parent *archive.Manifest, server *mariadb.Server, sources []mariadb.ReplicationSource, galera bool, bin *Binary, fileKey string, log io.Writer, logFile *os.File, count *copyCounter) (*archive.Manifest, error) {
	id := header.ID
	childCtx, stopChild := context.WithCancel(ctx)
	defer stopChild()
	var counter archive.Counter
	if job.Progress != nil {
		counter = inUncounted{job.Progress}
	}
	w, err := archive.NewWriter(ctx, archive.WriterOptions{
		Output: job.Dest.Output(id, job.Hash), Streams: job.Parallel, Workers: job.Workers,
		Codec: job.Codec, Hash: job.Hash, Counter: counter,
	})
	if err != nil {
		return nil, err
	}
	args := job.ExtraArgs
	if parent != nil {
		// The parent's end LSN comes from its manifest, never from a file
		// the user keeps.
		args = append([]string{fmt.Sprintf("--incremental-lsn=%d", IncrementalLSN(parent))}, args...)
	}
	if len(sources) > 0 {
		// A replica's backup records where it stood in its primary's
		// history, read while commits are blocked, as the binlog info is.
		args = append([]string{"--slave-info"}, args...)
	}
	// The catalog before the copy: the table guard's first reading.
	before, err := readCatalog(ctx, job.Conn)
	if err != nil {
		w.Abort(err)
		return nil, err
	}
	launched := time.Now()
	mb, err := StartBackup(childCtx, BackupOptions{
		Binary: bin, Conn: job.Conn, Datadir: server.Datadir, Parallel: job.Parallel,
		Throttle: job.MaxIO, ExtraArgs: args, Log: log, Withhold: []string{fileKey},
	})
	if err != nil {
		w.Abort(err)
		return nil, err
	}
	xr := xbstream.NewReader(throttle.NewReader(childCtx, mb.Stdout, throttle.NewLimiter(job.MaxRate)))
	xr.Alloc = w.Buffer
	meta, hadFileKey, streamErr := pump(xr, w, fileKey, count)
	if streamErr != nil && !mb.stdoutEnded() {
		// mariabackup may still be writing: stop it, or it blocks on the
		// full pipe. One that closed its stdout is ending by itself (it
		// was killed, or failed), and its exit status says why; stopping
		// it would only report that we did.
		stopChild()
	}
	res, waitErr := mb.Wait()
	var across *archive.RenameAcrossStreamsError
	switch {
	case streamErr != nil && waitErr != nil && !errors.Is(streamErr, errSink):
		// The stream broke because mariabackup failed: its message is the one to read.
		w.Abort(waitErr)
		return nil, fmt.Errorf("%w (the stream ended early: %v)", waitErr, streamErr)
	case errors.As(streamErr, &across):
		// DDL renamed a non-InnoDB table during the copy: the same race
		// the DDL log shows, met before the log can be read.
		err := &DDLRaceError{Tables: []string{fmt.Sprintf("%s (file %s renamed to %s)", tableOfFile(across.Path), across.Path, across.NewPath)}}
		w.Abort(err)
		return nil, err
	case streamErr != nil:
		w.Abort(streamErr)
		return nil, streamErr
	case waitErr != nil:
		w.Abort(waitErr)
		return nil, waitErr
	}
	// mariabackup has ended its backup stages: the server's DDL log holds
	// what ran during the copy.
	raced, err := racedDDL(server.Datadir, launched)
	if err == nil && len(raced) > 0 {
		err = &DDLRaceError{Tables: raced}
	}
	if err != nil {
		w.Abort(err)
		return nil, err
	}
	if hadFileKey && fileKey == "" {
		// backup-my.cnf held a password the server did not show: the
		// stream's copy went without it, but the manifest cannot tell a
		// restore that it must be given.
		err := fmt.Errorf("the stream's %s sets %s, which the server did not show: the backup is not committed", BackupMyCnf, FileKeyVariable)
		w.Abort(err)
		return nil, err
	}
	var primary *archive.PrimaryPosition
	if len(sources) > 0 {
		if primary, err = addSourceInfo(ctx, job, server, sources, meta, w); err != nil {
			w.Abort(err)
			return nil, err
		}
	}
	written, err := w.Close()
	if err != nil {
		return nil, err
	}
	logData, err := readAllFrom(logFile)
	if err != nil {
		return nil, fmt.Errorf("read mariabackup log: %w", err)
	}

	m := *header
	if m.Tables, err = checkTables(ctx, job.Conn, before, written.Files, server.Datadir, launched, logData); err != nil {
		return nil, err
	}
	m.Positions = archive.Positions{FromLSN: res.Checkpoints.FromLSN, ToLSN: res.Checkpoints.ToLSN, LastLSN: res.Checkpoints.LastLSN}
	for _, name := range []string{"xtrabackup_binlog_info", "mariadb_backup_binlog_info"} {
		if b, ok := meta[name]; ok && len(strings.TrimSpace(string(b))) > 0 {
			bi, err := ParseBinlogInfo(b)
			if err != nil {
				return nil, fmt.Errorf("%s in the stream: %w", name, err)
			}
			m.Positions.BinlogFile, m.Positions.BinlogPosition, m.Positions.GTID = bi.File, bi.Position, bi.GTID
		}
	}
	m.Positions.Primary = primary
	if m.Positions.Galera, err = galeraPosition(meta); err != nil {
		return nil, fmt.Errorf("%w in the stream", err)
	}
	if galera && m.Positions.Galera == nil {
		return nil, fmt.Errorf("backup %s: mariabackup %s wrote no galera info on this Galera node: the backup is not committed", id, GaleraArg)
	}
	// The stream's copies are what --prepare reads in a restored datadir;
	// the extra-lsndir's replace them as meta objects. The manifest must
	// agree with both, or it is not committed.
	if err := CheckPositions(&m, parent, meta); err != nil {
		return nil, fmt.Errorf("%w (in the stream)", err)
	}
	if res.CheckpointsName != "" {
		meta[res.CheckpointsName] = res.RawCheckpoints
	}
	if res.InfoName != "" {
		meta[res.InfoName] = withholdInfo(res.RawInfo, fileKey)
	}
	if err := CheckPositions(&m, parent, meta); err != nil {
		return nil, err
	}
	if job.Progress != nil {
		job.Progress.Stage("committing")
	}
	for _, name := range slices.Sorted(maps.Keys(meta)) {
		o, err := job.Dest.PutMeta(ctx, id, "meta/"+name, meta[name], job.Hash)
		if err != nil {
			return nil, err
		}
		m.Meta = append(m.Meta, o)
	}
	o, err := job.Dest.PutMeta(ctx, id, LogName, logData, job.Hash)
	if err != nil {
		return nil, err
	}
	m.Meta = append(m.Meta, o)
	m.Complete(written)
	if err := job.Dest.Commit(ctx, &m); err != nil {
		return nil, err
	}
	return &m, nil
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
// nil, counts every chunk toward the backup's progress.
func pump(r *xbstream.Reader, w *archive.Writer, fileKey string, count *copyCounter) (meta map[string][]byte, hadFileKey bool, err error) {
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

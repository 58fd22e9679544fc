package physical

import (
	"context"
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
	"github.com/backstream/backstream/internal/xbstream"
)

// Progress is what a long job reports to; a progress.Tracker fits.
type Progress interface {
	archive.Counter
	SetTotal(n int64)
	Stage(name string)
}

// BackupJob is one physical backup.
type BackupJob struct {
	Dest        archive.Destination
	Conn        mariadb.Config
	Mariabackup string // explicit mariabackup path; "" searches PATH
	Parallel    int    // streams and mariabackup copy threads
	Workers     int    // compression goroutines; 0 means GOMAXPROCS
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
}

// maxMetadataFile bounds the copies of small metadata files kept from the
// stream (backup-my.cnf, xtrabackup_info, ...).
const maxMetadataFile = 1 << 20

// logName is the meta object holding mariabackup's stderr.
const logName = "meta/mariabackup.log"

// RunBackup takes a hot physical backup: mariabackup streams, the archive
// writer fans the stream out into compressed stream objects, and the
// manifest is committed only after mariabackup exited 0 with "completed
// OK!", the stream ended cleanly and every object is durable. On any failure
// the backup's objects are removed and no manifest exists.
func RunBackup(ctx context.Context, job BackupJob) (*archive.Manifest, error) {
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
	db.Close()
	if err != nil {
		return nil, err
	}
	bin, err := FindBinary(ctx, job.Mariabackup, server.Major, server.Minor)
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
	if job.Progress != nil {
		job.Progress.SetTotal(DatadirSize(server.Datadir))
		job.Progress.Stage("streaming")
	}

	id := backupid.New(started)
	header := &archive.Manifest{
		Format: archive.FormatVersion, ID: id, Kind: archive.KindPhysical, Started: started,
		Server: archive.Server{Version: server.Version, Hostname: server.Hostname, ServerID: server.ServerID, Datadir: server.Datadir},
		Tools:  archive.Tools{Backstream: job.Version, Mariabackup: bin.Version},
		Codec:  job.Codec.String(), Hash: job.Hash, Encryption: job.Encryption,
	}
	header.Chain = id
	if parent != nil {
		header.Parent, header.Chain, header.Depth = parent.ID, parent.Chain, parent.Depth+1
		if header.Chain == "" {
			header.Chain = parent.ID
		}
	}
	for i := range job.Parallel {
		header.Streams = append(header.Streams, archive.Stream{Object: archive.Object{Name: archive.StreamName(i, job.Codec)}})
	}
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
		return runBackup(ctx, job, header, parent, server, bin, log, logFile)
	})
}

func runBackup(ctx context.Context, job BackupJob, header, parent *archive.Manifest, server *mariadb.Server, bin *Binary, log io.Writer, logFile *os.File) (*archive.Manifest, error) {
	id := header.ID
	childCtx, stopChild := context.WithCancel(ctx)
	defer stopChild()
	w, err := archive.NewWriter(ctx, archive.WriterOptions{
		Output: job.Dest.Output(id, job.Hash), Streams: job.Parallel, Workers: job.Workers,
		Codec: job.Codec, Hash: job.Hash, Counter: job.Progress,
	})
	if err != nil {
		return nil, err
	}
	args := job.ExtraArgs
	if parent != nil {
		// The parent's end LSN comes from its manifest, never from a file
		// the user keeps.
		args = append([]string{fmt.Sprintf("--incremental-lsn=%d", parent.Positions.ToLSN)}, args...)
	}
	mb, err := StartBackup(childCtx, BackupOptions{
		Binary: bin, Conn: job.Conn, Datadir: server.Datadir, Parallel: job.Parallel,
		Throttle: job.MaxIO, ExtraArgs: args, Log: log,
	})
	if err != nil {
		w.Abort(err)
		return nil, err
	}
	xr := xbstream.NewReader(throttle.NewReader(childCtx, mb.Stdout, throttle.NewLimiter(job.MaxRate)))
	xr.Alloc = w.Buffer
	meta, streamErr := pump(xr, w)
	if streamErr != nil && !mb.stdoutEnded() {
		// mariabackup may still be writing: stop it, or it blocks on the
		// full pipe. One that closed its stdout is ending by itself (it
		// was killed, or failed), and its exit status says why; stopping
		// it would only report that we did.
		stopChild()
	}
	res, waitErr := mb.Wait()
	switch {
	case streamErr != nil && waitErr != nil && !errors.Is(streamErr, errSink):
		// The stream broke because mariabackup failed: its message is the one to read.
		w.Abort(waitErr)
		return nil, fmt.Errorf("%w (the stream ended early: %v)", waitErr, streamErr)
	case streamErr != nil:
		w.Abort(streamErr)
		return nil, streamErr
	case waitErr != nil:
		w.Abort(waitErr)
		return nil, waitErr
	}
	written, err := w.Close()
	if err != nil {
		return nil, err
	}

	m := *header
	m.Positions = archive.Positions{FromLSN: res.Checkpoints.FromLSN, ToLSN: res.Checkpoints.ToLSN, LastLSN: res.Checkpoints.LastLSN}
	if parent != nil && (res.Checkpoints.BackupType != "incremental" || m.Positions.FromLSN != parent.Positions.ToLSN) {
		return nil, fmt.Errorf("mariabackup made a %q backup from LSN %d, not an incremental from LSN %d (the end of %s)",
			res.Checkpoints.BackupType, m.Positions.FromLSN, parent.Positions.ToLSN, parent.ID)
	}
	for _, name := range []string{"xtrabackup_binlog_info", "mariadb_backup_binlog_info"} {
		if b, ok := meta[name]; ok && len(strings.TrimSpace(string(b))) > 0 {
			bi, err := ParseBinlogInfo(b)
			if err != nil {
				return nil, fmt.Errorf("%s in the stream: %w", name, err)
			}
			m.Positions.BinlogFile, m.Positions.BinlogPosition, m.Positions.GTID = bi.File, bi.Position, bi.GTID
		}
	}
	if res.CheckpointsName != "" {
		meta[res.CheckpointsName] = res.RawCheckpoints
	}
	if res.InfoName != "" {
		meta[res.InfoName] = res.RawInfo
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
	logData, err := readAllFrom(logFile)
	if err != nil {
		return nil, fmt.Errorf("read mariabackup log: %w", err)
	}
	o, err := job.Dest.PutMeta(ctx, id, logName, logData, job.Hash)
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

// errSink marks pump errors that came from the archive writer, not the stream.
var errSink = errors.New("archive writer")

// pump moves every chunk from the stream into the archive writer and keeps
// copies of the small metadata files it passes.
func pump(r *xbstream.Reader, w *archive.Writer) (map[string][]byte, error) {
	meta := map[string][]byte{}
	for {
		c, raw, err := r.Next()
		if err == io.EOF {
			return meta, nil
		}
		if err != nil {
			return nil, fmt.Errorf("mariabackup stream at byte %d: %w", r.Offset(), err)
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
			return nil, fmt.Errorf("%w: %w", errSink, err)
		}
	}
}

func readAllFrom(f *os.File) ([]byte, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

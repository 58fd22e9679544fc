// Package pitr restores a server to a point in time: the newest physical
// backup before the target (its chain included), then the archived binary
// logs from the backup's position up to the target, replayed by a
// throwaway server started on the restored datadir and stopped cleanly.
// It reads the repository through its API and writes the datadir through
// package restore; it knows nothing of flags or of how progress is shown.
package pitr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/childenv"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/scratch"
)

// Target is the point to restore to: a time (UTC), or a GTID whose
// transaction is the last one replayed.
type Target struct {
	Time time.Time
	GTID string
}

func (t Target) String() string {
	if t.GTID != "" {
		return "GTID " + t.GTID
	}
	return t.Time.UTC().Format(time.DateTime) + " UTC"
}

// Result says what was restored and replayed.
type Result struct {
	Backup   *archive.Manifest
	Binlogs  []string
	Replayed string // the position replay stopped at, as asked
}

// Run restores into job.TargetDir the newest backup of r before target t
// (its chain included) and replays the archived binary logs up to t;
// job.Links is chosen here and prepare is implied. On any failure the
// target directory is left empty (or absent, if Run made it).
func Run(ctx context.Context, r *repo.Repo, t Target, job restore.Job) (res *Result, err error) {
	ms, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	base, err := chooseBackup(ms, t)
	if err != nil {
		return nil, err
	}
	files, err := r.Binlogs(ctx)
	if err != nil {
		return nil, err
	}
	needed, err := coveringFiles(base, files, t)
	if err != nil {
		return nil, err
	}
	links, err := restore.Links(ctx, r, base)
	if err != nil {
		return nil, err
	}
	// A missing or wrong key must fail before the datadir is written,
	// naming what it cannot open.
	for _, l := range links {
		if err := r.CheckReadable(ctx, l.Manifest); err != nil {
			return nil, err
		}
	}
	for _, m := range needed {
		if err := r.CheckBinlogReadable(ctx, m); err != nil {
			return nil, err
		}
	}
	target, err := restore.Claim(job.TargetDir, base.ID)
	if err != nil {
		return nil, err
	}
	// The replay runs inside the restore, before Finish: a datadir
	// replayed half way is emptied, or keeps the restore's marker if the
	// process dies.
	defer func() {
		if err != nil {
			err = target.Abandon(err)
		}
	}()
	job.Prepare = true
	if err := target.Write(ctx, links, job.Options); err != nil {
		return nil, err
	}
	if err := replayInto(ctx, r, job.Options, base, needed, t, target.Dir()); err != nil {
		return nil, err
	}
	if err := target.Finish(job.Owner); err != nil {
		return nil, err
	}
	res = &Result{Backup: base, Replayed: t.String()}
	for _, m := range needed {
		res.Binlogs = append(res.Binlogs, m.Binlog.Name)
	}
	return res, nil
}

// replayInto fetches the needed binary logs and replays them on the
// prepared datadir target.
func replayInto(ctx context.Context, r *repo.Repo, opt restore.Options, base *archive.Manifest, needed []*archive.Manifest, t Target, target string) error {
	work, err := scratch.MkdirTemp("pitr-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if opt.Progress != nil {
		opt.Progress.Stage("fetching binary logs")
	}
	var paths []string
	for _, m := range needed {
		dir := filepath.Join(work, "binlogs")
		w, err := physical.NewDatadirWriter(dir)
		if err != nil {
			return err
		}
		err = archive.Read(ctx, archive.ReadOptions{Input: r.BinlogInput(m.Binlog.Source, m.Binlog.Name), Manifest: m, Sink: w})
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("binary log %s: %w", m.Binlog.Name, err)
		}
		paths = append(paths, filepath.Join(dir, m.Binlog.Name))
	}
	if opt.Progress != nil {
		opt.Progress.Stage("replaying binary logs")
	}
	return replay(ctx, work, target, base, paths, t, opt.UseMemory, opt.Log)
}

// chooseBackup picks the newest physical backup whose position is before
// the target: finished before the time, or with a GTID position not past
// the target GTID in its domain.
func chooseBackup(ms []*archive.Manifest, t Target) (*archive.Manifest, error) {
	var first *archive.Manifest
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if m.Kind != archive.KindPhysical || m.Positions.BinlogFile == "" {
			continue
		}
		first = m
		if t.GTID != "" {
			before, err := gtidNotAfter(m.Positions.GTID, t.GTID)
			if err != nil {
				return nil, err
			}
			if before {
				return m, nil
			}
			continue
		}
		if !m.Finished.After(t.Time) {
			return m, nil
		}
	}
	if first == nil {
		return nil, errors.New("no physical backup with a binary log position in the repository: a point-in-time restore starts from one")
	}
	return nil, fmt.Errorf("%s is before the first usable backup, %s (finished %s UTC, GTID %s)", t, first.ID, first.Finished.UTC().Format(time.DateTime), first.Positions.GTID)
}

// gtidNotAfter reports whether the position list pos (domain-server-seq,
// comma-separated) is at or before target in target's domain.
func gtidNotAfter(pos, target string) (bool, error) {
	td, _, ts, err := ParseGTID(target)
	if err != nil {
		return false, fmt.Errorf("--until-gtid %q: %w", target, err)
	}
	for _, p := range strings.Split(pos, ",") {
		d, _, s, err := ParseGTID(strings.TrimSpace(p))
		if err == nil && d == td {
			return s <= ts, nil
		}
	}
	return true, nil // the domain has no transactions before the backup
}

// ParseGTID reads one GTID, domain-server-sequence.
func ParseGTID(s string) (domain, server uint32, seq uint64, err error) {
	parts := strings.Split(s, "-")
	if len(parts) != 3 {
		return 0, 0, 0, fmt.Errorf("want domain-server-sequence, e.g. 0-1-4711")
	}
	d, err1 := strconv.ParseUint(parts[0], 10, 32)
	sv, err2 := strconv.ParseUint(parts[1], 10, 32)
	sq, err3 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, 0, fmt.Errorf("want domain-server-sequence, e.g. 0-1-4711")
	}
	return uint32(d), uint32(sv), sq, nil
}

// coveringFiles returns the archived files from the backup's binary log
// file to the first one reaching the target, refusing a gap in the
// numbering or a target past the archive, naming the files.
func coveringFiles(base *archive.Manifest, files []*archive.Manifest, t Target) ([]*archive.Manifest, error) {
	src := binlog.SourceKey(base.Server.Hostname, base.Server.ServerID)
	var mine []*archive.Manifest
	for _, m := range files {
		if m.Binlog.Source == src && m.Binlog.Name >= base.Positions.BinlogFile {
			mine = append(mine, m)
		}
	}
	if len(mine) == 0 || mine[0].Binlog.Name != base.Positions.BinlogFile {
		return nil, fmt.Errorf("binary log %s of %s, where backup %s stands, is not archived (run backstream binlog)", base.Positions.BinlogFile, src, base.ID)
	}
	var tDomain uint32
	var tSeq uint64
	if t.GTID != "" {
		tDomain, _, tSeq, _ = ParseGTID(t.GTID)
	}
	for i, m := range mine {
		if i > 0 {
			if gap := binlog.NumberGap(mine[i-1].Binlog.Name, m.Binlog.Name); gap != "" {
				return nil, fmt.Errorf("the archive has a gap before %s: %s not archived, so %s cannot be reached", m.Binlog.Name, gap, t)
			}
		}
		var reached bool
		if t.GTID != "" {
			d, _, s, err := ParseGTID(m.Binlog.LastGTID)
			reached = err == nil && d == tDomain && s >= tSeq
		} else {
			reached = !m.Binlog.LastTime.Before(t.Time)
		}
		if reached {
			return mine[:i+1], nil
		}
	}
	last := mine[len(mine)-1].Binlog
	return nil, fmt.Errorf("%s is past the archived binary logs of %s: the last archived file, %s, ends at %s UTC (GTID %s); archive more with backstream binlog",
		t, src, last.Name, last.LastTime.Format(time.DateTime), last.LastGTID)
}

// replay starts a throwaway server on the restored datadir and pipes
// mariadb-binlog's output for the files, from the backup's position to the
// target, into it; then stops it cleanly.
func replay(ctx context.Context, work, datadir string, base *archive.Manifest, files []string, t Target, useMemory string, log io.Writer) error {
	srv, err := sandbox.Start(ctx, sandbox.Options{
		Dir: filepath.Join(work, "server"), Datadir: datadir, NoBinlog: true, BufferPool: useMemory,
		// The restored grant tables hold the source's accounts, whose
		// passwords backstream does not know. A row event of many rows
		// is one BINLOG statement, which may be far above the defaults.
		Args: []string{"--skip-grant-tables", "--skip-slave-start", "--max-allowed-packet=1G"},
	})
	if err != nil {
		return fmt.Errorf("start a server on the restored datadir: %w", err)
	}
	defer srv.Close()
	args := []string{"--no-defaults"}
	if t.GTID != "" {
		args = append(args, "--start-position="+base.Positions.GTID, "--stop-position="+t.GTID)
	} else {
		args = append(args, fmt.Sprintf("--start-position=%d", base.Positions.BinlogPosition),
			"--stop-datetime="+t.Time.UTC().Format(time.DateTime))
	}
	args = append(args, files...)
	dump := exec.CommandContext(ctx, "mariadb-binlog", args...)
	dump.Env = childenv.Env("TZ=UTC")
	load := exec.CommandContext(ctx, "mariadb", "--no-defaults", "--socket="+srv.Socket, "--user=root", "--binary-mode", "--max-allowed-packet=1G")
	load.Env = childenv.Env()
	pipe, err := dump.StdoutPipe()
	if err != nil {
		return err
	}
	load.Stdin = pipe
	var dumpErr, loadErr strings.Builder
	dump.Stderr, load.Stderr = &dumpErr, &loadErr
	if log != nil {
		load.Stdout = log
	}
	if err := load.Start(); err != nil {
		return fmt.Errorf("start mariadb: %w", err)
	}
	if err := dump.Start(); err != nil {
		load.Process.Kill()
		load.Wait()
		return fmt.Errorf("start mariadb-binlog: %w", err)
	}
	derr := dump.Wait()
	lerr := load.Wait()
	// The client first: when it stops on an error, mariadb-binlog dies of
	// the broken pipe, which says nothing.
	switch {
	case lerr != nil:
		return fmt.Errorf("replaying the binary logs failed: %v: %s", lerr, strings.TrimSpace(loadErr.String()))
	case derr != nil:
		return fmt.Errorf("mariadb-binlog failed: %v: %s", derr, strings.TrimSpace(dumpErr.String()))
	}
	if err := srv.Stop(ctx); err != nil {
		return fmt.Errorf("stop the server after the replay: %w", err)
	}
	return nil
}

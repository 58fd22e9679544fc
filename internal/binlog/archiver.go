package binlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/childenv"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/scratch"
)

// Archiver copies a server's binary logs into a repository through the
// replication protocol (mariadb-binlog --read-from-remote-server --raw),
// so it works from any host that can connect. Each closed file becomes
// binlogs/<source>/<file>/: one compressed, checksummed stream object and
// a manifest with the file's index, written last.
type Archiver struct {
	Repo    *repo.Repo
	Conn    mariadb.Config
	Codec   codec.Codec
	Hash    string
	Binary  string           // mariadb-binlog; "" searches PATH
	Version string           // backstream's, for manifests
	Log     func(msg string) // hears of each file archived, and of restarts
	Poll    time.Duration    // how often --follow looks for finished files; 0 means 500ms
	// Encryption, when the repository encrypts what it stores, is recorded
	// in each file's manifest.
	Encryption *archive.Encryption
}

// serverFile is one binary log the server lists.
type serverFile struct {
	name string
	size int64
}

func (a *Archiver) log(format string, args ...any) {
	if a.Log != nil {
		a.Log(fmt.Sprintf(format, args...))
	}
}

// Run archives every closed binary log file the repository lacks. With
// follow it keeps going: it streams the active file as the server writes
// it, archives each file once the server moves to the next, and reconnects
// when the server goes away; it returns when ctx ends.
func (a *Archiver) Run(ctx context.Context, follow bool) error {
	bin, err := a.findBinary()
	if err != nil {
		return err
	}
	for {
		err := a.pass(ctx, bin, follow)
		if !follow || ctx.Err() != nil {
			if follow {
				return nil // stopped by the user: what is archived stays
			}
			return err
		}
		a.log("binlog: %v; reconnecting in 2s", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Second):
		}
	}
}

func (a *Archiver) findBinary() (string, error) {
	if a.Binary != "" {
		return a.Binary, nil
	}
	for _, name := range []string{"mariadb-binlog", "mysqlbinlog"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("mariadb-binlog not found in PATH (Debian: apt-get install mariadb-client)")
}

// pass connects once, archives what is closed and, following, streams on
// until the connection or the tool ends.
func (a *Archiver) pass(ctx context.Context, bin string, follow bool) error {
	db, err := mariadb.Open(ctx, a.Conn, "")
	if err != nil {
		return err
	}
	server, err := mariadb.Inspect(ctx, db)
	if err != nil {
		db.Close()
		return err
	}
	files, err := listServerFiles(ctx, db)
	db.Close()
	if err != nil {
		return err
	}
	src := SourceKey(server.Hostname, server.ServerID)
	done, err := a.archived(ctx, src)
	if err != nil {
		return err
	}
	// Resume after the newest file the repository holds: older files it
	// lacks were expired (or purged before they were archived, a gap that
	// list --binlogs shows), and must not come back.
	first := 0
	for i, f := range files {
		if done[f.name] {
			first = i + 1
		}
	}
	if first >= len(files) {
		return nil
	}
	spool, err := scratch.MkdirTemp("binlog-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(spool)
	if !follow {
		for _, f := range files[first : len(files)-1] {
			if err := a.fetch(ctx, bin, spool, f.name); err != nil {
				return err
			}
			if err := a.store(ctx, server, src, filepath.Join(spool, f.name)); err != nil {
				return err
			}
			os.Remove(filepath.Join(spool, f.name)) // a backlog must not pile up in the temp directory
		}
		return nil
	}
	return a.follow(ctx, bin, server, src, spool, files[first].name)
}

func listServerFiles(ctx context.Context, db *sql.DB) ([]serverFile, error) {
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return nil, fmt.Errorf("SHOW BINARY LOGS: %w (is the binary log on? log_bin must be set; the account needs BINLOG MONITOR)", err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []serverFile
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		var size int64
		fmt.Sscan(string(vals[1]), &size)
		out = append(out, serverFile{name: string(vals[0]), size: size})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("the server lists no binary logs (log_bin is off)")
	}
	return out, nil
}

// archived returns the names of the files of src the repository holds.
func (a *Archiver) archived(ctx context.Context, src string) (map[string]bool, error) {
	ms, err := a.Repo.Binlogs(ctx)
	if err != nil {
		return nil, err
	}
	done := map[string]bool{}
	for _, m := range ms {
		if m.Binlog.Source == src {
			done[m.Binlog.Name] = true
		}
	}
	return done, nil
}

// command builds mariadb-binlog reading from the server into spool, with
// the credentials in a private option file (never on its command line).
func (a *Archiver) command(ctx context.Context, bin, spool, first string, stopNever bool) (*exec.Cmd, func(), error) {
	cnf := filepath.Join(spool, ".client.cnf")
	os.Remove(cnf)
	if err := mariadb.WriteDefaultsFile(cnf, a.Conn); err != nil {
		return nil, nil, err
	}
	args := []string{"--defaults-extra-file=" + cnf, "--read-from-remote-server", "--raw",
		"--result-file=" + spool + "/"}
	if stopNever {
		args = append(args, "--stop-never")
	}
	args = append(args, first)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = childenv.Env("HOME=" + spool) // no ~/.my.cnf over our file, no secrets it has no use for
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd, func() { os.Remove(cnf) }, nil
}

// fetch copies one closed file into spool.
func (a *Archiver) fetch(ctx context.Context, bin, spool, name string) error {
	cmd, cleanup, err := a.command(ctx, bin, spool, name, false)
	if err != nil {
		return err
	}
	defer cleanup()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("mariadb-binlog reading %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// follow streams from first on, archiving each file once a newer one
// appears, until mariadb-binlog ends (the server went away) or ctx does.
func (a *Archiver) follow(ctx context.Context, bin string, server *mariadb.Server, src, spool, first string) error {
	// The child lives only as long as this call: a failure to store must
	// not leave it running (Run reconnects, and would start another).
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	cmd, cleanup, err := a.command(ctx, bin, spool, first, true)
	if err != nil {
		return err
	}
	defer cleanup()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start mariadb-binlog: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		stop()
		<-exited
	}()
	poll := a.Poll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	for {
		var waitErr error
		ended := false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case waitErr = <-exited:
			exited <- waitErr // for the deferred wait
			ended = true
		case <-time.After(poll):
		}
		names, err := spooled(spool)
		if err != nil {
			return err
		}
		// Every file but the newest is finished; when mariadb-binlog has
		// ended, the newest is finished only if it says so (closed).
		for i, n := range names {
			last := i == len(names)-1
			if last && !ended {
				break
			}
			if err := a.store(ctx, server, src, filepath.Join(spool, n)); err != nil {
				if last && errors.Is(err, errOpen) {
					break
				}
				return err
			}
			os.Remove(filepath.Join(spool, n))
		}
		if ended {
			return fmt.Errorf("mariadb-binlog ended: %v %s", waitErr, strings.TrimSpace(stderr.String()))
		}
	}
}

// spooled lists the binary log files in spool, in order.
func spooled(spool string) ([]string, error) {
	entries, err := os.ReadDir(spool)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// errOpen marks a file that does not end with a rotate or stop event.
var errOpen = errors.New("binary log file is still open")

// store indexes a finished file and archives it: its stream object first,
// its manifest last.
func (a *Archiver) store(ctx context.Context, server *mariadb.Server, src, path string) error {
	name := filepath.Base(path)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	ix, err := Scan(f)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !ix.Closed {
		return fmt.Errorf("%s: %w", name, errOpen)
	}
	ix.Source, ix.Name = src, name
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	started := time.Now().UTC()
	w, err := archive.NewWriter(ctx, archive.WriterOptions{
		Output: a.Repo.BinlogOutput(src, name, a.Hash), Streams: 1, Codec: a.Codec, Hash: a.Hash,
	})
	if err != nil {
		return err
	}
	if err := w.AddFile(name, f, 1<<20); err != nil {
		w.Abort(err)
		return fmt.Errorf("%s: %w", name, err)
	}
	res, err := w.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	m := &archive.Manifest{
		Format: archive.FormatVersion, ID: name, Kind: archive.KindBinlog, Started: started,
		Server: archive.Server{Version: server.Version, Hostname: server.Hostname, ServerID: server.ServerID},
		Tools:  archive.Tools{Backstream: a.Version}, Codec: a.Codec.String(), Hash: a.Hash, Binlog: &ix,
		Encryption: a.Encryption,
	}
	m.Complete(res)
	if err := a.Repo.CommitBinlog(ctx, m); err != nil {
		return err
	}
	a.log("archived %s: %d events, %s .. %s, GTID %s .. %s", name, ix.Events,
		ix.FirstTime.Format(time.DateTime), ix.LastTime.Format(time.DateTime), ix.FirstGTID, ix.LastGTID)
	return nil
}

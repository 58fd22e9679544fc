package sst

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/backstream/backstream/internal/durable"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/transport"
)

// stagingName is the directory inside the datadir the snapshot is restored
// and prepared in before it replaces the datadir's content: on the same
// file system, so that moving it into place is renames.
const stagingName = ".backstream-sst"

// join listens, prints the ready line, and takes what the donor sends: a
// snapshot, restored and prepared beside the datadir and then moved into
// it, or word that IST suffices. It prints the position the server starts
// from ("uuid:seqno domain"). However it fails, the datadir holds no part
// of a snapshot.
func join(ctx context.Context, req Request, set Settings, tok []byte, opt Options) (err error) {
	unsetAuth() // the joiner connects to no server
	listen, err := listenAddr(req.Address)
	if err != nil {
		return err
	}
	if err := checkFilesInDatadir(req); err != nil {
		return fmt.Errorf("joiner: %w", err)
	}
	staging := filepath.Join(req.Datadir, stagingName)
	// A transfer killed half-way left its staging behind.
	if err := os.RemoveAll(staging); err != nil {
		return fmt.Errorf("joiner: removing the staging of an earlier transfer: %w", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go watchParent(ctx, req.Parent, cancel)
	ln, err := transport.Listen(ctx, listen, transport.Options{Token: tok, CertFile: set.TLSCert, KeyFile: set.TLSKey})
	if err != nil {
		return fmt.Errorf("joiner: %w", err)
	}
	defer ln.Close()
	if _, err := fmt.Fprintf(opt.Stdout, "ready %s\n", readyAddress(listen)); err != nil {
		return err
	}
	refused := func(err error) { logf(opt.Log, "ERROR", "refused: %v", err) }
	c, err := accept(ctx, ln, refused)
	if err != nil {
		return fmt.Errorf("joiner: waiting for the donor: %w", causeOf(ctx, err))
	}
	typ, payload, err := c.ReadMessage(nil)
	if err == nil && typ != msgSnapshot && typ != msgBypass {
		err = fmt.Errorf("unexpected message %q", typ)
	}
	if err == nil {
		err = c.WriteMessage(msgAck, nil)
	}
	c.Close()
	if err != nil {
		return fmt.Errorf("joiner: the donor's first message: %w", err)
	}
	donorPos, donorDomain, _ := strings.Cut(string(payload), " ")
	if typ == msgBypass {
		logf(opt.Log, "INFO", "no snapshot: the donor sends the writes since this node's position by IST")
		return printPosition(opt, donorPos+" "+donorDomain)
	}
	logf(opt.Log, "INFO", "receiving a snapshot of %s into %s", donorPos, staging)
	defer func() {
		if err != nil {
			if rerr := os.RemoveAll(staging); rerr != nil {
				err = errors.Join(err, fmt.Errorf("joiner: removing %s: %w", staging, rerr))
			}
		}
	}()
	rv := &remote.Receiver{Listener: ln, Progress: opt.Progress, Rejected: refused,
		Datadir: &restore.Job{TargetDir: staging, Options: restore.Options{
			// The server writes grastate.dat from the position the
			// joiner reports.
			Prepare: true, NoGaleraState: true, UseMemory: set.UseMemory, Mariabackup: set.Mariabackup, Log: opt.Log}}}
	m, err := rv.Serve(ctx)
	if err != nil {
		return fmt.Errorf("joiner: %w", causeOf(ctx, err))
	}
	gp, err := physical.ReadGaleraInfo(staging)
	if err != nil {
		return fmt.Errorf("joiner: snapshot %s: %w", m.ID, err)
	}
	if gp.DomainID == "" {
		gp.DomainID = donorDomain
	}
	pos := strings.TrimSpace(gp.String() + " " + gp.DomainID)
	if err := removeBinlogs(req, staging); err != nil {
		return fmt.Errorf("joiner: %w", err)
	}
	if err := moveIntoPlace(staging, req.Datadir); err != nil {
		return fmt.Errorf("joiner: snapshot %s: %w", m.ID, err)
	}
	logf(opt.Log, "INFO", "snapshot %s in place in %s at %s", m.ID, req.Datadir, pos)
	return printPosition(opt, pos)
}

// checkFilesInDatadir refuses a joiner whose server keeps InnoDB files
// (the system tablespace, the redo log, the undo tablespaces) outside its
// datadir, as its option files and command line say: the snapshot
// replaces the datadir's content only, and a server started on it with
// the old files elsewhere would mix two states.
func checkFilesInDatadir(req Request) error {
	src := mariadb.ServerSource{DefaultsFile: req.DefaultsFile, DefaultsExtraFile: req.DefaultsExtraFile,
		Args: req.MysqldArgs, ArgsFrom: "the server's command line", NoDefaults: slices.Contains(req.MysqldArgs, "--no-defaults")}
	f, err := mariadb.ReadServerFiles(src)
	if err != nil {
		return fmt.Errorf("reading the server's options: %w", err)
	}
	for _, o := range []struct {
		name string
		s    mariadb.Setting
	}{{"innodb_data_home_dir", f.DataHomeDir}, {"innodb_log_group_home_dir", f.LogGroupHomeDir}, {"innodb_undo_directory", f.UndoDirectory}} {
		if !o.s.Set() || o.s.Value == "" {
			continue
		}
		dir := o.s.Value
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(req.Datadir, dir)
		}
		if filepath.Clean(dir) != filepath.Clean(req.Datadir) {
			return fmt.Errorf("%s = %s (%s) is outside the datadir %s: backstream's state transfer replaces the datadir only; set wsrep_sst_method=mariabackup on this node, or keep its InnoDB files in the datadir", o.name, o.s.Value, o.s.From, req.Datadir)
		}
	}
	return nil
}

// accept waits for the donor's first connection; connections refused on
// the way (wrong token, not TLS) are reported and do not end the wait.
func accept(ctx context.Context, ln *transport.Listener, refused func(error)) (*transport.Conn, error) {
	for {
		c, err := ln.Accept(ctx)
		var he *transport.HandshakeError
		if errors.As(err, &he) {
			refused(he)
			continue
		}
		if err != nil {
			return nil, err
		}
		if c.Purpose() == purpose {
			return c, nil
		}
		c.Abort(fmt.Sprintf("this joiner waits for a donor's %q connection first, not %q", purpose, c.Purpose()))
		refused(fmt.Errorf("connection %q from %s before the donor's", c.Purpose(), c.RemoteAddr()))
	}
}

func causeOf(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

func printPosition(opt Options, pos string) error {
	_, err := fmt.Fprintln(opt.Stdout, strings.TrimSpace(pos))
	return err
}

// kept are the datadir's files that a snapshot does not replace: the
// node's Galera state (grastate.dat, gvwstate.dat, the gcache, open while
// the server runs), its logs, pid file and certificates, and the staging.
func kept(name string) bool {
	switch name {
	case "grastate.dat", "gvwstate.dat", "galera.cache", "sst_in_progress", "wsrep_sst.pid", stagingName:
		return true
	}
	if strings.HasPrefix(name, "gcache.page.") {
		return true
	}
	for _, ext := range []string{".pem", ".err", ".log", ".pid", ".sock"} {
		// The DDL recovery log belongs to the data it recovers.
		if strings.HasSuffix(name, ext) && name != "ddl_recovery.log" {
			return true
		}
	}
	return false
}

// moveIntoPlace empties datadir of everything but what is kept and moves
// the prepared snapshot in staging into it.
func moveIntoPlace(staging, datadir string) error {
	old, err := os.ReadDir(datadir)
	if err != nil {
		return err
	}
	for _, e := range old {
		if !kept(e.Name()) {
			if err := os.RemoveAll(filepath.Join(datadir, e.Name())); err != nil {
				return err
			}
		}
	}
	fresh, err := os.ReadDir(staging)
	if err != nil {
		return err
	}
	for _, e := range fresh {
		to := filepath.Join(datadir, e.Name())
		if _, err := os.Lstat(to); err == nil && kept(e.Name()) {
			// The node's own (its log, its Galera state) stays.
			continue
		}
		if err := os.Rename(filepath.Join(staging, e.Name()), to); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(staging); err != nil {
		return err
	}
	// The restore synced the files; their new entries are durable once
	// the datadir is.
	return durable.Dirs(datadir)
}

// removeBinlogs drops the donor's binary logs a snapshot may carry and the
// joiner's old ones outside the datadir (those inside go with the rest of
// it): the joiner starts a binary log of its own from the snapshot's
// position, as the stock scripts have it.
func removeBinlogs(req Request, staging string) error {
	if req.Binlog == "" {
		return nil
	}
	base := filepath.Base(req.Binlog)
	isBinlog := func(name string) bool {
		rest, ok := strings.CutPrefix(name, base+".")
		return ok && (rest == "index" || rest == "state" || strings.Trim(rest, "0123456789") == "")
	}
	dirs := []string{staging}
	if d := filepath.Dir(req.Binlog); filepath.IsAbs(req.Binlog) && filepath.Clean(d) != filepath.Clean(req.Datadir) {
		dirs = append(dirs, d)
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for _, e := range entries {
			if !e.IsDir() && isBinlog(e.Name()) {
				if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

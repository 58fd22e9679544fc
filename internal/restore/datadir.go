// Package restore turns stored backups back into what a server runs on: a
// physical backup, or an incremental with its chain, into a datadir that
// is claimed before anything is written, verified as it is written,
// prepared, its tablespaces of external data directories placed where
// asked (never left pointing at the source's), owned and marked finished,
// or emptied again on failure; a logical backup loaded into a running
// server.
//
// What varies between restores is a value, not a hook: the links to write
// (from a repository, or one arriving over the network, whose input starts
// the transfer when first read) and the steps a caller composes between
// Claim and Finish (a point-in-time restore replays binary logs there).
// The package knows backups, inputs and target directories; it knows
// nothing of flags, of how progress is shown, or of where the bytes are
// stored beyond archive.Input.
package restore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/durable"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/toolpath"
)

// Link is one backup a restore writes: a full backup, or one link of an
// incremental chain.
type Link struct {
	Manifest *archive.Manifest // the backup, or its header while it is still arriving
	Input    archive.Input     // where its streams come from
	// Final, for a backup still arriving, provides its complete manifest
	// once the sender commits it (see archive.ReadOptions).
	Final func(ctx context.Context) (*archive.Manifest, error)
}

// Options say how a datadir is written and prepared.
type Options struct {
	Prepare     bool   // run mariabackup --prepare on the result (a chain needs it)
	UseMemory   string // --use-memory for prepare, e.g. "1G"
	Mariabackup string // explicit mariabackup binary; "" searches MariadbPath, then PATH
	// MariadbPath is searched before PATH for the tools of the backup's
	// version: mariabackup, and the server a restore test or a replay starts.
	MariadbPath toolpath.Path
	Workers     int             // decoding goroutines shared by all links; 0 means GOMAXPROCS
	Memory      *archive.Memory // the budget of what the reads hold at once (nil: archive.DefaultMemory, shared by the links)
	Log         io.Writer
	Progress    physical.Progress
	// SerialReplay makes a point-in-time restore replay the binary logs
	// through mariadb-binlog | mariadb instead of the server's parallel
	// applier.
	SerialReplay bool
	// DataDirs place the tablespaces of tables created with DATA
	// DIRECTORY in other directories (they need Prepare); those no
	// mapping names stay in the datadir (see datadirs.go).
	DataDirs []DirMap
	// Placed, if set, is told where the tablespaces of each external data
	// directory the backup recorded went.
	Placed func(Placement)
	// KeepLinkFiles leaves the .isl file of every tablespace the backup
	// recorded outside the datadir as the backup had it, pointing at the
	// source's path, instead of placing the tablespace (merge stores the
	// result as a backup again; no server may start on it).
	KeepLinkFiles bool
	// NoGaleraState leaves out the grastate.dat a prepare otherwise
	// writes for the backup of a Galera node (see
	// physical.WriteGrastate): for a datadir that is no server's yet (a
	// merge), or whose node's server writes its own (a state transfer).
	NoGaleraState bool
	// FileKey is the password of the encryption plugin's key file (or
	// FILE:<path>), for backups that withheld it (see CheckFileKey);
	// "" if none was given.
	FileKey string
	// Files, if set, restores the files it accepts (paths in the backup,
	// an increment's .delta and .meta included) and, where the backup
	// cannot be read in part, those that share their stream; prepare
	// takes the tablespaces left out as absent (importtable restores a
	// table's files and the system's this way).
	Files func(path string) bool
	// NoSync leaves what the restore wrote to the page cache: Finish does
	// not sync it (see durable), and the writers do not start writeback.
	// For scratch datadirs (a restore test, a merge's or an import's work
	// directory), whose loss in a crash loses nothing, and where the user
	// says so (--no-sync).
	NoSync bool
}

// Job is one restore of Links (base first) into TargetDir, owned by Owner
// at the end (see physical.DefaultOwner; "" leaves the invoking user).
type Job struct {
	Links     []Link
	TargetDir string
	Owner     string
	// Resume continues a restore of the same links into TargetDir that
	// was killed or interrupted (see Reclaim); an empty or absent
	// TargetDir is restored into as without it.
	Resume bool
	// KeepInterrupted keeps the target of a restore whose context ends
	// (a signal) for a resume, as a kill would leave it, instead of
	// emptying it: for a restore from a repository into a directory of
	// the user's (restore --target-dir). Elsewhere a context also ends
	// when the restore fails (a transfer cut off), and such a target is
	// emptied as on any failure.
	KeepInterrupted bool
	// KeepCutOff keeps the target of a restore that failed in any way but
	// finding damage in what it read (its input cut off: the sender or
	// the network lost), for a resume of the same backup: a receive of a
	// stored backup, which Again then says how to continue.
	KeepCutOff bool
	// Again says how to continue a kept restore; "" says to run the same
	// restore with --resume.
	Again string
	Options
}

// Datadir restores the job's links into its target directory, which must
// be empty or absent: Claim, Write, Finish. On failure the target is
// emptied again: a failed restore never leaves a directory that looks like
// a datadir.
func Datadir(ctx context.Context, job Job) (err error) {
	if len(job.Links) == 0 {
		return errors.New("nothing to restore")
	}
	if err := CheckFileKey(job.Links, job.Options); err != nil {
		return err
	}
	var t *Target
	if job.Resume {
		logf := func(string, ...any) {}
		switch {
		case job.Progress != nil:
			logf = job.Progress.Logf
		case job.Log != nil:
			logf = func(format string, args ...any) { fmt.Fprintf(job.Log, "restore: "+format+"\n", args...) }
		}
		t, err = Reclaim(job.TargetDir, job.Links, logf)
	} else {
		t, err = Claim(job.TargetDir, job.Links[len(job.Links)-1].Manifest.ID)
	}
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			return
		}
		if t.journaled && (job.KeepInterrupted && ctx.Err() != nil || job.KeepCutOff && !archive.IsCorrupt(err)) {
			// Interrupted (a signal) or cut off: what was written and
			// verified is kept for a resume, as a kill would have left it.
			err = &KeptError{Err: err, Dir: t.dir, Again: job.Again}
			t.unlock()
			return
		}
		err = t.Abandon(err)
	}()
	if err := t.Write(ctx, job.Links, job.Options); err != nil {
		return err
	}
	return t.Finish(job.Owner)
}

// KeptError is a restore that failed and kept what it wrote and verified
// in Dir, for a resume (Job.KeepInterrupted, Job.KeepCutOff).
type KeptError struct {
	Err   error
	Dir   string
	Again string // how to continue (Job.Again)
}

func (e *KeptError) Error() string {
	again := e.Again
	if again == "" {
		again = "run the same restore with --resume to continue it"
	}
	return fmt.Sprintf("%v; the files restored so far stay in %s: %s, or empty the directory", e.Err, e.Dir, again)
}

func (e *KeptError) Unwrap() error { return e.Err }

// Target is a directory claimed by one restore: marked as being restored
// until Finish, emptied by Abandon. What the restore writes goes into a
// work directory inside it and moves up only at Finish: until then the
// target holds no datadir a server could start on (mariadbd refuses a
// directory without the mysql schema), so a restore killed half-way never
// leaves half a database that runs.
type Target struct {
	dir     string
	work    string
	created bool
	outside []string // what the restore created outside dir (mapped data directories), parents first
	noSync  bool     // Write's Options.NoSync, for Finish
	// resumed is the journal of the interrupted restore Reclaim took over
	// (nil for a new one); journaled, that Write began a journal.
	resumed   *journalState
	journaled bool
	// marker is the marker, open and locked (flock) for as long as this
	// restore runs: a resume does not take over a restore still running.
	marker *os.File
}

// lockMarker creates (or opens) the marker at p, makes it say mark
// unless mark is empty, and holds an exclusive lock on it until unlock:
// the lock dies with the process, however it ends (and no child inherits
// it: the descriptor is close-on-exec).
func lockMarker(p, mark string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, physical.FileMode)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errRestoring
		}
		return nil, err
	}
	if mark != "" {
		if err := rewriteMarker(f, mark); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// rewriteMarker makes the marker f say mark.
func rewriteMarker(f *os.File, mark string) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(mark+"\n"), 0)
	return err
}

// errRestoring is a marker locked by a restore that still runs.
var errRestoring = errors.New("a restore is still running there")

// unlock lets go of the marker's lock.
func (t *Target) unlock() {
	if t.marker != nil {
		t.marker.Close()
		t.marker = nil
	}
}

// Dir is the target's absolute path.
func (t *Target) Dir() string { return t.dir }

// WorkDir is where the restore writes, and where a caller's steps between
// Claim and Finish find the datadir (a replay server runs there); Finish
// moves its contents to Dir.
func (t *Target) WorkDir() string { return t.work }

// markerName is in a target while a restore writes it: a restore that was
// killed, and so could not empty the target, leaves it behind, and the
// next restore into that directory says what happened there. workName is
// the work directory beside it.
const (
	markerName = ".backstream-restoring"
	workName   = ".backstream-restoring.d"
)

// Claim checks that dir is an empty directory or absent (then creates it)
// and marks it as being restored from backup id.
func Claim(dir, id string) (*Target, error) {
	target, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	t := &Target{dir: target, work: filepath.Join(target, workName)}
	entries, err := os.ReadDir(target)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(target, physical.DirMode); err != nil {
			return nil, fmt.Errorf("target %s: %w", target, err)
		}
		t.created = true
	case err != nil:
		return nil, fmt.Errorf("target %s: %w", target, err)
	case len(entries) > 0:
		if what, err := os.ReadFile(filepath.Join(target, markerName)); err == nil {
			return nil, fmt.Errorf("target %s holds an interrupted restore (%s): that restore was killed or interrupted before it finished, and left what it wrote in %s; run the same restore with --resume to continue it (a receive: receive --resume, and the same stored backup sent again), or empty the directory and restore again",
				target, strings.TrimSpace(string(what)), t.work)
		}
		return nil, fmt.Errorf("target %s is not empty (%d entries, e.g. %s); restore only into an empty or new directory", target, len(entries), entries[0].Name())
	}
	mark := fmt.Sprintf("backup %s, begun %s by pid %d", id, time.Now().UTC().Format(time.DateTime), os.Getpid())
	t.marker, err = lockMarker(filepath.Join(target, markerName), mark)
	if err == nil {
		err = os.Mkdir(t.work, physical.DirMode)
	}
	if err != nil {
		t.unlock()
		os.Remove(filepath.Join(target, markerName))
		if t.created {
			os.Remove(target)
		}
		return nil, fmt.Errorf("target %s: %w", target, err)
	}
	return t, nil
}

// Abandon undoes a failed restore: it removes what was written, and the
// directory itself if Claim created it. It returns cause, with the
// cleanup's failure added if there was one.
func (t *Target) Abandon(cause error) error {
	var errs []error
	for i := len(t.outside) - 1; i >= 0; i-- {
		if err := os.Remove(t.outside[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	var err error
	if t.created {
		err = os.RemoveAll(t.dir)
	} else {
		var entries []os.DirEntry
		if entries, err = os.ReadDir(t.dir); err == nil {
			var errs []error
			for _, e := range entries {
				errs = append(errs, os.RemoveAll(filepath.Join(t.dir, e.Name())))
			}
			err = errors.Join(errs...)
		}
	}
	t.unlock()
	if err := errors.Join(append(errs, err)...); err != nil {
		return fmt.Errorf("%w (cleaning the target failed too: %v)", cause, err)
	}
	return cause
}

// Finish syncs what the restore wrote, in the target and outside it
// (unless Write was told NoSync: the file system of each, with one
// syncfs, as a final sync of 10,000 tables file by file took 1.3 s
// longer), moves it from the work directory into
// the target (refusing to replace anything that appeared there
// meanwhile) and syncs the target's entries, sets ownership and modes
// (see physical.SetOwnership) of the target and of what the restore
// placed outside it, and removes the marker last: from now on the target
// is a finished restore, and its files are on disk. Killed half-way, it
// leaves the marker, and the next restore says so.
func (t *Target) Finish(owner string) error {
	if !t.noSync {
		for _, d := range append([]string{t.work}, t.outside...) {
			if err := durable.FS(d); err != nil {
				return fmt.Errorf("target %s: %w", t.dir, err)
			}
		}
	}
	// The journal goes first: once files leave the work directory, a
	// resume could not find them; a kill from here on leaves a target
	// that must be emptied.
	if err := os.Remove(filepath.Join(t.dir, journalName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("target %s: %w", t.dir, err)
	}
	entries, err := os.ReadDir(t.work)
	if err != nil {
		return fmt.Errorf("target %s: %w", t.dir, err)
	}
	for _, e := range entries {
		dst := filepath.Join(t.dir, e.Name())
		if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("target %s: %s appeared there while the restore ran (did something start a server on it?); the restore never writes over it", t.dir, e.Name())
		}
		if err := os.Rename(filepath.Join(t.work, e.Name()), dst); err != nil {
			return fmt.Errorf("target %s: %w", t.dir, err)
		}
	}
	if err := os.Remove(t.work); err != nil {
		return fmt.Errorf("target %s: %w", t.dir, err)
	}
	if !t.noSync {
		// The entries moved up, and the target's own entry in its parent.
		if err := durable.Dirs(t.dir, filepath.Dir(t.dir)); err != nil {
			return fmt.Errorf("target %s: %w", t.dir, err)
		}
	}
	for _, p := range append([]string{t.dir}, t.outside...) {
		if err := physical.SetOwnership(p, owner); err != nil {
			return err
		}
	}
	err = os.Remove(filepath.Join(t.dir, markerName))
	t.unlock()
	return err
}

// Write writes links, base first, into the target, verifying every
// checksum on the way: the base into the target, each increment into a
// directory of its own beside it (same filesystem), all read at once;
// then, with Prepare, prepares the base and applies each increment in
// order; last, it places the tablespaces of external data directories
// (see datadirs.go). A missing mariabackup, or a data directory mapping
// that cannot be honoured, fails before anything is read.
func (t *Target) Write(ctx context.Context, links []Link, opt Options) error {
	if len(links) == 0 {
		return errors.New("nothing to restore")
	}
	t.noSync = opt.NoSync
	if err := checkDirMaps(opt.DataDirs, t.dir, opt.Prepare); err != nil {
		return err
	}
	if err := CheckFileKey(links, opt); err != nil {
		return err
	}
	fileKey := ""
	if FileKeyWithheld(links) {
		fileKey = opt.FileKey
	}
	m := links[len(links)-1].Manifest
	for _, l := range links {
		if l.Manifest.Kind != archive.KindPhysical {
			return fmt.Errorf("backup %s is a %s backup; restore it into a server, not a directory", l.Manifest.ID, l.Manifest.Kind)
		}
	}
	if len(links) > 1 {
		if !opt.Prepare {
			return fmt.Errorf("backup %s is an incremental (depth %d): it restores only with --prepare, which applies each increment to its base", m.ID, m.Depth)
		}
		chain := make([]*archive.Manifest, len(links))
		for i, l := range links {
			chain[i] = l.Manifest
		}
		if err := physical.CheckChain(chain); err != nil {
			return err
		}
	}
	var bin *physical.Binary
	if opt.Prepare {
		major, minor, _, err := mariadb.ParseVersion(m.Server.Version)
		if err != nil {
			return fmt.Errorf("backup %s: server version %q: %w", m.ID, m.Server.Version, err)
		}
		if bin, err = physical.FindBinary(ctx, opt.Mariabackup, opt.MariadbPath, major, minor, physical.ForBackup); err != nil {
			return err
		}
	}
	dirs := linkDirs(t, links)
	kept := make([]map[string]bool, len(links)) // files a resumed restore keeps
	if t.resumed != nil {
		kept = t.resumed.done
	}
	only := make([]func(string) bool, len(links))
	var total int64
	for i, l := range links {
		if i > 0 {
			if err := os.Mkdir(dirs[i], 0o700); err != nil && !(t.resumed != nil && errors.Is(err, fs.ErrExist)) {
				return fmt.Errorf("increment %s: %w", l.Manifest.ID, err)
			}
			defer os.RemoveAll(dirs[i])
		}
		only[i] = opt.Files
		if done := kept[i]; len(done) > 0 {
			only[i] = func(p string) bool { return !done[p] && (opt.Files == nil || opt.Files(p)) }
		}
		total += readBytes(ctx, l, only[i])
	}
	jf, err := createJournal(t, links, !opt.NoSync, kept)
	if err != nil {
		return err
	}
	j := startJournal(jf, dirs, !opt.NoSync)
	t.journaled = true
	journalClosed := false
	closeJournal := func() error {
		if journalClosed {
			return nil
		}
		journalClosed = true
		return j.close()
	}
	defer closeJournal()
	if opt.Progress != nil {
		opt.Progress.SetTotal(total)
		opt.Progress.Stage("restoring")
	}
	// The links are read at once; they share the decoders rather than
	// each taking all of them (which oversubscribed the CPUs: a chain of
	// four restored 1.45x faster with one decoder per link on two cores),
	// in proportion to their stored bytes, at least one each: a base much
	// bigger than its increments gets the decoders it needs, and the
	// first prepare, which waits for it, starts sooner.
	// With Prepare, each link is prepared as soon as it and the links
	// before it are: the base's prepare and each increment's apply run
	// while the later links are still being written.
	workers := decoders(links, total, opt.Workers)
	mem := opt.Memory // the links' reads share it
	if mem == nil {
		mem = archive.NewMemory(archive.DefaultMemory)
	}
	written := make([]chan struct{}, len(links))
	g, gctx := errgroup.WithContext(ctx)
	for i, l := range links {
		written[i] = make(chan struct{})
		g.Go(func() error {
			w, err := physical.NewDatadirWriter(dirs[i])
			if err != nil {
				return err
			}
			if i == 0 && !opt.NoSync {
				// The base is what Finish syncs; an increment's
				// directory is applied to it and removed.
				w.StartWriteback()
			}
			// The redo log is followed on its way: a backup whose copy of
			// it ends short (committed before backstream checked that at
			// backup time) cannot be prepared, and is damage named here.
			redo := &physical.RedoCopy{}
			var sink archive.Sink = physical.RedoSink{Sink: w, Redo: redo}
			if len(kept[i]) > 0 {
				sink = skipDone{Sink: sink, done: kept[i]}
			}
			err = archive.Read(gctx, archive.ReadOptions{
				Input: l.Input, Manifest: l.Manifest, Final: l.Final, Workers: workers[i], Sink: sink, Counter: opt.Progress, Only: only[i], Memory: mem,
				Verified: func(p string) { j.verified(i, p) },
			})
			if err == nil && l.Final == nil {
				err = redo.CheckBackup(l.Manifest)
			}
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("backup %s: %w", l.Manifest.ID, err)
			}
			close(written[i])
			return nil
		})
	}
	// recorded is the external path each tablespace's .isl gave, taken out
	// of each link's directory before that link is prepared (prepare would
	// copy an increment's .isl into the base); a later link's wins.
	recorded := map[string]string{}
	g.Go(func() error {
		for i, l := range links {
			select {
			case <-written[i]:
			case <-gctx.Done():
				return nil // the failed read's error is the one to report
			}
			if err := takeLinkFiles(dirs[i], recorded); err != nil {
				return err
			}
			if !opt.Prepare {
				continue
			}
			if err := j.preparing(i); err != nil {
				return err
			}
			if err := prepareLink(gctx, links, i, dirs, bin, fileKey, opt); err != nil {
				return fmt.Errorf("backup %s: %w", l.Manifest.ID, err)
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	if err := closeJournal(); err != nil {
		return err
	}
	if gp := m.Positions.Galera; gp != nil && opt.Prepare && !opt.NoGaleraState {
		// The prepared data is the cluster's state at the backup's
		// position: a node started on it joins by IST from there, or
		// bootstraps a new cluster.
		if err := physical.WriteGrastate(t.work, *gp); err != nil {
			return fmt.Errorf("backup %s: %w", m.ID, err)
		}
	}
	return t.place(recorded, opt)
}

// readBytes is what restoring link l reads: its stored bytes, or with
// files the stored bytes of the frames a partial read fetches.
func readBytes(ctx context.Context, l Link, files func(string) bool) int64 {
	m := l.Manifest
	if files == nil || l.Final != nil {
		return m.Stats.StoredBytes
	}
	return archive.PlannedBytes(ctx, m, l.Input, archive.Plan(m, l.Input, files))
}

// decoders shares n decoding goroutines (0: GOMAXPROCS) among links in
// proportion to their stored bytes (of total), at least one each; evenly
// when the sizes are not known yet (a backup still arriving).
func decoders(links []Link, total int64, n int) []int {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	out := make([]int, len(links))
	for i, l := range links {
		if total > 0 {
			out[i] = int(math.Round(float64(n) * float64(l.Manifest.Stats.StoredBytes) / float64(total)))
		} else {
			out[i] = n / len(links)
		}
		out[i] = max(1, out[i])
	}
	return out
}

// prepareLink prepares link i of links, whose directories are dirs: the
// base (i = 0) in place, an increment applied to it.
func prepareLink(ctx context.Context, links []Link, i int, dirs []string, bin *physical.Binary, fileKey string, opt Options) error {
	if opt.Progress != nil {
		opt.Progress.Stage(fmt.Sprintf("prepare %d of %d", i+1, len(links)))
	}
	log := opt.Log
	if log == nil {
		log = io.Discard
	}
	incDir := ""
	if i > 0 {
		incDir = dirs[i]
		if prev, from := links[i-1].Manifest, links[i].Manifest.Positions.FromLSN; from != prev.Positions.ToLSN {
			if err := physical.ContinueAt(dirs[0], from); err != nil {
				return err
			}
		}
	}
	if err := physical.Prepare(ctx, bin, dirs[0], incDir, opt.UseMemory, fileKey, log); err != nil {
		return err
	}
	if incDir == "" {
		return nil
	}
	return physical.CarrySourceInfo(incDir, dirs[0])
}

// FileKeyWithheld reports whether a link's backup withheld the password
// of its server's key file (archive.Manifest.Withheld): its backup-my.cnf
// lacks it, and mariabackup --prepare and a server need it given.
func FileKeyWithheld(links []Link) bool {
	for _, l := range links {
		if slices.Contains(l.Manifest.Withheld, physical.FileKeyVariable) {
			return true
		}
	}
	return false
}

// CheckFileKey fails, before anything is written, when a prepare of links
// needs the key file's password that no one gave.
func CheckFileKey(links []Link, opt Options) error {
	if !opt.Prepare || opt.FileKey != "" || !FileKeyWithheld(links) {
		return nil
	}
	id := links[len(links)-1].Manifest.ID
	return fmt.Errorf("backup %s needs the password of the server's encryption key file to be prepared: backups never hold %s; give it as %s=... in the [mysqld] group of the option file --server-defaults-file FILE (mode 0600), or in $%s",
		id, physical.FileKeyVariable, physical.FileKeyVariable, physical.FileKeyEnv)
}

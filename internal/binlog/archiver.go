package binlog

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/childenv"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/gtid"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/scratch"
	"github.com/backstream/backstream/internal/toolpath"
)

// Archiver copies a server's binary logs into a repository through the
// replication protocol (mariadb-binlog --read-from-remote-server --raw),
// so it works from any host that can connect. Each closed file becomes
// binlogs/<source>/<file>/: one compressed, checksummed stream object and
// a manifest with the file's index, written last. Following, the file
// being written is stored meanwhile as segments (see Segmenter), removed
// once the file is archived whole.
type Archiver struct {
	Repo  *repo.Repo
	Conn  mariadb.Config
	Codec codec.Codec
	Hash  string
	// Binary is mariadb-binlog's path; "" picks it by the server's version
	// from MariadbPath, then PATH (see findBinary).
	Binary      string
	MariadbPath toolpath.Path
	Version     string           // backstream's, for manifests
	Log         func(msg string) // hears of each file archived, and of restarts
	// FlushInterval is how long --follow lets new transactions of the
	// active file wait before it stores them as a segment; 0 means
	// DefaultFlushInterval.
	FlushInterval time.Duration
	// Encryption, when the repository encrypts what it stores, is recorded
	// in each file's manifest.
	Encryption *archive.Encryption
	// AllowGap lets a run go on past a gap (files the server purged before
	// they were archived): the gap is recorded either way, and without it
	// the run fails naming it.
	AllowGap bool
	// Lag, if set, hears how far the archive is behind the server, as
	// often as it is measured (following: about every second).
	Lag func(Lag)
	// Archived, if set, hears of each file archived whole, with its
	// manifest, once it is committed.
	Archived func(*archive.Manifest)
	// Counter, if set, counts the binary log stored (in: its bytes, of
	// segments and of whole files; out: what the repository holds of them).
	Counter archive.Counter

	head *repo.BinlogHead // the source's head object, as this run last stored or read it
	// bin is the mariadb-binlog findBinary chose, for the server version
	// binVersion (a server upgraded between two passes gets its own).
	bin, binVersion string
}

// Lag is how far the archive is behind the server: the bytes of binary log
// the server has written that the repository does not hold, and how long
// it has not held all of them (0 when it does).
type Lag struct {
	Bytes   int64
	Seconds float64
}

// GapError is a gap found between what the repository holds of a source
// and what its server still has: it stops the run unless AllowGap.
type GapError struct{ Gap repo.BinlogGap }

func (e *GapError) Error() string {
	return fmt.Sprintf("binary log gap on %s: %s %s (recorded as %s); the transactions between GTID %s and the start of %s cannot be restored to a point in time. Take a new backup, then run binlog again with --allow-gap to archive on from %s",
		e.Gap.Source, e.Gap.Missing, e.Gap.Reason, e.Gap.Object(), dashed(e.Gap.AfterGTID), e.Gap.Before, e.Gap.Before)
}

func dashed(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// permanent marks an error that reconnecting cannot cure: --follow stops
// on it.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

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
	for {
		err := a.pass(ctx, follow)
		var p permanent
		if errors.As(err, &p) {
			return p.error
		}
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

// Summary is what one run without follow archived (binlog --json): each
// file, their sum, and what the archive still lacks of the server's
// binary log.
type Summary struct {
	Archived    []ArchivedFile `json:"archived"`
	Files       int            `json:"files"`
	Bytes       int64          `json:"bytes"` // binary log archived, as on the server
	StoredBytes int64          `json:"stored_bytes"`
	// LagBytes is the binary log the server holds that the archive does
	// not: at least the active file. Absent when not measured (nothing
	// was open on the server to archive).
	LagBytes *int64 `json:"lag_bytes,omitempty"`
}

// ArchivedFile is one file a run archived: its index, as list --binlogs
// --json has it, and its size in the repository.
type ArchivedFile struct {
	*archive.BinlogFile
	StoredBytes int64 `json:"stored_bytes"`
}

// RunOnce archives every closed file the repository lacks, as Run without
// follow, and says what it archived. Archived and Lag, if set, still hear
// of each file and measure.
func (a *Archiver) RunOnce(ctx context.Context) (*Summary, error) {
	s := &Summary{Archived: []ArchivedFile{}}
	run := *a
	run.Archived = func(m *archive.Manifest) {
		s.Archived = append(s.Archived, ArchivedFile{BinlogFile: m.Binlog, StoredBytes: m.Stats.StoredBytes})
		s.Bytes += m.Binlog.Size
		s.StoredBytes += m.Stats.StoredBytes
		if a.Archived != nil {
			a.Archived(m)
		}
	}
	run.Lag = func(l Lag) { // without follow: one goroutine
		s.LagBytes = &l.Bytes
		if a.Lag != nil {
			a.Lag(l)
		}
	}
	err := run.Run(ctx, false)
	s.Files = len(s.Archived)
	return s, err
}

// binlogNames are mariadb-binlog's names, new and old.
var binlogNames = []string{"mariadb-binlog", "mysqlbinlog"}

// findBinary returns the mariadb-binlog that copies server's binary logs:
// Binary if set, else one of the server's version on MariadbPath, then
// PATH, else the oldest newer one (as a point-in-time restore picks the
// one that replays them, pitr.findBinlog). The copy is the bytes the
// server sends (--raw), so a newer one copies exactly what an older
// server wrote; an older one is refused here, naming what was found: it
// may refuse the server itself (10.11's stops at an 11.x server with
// "Master reported unrecognized MariaDB version", TestVersionsBinlog),
// and a restore would need a newer one anyway.
func (a *Archiver) findBinary(ctx context.Context, server *mariadb.Server) (string, error) {
	if a.Binary != "" {
		return a.Binary, nil
	}
	if a.bin != "" && a.binVersion == server.Version {
		return a.bin, nil
	}
	t, found, err := a.MariadbPath.FindReader(ctx, binlogNames, server.Major, server.Minor)
	if err != nil {
		return "", err
	}
	if t == nil && len(found) == 0 {
		return "", fmt.Errorf("no mariadb-binlog found in --mariadb-path or PATH: install the MariaDB %d.%d client (Debian: apt-get install mariadb-client), or put its directory on --mariadb-path DIR", server.Major, server.Minor)
	}
	if t == nil {
		return "", fmt.Errorf("the server is MariaDB %d.%d, but the mariadb-binlog found are older: %s (searched --mariadb-path, then PATH); "+
			"an older mariadb-binlog may not read a newer server's binary log: put the installation of MariaDB %d.%d (or newer) on --mariadb-path DIR "+
			"(option-file key mariadb-path, or $BACKSTREAM_MARIADB_PATH), or pass its mariadb-binlog with --mariadb-binlog PATH",
			server.Major, server.Minor, toolpath.Describe(found), server.Major, server.Minor)
	}
	a.bin, a.binVersion = t.Path, server.Version
	return t.Path, nil
}

// pass connects once, archives what is closed and, following, streams on
// until the connection or the tool ends.
func (a *Archiver) pass(ctx context.Context, follow bool) error {
	db, err := mariadb.Open(ctx, a.Conn, "")
	if err != nil {
		return err
	}
	defer db.Close()
	server, err := mariadb.Inspect(ctx, db)
	if err != nil {
		return err
	}
	checksum, err := readChecksum(ctx, db)
	if err != nil {
		return err
	}
	warnings, err := checkSettings(server, checksum)
	if err != nil {
		return permanent{err}
	}
	for _, w := range warnings {
		a.log("binlog: warning: %s", w)
	}
	bin, err := a.findBinary(ctx, server)
	if err != nil {
		return permanent{err}
	}
	files, err := listServerFiles(ctx, db)
	if err != nil {
		return err
	}
	src := SourceKey(server.Hostname, server.ServerID)
	done, newest, err := a.archived(ctx, src)
	if err != nil {
		return err
	}
	// A damaged head is replaced by the next one stored (verify and check
	// name it meanwhile).
	if a.head, err = a.Repo.BinlogHeadOf(ctx, src); err != nil && !archive.IsCorrupt(err) {
		return err
	}
	link, err := a.link(ctx, db, src, done, files)
	if err != nil {
		return err
	}
	for _, n := range newest {
		if link != nil && n.Source != src {
			break // src continues another source's archive: no gap to it
		}
		if err := a.checkGap(ctx, db, server, src, n, files); err != nil {
			return err
		}
	}
	// Segments outlive their file's whole object only when a run stopped
	// between the two.
	if err := a.dropSegments(ctx, src, func(n string) bool { return done[n] }); err != nil {
		return err
	}
	// Resume after the newest file the repository holds: older files it
	// lacks were expired (or purged before they were archived, a gap that
	// list --binlogs shows), and must not come back.
	// A link's File is the first of src's own: those before hold the
	// history archived under the source it continues.
	first := 0
	for i, f := range files {
		if done[f.name] || (link != nil && f.name < link.File) {
			first = i + 1
		}
	}
	if first >= len(files) {
		return nil // the server rotated past everything it lists: nothing open to follow
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
			if err := a.store(ctx, server, src, filepath.Join(spool, f.name), true); err != nil {
				return err
			}
			os.Remove(filepath.Join(spool, f.name)) // a backlog must not pile up in the temp directory
		}
		last := files[len(files)-1]
		// The active file is not archived without --follow: all of it is
		// the lag.
		return a.report(ctx, src, &lagMeter{caughtUp: time.Now()}, files, last.name, 0, false)
	}
	return a.follow(ctx, bin, db, server, src, spool, files[first].name)
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

// archived returns the names of the files of src the repository holds,
// and the newest of them; if src has none, the newest file of each other
// source of the same host (one of them may be this server under its old
// server_id). One whose manifest is damaged counts as held: it is left as
// it is (list --binlogs names it), and archiving goes on after it.
func (a *Archiver) archived(ctx context.Context, src string) (map[string]bool, []*repo.BinlogEntry, error) {
	files, err := a.Repo.Binlogs(ctx)
	if err != nil {
		return nil, nil, err
	}
	done := map[string]bool{}
	var newest *repo.BinlogEntry
	sameHost := map[string]*repo.BinlogEntry{}
	for i, e := range files {
		switch {
		case e.Source == src:
			done[e.Name] = true
			newest = &files[i]
			if e.Damage != nil {
				a.log("binlog: warning: %v; left as it is", e.Damage)
			}
		case sameHostSource(e.Source, src) && (sameHost[e.Source] == nil || e.Name > sameHost[e.Source].Name):
			sameHost[e.Source] = &files[i]
		}
	}
	if newest != nil {
		return done, []*repo.BinlogEntry{newest}, nil
	}
	var others []*repo.BinlogEntry
	for _, k := range slices.Sorted(maps.Keys(sameHost)) {
		others = append(others, sameHost[k])
	}
	return done, others, nil
}

// sameHostSource reports whether the source keys a and b name one host
// with two server_ids.
func sameHostSource(a, b string) bool {
	i, j := strings.LastIndexByte(a, '-'), strings.LastIndexByte(b, '-')
	return i > 0 && j > 0 && a[:i] == b[:j] && a != b
}

// checkGap compares the newest file the repository holds of src (or of
// the same host under another server_id; with nothing archived, archiving
// starts with what the server has) with the oldest the server still
// lists. If files between them were purged, or the server_id changed, the
// archive cannot be continuous: the gap is recorded, and the run stops
// unless AllowGap.
func (a *Archiver) checkGap(ctx context.Context, db *sql.DB, server *mariadb.Server, src string, newest *repo.BinlogEntry, files []serverFile) error {
	oldest := files[0].name
	g := repo.BinlogGap{Source: src, After: newest.Name, Before: oldest, Detected: time.Now().UTC(), Allowed: a.AllowGap}
	if newest.Manifest != nil {
		g.AfterGTID = newest.Manifest.Binlog.LastGTID
	}
	switch {
	case newest.Source != src && !continuesHistory(gtidListOf(ctx, db, oldest), newest):
		// Another server that shares the host (its binary logs do not
		// carry the archived ones' GTIDs): a series of its own.
		return nil
	case newest.Source != src:
		g.After = newest.Source + "/" + newest.Name
		g.Missing = "the binary logs of " + newest.Source + " after " + newest.Name
		g.Reason = fmt.Sprintf("cannot be continued: the server's server_id changed to %d, and its binary logs are archived as %s from %s on", server.ServerID, src, oldest)
	case newest.Source == src && numberingRestarted(ctx, db, newest, files):
		// Not a gap --allow-gap could pass: the server's new files bear
		// the names of archived ones, and would be taken as archived.
		return permanent{fmt.Errorf("binary logs of %s: the server's numbering went back (RESET MASTER, or its binary logs were replaced): it lists %s .. %s, while %s, archived, holds other transactions; archive this server into another repository",
			src, oldest, files[len(files)-1].name, newest.Name)}
	case oldest <= newest.Name || sameSeries(newest.Name, oldest):
		return nil // the server still has the file after the newest archived
	default:
		g.Missing = NumberGap(newest.Name, oldest)
		if g.Missing == "" {
			g.Missing = "the files after " + newest.Name
		}
		g.Reason = "were purged on the server before they were archived"
	}
	recorded, err := a.Repo.BinlogGaps(ctx)
	if err != nil {
		return err
	}
	for _, r := range recorded {
		if r.Source == src && r.Before == oldest && r.Allowed {
			return nil // a run with --allow-gap went on past it
		}
	}
	g.BeforeGTID = gtidListOf(ctx, db, oldest)
	if err := a.Repo.PutBinlogGap(ctx, g); err != nil {
		return err
	}
	if !a.AllowGap {
		return permanent{&GapError{Gap: g}}
	}
	a.log("binlog: warning: %s %s; recorded as %s, going on from %s (--allow-gap)", g.Missing, g.Reason, g.Object(), oldest)
	return nil
}

// numberingRestarted reports whether the server's binary logs are not the
// series archived up to newest: its newest file is named before newest,
// or the file it calls newest.Name starts with another GTID list than the
// archived one did.
func numberingRestarted(ctx context.Context, db *sql.DB, newest *repo.BinlogEntry, files []serverFile) bool {
	if files[len(files)-1].name < newest.Name {
		return true
	}
	if newest.Manifest == nil || newest.Manifest.Binlog == nil {
		return false
	}
	for _, f := range files {
		if f.name == newest.Name {
			list := gtidListOf(ctx, db, f.name)
			return list != "" && newest.Manifest.Binlog.Previous != "" && !sameGTIDSet(list, newest.Manifest.Binlog.Previous)
		}
	}
	return false
}

// sameGTIDSet reports whether two GTID lists, as the server prints them or
// as the archive records them, name the same GTIDs in any order.
func sameGTIDSet(a, b string) bool {
	set := func(s string) map[GTID]bool {
		out := map[GTID]bool{}
		for _, g := range gtid.Entries(s) {
			out[g] = true
		}
		return out
	}
	return maps.Equal(set(a), set(b))
}

// gtidListOf returns the GTID list event that starts the server's file
// name: the GTIDs written before it. "" if the server does not say.
// continuesHistory reports whether a server whose oldest binary log starts
// with the GTID list list carries on the history archived up to newest (of
// another server_id on the same host): the list holds newest's last GTID,
// or a later one of the same domain and server_id. That is a server whose
// server_id changed, or a replica promoted in its place; a server that
// merely shares the host has GTIDs of its own.
func continuesHistory(list string, newest *repo.BinlogEntry) bool {
	if newest.Manifest == nil || newest.Manifest.Binlog == nil {
		return true // a damaged manifest: nothing tells them apart, so assume the worst
	}
	last := newest.Manifest.Binlog.LastGTID
	if last == "" {
		last = newest.Manifest.Binlog.Previous
	}
	for _, w := range gtid.Entries(last) {
		for _, h := range gtid.Entries(list) {
			if h.Domain == w.Domain && h.Server == w.Server && h.Seq >= w.Seq {
				return true
			}
		}
	}
	return false
}

func gtidListOf(ctx context.Context, db *sql.DB, name string) string {
	rows, err := db.QueryContext(ctx, "SHOW BINLOG EVENTS IN '"+strings.ReplaceAll(name, "'", "''")+"' LIMIT 4")
	if err != nil {
		return ""
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if rows.Scan(ptrs...) != nil {
			return ""
		}
		for i, c := range cols {
			if c == "Event_type" && vals[i].String == "Gtid_list" {
				for j, c := range cols {
					if c == "Info" {
						return strings.Trim(vals[j].String, "[]")
					}
				}
			}
		}
	}
	return ""
}

// lagEvery is how often --follow measures its lag; statusEvery how often
// it stores it as the source's status (a PUT each time).
const (
	lagEvery    = time.Second
	statusEvery = 10 * time.Second
)

// lagMeter keeps what measuring the lag needs between measures.
type lagMeter struct {
	caughtUp time.Time // when the archive last held all the server had written
	stored   time.Time // when the status was last stored
}

// report measures the lag of the archive, which holds the server's binary
// log up to archivedFile at archivedOffset (-1: the whole file), against
// the server's files; tells Lag; and stores the source's status when due.
func (a *Archiver) report(ctx context.Context, src string, m *lagMeter, files []serverFile, archivedFile string, archivedOffset int64, following bool) error {
	now := time.Now()
	var behind int64
	for _, f := range files {
		switch {
		case f.name > archivedFile:
			behind += f.size
		case f.name == archivedFile && archivedOffset >= 0:
			behind += max(f.size-archivedOffset, 0)
		}
	}
	lag := Lag{Bytes: behind}
	if behind == 0 {
		m.caughtUp = now
	} else {
		lag.Seconds = now.Sub(m.caughtUp).Seconds()
	}
	if a.Lag != nil {
		a.Lag(lag)
	}
	if following && now.Sub(m.stored) < statusEvery {
		return nil
	}
	m.stored = now
	if behind == 0 && a.head != nil {
		// Caught up: nothing the server wrote until now is missing, which
		// lets a restore --until reach past the newest event, up to now.
		h := *a.head
		h.CompleteAt, h.Updated = now.UTC(), now.UTC()
		if err := a.putHead(ctx, h); err != nil {
			return err
		}
	}
	last := files[len(files)-1]
	if archivedOffset < 0 {
		archivedOffset = 0
		for _, f := range files {
			if f.name == archivedFile {
				archivedOffset = f.size
			}
		}
	}
	return a.Repo.PutBinlogStatus(ctx, repo.BinlogStatus{Source: src, Updated: now.UTC(), Following: following,
		ServerFile: last.name, ServerSize: last.size, ArchivedFile: archivedFile, ArchivedOffset: archivedOffset,
		LagBytes: lag.Bytes, LagSeconds: lag.Seconds})
}

// stopFollowing stores src's status as no longer followed, measured
// once more, so that list shows what the stopped follower left (usually
// nothing behind) rather than its measure of up to statusEvery before.
// Best effort, under a fresh context: the run's own has ended.
func (a *Archiver) stopFollowing(db *sql.DB, src string, m *lagMeter, archivedFile string, archivedOffset int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if files, err := listServerFiles(ctx, db); err == nil {
		_ = a.report(ctx, src, m, files, archivedFile, archivedOffset, false)
		return
	}
	st, err := a.Repo.BinlogStatusOf(ctx, src)
	if err != nil || st == nil || !st.Following {
		return
	}
	st.Following = false
	st.Updated = time.Now().UTC()
	_ = a.Repo.PutBinlogStatus(ctx, *st)
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

// follow streams from first on until mariadb-binlog ends (the server
// went away) or ctx does. Each file is archived whole once a newer one
// appears (or the stop event closes it); meanwhile the active file goes to
// the repository as segments, every FlushInterval, at the newest
// transaction boundary.
func (a *Archiver) follow(ctx context.Context, bin string, db *sql.DB, server *mariadb.Server, src, spool, first string) error {
	// The child lives only as long as this call: a failure to store must
	// not leave it running (Run reconnects, and would start another).
	run := ctx
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
	interval := a.flushInterval()
	// Wake often enough that a boundary after the interval is stored
	// soon, and rarely enough that polling costs nothing.
	tick := min(max(interval/10, 10*time.Millisecond), 250*time.Millisecond)
	active := &activeFile{}
	defer active.close()
	meter := &lagMeter{caughtUp: time.Now()}
	archivedFile := first // how far the repository holds the server's log: file and offset
	held, err := a.Repo.BinlogFileSegments(ctx, src, first)
	if err != nil {
		return err
	}
	_, archivedOffset, _ := Chain(held)
	var measured time.Time
	// However the loop ends once the run is stopped, between two ticks or
	// inside a store or a report that the stop cut short, the status says
	// the follower stopped.
	defer func() {
		if run.Err() != nil {
			a.stopFollowing(db, src, meter, archivedFile, archivedOffset)
		}
	}()
	for {
		var waitErr error
		ended := false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case waitErr = <-exited:
			exited <- waitErr // for the deferred wait
			ended = true
		case <-time.After(tick):
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
			if err := a.store(ctx, server, src, filepath.Join(spool, n), !last); err != nil {
				if last && errors.Is(err, errOpen) {
					break
				}
				return err
			}
			if active.name == n {
				active.close()
			}
			os.Remove(filepath.Join(spool, n))
			names[i] = ""
			archivedFile, archivedOffset = n, -1 // whole
		}
		// What mariadb-binlog last wrote is stored when it ends, whatever
		// the interval: it will not be fetched again from this server.
		if len(names) > 0 && names[len(names)-1] != "" {
			if err := a.segment(ctx, src, spool, names[len(names)-1], active, ended || time.Since(active.flushed) >= interval); err != nil {
				return err
			}
			archivedFile = active.name
			archivedOffset, _, _ = active.seg.Ready()
		}
		if !ended && time.Since(measured) >= lagEvery {
			measured = time.Now()
			// A server that cannot answer is about to end the child too:
			// the lag is measured again after the reconnection.
			if files, err := listServerFiles(ctx, db); err == nil {
				if err := a.report(ctx, src, meter, files, archivedFile, archivedOffset, true); err != nil {
					return err
				}
			}
		}
		if ended {
			return fmt.Errorf("mariadb-binlog ended: %v %s", waitErr, strings.TrimSpace(stderr.String()))
		}
	}
}

// DefaultFlushInterval is how often --follow stores the active file's
// new transactions, unless told otherwise.
const DefaultFlushInterval = time.Second

func (a *Archiver) flushInterval() time.Duration {
	if a.FlushInterval <= 0 {
		return DefaultFlushInterval
	}
	return a.FlushInterval
}

// activeFile is the file being segmented.
type activeFile struct {
	name    string
	seg     *Segmenter
	flushed time.Time // when the last segment was stored
}

func (f *activeFile) close() {
	if f.seg != nil {
		f.seg.Close()
	}
	*f = activeFile{}
}

// segment reads what mariadb-binlog appended to the active file name and,
// when due, stores it up to the newest transaction boundary as a segment.
// A file met for the first time resumes after the segments the
// repository holds of it (an earlier run's).
func (a *Archiver) segment(ctx context.Context, src, spool, name string, f *activeFile, due bool) error {
	if f.name != name {
		f.close()
		held, err := a.Repo.BinlogFileSegments(ctx, src, name)
		if err != nil {
			return err
		}
		_, from, _ := Chain(held)
		seg, err := OpenSegmenter(filepath.Join(spool, name), from)
		if err != nil {
			return err
		}
		*f = activeFile{name: name, seg: seg}
	}
	if err := f.seg.Advance(); err != nil {
		return err
	}
	start, end, ix := f.seg.Ready()
	if !due || end == start {
		return nil
	}
	ix.Source, ix.Name, ix.Headed = src, name, true
	head, err := SegmentHeader(ix, start, end, f.seg.Bytes(start, end), a.Hash)
	if err != nil {
		return err
	}
	s := repo.BinlogSegment{Source: src, Name: name, Start: start, End: end}
	if err := a.Repo.PutBinlogSegment(ctx, s, io.MultiReader(bytes.NewReader(head), f.seg.Bytes(start, end))); err != nil {
		return err
	}
	if a.Counter != nil {
		a.Counter.In(end - start)
		a.Counter.Out(int64(len(head)) + end - start)
	}
	f.seg.Stored(end)
	f.flushed = time.Now()
	return a.advanceHead(ctx, src, name, end, false, ix)
}

// advanceHead stores the source's head after the object holding name up
// to end was stored: a head never goes back (a run that stores an older
// file again leaves it), and keeps the last GTID of an earlier object
// when this one has no transaction.
func (a *Archiver) advanceHead(ctx context.Context, src, name string, end int64, whole bool, ix archive.BinlogFile) error {
	h := repo.BinlogHead{Source: src, File: name, End: end, Whole: whole, LastGTID: ix.LastGTID, LastTime: ix.LastTime, Updated: time.Now().UTC()}
	if old := a.head; old != nil {
		if old.File > name || (old.File == name && old.End > end) {
			return nil
		}
		if h.LastGTID == "" {
			h.LastGTID = old.LastGTID
		}
		if h.LastTime.IsZero() {
			h.LastTime = old.LastTime
		}
	}
	return a.putHead(ctx, h)
}

func (a *Archiver) putHead(ctx context.Context, h repo.BinlogHead) error {
	if err := a.Repo.PutBinlogHead(ctx, h); err != nil {
		return err
	}
	a.head = &h
	return nil
}

// dropSegments removes the segments of src's files that whole reports
// archived whole: after the file's manifest, so that its bytes are in
// the repository at every moment.
func (a *Archiver) dropSegments(ctx context.Context, src string, whole func(name string) bool) error {
	held, err := a.Repo.BinlogSegments(ctx, src)
	if err != nil {
		return err
	}
	return a.Repo.RemoveBinlogSegments(ctx, slices.DeleteFunc(held, func(s repo.BinlogSegment) bool { return !whole(s.Name) }))
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
// its manifest last. A file the server has moved past is finished even if
// nothing closed it (the server crashed while writing it); otherwise only
// a rotate or stop event says so.
func (a *Archiver) store(ctx context.Context, server *mariadb.Server, src, path string, movedPast bool) error {
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
	if !ix.Closed && !movedPast {
		return fmt.Errorf("%s: %w", name, errOpen)
	}
	ix.Source, ix.Name, ix.Headed = src, name, true
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	started := time.Now().UTC()
	w, err := archive.NewWriter(ctx, archive.WriterOptions{
		Output: a.Repo.BinlogOutput(src, name, a.Hash), Streams: 1, Codec: a.Codec, Hash: a.Hash, Counter: a.Counter,
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
	// The head moves before the segments go: at every moment it names
	// bytes some object holds.
	if err := a.advanceHead(ctx, src, name, ix.Size, true, ix); err != nil {
		return err
	}
	held, err := a.Repo.BinlogFileSegments(ctx, src, name)
	if err != nil {
		return err
	}
	if err := a.Repo.RemoveBinlogSegments(ctx, held); err != nil {
		return err
	}
	if a.Archived != nil {
		a.Archived(m)
	}
	a.log("archived %s: %d events, %s .. %s, GTID %s .. %s", name, ix.Events,
		ix.FirstTime.Format(time.DateTime), ix.LastTime.Format(time.DateTime), ix.FirstGTID, ix.LastGTID)
	return nil
}

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/crypt"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// ageHeader starts every file in age's format.
const ageHeader = "age-encryption.org/v1"

// Archived binary logs with --encrypt: every object but the manifest is an
// age file, the manifest records the recipient, list --binlogs works
// without the key, a point-in-time restore without the key (or with
// another) fails naming the binary log before writing anything, and with
// the key it replays to the target. The base backup is plain, so that what
// is refused is the binary log.
func TestEncryptedBinlogPITR(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	must := func(q string) {
		t.Helper()
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must("CREATE DATABASE m")
	must("CREATE TABLE m.marks (id INT PRIMARY KEY)")
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir, "--parallel", "1"}, sandboxConn(src)...)...).mustSucceed(t)
	must("INSERT INTO m.marks VALUES (1)")
	must("INSERT INTO m.marks VALUES (2)")
	var gtid string
	if err := src.DB().QueryRow("SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	must("INSERT INTO m.marks VALUES (3)")
	must("FLUSH BINARY LOGS")

	pub, key := usecasetest.AgeKeys(t)
	_, otherKey := usecasetest.AgeKeys(t)
	run(t, append([]string{"binlog", "--repo", repoDir, "--encrypt", "--recipient-file", pub}, sandboxConn(src)...)...).mustSucceed(t)
	files := usecasetest.ArchivedBinlogs(t, usecasetest.Repo{Location: repoDir}) // reads manifests only: no key needed
	if len(files) == 0 {
		t.Fatal("no binary log archived")
	}
	var objects int
	err := filepath.WalkDir(filepath.Join(repoDir, "binlogs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if d.Name() == "manifest.json" {
			if m := string(data); !strings.Contains(m, `"scheme": "age"`) || !strings.Contains(m, "age1") {
				t.Errorf("%s does not record the encryption and its recipient", p)
			}
			return nil
		}
		// Like manifests, the status and head objects and gap markers are
		// plain metadata (docs/format.md): file names, offsets, GTIDs, times.
		if d.Name() == "status.json" || d.Name() == "head.json" || filepath.Base(filepath.Dir(p)) == "gaps" {
			if !json.Valid(data) || len(data) > 4096 {
				t.Errorf("%s is not the small JSON object of metadata it should be (%d bytes)", p, len(data))
			}
			return nil
		}
		objects++
		if !strings.HasSuffix(p, crypt.Suffix) || !bytes.HasPrefix(data, []byte(ageHeader)) {
			t.Errorf("%s is not stored as an age file", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if objects < 2*len(files) {
		t.Errorf("%d objects for %d archived files, want a stream object and an index each", objects, len(files))
	}

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"without a key", nil, "no key was given"},
		{"with another key", []string{"--identity-file", otherKey}, "cannot decrypt"},
	} {
		target := filepath.Join(t.TempDir(), "refused")
		r := run(t, append([]string{"restore", "--repo", repoDir, "--until-gtid", gtid, "--target-dir", target}, c.args...)...)
		// The first file the replay needs is named: the one the backup's
		// position is in, which depends on whether the server rotated its
		// binary log before the backup read its position.
		named := false
		for _, f := range files {
			named = named || r.err != nil && strings.Contains(r.err.Error(), "binary log "+f.Name+" ")
		}
		if r.code == ExitOK || !strings.Contains(r.err.Error(), c.want) || !named {
			t.Errorf("point-in-time restore %s: exit %d, %v; want an error naming an archived binary log and saying %q", c.name, r.code, r.err, c.want)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("point-in-time restore %s wrote %s (%v)", c.name, target, err)
		}
	}

	target := filepath.Join(t.TempDir(), "datadir")
	run(t, "restore", "--repo", repoDir, "--identity-file", key, "--until-gtid", gtid, "--target-dir", target).mustSucceed(t)
	var ids string
	if err := usecasetest.ServerOn(t, target).DB().QueryRow("SELECT GROUP_CONCAT(id ORDER BY id) FROM m.marks").Scan(&ids); err != nil {
		t.Fatal(err)
	}
	if ids != "1,2" {
		t.Errorf("restored up to GTID %s: marks %q, want 1,2", gtid, ids)
	}
}

// secret is a value that must stay where it was given: in an option file,
// in the environment of backstream itself, or in a key file.
type secret struct{ name, value string }

// leaks names every secret found in data.
func leaks(secrets []secret, where string, data []byte) []string {
	var out []string
	for _, s := range secrets {
		if bytes.Contains(data, []byte(s.value)) {
			out = append(out, fmt.Sprintf("%s holds the %s", where, s.name))
		}
	}
	return out
}

// procWatch polls /proc while a backstream process runs: the command line
// of it and of every process descending from it, and the environment of
// every descendant.
type procWatch struct {
	root    int
	self    string // the backstream binary: a child not yet exec'd still runs it
	secrets []secret
	stop    chan struct{}
	done    chan struct{}

	mu    sync.Mutex
	seen  map[string][]string // per program, the command lines of its processes
	leaks map[string]bool
}

func watchProcs(root int, self string, secrets []secret) *procWatch {
	w := &procWatch{root: root, self: self, secrets: secrets, stop: make(chan struct{}), done: make(chan struct{}),
		seen: map[string][]string{}, leaks: map[string]bool{}}
	go func() {
		defer close(w.done)
		for {
			w.scan()
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return w
}

// finish stops the polling and returns what it saw.
func (w *procWatch) finish() (seen map[string][]string, leaks []string) {
	close(w.stop)
	<-w.done
	for l := range w.leaks {
		leaks = append(leaks, l)
	}
	slices.Sort(leaks)
	return w.seen, leaks
}

// scan looks at every process whose parent chain reaches the root once.
func (w *procWatch) scan() {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	parent := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if f := strings.Fields(string(stat[i+1:])); i > 0 && len(f) > 2 {
			parent[pid], _ = strconv.Atoi(f[1])
		}
	}
	for pid := range parent {
		p, steps := pid, 0
		for p > 1 && p != w.root && steps < 100 {
			p, steps = parent[p], steps+1
		}
		if p == w.root {
			w.inspect(pid)
		}
	}
}

func (w *procWatch) inspect(pid int) {
	proc := fmt.Sprintf("/proc/%d/", pid)
	cmdline, err := os.ReadFile(proc + "cmdline")
	if err != nil {
		return
	}
	args := strings.TrimRight(strings.ReplaceAll(string(cmdline), "\x00", " "), " ")
	found := leaks(w.secrets, fmt.Sprintf("the command line of %q", args), cmdline)
	if pid != w.root {
		// A child shows its parent's memory until its exec: only a process
		// that ran another program before and after the read counts.
		before, _ := os.Readlink(proc + "exe")
		environ, err := os.ReadFile(proc + "environ")
		after, _ := os.Readlink(proc + "exe")
		if err == nil && before != "" && before == after && before != w.self {
			name := filepath.Base(before)
			w.mu.Lock()
			if !slices.Contains(w.seen[name], args) {
				w.seen[name] = append(w.seen[name], args)
			}
			w.mu.Unlock()
			found = append(found, leaks(w.secrets, fmt.Sprintf("the environment of %s (%q)", name, args), environ)...)
		}
	}
	w.mu.Lock()
	for _, l := range found {
		w.leaks[l] = true
	}
	w.mu.Unlock()
}

// saw reports whether the watcher has seen, so far, a process of one of the
// programs run with arg.
func (w *procWatch) saw(arg string, programs ...string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return saw(w.seen, arg, programs...)
}

// saw reports whether a process of one of the programs ran with arg.
func saw(seen map[string][]string, arg string, programs ...string) bool {
	for _, p := range programs {
		for _, args := range seen[p] {
			if strings.Contains(args, arg) {
				return true
			}
		}
	}
	return false
}

// secretsRig runs the built backstream as a child process and keeps every
// output it gives for the final search.
type secretsRig struct {
	t       *testing.T
	bin     string
	tmp     string   // TMPDIR of every run, searched at the end
	env     []string // added to every run's environment, before its own
	secrets []secret
	outputs map[string][]byte
	started time.Time // of the current run, for the log
}

// start starts backstream with args and watches its processes.
func (s *secretsRig) start(env []string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer, *procWatch) {
	s.t.Helper()
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(append(append(os.Environ(), "TMPDIR="+s.tmp), s.env...), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	s.started = time.Now()
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	return cmd, &stdout, &stderr, watchProcs(cmd.Process.Pid, s.bin, s.secrets)
}

// wait waits for a started run, fails the test for every secret seen in a
// command line or a child's environment, and keeps stdout and stderr.
func (s *secretsRig) wait(what string, cmd *exec.Cmd, stdout, stderr *bytes.Buffer, w *procWatch, wantOK bool) map[string][]string {
	s.t.Helper()
	err := cmd.Wait()
	seen, found := w.finish()
	for _, l := range found {
		s.t.Errorf("%s: %s", what, l)
	}
	s.t.Logf("%s: exit %v after %v; child programs seen: %v", what, err, time.Since(s.started).Round(time.Millisecond), slices.Sorted(func(yield func(string) bool) {
		for k := range seen {
			if !yield(k) {
				return
			}
		}
	}))
	if wantOK && err != nil {
		s.t.Fatalf("%s: %v\nstderr: %s", what, err, stderr.String())
	}
	if !wantOK && err == nil {
		s.t.Fatalf("%s succeeded, want a failure", what)
	}
	s.outputs[what+" stdout"] = stdout.Bytes()
	s.outputs[what+" stderr"] = stderr.Bytes()
	return seen
}

// run runs backstream to its end.
func (s *secretsRig) run(what string, wantOK bool, env []string, args ...string) (map[string][]string, string) {
	s.t.Helper()
	cmd, stdout, stderr, w := s.start(env, args...)
	seen := s.wait(what, cmd, stdout, stderr, w, wantOK)
	return seen, stderr.String()
}

// searchTree looks for the secrets in every file under dir, as stored.
func (s *secretsRig) searchTree(what, dir string) int {
	s.t.Helper()
	files := testkit.ReadTree(s.t, dir)
	for rel, data := range files {
		for _, l := range leaks(s.secrets, what+" "+rel, data) {
			s.t.Error(l)
		}
	}
	return len(files)
}

// searchDecrypted looks for the secrets in what every encrypted object of
// a repository decrypts to, with the passphrase, and returns each one's
// plain text by name.
func (s *secretsRig) searchDecrypted(what string, inner storage.Backend, passphrase string) map[string][]byte {
	s.t.Helper()
	ctx := context.Background()
	var keys crypt.Keys
	if err := keys.SetPassphrase(passphrase); err != nil {
		s.t.Fatal(err)
	}
	dec := crypt.New(inner, keys, crypt.Options{Covers: repo.Encrypted, KeyPrefix: repo.KeysDir})
	infos, err := inner.List(ctx, "")
	if err != nil {
		s.t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, i := range infos {
		name, ok := strings.CutSuffix(i.Name, crypt.Suffix)
		if !ok || !repo.Encrypted(name) {
			continue
		}
		rc, err := dec.Open(ctx, name, 0, -1)
		if err != nil {
			s.t.Fatalf("%s %s: %v", what, name, err)
		}
		plain, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			s.t.Fatalf("%s %s: %v", what, name, err)
		}
		for _, l := range leaks(s.secrets, what+" "+name+" (decrypted)", plain) {
			s.t.Error(l)
		}
		out[name] = plain
	}
	return out
}

// Secrets never leave where they were given. A backup account's password
// (in an option file), the object store's secret key (in the environment)
// and the encryption passphrase (in the environment) are looked for while
// backstream runs a physical backup to S3, a logical backup, binary log
// archiving, a restore with --prepare and a logical load: in the command
// line of backstream and of every process under it, in the environment of
// those children (mariabackup and mariadb-binlog need none of them), and
// afterwards in every object of both repositories (decrypted too), every
// output, the JSON listings and progress, and what is left in TMPDIR. Wrong
// credentials give errors that do not echo them. Repository files are 0600
// and directories 0700; a restored datadir belongs to the server's user
// with the modes the server gives its own files.
func TestSecretsNeverExposed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := buildBinary(t)
	var s3repo testRepo
	for _, k := range usecasetest.Backends {
		if k.Name == "s3" {
			s3repo = testRepo{k.Make(t)}
		}
	}
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	password := "Pw-" + testkit.RandomHex(12)
	passphrase := "pass phrase " + testkit.RandomHex(12)
	s := &secretsRig{t: t, bin: bin, tmp: t.TempDir(), outputs: map[string][]byte{}, secrets: []secret{
		{"database password", password},
		{"S3 secret key", os.Getenv("AWS_SECRET_ACCESS_KEY")},
		{"encryption passphrase", passphrase},
	}}
	if len(s.secrets[1].value) < 16 {
		t.Fatalf("the S3 secret key %q is too short to search for", s.secrets[1].value)
	}
	s.env = []string{repoaccess.PassphraseEnv + "=" + passphrase}

	// The account is made with the session's binary log off: the binary
	// log keeps statements as they were written, and a password the DBA
	// typed into the server is not backstream's to hide.
	conn, err := src.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SET SESSION sql_log_bin = 0", "CREATE USER bs_secret@localhost IDENTIFIED BY '" + password + "'",
		"GRANT ALL PRIVILEGES ON *.* TO bs_secret@localhost"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	optionFile := func(pw string) string {
		p := filepath.Join(t.TempDir(), "backup.cnf")
		cnf := fmt.Sprintf("[client]\nuser=bs_secret\npassword=%s\nsocket=%s\n", pw, src.Socket)
		if err := os.WriteFile(p, []byte(cnf), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cnf := optionFile(password)
	localRepo := newRepoDir(t)

	// (a) A physical backup to S3, encrypted, with JSON progress.
	seen, _ := s.run("physical backup", true, nil, "backup", "--repo", s3repo.Location, "--defaults-extra-file", cnf,
		"--parallel", "2", "--encrypt", "--progress", "json")
	if !saw(seen, "--backup", "mariadb-backup", "mariabackup") {
		t.Errorf("no mariabackup --backup seen under backstream backup: the test proves nothing (%v)", seen)
	}
	if !bytes.Contains(s.outputs["physical backup stderr"], []byte(`{"`)) {
		t.Errorf("backup --progress json printed no JSON:\n%s", s.outputs["physical backup stderr"])
	}

	// (b) A logical backup into a local repository, encrypted.
	s.run("logical backup", true, nil, "backup", "--logical", "--repo", localRepo, "--defaults-extra-file", cnf,
		"--databases", "sample", "--parallel", "2", "--encrypt", "--progress", "json")

	// (c) Binary log archiving, following until two files more are in.
	for range 2 {
		if _, err := src.DB().ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
			t.Fatal(err)
		}
	}
	cmd, stdout, stderr, w := s.start(nil, "binlog", "--repo", localRepo, "--defaults-extra-file", cnf, "--encrypt", "--follow", "--progress", "none")
	// Until two files are in and the follower's mariadb-binlog has been
	// seen: the copies of closed files are short, and a loaded machine's
	// polls can miss them all.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(localRepo, "binlogs")); err == nil && len(usecasetest.ArchivedBinlogs(t, usecasetest.Repo{Location: localRepo})) >= 2 && w.saw("--stop-never", "mariadb-binlog", "mysqlbinlog") {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("binlog --follow archived fewer than 2 files, or ran no mariadb-binlog --stop-never, in a minute:\n%s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	seen = s.wait("binlog --follow", cmd, stdout, stderr, w, true)
	if !saw(seen, "--read-from-remote-server", "mariadb-binlog", "mysqlbinlog") {
		t.Errorf("no mariadb-binlog seen under backstream binlog: the test proves nothing (%v)", seen)
	}

	// (d) A restore with --prepare from S3, and a logical load.
	target := filepath.Join(t.TempDir(), "datadir")
	// The prepare of a backup this small can end between two looks at
	// /proc on a loaded machine: it waits, with the environment and the
	// arguments backstream gave it, until the watcher has seen it.
	gated, open := usecasetest.GatedMariabackup(t, "--prepare")
	cmd, stdout, stderr, w = s.start(nil, "restore", "--repo", s3repo.Location, "--target-dir", target, "--prepare",
		"--mariabackup", gated, "--progress", "json")
	go func() {
		defer open()
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if w.saw("--prepare", "dash", "sh", "bash") {
				return
			}
		}
	}()
	seen = s.wait("restore --prepare", cmd, stdout, stderr, w, true)
	if !saw(seen, "--prepare", "dash", "sh", "bash", "mariadb-backup", "mariabackup") {
		t.Errorf("no mariabackup --prepare seen under backstream restore: the test proves nothing (%v)", seen)
	}
	s.run("logical load", true, nil, "restore", "--repo", localRepo, "--defaults-extra-file", cnf,
		"--rename-database", "sample:sample_copy", "--progress", "json")
	var rows int
	if err := src.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM sample_copy.small_01").Scan(&rows); err != nil || rows == 0 {
		t.Errorf("the logical load loaded %d rows: %v", rows, err)
	}

	// Listings.
	s.run("list --json", true, nil, "list", "--repo", s3repo.Location, "--json")
	s.run("list --binlogs --json", true, nil, "list", "--repo", localRepo, "--binlogs", "--json")
	s.run("list", true, nil, "list", "--repo", localRepo)

	// Wrong credentials: refused, without the wrong value in the message.
	wrongPassword := "Wrong-" + testkit.RandomHex(12)
	_, msg := s.run("backup with a wrong password", false, nil, "backup", "--repo", localRepo, "--defaults-extra-file", optionFile(wrongPassword))
	if !strings.Contains(msg, "Access denied") || strings.Contains(msg, wrongPassword) {
		t.Errorf("backup with a wrong password: want an access denied error without the password, got:\n%s", msg)
	}
	wrongPassphrase := "wrong phrase " + testkit.RandomHex(12)
	_, msg = s.run("restore with a wrong passphrase", false, []string{repoaccess.PassphraseEnv + "=" + wrongPassphrase},
		"restore", "--repo", localRepo, "--defaults-extra-file", cnf, "--rename-database", "sample:sample_wrong")
	if !strings.Contains(msg, "cannot decrypt") || strings.Contains(msg, wrongPassphrase) {
		t.Errorf("restore with a wrong passphrase: want a decryption error without the passphrase, got:\n%s", msg)
	}

	// Everything the runs produced.
	for what, data := range s.outputs {
		for _, l := range leaks(s.secrets, what, data) {
			t.Error(l)
		}
	}
	if n := s.searchTree("local repository", localRepo); n < 10 {
		t.Errorf("only %d files in the local repository", n)
	}
	localBackend, err := local.New(localRepo)
	if err != nil {
		t.Fatal(err)
	}
	plain := s.searchDecrypted("local repository", localBackend, passphrase)
	var catalogs, binlogs int
	for name := range plain {
		switch {
		case strings.HasSuffix(name, "/meta/catalog.json"):
			catalogs++
		case strings.HasPrefix(name, "binlogs/"):
			binlogs++
		}
	}
	if catalogs == 0 || binlogs == 0 {
		t.Errorf("decrypted %d catalogs and %d binary log objects of the local repository, want some of each", catalogs, binlogs)
	}
	infos, err := s3repo.Backend.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		for _, l := range leaks(s.secrets, "S3 object "+i.Name, s3repo.Read(t, i.Name)) {
			t.Error(l)
		}
	}
	var mbLog []byte
	for name, data := range s.searchDecrypted("S3 object", s3repo.Backend, passphrase) {
		if strings.HasSuffix(name, "/meta/mariabackup.log") {
			mbLog = data
		}
	}
	if !bytes.Contains(mbLog, []byte("completed OK!")) {
		t.Errorf("mariabackup's log was not among the %d S3 objects searched decrypted", len(infos))
	}
	left := s.searchTree("TMPDIR", s.tmp)
	t.Logf("searched %d outputs, %d S3 objects, %d files left in TMPDIR", len(s.outputs), len(infos), left)

	// Modes: the repository is private to its user; the restored datadir
	// belongs to the server's user, with the server's own modes.
	testkit.CheckTree(t, "local repository", localRepo, 0o700, 0o600, -1, -1)
	uid, gid := os.Getuid(), os.Getgid()
	if os.Geteuid() == 0 {
		u, err := user.Lookup("mysql")
		if err != nil {
			t.Fatalf("running as root without a mysql user (scripts/deps.sh installs the server): %v", err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
	}
	if n := testkit.CheckTree(t, "restored datadir", target, 0o700, 0o660, uid, gid); n < 10 {
		t.Errorf("only %d entries in the restored datadir", n)
	}
}

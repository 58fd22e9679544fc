package restore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/repo/repotest"
)

// counting is a physical.Progress that counts the stored bytes read and,
// past hold decoded bytes delivered, holds every stream until released.
type counting struct {
	in, out atomic.Int64
	hold    int64
	release chan struct{}
	mu      sync.Mutex
	logs    []string
}

func (c *counting) In(n int64) { c.in.Add(n) }
func (c *counting) Out(n int64) {
	if c.out.Add(n) > c.hold && c.release != nil {
		<-c.release
	}
}
func (*counting) SetTotal(int64)   {}
func (*counting) SetBackup(string) {}
func (*counting) Stage(string)     {}
func (*counting) Restart()         {}
func (c *counting) Logf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logs = append(c.logs, fmt.Sprintf(format, args...))
}
func (c *counting) log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.logs, "\n")
}
func (c *counting) read() int64 { return c.in.Load() }

// randomFiles are n files of size to 2 x size random bytes each (they do
// not compress: the streams are many frames) and the checkpoints.
func randomFiles(n, size int) map[string]string {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	out := map[string]string{"xtrabackup_checkpoints": "backup_type = full-backuped\n"}
	for i := range n {
		b := make([]byte, size+rng.IntN(size))
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		out[fmt.Sprintf("db%d/t%03d.ibd", i%4, i)] = string(b)
	}
	return out
}

// journalDone is what the journal in target records as done.
func journalDone(t *testing.T, target string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(target, journalName))
	if err != nil {
		t.Fatal(err)
	}
	st, err := parseJournal(data)
	if err != nil {
		t.Fatalf("journal: %v", err)
	}
	return st.done[0]
}

// interrupt runs a restore of links into target and cancels it once its
// journal records the files it read before its progress held it, as a
// signal would: the target stays, with what was verified.
func interrupt(t *testing.T, links []Link, target string, noSync bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &counting{hold: 5 << 20, release: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		errc <- Datadir(ctx, Job{Links: links, TargetDir: target, KeepInterrupted: true, Options: Options{Progress: p, NoSync: noSync, Workers: 2}})
	}()
	// The restore stops reading at the hold; once its journal's count of
	// files done has not grown for half a second, it records every file
	// read before the hold (on a loaded machine the first one may be
	// recorded long before the others, and a resume of a journal with one
	// file needs every frame again).
	deadline := time.Now().Add(30 * time.Second)
	for last, since := 0, time.Now(); ; {
		data, _ := os.ReadFile(filepath.Join(target, journalName))
		if n := bytes.Count(data, []byte(`"t":"done"`)); n != last {
			last, since = n, time.Now()
		} else if n > 0 && time.Since(since) > 500*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no file recorded in the journal within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	close(p.release)
	err := <-errc
	if err == nil || !strings.Contains(err.Error(), "run the same restore with --resume") {
		t.Fatalf("interrupted restore: %v, want it to say how to resume", err)
	}
	if _, err := os.Stat(filepath.Join(target, markerName)); err != nil {
		t.Fatalf("the interrupted restore did not keep its target: %v", err)
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func TestResumeKeepsWhatWasVerified(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("nosync=%v", noSync), func(t *testing.T) {
			ctx := context.Background()
			r := repotest.New(t)
			want := randomFiles(48, 200<<10)
			m := repotest.Store(t, r, repotest.Backup{ID: "20261129T100000Z-0001", Files: want})
			links, err := Links(ctx, r, m)
			if err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(t.TempDir(), "datadir")
			interrupt(t, links, target, noSync)
			done := journalDone(t, target)
			if len(done) == 0 || len(done) >= len(want) {
				t.Fatalf("the journal records %d of %d files: the test needs some, not all", len(done), len(want))
			}
			inodes := map[string]uint64{}
			for p := range done {
				inodes[p] = inode(t, filepath.Join(target, workName, p))
			}
			// A plain restore into it is refused, and says --resume.
			if err := Datadir(ctx, Job{Links: links, TargetDir: target}); err == nil || !strings.Contains(err.Error(), "--resume") {
				t.Fatalf("a restore into an interrupted one: %v, want a refusal naming --resume", err)
			}
			p := &counting{}
			if err := Datadir(ctx, Job{Links: links, TargetDir: target, Resume: true, Options: Options{Progress: p, NoSync: noSync}}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.log(), fmt.Sprintf("%d files kept", len(done))) {
				t.Errorf("the resume said %q, want the files it kept (%d)", p.log(), len(done))
			}
			got := readTree(t, target)
			if len(got) != len(want) {
				t.Errorf("restored %d files, want %d", len(got), len(want))
			}
			for p, w := range want {
				if got[p] != w {
					t.Errorf("%s: restored %d bytes differing from the backup's %d", p, len(got[p]), len(w))
				}
			}
			if read := p.read(); read <= 0 || read >= m.Stats.StoredBytes {
				t.Errorf("the resume read %d of the backup's %d stored bytes: want some, not all", read, m.Stats.StoredBytes)
			}
			for p, ino := range inodes {
				if inode(t, filepath.Join(target, p)) != ino {
					t.Errorf("%s, which the journal recorded, was written again", p)
				}
			}
			for _, name := range []string{markerName, journalName, workName} {
				if _, err := os.Stat(filepath.Join(target, name)); !os.IsNotExist(err) {
					t.Errorf("%s is still in the finished target (%v)", name, err)
				}
			}
		})
	}
}

// rewriteJournal replaces the journal in target with what edit makes of
// its records, each line sealed again.
func rewriteJournal(t *testing.T, target string, edit func([]journalRecord) []journalRecord) {
	t.Helper()
	p := filepath.Join(target, journalName)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var recs []journalRecord
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var r journalRecord
		if err := json.Unmarshal([]byte(line[9:]), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	var out []byte
	for _, r := range edit(recs) {
		out = appendRecord(out, r)
	}
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestResumeStartsOverOrRefuses(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	want := randomFiles(48, 200<<10)
	m := repotest.Store(t, r, repotest.Backup{ID: "20261129T100000Z-0002", Files: want})
	links, err := Links(ctx, r, m)
	if err != nil {
		t.Fatal(err)
	}
	other := repotest.Store(t, r, repotest.Backup{ID: "20261129T100000Z-0003", Files: files})
	otherLinks, err := Links(ctx, r, other)
	if err != nil {
		t.Fatal(err)
	}
	resume := func(t *testing.T, target string, links []Link) (*counting, string, error) {
		p := &counting{}
		err := Datadir(ctx, Job{Links: links, TargetDir: target, Resume: true, Options: Options{Progress: p, NoSync: true}})
		return p, p.log(), err
	}
	complete := func(t *testing.T, target string) {
		t.Helper()
		got := readTree(t, target)
		for p, w := range want {
			if got[p] != w {
				t.Errorf("%s differs from the backup's after the resume", p)
			}
		}
		if len(got) != len(want) {
			t.Errorf("restored %d files, want %d", len(got), len(want))
		}
	}
	t.Run("another backup", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "datadir")
		interrupt(t, links, target, true)
		before := readTree(t, target)
		_, _, err := resume(t, target, otherLinks)
		var refused *RefusedError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), "backup "+m.ID+", not backup "+other.ID) {
			t.Fatalf("resume with another backup: %v, want a refusal naming both", err)
		}
		if after := readTree(t, target); len(after) != len(before) {
			t.Errorf("the refused resume changed the target: %d files, %d before", len(after), len(before))
		}
	})
	t.Run("damaged journal", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "datadir")
		interrupt(t, links, target, true)
		p := filepath.Join(target, journalName)
		data, _ := os.ReadFile(p)
		i := bytes.Index(data, []byte(`"t":"done"`))
		data[i+20] ^= 1
		os.WriteFile(p, data, 0o600)
		_, _, err := resume(t, target, links)
		if err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Fatalf("resume with a damaged journal: %v, want a refusal saying so", err)
		}
	})
	t.Run("prepare begun", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "datadir")
		interrupt(t, links, target, true)
		rewriteJournal(t, target, func(rs []journalRecord) []journalRecord { return append(rs, journalRecord{T: "prepare"}) })
		p, log, err := resume(t, target, links)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log, "starts over: mariabackup had begun to prepare it") || p.read() != m.Stats.StoredBytes {
			t.Errorf("resume after a prepare began: read %d of %d bytes, said %q; want it all, starting over", p.read(), m.Stats.StoredBytes, log)
		}
		complete(t, target)
	})
	t.Run("not synced, another boot", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "datadir")
		interrupt(t, links, target, true)
		rewriteJournal(t, target, func(rs []journalRecord) []journalRecord { rs[0].Boot = "another boot"; return rs })
		p, log, err := resume(t, target, links)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log, "the machine has restarted") || p.read() != m.Stats.StoredBytes {
			t.Errorf("resume of an unsynced restore after a reboot: read %d of %d bytes, said %q; want it all, starting over", p.read(), m.Stats.StoredBytes, log)
		}
		complete(t, target)
	})
	t.Run("kept file damaged", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "datadir")
		interrupt(t, links, target, true)
		var cut string
		for p := range journalDone(t, target) {
			cut = p
			break
		}
		if err := os.Truncate(filepath.Join(target, workName, cut), 100); err != nil {
			t.Fatal(err)
		}
		if _, _, err := resume(t, target, links); err != nil {
			t.Fatal(err)
		}
		complete(t, target)
	})
	t.Run("still running", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "datadir")
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		p := &counting{hold: 1 << 20, release: make(chan struct{})}
		errc := make(chan error, 1)
		go func() {
			errc <- Datadir(ctx, Job{Links: links, TargetDir: target, Options: Options{Progress: p, NoSync: true}})
		}()
		for p.out.Load() <= p.hold {
			time.Sleep(10 * time.Millisecond)
		}
		_, _, err := resume(t, target, links)
		var refused *RefusedError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), "a restore is still running there") {
			t.Errorf("resume beside a running restore: %v, want a refusal", err)
		}
		close(p.release)
		if err := <-errc; err != nil {
			t.Fatalf("the running restore failed beside the refused resume: %v", err)
		}
		complete(t, target)
	})
	t.Run("interrupted, not kept unless asked", func(t *testing.T) {
		// A transfer cut off also ends a restore's context (receive): a
		// target not of the user's is emptied, as on any failure.
		target := filepath.Join(t.TempDir(), "datadir")
		ctx, cancel := context.WithCancel(ctx)
		p := &counting{hold: 1 << 20, release: make(chan struct{})}
		errc := make(chan error, 1)
		go func() {
			errc <- Datadir(ctx, Job{Links: links, TargetDir: target, Options: Options{Progress: p, NoSync: true}})
		}()
		for p.out.Load() <= p.hold {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		close(p.release)
		if err := <-errc; err == nil || strings.Contains(err.Error(), "--resume") {
			t.Fatalf("interrupted restore without KeepInterrupted: %v, want a failure that does not offer --resume", err)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("the interrupted restore left its target (%v)", err)
		}
	})
	t.Run("nothing to resume", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "datadir")
		p, _, err := resume(t, target, links)
		if err != nil {
			t.Fatal(err)
		}
		if p.read() != m.Stats.StoredBytes {
			t.Errorf("read %d of %d bytes", p.read(), m.Stats.StoredBytes)
		}
		complete(t, target)
	})
}

func TestParseJournal(t *testing.T) {
	head := appendRecord(nil, journalRecord{T: "restore", Version: journalVersion, Links: []journalLink{{ID: "a", Checksum: "sha256:x"}}, Synced: true})
	done := appendRecord(nil, journalRecord{T: "done", Path: "db/t.ibd"})
	st, err := parseJournal(append(append(head, done...), done[:len(done)-3]...))
	if err != nil || !st.done[0]["db/t.ibd"] || len(st.done[0]) != 1 || !st.synced {
		t.Fatalf("a journal with a torn last line: %+v, %v", st, err)
	}
	for name, bad := range map[string][]byte{
		"empty":         nil,
		"no header":     done,
		"flipped":       append(append([]byte{}, head...), bytes.Replace(done, []byte("db/"), []byte("dc/"), 1)...),
		"link range":    append(append([]byte{}, head...), appendRecord(nil, journalRecord{T: "done", Link: 1, Path: "x"})...),
		"escaping path": append(append([]byte{}, head...), appendRecord(nil, journalRecord{T: "done", Path: "../x"})...),
		"unknown":       append(append([]byte{}, head...), appendRecord(nil, journalRecord{T: "what"})...),
		"version":       appendRecord(nil, journalRecord{T: "restore", Version: 2, Links: []journalLink{{ID: "a"}}}),
	} {
		if _, err := parseJournal(bad); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func FuzzParseJournal(f *testing.F) {
	head := appendRecord(nil, journalRecord{T: "restore", Version: journalVersion, Links: []journalLink{{ID: "a"}, {ID: "b"}}, Boot: "x"})
	f.Add(head)
	f.Add(append(append([]byte{}, head...), appendRecord(nil, journalRecord{T: "done", Link: 1, Path: "db/t.ibd"})...))
	f.Add(append(append([]byte{}, head...), appendRecord(nil, journalRecord{T: "prepare"})...))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseJournal(data)
		if err != nil {
			return
		}
		if len(st.links) == 0 || len(st.done) != len(st.links) {
			t.Fatalf("parsed a journal of %d links with %d done sets", len(st.links), len(st.done))
		}
		for _, d := range st.done {
			for p := range d {
				if !journalPath(p) {
					t.Fatalf("parsed a bad path %q", p)
				}
			}
		}
	})
}

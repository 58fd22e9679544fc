package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// Issue 28 items 5 and 9, on a local and a MinIO repository: a backup,
// closed files archived whole, the active file archived as segments by
// binlog --follow, stopped with SIGINT once caught up. Undamaged, every
// status is right (progress counts bytes, list says nothing is behind,
// --json lists the file held as segments, a --until past the newest event
// but before the follower stopped restores every row). Then, one at a
// time, each way a user can lose an archived object: verify --binlogs,
// check, list and restore --until end must all see it, restore before it
// writes anything. (Table-driven, to be folded into
// TestEveryOKIsRestorable.)
func TestEveryBinlogDamageIsDetected(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, k := range usecasetest.Backends {
		t.Run(k.Name, func(t *testing.T) { binlogDamage(t, bin, testRepo{k.Make(t)}) })
	}
}

func binlogDamage(t *testing.T, bin string, tr testRepo) {
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	exec1 := func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rows := 0
	insert := func(n int) {
		t.Helper()
		for range n {
			exec1("INSERT INTO m.t (v) VALUES (1)")
			rows++
		}
	}
	exec1("CREATE DATABASE m")
	exec1("CREATE TABLE m.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	insert(10)
	var hostname string
	var serverID uint32
	if err := db.QueryRow("SELECT @@hostname, @@server_id").Scan(&hostname, &serverID); err != nil {
		t.Fatal(err)
	}
	source := binlog.SourceKey(hostname, serverID)
	run(t, append([]string{"backup", "--repo", tr.Location}, sandboxConn(src)...)...).mustSucceed(t)
	for range 3 {
		insert(20)
		exec1("FLUSH BINARY LOGS")
	}

	follow := exec.Command(bin, append([]string{"binlog", "--repo", tr.Location, "--follow", "--flush-interval", "200ms", "--progress", "plain"}, sandboxConn(src)...)...)
	var stderr testkit.SyncBuffer
	follow.Stderr = &stderr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer follow.Process.Kill()
	r, err := repo.Open(ctx, tr.Backend)
	if err != nil {
		t.Fatal(err)
	}
	var active string
	var pos int64
	for k := range 4 {
		// A batch, then a wait until the follower stored the active file up
		// to the server's position: each batch ends a segment of its own.
		// (Counting segments raced: the follower may store a segment of a
		// file it later archives whole and drops, and a loaded one may
		// store two batches in one.)
		insert(25)
		var doDB, ignoreDB sql.NullString
		if err := db.QueryRow("SHOW MASTER STATUS").Scan(&active, &pos, &doDB, &ignoreDB); err != nil {
			t.Fatal(err)
		}
		usecasetest.WaitFor(t, fmt.Sprintf("batch %d in a segment of %s up to %d", k+1, active, pos), &stderr, func() bool {
			segs, err := r.BinlogFileSegments(ctx, source, active)
			_, end, _ := binlog.Chain(segs)
			return err == nil && end == pos
		})
	}
	lastInsert := time.Now()
	time.Sleep(3 * time.Second) // caught up, with nothing new to archive
	if err := follow.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := follow.Wait(); err != nil {
		t.Fatalf("binlog --follow after SIGINT: %v\n%s", err, stderr.String())
	}

	// Item 9, each symptom on the undamaged archive.
	t.Run("progress_counts_bytes", func(t *testing.T) {
		if out := stderr.String(); strings.Contains(out, "0 B in, 0 B out") || !strings.Contains(out, "B in, ") {
			t.Errorf("binlog --follow progress counts nothing:\n%s", out)
		}
	})
	t.Run("nothing_behind_after_a_clean_stop", func(t *testing.T) {
		lst := run(t, "list", "--repo", tr.Location, "--binlogs").mustSucceed(t)
		if strings.Contains(lst.stdout, "behind the server when binlog last ran") || !strings.Contains(lst.stdout, "lag: none") {
			t.Errorf("list --binlogs after a clean stop of binlog --follow does not say the archive is complete:\n%s", lst.stdout)
		}
	})
	t.Run("json_lists_the_file_held_as_segments", func(t *testing.T) {
		var entries []struct {
			Name     string `json:"name"`
			Size     int64  `json:"size"`
			Segments int    `json:"segments"`
		}
		js := run(t, "list", "--repo", tr.Location, "--binlogs", "--json").mustSucceed(t)
		if err := json.Unmarshal([]byte(js.stdout), &entries); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range entries {
			found = found || (e.Name == active && e.Segments > 0 && e.Size == pos)
		}
		if !found {
			t.Errorf("list --binlogs --json does not list %s, held as segments up to %d:\n%s", active, pos, js.stdout)
		}
	})
	t.Run("until_past_the_newest_event_while_complete", func(t *testing.T) {
		// A moment after the newest event, before the follower, caught
		// up, stopped: every row.
		until := lastInsert.Add(2 * time.Second).UTC().Format(time.RFC3339)
		target := filepath.Join(t.TempDir(), "restored")
		run(t, "restore", "--repo", tr.Location, "--until", until, "--target-dir", target).mustSucceed(t)
		dst := usecasetest.ServerOn(t, target)
		defer dst.Stop(ctx)
		var got int
		if err := dst.DB().QueryRow("SELECT COUNT(*) FROM m.t").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != rows {
			t.Errorf("restore --until %s: %d rows, want %d", until, got, rows)
		}
	})
	run(t, "verify", "--repo", tr.Location, "--binlogs").mustSucceed(t)
	if c := run(t, "check", "--repo", tr.Location); strings.Contains(said(c), "binary log archive") {
		t.Errorf("check of an undamaged archive reports it:\n%s", said(c))
	}

	files, err := r.Binlogs(ctx)
	if err != nil || len(files) < 3 {
		t.Fatalf("%d files archived whole (%v)", len(files), err)
	}
	segs, err := r.BinlogSegments(ctx, source)
	if err != nil || len(segs) < 2 {
		t.Fatalf("%d segments (%v)", len(segs), err)
	}
	// The head says where the archive ends (binlogs/<source>/head.json).
	head := "binlogs/" + source + "/head.json"
	if _, err := tr.Backend.Stat(ctx, head); err != nil {
		t.Errorf("no head object: %v", err)
	}
	middle := files[len(files)-2].Name
	newestSeg := segs[len(segs)-1]
	for _, c := range []struct {
		name    string
		objects []string // deleted: an object, or every object under a directory/
		want    string   // what every command names
		ends    string   // where list says the window ends, if before the newest file held
	}{
		{"a file from the middle", []string{repo.BinlogDir(source, middle) + "/"}, middle, files[len(files)-3].Name},
		{"the newest segment", []string{newestSeg.Object()}, active, ""},
		{"a segment from the middle", []string{segs[len(segs)-2].Object()}, active, ""},
		{"the newest segment and the head", []string{newestSeg.Object(), head}, "head", ""},
		{"the head", []string{head}, "head", ""},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			restore := damage(t, tr.Backend, c.objects)
			defer restore()
			if v := run(t, "verify", "--repo", tr.Location, "--binlogs"); v.code == 0 || !strings.Contains(said(v), c.want) {
				t.Errorf("verify --binlogs with %s deleted: exit %d, want non-zero naming %s:\n%s", c.name, v.code, c.want, said(v))
			}
			if v := run(t, "check", "--repo", tr.Location); v.code == 0 || !strings.Contains(said(v), c.want) {
				t.Errorf("check with %s deleted: exit %d, want non-zero naming %s:\n%s", c.name, v.code, c.want, said(v))
			}
			v := run(t, "list", "--repo", tr.Location, "--binlogs")
			if !strings.Contains(v.stdout, "BROKEN") {
				t.Errorf("list --binlogs with %s deleted does not show the break:\n%s", c.name, v.stdout)
			}
			if c.ends != "" {
				_, window, _ := strings.Cut(v.stdout, "recoverable: ")
				if line, _, _ := strings.Cut(window, "\n"); !strings.HasSuffix(line, c.ends+")") {
					t.Errorf("list --binlogs with %s deleted: the window does not end at %s, before the hole:\n%s", c.name, c.ends, v.stdout)
				}
			}
			target := filepath.Join(t.TempDir(), "restored")
			if v := run(t, "restore", "--repo", tr.Location, "--until", "end", "--target-dir", target); v.code == 0 || !strings.Contains(said(v), c.want) {
				t.Errorf("restore --until end with %s deleted: exit %d, want non-zero naming %s:\n%s", c.name, v.code, c.want, said(v))
			}
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Errorf("restore --until end with %s deleted wrote %s before it refused (%v)", c.name, target, err)
			}
		})
	}
	// Every object back: whole again.
	run(t, "verify", "--repo", tr.Location, "--binlogs").mustSucceed(t)
}

// said is everything a command run said: its output and its error.
func said(r result) string {
	s := r.stdout + r.stderr
	if r.err != nil {
		s += r.err.Error()
	}
	return s
}

// damage deletes objects (a name ending in / : every object under it;
// one that does not exist is left out) and returns what puts them back.
func damage(t *testing.T, b storage.Backend, objects []string) func() {
	t.Helper()
	ctx := context.Background()
	saved := map[string][]byte{}
	for _, o := range objects {
		names := []string{o}
		if strings.HasSuffix(o, "/") {
			infos, err := b.List(ctx, o)
			if err != nil || len(infos) == 0 {
				t.Fatalf("list %s: %d objects (%v)", o, len(infos), err)
			}
			names = names[:0]
			for _, i := range infos {
				names = append(names, i.Name)
			}
		}
		for _, n := range names {
			rc, err := b.Open(ctx, n, 0, -1)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			saved[n] = data
			if err := b.Delete(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	return func() {
		for n, data := range saved {
			if _, err := b.Put(ctx, n, bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

package cli

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/limit"
)

// Bad rates are usage errors naming the flag, before anything is opened.
func TestLimitFlagsUsageErrors(t *testing.T) {
	repoDir := newRepoDir(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--limit-upload", "fast"}, []string{"--limit-upload", `"fast"`, "want bytes per second"}},
		{[]string{"--limit-download", "200"}, []string{"--limit-download", `"200"`, "64KiB/s"}},
		{[]string{"--limit-download", "-5MiB/s"}, []string{"--limit-download", "-5MiB/s"}},
	} {
		r := run(t, append([]string{"list", "--repo", repoDir}, tc.args...)...)
		if r.code != ExitUsage {
			t.Errorf("%v: exit %d (%v), want %d", tc.args, r.code, r.err, ExitUsage)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(r.err.Error(), w) {
				t.Errorf("%v: error %q does not say %q", tc.args, r.err, w)
			}
		}
	}
}

// The limits wrap the repository's store when given, and only then.
func TestLimitFlagsApplied(t *testing.T) {
	ctx := context.Background()
	open := func(up, down int64) storage.Backend {
		t.Helper()
		g := &globals{limitUpload: up, limitDownload: down}
		g.share() // as checkGlobals does
		g.repos.Location.Repo = filepath.Join(t.TempDir(), "repo")
		b, err := repoaccess.Backend(ctx, g.repos.Location, true)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for b := open(0, 0); ; {
		if _, limited := b.(*limit.Backend); limited {
			t.Fatal("without --limit-upload or --limit-download the store is rate limited")
		}
		w, ok := b.(storage.Wrapper)
		if !ok {
			break
		}
		b = w.Unwrap()
	}

	const rate, size = 128 << 10, 384 << 10
	least := time.Duration(float64(size-64<<10) / rate * float64(time.Second))
	data := bytes.Repeat([]byte("x"), size)
	b := open(rate, rate)
	start := time.Now()
	if _, err := b.Put(ctx, "obj", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < least {
		t.Errorf("storing %d bytes at --limit-upload 128KiB/s took %v, want at least %v", size, took, least)
	}
	start = time.Now()
	rc, err := b.Open(ctx, "obj", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	if took := time.Since(start); took < least {
		t.Errorf("reading %d bytes at --limit-download 128KiB/s took %v, want at least %v", size, took, least)
	}
}

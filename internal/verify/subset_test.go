package verify

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"os"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/storage/local"
)

func TestParseSubset(t *testing.T) {
	for in, want := range map[string]Subset{"10%": {Percent: 10}, "0.5%": {Percent: 0.5}, "100%": {Percent: 100}, "2/7": {Part: 2, Of: 7}, "1/1": {Part: 1, Of: 1}} {
		got, err := ParseSubset(in, false)
		if err != nil || got != want {
			t.Errorf("ParseSubset(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	if s, err := ParseSubset("", true); err != nil || !s.All() {
		t.Errorf(`ParseSubset("", true) = %+v, %v; want everything`, s, err)
	}
	if _, err := ParseSubset("10%", true); err == nil {
		t.Error("--read-data with --read-data-subset: no refusal")
	}
	for _, in := range []string{"0%", "-5%", "101%", "x%", "0/3", "4/3", "1/0", "3", "1/2/3", "a/b", "NaN%"} {
		if s, err := ParseSubset(in, false); err == nil {
			t.Errorf("ParseSubset(%q) = %+v; want an error", in, s)
		}
	}
}

// dedupRepo is a new deduplicating repository on a local directory.
func dedupRepo(t *testing.T) *repo.Repo {
	t.Helper()
	b, err := local.New(filepath.Join(t.TempDir(), "repo"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := repo.Init(context.Background(), b, repo.Options{Dedup: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A subset verify reads its part and says so: parts 1/3, 2/3 and 3/3
// read each file exactly once between them, a share reads at least that
// share of the bytes, and neither records a verdict, so check does not
// take a sample for a verified backup; damage in what a subset reads is
// damage, recorded and named, in plain and deduplicating repositories
// alike.
func TestSubsetReadsItsPartAndRecordsNoVerdict(t *testing.T) {
	for name, r := range map[string]*repo.Repo{"plain": repotest.New(t), "dedup": dedupRepo(t)} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			files := map[string]string{}
			for i := range 30 {
				files[fmt.Sprintf("db/t%02d.ibd", i)] = strings.Repeat(fmt.Sprintf("row %d ", i), 1000*(i+1))
			}
			m := repotest.Store(t, r, repotest.Backup{ID: "20261130T030000Z-0001", Files: files})
			var total Sampled
			for part := 1; part <= 3; part++ {
				res, err := Run(ctx, Request{Repo: r, Backup: m, Subset: Subset{Part: part, Of: 3}})
				if err != nil {
					t.Fatalf("part %d/3 of an intact backup: %v", part, err)
				}
				total.Files += res.Sampled.Files
				total.Bytes += res.Sampled.Bytes
				if res.Sampled.OfFiles != len(m.Files) {
					t.Errorf("part %d/3: of %d files, the backup has %d", part, res.Sampled.OfFiles, len(m.Files))
				}
			}
			var all int64
			for _, f := range m.Files {
				all += f.Size
			}
			if total.Files != len(m.Files) || total.Bytes != all {
				t.Errorf("parts 1-3 of 3 read %d files, %d bytes; the backup has %d, %d", total.Files, total.Bytes, len(m.Files), all)
			}
			res, err := Run(ctx, Request{Repo: r, Backup: m, Subset: Subset{Percent: 40}})
			if err != nil || res.Sampled.Bytes*100 < all*40 || res.Sampled.Files == len(m.Files) {
				t.Errorf("a 40%% subset: %v, read %d of %d bytes in %d of %d files", err, res.Sampled.Bytes, all, res.Sampled.Files, len(m.Files))
			}
			var out strings.Builder
			res.WriteText(&out)
			if !strings.Contains(out.String(), "the rest was not read") {
				t.Errorf("a subset's report %q does not say the rest was not read", out.String())
			}
			if v, err := r.ReadVerdict(ctx, m.ID); err != nil || v.Checksums != nil {
				t.Errorf("after subset verifies, the verdict is %+v (%v); want none", v.Checksums, err)
			}
			flipLargest(t, r.Backend.Location())
			failed := 0
			for part := 1; part <= 3; part++ {
				_, err := Run(ctx, Request{Repo: r, Backup: m, Subset: Subset{Part: part, Of: 3}})
				if err != nil && (!archive.IsCorrupt(err) || !strings.Contains(err.Error(), m.ID)) {
					t.Errorf("part %d/3 of a damaged backup: %v; want corruption naming the backup", part, err)
				}
				if err != nil {
					failed++
				}
			}
			v, err := r.ReadVerdict(ctx, m.ID)
			if failed == 0 || err != nil || v.Checksums == nil || v.Checksums.OK {
				t.Errorf("parts 1-3 of 3 of a damaged backup: %d failed, verdict %+v (%v); want damage found and recorded", failed, v.Checksums, err)
			}
		})
	}
}

// flipLargest flips a byte in the middle of the largest object under root:
// a stream object, or a pack.
func flipLargest(t *testing.T, root string) {
	t.Helper()
	var big string
	var size int64
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && fi.Size() > size {
			big, size = p, fi.Size()
		}
		return err
	})
	data, err := os.ReadFile(big)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(big, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

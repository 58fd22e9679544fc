package dedup_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/dedup"
	"github.com/backstream/backstream/internal/storage/faulty"
	"github.com/backstream/backstream/internal/storage/local"
)

// nights are seven backups' files: each night changes a part of one file
// and adds a small one, as nightly fulls of a database would.
func nights() []files {
	base := files{"ibdata1": random(1 << 20), "db/a.ibd": random(3 << 20), "db/b.ibd": random(2 << 20)}
	var out []files
	for n := range 7 {
		fs := files{}
		for p, b := range base {
			fs[p] = bytes.Clone(b)
		}
		if n > 0 {
			copy(fs["db/a.ibd"][n*256<<10:], random(128<<10))
			fs[fmt.Sprintf("db/n%d.ibd", n)] = random(200 << 10)
		}
		out = append(out, fs)
		base = fs
	}
	return out
}

// restores fails the test unless backup m restores to fs exactly.
func restores(t *testing.T, s *dedup.Store, m *archive.Manifest, fs files) {
	t.Helper()
	got, err := restore(s, m)
	if err != nil {
		t.Fatalf("restore of %s: %v", m.ID, err)
	}
	for p, want := range fs {
		if !bytes.Equal(got[p], want) {
			t.Fatalf("backup %s: file %s differs after the round trip", m.ID, p)
		}
	}
}

// liveOf is the names the backups ms hold.
func liveOf(t *testing.T, s *dedup.Store, ms ...*archive.Manifest) *dedup.Live {
	t.Helper()
	live := &dedup.Live{}
	for _, m := range ms {
		if err := s.LiveNames(context.Background(), "backups/"+m.ID, m, live); err != nil {
			t.Fatal(err)
		}
	}
	return live
}

// Any of seven nightly backups restores to its own files after the others
// are collected away: three kept, then one.
func TestSevenNightsEachRestoresAlone(t *testing.T) {
	s, root, _ := newStore(t)
	fs := nights()
	var ms []*archive.Manifest
	for i, f := range fs {
		ms = append(ms, backup(t, s, fmt.Sprintf("night%d", i+1), f))
	}
	all := sizeOf(t, filepath.Join(root, "dedup"))
	if one := int64(6 << 20); all > one*3/2 {
		t.Errorf("seven nights stored %d bytes, more than 1.5x one night's %d", all, one)
	}
	for _, keep := range [][]int{{0, 3, 6}, {3}} {
		var kept []*archive.Manifest
		for _, i := range keep {
			kept = append(kept, ms[i])
		}
		if _, err := s.Collect(context.Background(), liveOf(t, s, kept...)); err != nil {
			t.Fatal(err)
		}
		for _, i := range keep {
			restores(t, s, ms[i], fs[i])
		}
	}
}

// A block several backups share, damaged in its pack, fails every one of
// them, each naming the pack, as corruption; a backup that does not hold
// it restores.
func TestSharedBlockDamageNamesEveryBackup(t *testing.T) {
	s, root, _ := newStore(t)
	shared := random(2 << 20)
	var ms []*archive.Manifest
	for i := range 3 {
		ms = append(ms, backup(t, s, fmt.Sprintf("b%d", i), files{"db/shared.ibd": shared, fmt.Sprintf("db/own%d.ibd", i): random(300 << 10)}))
	}
	var packs []string
	filepath.Walk(filepath.Join(root, "dedup", "packs"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			packs = append(packs, p)
		}
		return err
	})
	// The first backup's packs hold the shared file: damage each of them
	// in turn until the shared file breaks.
	other := backup(t, s, "other", files{"db/unrelated.ibd": random(500 << 10)})
	for _, p := range packs {
		data, _ := os.ReadFile(p)
		damaged := bytes.Clone(data)
		damaged[len(damaged)/2] ^= 0x01
		os.WriteFile(p, damaged, 0o600)
		broken := 0
		for _, m := range ms {
			if _, err := restore(s, m); err != nil {
				if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), filepath.Base(p)) {
					t.Errorf("backup %s with pack %s damaged: %v; want corruption naming the pack", m.ID, filepath.Base(p), err)
				}
				broken++
			}
		}
		os.WriteFile(p, data, 0o600)
		if broken == len(ms) {
			restores(t, s, other, files{})
			return
		}
	}
	t.Fatal("no pack held the shared file: the test proves nothing")
}

// Collect cut short at each of its writes and deletes leaves a store from
// which the kept backup restores, and a Collect run again finishes the
// work: with its index in one part, and in parts of 8 blocks (packs of 1
// MiB, so that new packs and parts of the index alternate).
func TestCollectInterruptedAnywhere(t *testing.T) {
	ctx := context.Background()
	// A put or a delete fails after that many of its kind went through:
	// the first, and later ones (with small parts, a put of a new pack or
	// of a part of the index between others).
	for _, step := range []struct {
		op, name string
		afters   []int
		small    bool
	}{
		{faulty.OpPut, "dedup/packs/", []int{0}, false}, {faulty.OpPut, "dedup/index/", []int{0}, false},
		{faulty.OpDelete, "dedup/index/", []int{0, 2}, false}, {faulty.OpDelete, "dedup/packs/", []int{0, 1}, false},
		{faulty.OpPut, "dedup/packs/", []int{1}, true}, {faulty.OpPut, "dedup/index/", []int{1, 3}, true},
		{faulty.OpDelete, "dedup/index/", []int{1}, true}, {faulty.OpDelete, "dedup/packs/", []int{2}, true},
	} {
		for _, after := range step.afters {
			t.Run(fmt.Sprintf("%s %s after %d, small parts %v", step.op, step.name, after, step.small), func(t *testing.T) {
				if step.small {
					defer dedup.SetIndexPartBlocks(8)()
					defer dedup.SetPackTarget(1 << 20)()
				}
				s, fb, root := faultyStore(t)
				// The second backup keeps one block of four of the
				// first's file: every pack of the first is repacked.
				x := random(8 << 20)
				backup(t, s, "one", files{"db/x.ibd": x, "db/gone.ibd": random(1 << 20)})
				y := bytes.Clone(x)
				for off := 0; off < len(y); off += 256 << 10 {
					copy(y[off+64<<10:], random(192<<10))
				}
				keptFiles := files{"db/x.ibd": y}
				kept := backup(t, s, "two", keptFiles)
				live := liveOf(t, s, kept)
				fb.Add(faulty.Fault{Op: step.op, Name: step.name, Times: 1, Skip: after})
				_, cerr := s.Collect(ctx, live)
				fired := fb.Fired()
				fb.Clear()
				if cerr == nil && fired > after {
					t.Fatalf("Collect succeeded though its step failed")
				}
				if fired == 0 {
					t.Fatalf("Collect never reached the step: the test proves nothing")
				}
				t.Logf("Collect stopped after %d of the step's calls: %v", after, cerr)
				fresh, err := dedup.Open(ctx, fb)
				if err != nil {
					t.Fatal(err)
				}
				restores(t, fresh, kept, keptFiles)
				if _, err := fresh.Collect(ctx, live); err != nil {
					t.Fatalf("Collect run again: %v", err)
				}
				restores(t, fresh, kept, keptFiles)
				if size := sizeOf(t, filepath.Join(root, "dedup")); size > 9<<20 {
					t.Errorf("after Collect run again the store holds %d bytes: what only backup one named is left", size)
				}
			})
		}
	}
}

// faultyStore is a new block store in a directory (its root), through a
// backend that injects the faults a test adds.
func faultyStore(t *testing.T) (*dedup.Store, *faulty.Backend, string) {
	t.Helper()
	root := t.TempDir()
	inner, err := local.New(root)
	if err != nil {
		t.Fatal(err)
	}
	fb := faulty.New(inner)
	if err := dedup.Init(t.Context(), fb); err != nil {
		t.Fatal(err)
	}
	s, err := dedup.Open(t.Context(), fb)
	if err != nil {
		t.Fatal(err)
	}
	return s, fb, root
}

// A Live holds each name added once, however its merges fall, and no
// other: names added again (as every backup names most blocks the others
// do) and in any order.
func TestLiveHoldsEachNameOnce(t *testing.T) {
	var names []dedup.Name
	for range 5000 {
		var n dedup.Name
		copy(n[:], random(32))
		names = append(names, n)
	}
	added := slices.Concat(names[:3000], names[1000:5000], names[:500])
	for _, each := range []int{1, 7, 100, 1 << 20} {
		live, has := dedup.LiveOf(added, each)
		if live.Len() != len(names) {
			t.Errorf("merging each %d: %d names held, want %d", each, live.Len(), len(names))
		}
		for _, n := range names {
			if !has(n) {
				t.Fatalf("merging each %d: %s added, not held", each, n)
			}
		}
		var other dedup.Name
		copy(other[:], random(32))
		if has(other) {
			t.Errorf("merging each %d: a name never added is held", each)
		}
	}
}

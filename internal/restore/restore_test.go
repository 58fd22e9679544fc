package restore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/testkit"
)

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var files = map[string]string{"ibdata1": strings.Repeat("i", 70000), "db/t.ibd": "table t", "db/t.frm": "frm", "xtrabackup_checkpoints": "backup_type = full-backuped\n"}

func TestDatadirWritesEveryFileAndFinishes(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	m := repotest.Store(t, r, repotest.Backup{ID: "20261121T190512Z-0001", Files: files})
	links, err := Links(ctx, r, m)
	if err != nil || len(links) != 1 {
		t.Fatalf("Links = %d links, %v; want the backup alone", len(links), err)
	}
	target := filepath.Join(testkit.DiskTempDir(t), "datadir")
	if err := Datadir(ctx, Job{Links: links, TargetDir: target}); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, target)
	if len(got) != len(files) {
		t.Errorf("restored %d files, want %d: %v", len(got), len(files), got)
	}
	for p, want := range files {
		if got[p] != want {
			t.Errorf("%s: restored %q, want %q", p, got[p], want)
		}
	}
	if _, err := os.Stat(filepath.Join(target, markerName)); !os.IsNotExist(err) {
		t.Errorf("the restore marker is still there after Finish: %v", err)
	}
	// Finish reported success with every file on disk (a crash of the
	// host now loses nothing).
	for p := range files {
		pages, ok := testkit.PageCache(t, filepath.Join(target, p))
		if !ok {
			t.Log("this kernel or file system cannot say which pages are dirty; durable's tests cover the sync")
			break
		}
		if pages != (testkit.Pages{}) {
			t.Errorf("%s: %+v pages not on disk when the restore finished", p, pages)
		}
	}
	// The control: with NoSync the restore leaves its files to the page
	// cache, so the check above can fail.
	scratch := filepath.Join(testkit.DiskTempDir(t), "scratch")
	if err := Datadir(ctx, Job{Links: links, TargetDir: scratch, Options: Options{NoSync: true}}); err != nil {
		t.Fatal(err)
	}
	if pages, ok := testkit.PageCache(t, filepath.Join(scratch, "ibdata1")); ok && pages.Dirty == 0 {
		t.Errorf("a restore with NoSync left no dirty page: the check of the synced restore could not fail")
	}
	// The target is now in use: a second restore is refused and leaves it.
	err = Datadir(ctx, Job{Links: links, TargetDir: target})
	if err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Fatalf("restore into a restored datadir: %v, want refused as not empty", err)
	}
	if got2 := readTree(t, target); len(got2) != len(files) {
		t.Errorf("the refused restore changed the target: %d files", len(got2))
	}
}

func TestDatadirEmptiesTargetOnDamage(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	m := repotest.Store(t, r, repotest.Backup{ID: "20261121T190512Z-0002", Files: files})
	// Flip a byte in the middle of a stream object.
	obj := filepath.Join(r.Backend.Location(), repo.Dir(m.ID), m.Streams[0].Name)
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(obj, data, 0o600); err != nil {
		t.Fatal(err)
	}
	links, _ := Links(ctx, r, m)
	// An existing empty target stays, emptied; a created one goes.
	existing := t.TempDir()
	created := filepath.Join(t.TempDir(), "new")
	for _, dir := range []string{existing, created} {
		err = Datadir(ctx, Job{Links: links, TargetDir: dir})
		if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), m.ID) {
			t.Fatalf("restore of a damaged backup into %s: %v, want corruption naming the backup", dir, err)
		}
	}
	if entries, err := os.ReadDir(existing); err != nil || len(entries) != 0 {
		t.Errorf("the existing target holds %d entries after a failed restore (%v), want none", len(entries), err)
	}
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Errorf("the target the restore created is still there: %v", err)
	}
}

func TestClaimNamesAnInterruptedRestore(t *testing.T) {
	dir := t.TempDir()
	tg, err := Claim(dir, "20261121T190512Z-0003")
	if err != nil {
		t.Fatal(err)
	}
	// A restore killed here leaves the marker; the next one names it.
	_, err = Claim(dir, "20261121T190512Z-0004")
	if err == nil || !strings.Contains(err.Error(), "interrupted restore") || !strings.Contains(err.Error(), "20261121T190512Z-0003") {
		t.Fatalf("Claim of a killed restore's target: %v, want it named as interrupted with its backup", err)
	}
	if got := tg.Abandon(os.ErrClosed); got != os.ErrClosed {
		t.Fatalf("Abandon returned %v, want the cause unchanged", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("Abandon left %d entries", len(entries))
	}
}

// What a restore writes stays in the work directory, where no server can
// start on it, until Finish moves it up; Finish never replaces what
// something else put in the target meanwhile.
func TestFinishMovesTheWorkUp(t *testing.T) {
	dir := t.TempDir()
	tg, err := Claim(dir, "20261121T190512Z-0003")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(tg.WorkDir(), "mysql"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ibdata1", "mysql/db.frm"} {
		if err := os.WriteFile(filepath.Join(tg.WorkDir(), name), []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ibdata1")); !os.IsNotExist(err) {
		t.Fatalf("ibdata1 in the target before Finish: %v", err)
	}
	if err := tg.Finish(""); err != nil {
		t.Fatal(err)
	}
	var names []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, rel)
		}
		return err
	})
	if want := []string{"ibdata1", "mysql/db.frm"}; !slices.Equal(names, want) {
		t.Fatalf("the finished target holds %q, want %q (no marker, no work directory)", names, want)
	}

	other := t.TempDir()
	tg, err = Claim(other, "20261121T190512Z-0004")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{other, tg.WorkDir()} {
		if err := os.WriteFile(filepath.Join(d, "ibdata1"), []byte(d), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := tg.Finish(""); err == nil || !strings.Contains(err.Error(), "ibdata1 appeared there while the restore ran") {
		t.Fatalf("Finish over a file that appeared in the target: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(other, "ibdata1")); string(got) != other {
		t.Fatalf("Finish replaced the file that appeared in the target: it holds %q", got)
	}
}

func TestChainNeedsPrepare(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	full := repotest.Store(t, r, repotest.Backup{ID: "20261121T190512Z-0005", Files: files})
	inc := repotest.Store(t, r, repotest.Backup{ID: "20261121T190612Z-0006", Parent: full, Files: map[string]string{"db/t.ibd.delta": "delta"}})
	links, err := Links(ctx, r, inc)
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 2 || links[0].Manifest.ID != full.ID || links[1].Manifest.ID != inc.ID {
		t.Fatalf("Links of an incremental = %v, want its full then itself", links)
	}
	target := filepath.Join(t.TempDir(), "datadir")
	err = Datadir(ctx, Job{Links: links, TargetDir: target})
	if err == nil || !strings.Contains(err.Error(), "restores only with --prepare") {
		t.Fatalf("chain without prepare: %v, want refused", err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("the refused chain restore left its target: %v", err)
	}
}

// A backup's .isl names the source's external path: a restore takes it
// out (the tablespace stays in the datadir) and says so; a mapping needs
// prepare and is refused without it before anything is written.
func TestDatadirTakesLinkFilesOut(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	withLink := map[string]string{"ibdata1": "i", "db/t.frm": "frm", "db/t.ibd": "table t", "db/t.isl": "/src/ext/db/t.ibd\n"}
	m := repotest.Store(t, r, repotest.Backup{ID: "20261121T190512Z-0007", Files: withLink})
	links, err := Links(ctx, r, m)
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "datadir")
	var placed []Placement
	err = Datadir(ctx, Job{Links: links, TargetDir: target, Options: Options{Placed: func(p Placement) { placed = append(placed, p) }}})
	if err != nil {
		t.Fatal(err)
	}
	got := readTree(t, target)
	if _, ok := got["db/t.isl"]; ok || got["db/t.ibd"] != "table t" || len(got) != 3 {
		t.Errorf("restored %v, want every file but the .isl", got)
	}
	if len(placed) != 1 || placed[0].From != "/src/ext" || placed[0].To != target || placed[0].Mapped || len(placed[0].Files) != 1 || placed[0].Files[0] != "db/t.ibd" {
		t.Errorf("placements %+v, want /src/ext's one tablespace in the datadir", placed)
	}

	target = filepath.Join(t.TempDir(), "datadir")
	err = Datadir(ctx, Job{Links: links, TargetDir: target, Options: Options{DataDirs: []DirMap{{Old: "/src/ext", New: t.TempDir()}}}})
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "needs prepare") {
		t.Fatalf("a mapping without prepare: %v, want refused", err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("the refused restore left its target: %v", err)
	}
}

// A mapped tablespace moves out of the target and its .isl points at it;
// a file of the same name at the destination is refused, and Abandon
// removes what was placed outside the target.
func TestPlaceMapsAndAbandonRemoves(t *testing.T) {
	setup := func() (*Target, map[string]string) {
		dir := t.TempDir()
		for name, data := range map[string]string{"db/a.ibd": "table a", "db/b.ibd": "table b"} {
			if err := os.MkdirAll(filepath.Join(dir, "db"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return &Target{dir: dir, work: dir}, map[string]string{"db/a.ibd": "/src/ext/db/a.ibd", "db/b.ibd": "/src/ext/db/b.ibd"}
	}
	tg, recorded := setup()
	dst := filepath.Join(t.TempDir(), "new", "ext")
	var placed []Placement
	maps := []DirMap{{Old: "/src/ext", New: dst}, {Old: "/elsewhere", New: t.TempDir()}}
	if err := tg.place(recorded, Options{DataDirs: maps, Placed: func(p Placement) { placed = append(placed, p) }}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if b, err := os.ReadFile(filepath.Join(dst, "db", n+".ibd")); err != nil || string(b) != "table "+n {
			t.Errorf("placed %s: %q, %v", n, b, err)
		}
		if isl, err := os.ReadFile(filepath.Join(tg.work, "db", n+".isl")); err != nil || string(isl) != filepath.Join(dst, "db", n+".ibd") {
			t.Errorf("%s.isl: %q, %v", n, isl, err)
		}
	}
	if len(placed) != 2 || !placed[0].Mapped || placed[0].To != dst || len(placed[0].Files) != 2 || placed[1].From != "/elsewhere" || len(placed[1].Files) != 0 {
		t.Errorf("placements %+v", placed)
	}
	if err := tg.Abandon(os.ErrClosed); err != os.ErrClosed {
		t.Fatalf("Abandon: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(dst)); !os.IsNotExist(err) {
		t.Errorf("Abandon left the directories it created outside the target: %v", err)
	}

	tg, recorded = setup()
	dst = t.TempDir()
	if err := os.MkdirAll(filepath.Join(dst, "db"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "db", "b.ibd"), []byte("someone's"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := tg.place(recorded, Options{DataDirs: []DirMap{{Old: "/src/ext", New: dst}}})
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), filepath.Join(dst, "db", "b.ibd")) {
		t.Fatalf("placing over an existing file: %v, want refused naming it", err)
	}
	tg.Abandon(err)
	if got := readTree(t, dst); len(got) != 1 || got["db/b.ibd"] != "someone's" {
		t.Errorf("the refused destination holds %v afterwards, want only its own file", got)
	}
}

// KeepLinkFiles writes every recorded .isl back as the backup had it and
// places nothing; a tablespace without its file gets none.
func TestPlaceKeepsLinkFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "db"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "db", "a.ibd"), []byte("table a"), 0o600); err != nil {
		t.Fatal(err)
	}
	tg := &Target{dir: dir, work: dir}
	recorded := map[string]string{"db/a.ibd": "/src/ext/db/a.ibd", "db/gone.ibd": "/src/ext/db/gone.ibd"}
	if err := tg.place(recorded, Options{KeepLinkFiles: true}); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, dir)
	if len(got) != 2 || got["db/a.ibd"] != "table a" || got["db/a.isl"] != "/src/ext/db/a.ibd" {
		t.Errorf("kept %v, want db/a.ibd and its .isl as recorded", got)
	}
}

// A mapped directory that a process started to use after the restore
// began (checkDirMaps passed) is refused when its tablespaces would move
// there, and none of them moves.
func TestPlaceRefusesADirectoryInUse(t *testing.T) {
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "db"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "db", "a.ibd"), []byte("table a"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	cmd := exec.Command("sleep", "60")
	cmd.Dir = dst
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	tg := &Target{dir: work, work: work}
	err := tg.place(map[string]string{"db/a.ibd": "/src/ext/db/a.ibd"}, Options{DataDirs: []DirMap{{Old: "/src/ext", New: dst}}})
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), dst) || !strings.Contains(err.Error(), "sleep") {
		t.Fatalf("placing into a directory a process works in: %v, want refused naming it and the process", err)
	}
	if got, err := os.ReadDir(dst); err != nil || len(got) != 0 {
		t.Errorf("the refused directory holds %v (%v), want nothing", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(work, "db", "a.ibd")); err != nil || string(b) != "table a" {
		t.Errorf("the tablespace left the target: %q, %v", b, err)
	}
}

// A directory that a running process works in is refused, naming it.
func TestNotInUseSeesARunningProcess(t *testing.T) {
	dir := t.TempDir()
	if err := notInUse(dir); err != nil {
		t.Fatalf("an unused directory: %v", err)
	}
	cmd := exec.Command("sleep", "60")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	err := notInUse(filepath.Join(dir))
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "sleep") {
		t.Fatalf("a directory a process works in: %v, want refused naming it and the process", err)
	}
}

func TestParseDirMap(t *testing.T) {
	if m, err := ParseDirMap("/a/b/=/c"); err != nil || m != (DirMap{Old: "/a/b", New: "/c"}) {
		t.Errorf("ParseDirMap: %+v, %v", m, err)
	}
	for _, bad := range []string{"/a", "a=/b", "/a=b", "=/b"} {
		if _, err := ParseDirMap(bad); err == nil {
			t.Errorf("ParseDirMap(%q) accepted", bad)
		}
	}
}

// Decoders go to the links in proportion to their size, at least one
// each; evenly while the sizes are unknown.
func TestDecoders(t *testing.T) {
	link := func(size int64) Link {
		return Link{Manifest: &archive.Manifest{Stats: archive.Stats{StoredBytes: size}}}
	}
	for _, c := range []struct {
		sizes []int64
		n     int
		want  []int
	}{
		{[]int64{420, 30, 30, 30}, 2, []int{2, 1, 1, 1}},    // a base and small increments
		{[]int64{409, 320, 313, 314}, 2, []int{1, 1, 1, 1}}, // links of a size: one each
		{[]int64{400, 400}, 8, []int{4, 4}},
		{[]int64{0, 0}, 4, []int{2, 2}}, // sizes unknown
		{[]int64{100}, 3, []int{3}},
	} {
		var links []Link
		var total int64
		for _, s := range c.sizes {
			links = append(links, link(s))
			total += s
		}
		if got := decoders(links, total, c.n); !slices.Equal(got, c.want) {
			t.Errorf("decoders(%v, %d) = %v, want %v", c.sizes, c.n, got, c.want)
		}
	}
}

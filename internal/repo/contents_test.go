package repo_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
)

// A backup's files and tables are stored apart from its manifest: a
// listing reads the manifests alone, whose size does not grow with them,
// and knows the counts; resolving a backup loads them, checked against
// the manifest's digest, so a flipped byte in them is damage naming the
// object (as a flipped byte in a stream object is); a backup stored before
// they were kept apart still reads.
func TestContentsStoredApart(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	files := map[string]string{}
	for i := range 300 {
		files["db/t"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26))+".ibd"] = "page"
	}
	many := repotest.Store(t, r, repotest.Backup{ID: "20261118T030000Z-0001", Files: files,
		Tables: []archive.Table{{Name: "db.t", Files: []string{"db/tyy.ibd"}}}})
	few := repotest.Store(t, r, repotest.Backup{ID: "20261119T030000Z-0002", Files: map[string]string{"f": "a"}})
	manifest := func(id string) []byte { return repotest.Object(t, r, repo.Dir(id)+"/"+repo.ManifestName) }
	if a, b := len(manifest(many.ID)), len(manifest(few.ID)); a > b+64 || bytes.Contains(manifest(many.ID), []byte("db/t")) {
		t.Errorf("manifests of 300 files and of 1: %d and %d bytes; want about the same size, no file in them", a, b)
	}

	ms, err := r.List(ctx)
	if err != nil || len(ms) != 2 {
		t.Fatalf("List: %v, %v", ms, err)
	}
	if !ms[0].Detached() || ms[0].FileCount() != 300 || ms[1].FileCount() != 1 {
		t.Errorf("listed: detached %v, %d and %d files; want the counts without the contents", ms[0].Detached(), ms[0].FileCount(), ms[1].FileCount())
	}
	m, err := r.Resolve(ctx, many.ID[:20])
	if err != nil || m.Detached() || len(m.Files) != 300 || len(m.Tables) != 1 {
		t.Fatalf("Resolve: %v; want the contents loaded", err)
	}

	// A flipped byte in the contents object: the listing does not read
	// it; what reads the backup finds it, naming the object.
	object := repo.Dir(many.ID) + "/" + archive.ContentsName
	data := repotest.Object(t, r, object)
	data[len(data)/2] ^= 1
	repotest.PutObject(t, r, object, data)
	if entries, err := r.Scan(ctx); err != nil || entries[0].Damage != nil || entries[0].Manifest == nil {
		t.Errorf("Scan with the contents damaged: %+v, %v", entries, err)
	}
	for _, ref := range []string{many.ID, "20261118"} {
		if _, err := r.Resolve(ctx, ref); !archive.IsCorrupt(err) || !strings.Contains(err.Error(), archive.ContentsName) {
			t.Errorf("Resolve(%s) with the contents damaged: %v; want damage naming %s", ref, err, archive.ContentsName)
		}
	}
	inc := repotest.Store(t, r, repotest.Backup{ID: "20261120T030000Z-0003", Parent: few, Files: map[string]string{"f.delta": "b"}})
	if _, err := r.Chain(ctx, inc); err != nil {
		t.Errorf("the chain of an incremental on a sound backup: %v", err)
	}
	repotest.PutObject(t, r, repo.Dir(few.ID)+"/"+archive.ContentsName, []byte("{}"))
	if _, err := r.Chain(ctx, inc); !archive.IsCorrupt(err) || !strings.Contains(err.Error(), "its chain is broken at "+few.ID) {
		t.Errorf("the chain through damaged contents: %v", err)
	}

	// A manifest of the former layout, its contents inline.
	old := *m
	old.ID, old.Chain, old.Contents, old.Format = "20261117T030000Z-0000", "20261117T030000Z-0000", nil, archive.FormatVersion
	old.Meta = nil
	data, err = old.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range m.Streams {
		repotest.PutObject(t, r, repo.Dir(old.ID)+"/"+s.Name, repotest.Object(t, r, repo.Dir(many.ID)+"/"+s.Name))
		repotest.PutObject(t, r, repo.Dir(old.ID)+"/"+s.Index.Name, repotest.Object(t, r, repo.Dir(many.ID)+"/"+s.Index.Name))
	}
	repotest.PutObject(t, r, repo.Dir(old.ID)+"/"+repo.ManifestName, data)
	got, err := r.Resolve(ctx, old.ID)
	if err != nil || got.Detached() || len(got.Files) != 300 {
		t.Fatalf("a manifest with its contents inline: %v", err)
	}
	if ms, err := r.List(ctx); err != nil || ms[0].ID != old.ID || ms[0].FileCount() != 300 {
		t.Errorf("listing a manifest with its contents inline: %v", err)
	}
}

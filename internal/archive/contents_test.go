package archive

import (
	"context"
	"strings"
	"testing"
)

// A manifest's contents (files, tables, barriers) go into an object of
// their own: the manifest then holds their counts and names the object in
// its meta, marshals without them, parses as detached (Read refuses it),
// and takes them back only when they decode, agree with the counts and
// pass the checks inline contents do.
func TestContents(t *testing.T) {
	m := positionedManifest()
	m.Files = []File{{Path: "ibdata1", Size: 1, Stream: 0, Frames: []FrameRange{{0, 0}}}, {Path: "db/t.ibd", Size: 0, Stream: 0}}
	m.Tables = []Table{{Name: "db.t", Files: []string{"db/t.ibd"}}}
	data, err := m.Detach()
	if err != nil {
		t.Fatal(err)
	}
	if *m.Contents != (ContentsCounts{Files: 2, Tables: 1}) || m.Format != ContentsFormat || m.Detached() || m.FileCount() != 2 || len(m.Files) != 2 {
		t.Fatalf("after Detach: %+v, detached %v", m.Contents, m.Detached())
	}
	if _, err := ParseManifest(mustMarshal(t, m)); err == nil || !strings.Contains(err.Error(), "meta lists no") {
		t.Errorf("a manifest whose meta does not name its contents object: %v", err)
	}
	m.Meta = append(m.Meta, Object{Name: ContentsName, Size: int64(len(data)), Digest: "blake3:00"})
	stored := mustMarshal(t, m)
	if strings.Contains(string(stored), "db/t.ibd") {
		t.Errorf("the manifest holds its contents inline:\n%s", stored)
	}
	head, err := ParseManifest(stored)
	if err != nil {
		t.Fatal(err)
	}
	if !head.Detached() || head.FileCount() != 2 || head.Files != nil {
		t.Fatalf("parsed: detached %v, %d files counted, %v", head.Detached(), head.FileCount(), head.Files)
	}
	if err := Read(context.Background(), ReadOptions{Manifest: head}); err == nil || !strings.Contains(err.Error(), "were not loaded") {
		t.Errorf("Read of a detached manifest: %v", err)
	}
	// A format 1 manifest, which a backstream that knows no contents
	// object reads, never has one: it would find no files.
	one := *head
	one.Format = FormatVersion
	if _, err := ParseManifest(mustMarshal(t, &one)); err == nil || !strings.Contains(err.Error(), "format version 1 with its contents apart") {
		t.Errorf("format 1 with contents apart: %v", err)
	}
	whole, err := head.LoadContents(data)
	if err != nil || whole.Detached() || len(whole.Files) != 2 || whole.Tables[0].Name != "db.t" || !head.Detached() {
		t.Fatalf("LoadContents: %+v, %v (the head detached: %v)", whole, err, head.Detached())
	}

	for name, bad := range map[string]string{
		"not JSON":            "{",
		"counts disagree":     `{"files": []}`,
		"stream out of range": strings.Replace(string(data), `"stream":0`, `"stream":7`, 1),
		"trailing data":       string(data) + "{}",
	} {
		if _, err := head.LoadContents([]byte(bad)); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}

	// Inline and apart at once does not parse (the bytes edited, so the
	// checksum, which would no longer match, is left out).
	both := *whole
	both.Contents = nil
	inline := string(mustMarshal(t, &both))
	inline = inline[:strings.Index(inline, `"checksum"`)] + inline[strings.Index(inline, `"format"`):]
	if _, err := ParseManifest([]byte(strings.Replace(inline, `"meta": [`, `"contents": {"files": 2, "tables": 1, "barriers": 0},
  "meta": [`, 1))); err == nil || !strings.Contains(err.Error(), "both inline and in") {
		t.Errorf("contents inline and apart: %v", err)
	}
}

func mustMarshal(t *testing.T, m *Manifest) []byte {
	t.Helper()
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

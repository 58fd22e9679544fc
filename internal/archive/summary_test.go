package archive

import (
	"context"
	"strings"
	"testing"
)

// A summary is the manifest without its files, tables and barriers, with
// their counts and the manifest's checksum; it parses back as a summary,
// a summary that holds files does not parse, and Read refuses to read a
// backup's data by a summary.
func TestSummary(t *testing.T) {
	m := positionedManifest()
	m.Files = []File{{Path: "ibdata1", Size: 1, Stream: 0}, {Path: "db/t.ibd", Size: 0, Stream: 0}}
	m.Tables = []Table{{Name: "db.t", Files: []string{"db/t.ibd"}}}
	if _, err := m.Marshal(); err != nil {
		t.Fatal(err)
	}
	s := m.Summarize()
	if !s.IsSummary() || m.IsSummary() || s.Files != nil || s.Tables != nil || s.FileCount() != 2 || m.FileCount() != 2 ||
		*s.Summary != (SummaryCounts{Files: 2, Tables: 1, ManifestChecksum: m.Checksum}) || s.Summarize() != s {
		t.Fatalf("summary %+v (%+v) of %+v", s, s.Summary, m)
	}
	if len(m.Files) != 2 || m.Summary != nil {
		t.Fatal("Summarize changed the manifest")
	}
	data, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseManifest(data)
	if err != nil || !back.IsSummary() || *back.Summary != *s.Summary {
		t.Fatalf("read back: %+v, %v", back, err)
	}

	forged := *s
	forged.Files = m.Files
	data, err = forged.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseManifest(data); err == nil || !strings.Contains(err.Error(), "a summary that holds files") {
		t.Errorf("a summary with files parsed: %v", err)
	}

	err = Read(context.Background(), ReadOptions{Manifest: s})
	if err == nil || !strings.Contains(err.Error(), "whole manifest is needed") {
		t.Errorf("Read of a summary: %v", err)
	}
}

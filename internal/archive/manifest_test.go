package archive

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"
)

func positionedManifest() *Manifest {
	return &Manifest{Format: FormatVersion, ID: "20261121T190512Z-7f3a", Kind: KindPhysical, Codec: "zstd:1", Hash: DefaultHash,
		Positions: Positions{ToLSN: 4711, LastLSN: 4711, BinlogFile: "mariadb-bin.000002", BinlogPosition: 1234, GTID: "0-1-42"},
		Streams:   []Stream{{Object: Object{Name: "streams/00000.xbs.zst", Size: 1, Digest: "blake3:00"}, Frames: 1, RawSize: 1}}}
}

// The checksum is the SHA-256 of the stored bytes with its hex zeroed, as
// docs/format.md tells a user to check it with standard tools; Marshal
// sets it on the manifest too, and the file reads back as written.
func TestManifestChecksumCoversStoredBytes(t *testing.T) {
	m := positionedManifest()
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("{\n  \"checksum\": \"sha256:")) {
		t.Fatalf("the checksum is not the first field:\n%.80s", data)
	}
	hexSum := string(data[len("{\n  \"checksum\": \"sha256:"):][:64])
	zeroed := bytes.Replace(data, []byte(hexSum), []byte(strings.Repeat("0", 64)), 1)
	if got := fmt.Sprintf("%x", sha256.Sum256(zeroed)); got != hexSum {
		t.Fatalf("checksum %s, the zeroed file hashes to %s", hexSum, got)
	}
	if m.Checksum != "sha256:"+hexSum {
		t.Errorf("Marshal left the manifest's checksum %q, wrote sha256:%s", m.Checksum, hexSum)
	}
	back, err := ParseManifest(data)
	if err != nil || back.Checksum != m.Checksum || back.Positions != m.Positions {
		t.Fatalf("read back: %+v, %v", back, err)
	}
}

// Any change to a sealed manifest that still parses is damage: a flipped
// digit of an LSN or a GTID, an added field, a changed checksum, or the
// checksum moved from the head.
func TestManifestChecksumRejectsChanges(t *testing.T) {
	data, err := positionedManifest().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(string) string{
		"to_lsn digit": func(s string) string { return strings.Replace(s, `"to_lsn": 4711`, `"to_lsn": 4712`, 1) },
		"gtid digit":   func(s string) string { return strings.Replace(s, `"0-1-42"`, `"0-1-43"`, 1) },
		"added field":  func(s string) string { return strings.Replace(s, `"format": 1,`, `"format": 1, "x": 1,`, 1) },
		"checksum": func(s string) string {
			i := strings.Index(s, `"sha256:`) + len(`"sha256:`)
			other := "0"
			if s[i] == '0' {
				other = "1"
			}
			return s[:i] + other + s[i+1:]
		},
		"whitespace": func(s string) string { return strings.Replace(s, `"kind": "physical"`, `"kind":  "physical"`, 1) },
		"not first": func(s string) string {
			sum := s[strings.Index(s, `"checksum"`):strings.Index(s, `"format"`)]
			return strings.Replace(strings.Replace(s, sum, "", 1), `"kind": "physical",`, `"kind": "physical", `+sum, 1)
		},
	} {
		t.Run(name, func(t *testing.T) {
			changed := change(string(data))
			if changed == string(data) {
				t.Fatal("the change changed nothing")
			}
			_, err := ParseManifest([]byte(changed))
			if err == nil || !strings.Contains(err.Error(), "checksum") {
				t.Fatalf("ParseManifest of a changed manifest: %v, want a checksum error", err)
			}
		})
	}
}

// A manifest written before checksums existed (no checksum field) still
// reads, unchecked; written again it is sealed.
func TestManifestWithoutChecksumReads(t *testing.T) {
	old := `{
  "format": 1,
  "id": "20261121T190512Z-7f3a",
  "kind": "physical",
  "started": "2026-11-21T19:05:12Z",
  "finished": "2026-11-21T19:06:12Z",
  "server": {"version": "11.4.2-MariaDB"},
  "tools": {"backstream": "0.9"},
  "positions": {"to_lsn": 4711, "last_lsn": 4711},
  "codec": "zstd:1",
  "hash": "blake3",
  "streams": [{"name": "streams/00000.xbs.zst", "size": 1, "digest": "blake3:00", "frames": 1, "raw_size": 1}],
  "files": [],
  "stats": {"raw_bytes": 1, "stored_bytes": 1, "seconds": 60}
}`
	m, err := ParseManifest([]byte(old))
	if err != nil {
		t.Fatalf("a manifest without checksum: %v", err)
	}
	if m.Checksum != "" || m.Positions.ToLSN != 4711 {
		t.Fatalf("read %+v", m)
	}
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseManifest(data); err != nil || m.Checksum == "" {
		t.Fatalf("written again: checksum %q, %v", m.Checksum, err)
	}
}

// Backups order by finishing time, then start, then id; a merged backup,
// which has the times of its chain's end, comes after that chain's links.
func TestCompareFinished(t *testing.T) {
	at := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	early := &Manifest{ID: "20261125T025900Z-aaaa", Started: at.Add(-time.Minute), Finished: at.Add(-time.Second)}
	end := &Manifest{ID: "20261125T030000Z-ffff", Started: at, Finished: at.Add(time.Second), Parent: early.ID}
	merged := &Manifest{ID: "20261125T030000Z-0000", Started: end.Started, Finished: end.Finished, MergedFrom: []string{early.ID, end.ID}}
	other := &Manifest{ID: "20261125T030000Z-0001", Started: end.Started, Finished: end.Finished}
	for _, c := range []struct {
		a, b *Manifest
		want int
	}{
		{early, end, -1},
		{end, merged, -1}, // by id alone, merged would come first
		{merged, end, 1},
		{merged, early, 1},
		{merged, other, -1}, // not its chain: by id
	} {
		if got := CompareFinished(c.a, c.b); got != c.want {
			t.Errorf("CompareFinished(%s, %s) = %d, want %d", c.a.ID, c.b.ID, got, c.want)
		}
	}
}

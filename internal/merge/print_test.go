package merge

import (
	"testing"

	"github.com/backstream/backstream/internal/archive"
)

func TestText(t *testing.T) {
	m := &archive.Manifest{ID: "M", MergedFrom: []string{"F", "I1"}, Streams: make([]archive.Stream, 2),
		Files: make([]archive.File, 3), Stats: archive.Stats{RawBytes: 40, StoredBytes: 10}}
	if got, want := Text(m), "backup M complete: full, merged from F + I1, 2 streams, 3 files, 10 bytes (4.00x of 40) stored"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

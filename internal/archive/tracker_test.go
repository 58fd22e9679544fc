package archive

import (
	"testing"

	"github.com/backstream/backstream/internal/xbstream"
)

// A file's hash state lives until its EOF chunk, and its digest after:
// a stream of many files holds one state per open file, not per file.
// A file written again after its end gets no digest (its state is gone),
// never a wrong one.
func TestTrackerEndsHashesAtEOF(t *testing.T) {
	tr := newFileTracker(DefaultHash)
	payload := func(path string, off int, b string) {
		t.Helper()
		if err := tr.track(&xbstream.Chunk{Type: xbstream.TypePayload, Path: path, Offset: uint64(off), Payload: []byte(b)}, -1); err != nil {
			t.Fatal(err)
		}
	}
	eof := func(path string) {
		t.Helper()
		if err := tr.track(&xbstream.Chunk{Type: xbstream.TypeEOF, Path: path}, -1); err != nil {
			t.Fatal(err)
		}
	}
	payload("a", 0, "hello, ")
	payload("a", 7, "world")
	eof("a")
	payload("b", 0, "open")
	eof("empty")
	payload("again", 0, "first")
	eof("again")
	payload("again", 5, "second")
	eof("again")
	if tr.files["a"].h != nil || tr.files["empty"].h != nil {
		t.Error("an ended file still holds its hash state")
	}
	if tr.files["b"].h == nil {
		t.Error("an open file lost its hash state")
	}
	want := map[string]string{
		"a":     digestOf([]byte("hello, world")),
		"b":     digestOf([]byte("open")),
		"empty": digestOf([]byte("")),
		"again": "",
	}
	for _, f := range tr.records(0) {
		if f.Digest != want[f.Path] {
			t.Errorf("%s: digest %q, want %q", f.Path, f.Digest, want[f.Path])
		}
	}
}

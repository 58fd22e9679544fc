package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/backstream/backstream/internal/xbstream"
)

// A backup of several streams comes out as one xbstream holding every
// file whole.
func TestWriteStream(t *testing.T) {
	f := writeBackup(t, "zstd", 3)
	var b bytes.Buffer
	if err := WriteStream(context.Background(), ReadOptions{Input: BackendInput{Backend: f.backend, Dir: "backups/x"}, Manifest: f.m}, &b); err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	r := xbstream.NewReader(&b)
	for {
		c, _, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.Type == xbstream.TypePayload {
			got[c.Path] = append(got[c.Path], c.Payload...)
		}
	}
	for _, want := range f.files {
		if !bytes.Equal(got[want.path], want.data) {
			t.Errorf("%s: %d bytes, want %d", want.path, len(got[want.path]), len(want.data))
		}
	}
}

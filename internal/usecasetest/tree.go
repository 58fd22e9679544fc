package usecasetest

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/xbstream"
)

// StockExtract decodes one stream object with the codec's stock tool and
// extracts it with the real mbstream, the way a user without backstream would.
func StockExtract(t testing.TB, object, dir string) {
	t.Helper()
	var decode string
	switch {
	case strings.HasSuffix(object, ".zst"):
		decode = "zstd -dc"
	case strings.HasSuffix(object, ".lz4"):
		decode = "lz4 -dc"
	case strings.HasSuffix(object, ".gz"):
		decode = "gzip -dc"
	default:
		decode = "cat"
	}
	cmd := exec.Command("bash", "-o", "pipefail", "-c", decode+` "$1" | mbstream -x -C "$2"`, "extract", object, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s | mbstream -x: %v\n%s", decode, err, out)
	}
}

// Payloads collects the files of an xbstream (as an xbstream.Reader's
// sink): each path's payload, in the order its chunks came.
type Payloads map[string]*bytes.Buffer

// Chunk adds ch's payload to its path's.
func (c Payloads) Chunk(ch *xbstream.Chunk) error {
	if ch.Type == xbstream.TypePayload {
		if c[ch.Path] == nil {
			c[ch.Path] = &bytes.Buffer{}
		}
		c[ch.Path].Write(ch.Payload)
	}
	return nil
}

package usecasetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/xbstream"
)

// TreeDigests maps every regular file under dir to the SHA-256 of its content.
func TreeDigests(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// CompareTrees fails unless got holds exactly want's files with want's digests.
func CompareTrees(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d files, want %d", what, len(got), len(want))
	}
	for p, d := range want {
		if got[p] != d {
			t.Errorf("%s: file %s differs (got %q want %q)", what, p, got[p], d)
		}
	}
}

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

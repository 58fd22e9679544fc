package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// result is what one in-process run of the CLI produced.
type result struct {
	stdout, stderr string
	err            error
	code           int
}

// run executes backstream with args in-process, as main would.
func run(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewRoot("test")
	root.SetArgs(append(args, "--progress=none"))
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(context.Background())
	r := result{stdout: out.String(), stderr: errOut.String(), err: err, code: ExitCode(err, false)}
	t.Logf("backstream %s -> exit %d, err: %v", strings.Join(args, " "), r.code, err)
	return r
}

func (r result) mustSucceed(t *testing.T) result {
	t.Helper()
	if r.err != nil {
		t.Fatalf("failed: %v\nstderr: %s", r.err, r.stderr)
	}
	return r
}

// treeDigests maps every regular file under dir to the SHA-256 of its content.
func treeDigests(t *testing.T, dir string) map[string]string {
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

func compareTrees(t *testing.T, what string, got, want map[string]string) {
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

// backupListing parses `list --json`.
func backupListing(t *testing.T, repoDir string) []listEntry {
	t.Helper()
	r := run(t, "list", "--repo", repoDir, "--json").mustSucceed(t)
	var entries []listEntry
	if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil {
		t.Fatalf("list --json: %v\n%s", err, r.stdout)
	}
	return entries
}

// stockExtract decodes one stream object with the codec's stock tool and
// extracts it with the real mbstream, the way a user without backstream would.
func stockExtract(t *testing.T, object, dir string) {
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

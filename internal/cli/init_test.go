package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/storage/s3"
)

// Only init creates a repository: backup, binlog and receive given a
// location without one fail with exit 2 and create nothing, locally and
// on S3; init refuses a repository and a location holding other objects.
func TestInitCreatesRepositoriesOnPurpose(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "typo")
	empty := t.TempDir()
	bucket := sharedS3.NewBucket(t)
	s3loc := "s3://" + bucket + "/prod"
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(run(t, "token").mustSucceed(t).stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{missing, empty, s3loc} {
		for _, args := range [][]string{
			{"backup", "--repo", loc, "--socket", "/nonexistent.sock", "--no-defaults"},
			{"backup", "--logical", "--repo", loc, "--socket", "/nonexistent.sock", "--no-defaults"},
			{"binlog", "--repo", loc, "--socket", "/nonexistent.sock", "--no-defaults"},
			{"receive", "--listen", "127.0.0.1:0", "--repo", loc, "--token-file", tok},
		} {
			r := run(t, args...)
			want := "create one with: backstream init --repo " + loc
			if r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), want) {
				t.Errorf("%v: exit %d, %v; want exit %d saying %q", args, r.code, r.err, ExitUsage, want)
			}
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("a command created %s", missing)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("a command wrote into %s: %v", empty, entries)
	}
	if objs := listBucket(t, bucket); len(objs) != 0 {
		t.Errorf("a command wrote into %s: %v", s3loc, objs)
	}

	for _, loc := range []string{missing, empty, s3loc} {
		r := run(t, "init", "--repo", loc).mustSucceed(t)
		if !strings.Contains(r.stdout, "created repository") {
			t.Errorf("init %s printed %q", loc, r.stdout)
		}
		run(t, "list", "--repo", loc).mustSucceed(t)
		if r := run(t, "init", "--repo", loc); r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "already a backstream repository") {
			t.Errorf("init %s again: exit %d, %v", loc, r.code, r.err)
		}
	}
	var made struct {
		Repository, ID string
		Format         int
	}
	jsonDir := filepath.Join(t.TempDir(), "j")
	if err := json.Unmarshal([]byte(run(t, "init", "--repo", jsonDir, "--json").mustSucceed(t).stdout), &made); err != nil ||
		made.Repository != jsonDir || made.ID == "" || made.Format != 1 {
		t.Errorf("init --json: %v, %+v", err, made)
	}
	cluttered := t.TempDir()
	if err := os.WriteFile(filepath.Join(cluttered, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "init", "--repo", cluttered); r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "holds 1 other objects") {
		t.Errorf("init into a directory with other files: exit %d, %v", r.code, r.err)
	}
}

// listBucket names the objects in bucket, under any prefix.
func listBucket(t *testing.T, bucket string) []string {
	t.Helper()
	cfg, err := s3.ConfigFromEnv("s3://" + bucket)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := b.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, i := range infos {
		out = append(out, i.Name)
	}
	return out
}

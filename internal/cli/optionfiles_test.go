package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// Every long option can come from an option file: [backstream] for all
// commands, [backstream-COMMAND] for one, profiles by
// --defaults-group-suffix; the command line wins; config shows each
// value's source; a key nobody knows, or the command does not, and a bad
// value fail naming the file and line. A backup then runs from a profile
// alone.
func TestOptionFilesSetEveryOption(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	dir := t.TempDir()
	repoDir, prodRepo := newRepoDir(t), newRepoDir(t)
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	profile := write("profile.cnf", fmt.Sprintf(`[client]
socket = %s
user = root
[backstream]
repo = %s
parallel = 3
target-dir = /only/for/restore
loose-no-such-option = 1
[backstream-backup]
compress = lz4
[backstream_prod]
repo = %s
[backstream-backup_prod]
parallel = 2
`, src.Socket, repoDir, prodRepo))
	line := func(out, option string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "--"+option+" ") {
				return strings.Join(strings.Fields(l), " ")
			}
		}
		return ""
	}
	out := run(t, "config", "backup", "--defaults-extra-file", profile).mustSucceed(t).stdout
	for option, want := range map[string]string{
		"repo":     "--repo " + repoDir + " " + profile + ":5 [backstream]",
		"parallel": "--parallel 3 " + profile + ":6 [backstream]",
		"compress": "--compress lz4 " + profile + ":10 [backstream-backup]",
		"encrypt":  "--encrypt false default",
	} {
		if got := line(out, option); got != want {
			t.Errorf("config backup: %q, want %q", got, want)
		}
	}
	if !strings.Contains(out, "user from "+profile+" [client]") {
		t.Errorf("config backup does not show where the connection's user comes from:\n%s", out)
	}
	out = run(t, "config", "backup", "--defaults-extra-file", profile, "--defaults-group-suffix", "_prod", "--compress", "zstd").mustSucceed(t).stdout
	for option, want := range map[string]string{
		"repo":     "--repo " + prodRepo + " " + profile + ":12 [backstream_prod]",
		"parallel": "--parallel 2 " + profile + ":14 [backstream-backup_prod]",
		"compress": "--compress zstd command line",
	} {
		if got := line(out, option); got != want {
			t.Errorf("config backup with the _prod profile: %q, want %q", got, want)
		}
	}

	// A backup from the profile alone: its repository, stream count and codec.
	run(t, "backup", "--defaults-extra-file", profile, "--defaults-group-suffix", "_prod").mustSucceed(t)
	var list []struct {
		ID    string `json:"id"`
		Codec string `json:"codec"`
	}
	if err := json.Unmarshal([]byte(run(t, "list", "--repo", prodRepo, "--json").mustSucceed(t).stdout), &list); err != nil || len(list) != 1 {
		t.Fatalf("list of the _prod repository: %v, %d backups", err, len(list))
	}
	if !strings.HasPrefix(list[0].Codec, "lz4") {
		t.Errorf("the profile's backup has codec %q, want lz4", list[0].Codec)
	}
	data, err := os.ReadFile(filepath.Join(prodRepo, "backups", list[0].ID, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"name": "streams/0000`) / 2; n != 2 {
		t.Errorf("the profile's backup has %d streams, want 2 (parallel = 2)", n)
	}

	for _, c := range []struct{ content, want string }{
		{"[backstream-backup]\nparalel = 3\n", `:2 [backstream-backup]: unknown option "paralel" for backup`},
		{"[backstream]\nno-such-thing = 1\n", `:2 [backstream]: unknown option "no-such-thing" (no backstream command has it)`},
		{"[backstream-backup]\n\nparallel = lots\n", `:3 [backstream-backup]: option "parallel": bad value "lots"`},
		{"[backstream-backup]\ncompress\n", `:2 [backstream-backup]: option "compress" needs a value`},
	} {
		bad := write("bad.cnf", c.content)
		r := run(t, "backup", "--defaults-extra-file", bad, "--repo", repoDir, "--socket", src.Socket, "--user", "root")
		if r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), bad+c.want) {
			t.Errorf("option file %q: exit %d, %v; want exit %d saying %q", c.content, r.code, r.err, ExitUsage, bad+c.want)
		}
	}
}

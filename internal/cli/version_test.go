package cli

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/about"
)

// version --json of a built binary says what `go version -m` reads from
// the same binary (module version, revision, Go), and each MariaDB tool
// with the version the tool itself prints; --version prints what version
// prints; a link-time version wins over the module's.
func TestVersionOfTheBuiltBinary(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	settings := goVersionM(t, bin)

	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("version --json: %v", err)
	}
	var info about.Info
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("version --json: %v\n%s", err, out)
	}
	if info.Go != settings["go"] || info.Module != "github.com/backstream/backstream" || info.ModuleVersion != settings["mod"] ||
		info.Revision != settings["vcs.revision"] || info.Modified != (settings["vcs.modified"] == "true") ||
		info.Platform != settings["GOOS"]+"/"+settings["GOARCH"] {
		t.Errorf("version --json says %+v; go version -m says %v", info, settings)
	}
	if want := settings["mod"]; want == "(devel)" && info.Version != "dev" || want != "(devel)" && info.Version != want {
		t.Errorf("version %q; the module's is %q", info.Version, want)
	}
	tools := map[string]about.Tool{}
	for _, tool := range info.Tools {
		tools[tool.Name] = tool
	}
	for _, name := range []string{"mariabackup", "mariadb", "mariadb-binlog", "mariadbd"} {
		tool, ok := tools[name]
		if !ok || tool.Path == "" || tool.Version == "" || tool.Error != "" {
			t.Errorf("%s: %+v", name, tool)
			continue
		}
		own, err := exec.Command(tool.Path, "--version").CombinedOutput()
		if err != nil {
			t.Fatal(err)
		}
		if name == "mariadb-binlog" && !strings.Contains(string(own), "-MariaDB") {
			// Before 11.x it prints only its own version ("Ver 3.5"):
			// it goes by the client's beside it.
			if own, err = exec.Command(filepath.Join(filepath.Dir(tool.Path), "mariadb"), "--version").CombinedOutput(); err != nil {
				t.Fatal(err)
			}
		}
		if !strings.Contains(string(own), tool.Version) {
			t.Errorf("%s: version %q is not in what it prints: %q", name, tool.Version, own)
		}
	}
	if v := tools["mariabackup"].Version; !strings.HasSuffix(v, "-MariaDB") {
		t.Errorf("mariabackup's version %q is not a MariaDB version", v)
	}

	text, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	flag, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(text) != string(flag) || !strings.HasPrefix(string(text), "backstream "+info.Version+"\n") ||
		!strings.Contains(string(text), tools["mariabackup"].Path) || !strings.Contains(string(text), info.Go) {
		t.Errorf("version printed:\n%s\n--version printed:\n%s", text, flag)
	}

	// A release names itself at link time.
	named := filepath.Join(t.TempDir(), "backstream")
	if out, err := exec.Command("go", "build", "-o", named, "-ldflags", "-X main.version=1.2.3-test", "github.com/backstream/backstream/cmd/backstream").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, err := exec.Command(named, "--version").Output(); err != nil || !strings.HasPrefix(string(out), "backstream 1.2.3-test\n") {
		t.Errorf("--version of a build linked as 1.2.3-test: %v\n%s", err, out)
	}
}

// goVersionM reads `go version -m bin`: "go" and "mod" (the main module's
// version), and its build settings by key.
func goVersionM(t *testing.T, bin string) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	m := map[string]string{}
	for i, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "\t")
		switch {
		case i == 0:
			_, m["go"], _ = strings.Cut(line, ": ")
		case len(f) >= 3 && f[0] == "mod":
			m["mod"] = f[2]
		case len(f) == 2 && f[0] == "build":
			if k, v, ok := strings.Cut(f[1], "="); ok {
				m[k] = v
			}
		}
	}
	return m
}

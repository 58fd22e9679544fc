package usecasetest

import (
	"context"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/fidelitytest"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// CorpusServerArgs are the options of a server of the corpus: its global
// sql_mode is mode's.
func CorpusServerArgs(mode string) []string {
	return []string{"--sql-mode=" + fidelitytest.Modes[mode]}
}

// CorpusSource starts a server whose global sql_mode is mode's, loads the
// fixtures that keep takes, and returns it with their fingerprints.
func CorpusSource(t *testing.T, fixtures []*fidelitytest.Fixture, mode string, keep func(*fidelitytest.Fixture) bool) (*sandbox.Server, []*fidelitytest.Fixture, map[string]map[string]string) {
	t.Helper()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Args: CorpusServerArgs(mode)})
	var loaded []*fidelitytest.Fixture
	for _, f := range fixtures {
		if !keep(f) {
			continue
		}
		if err := f.Load(ctx, src.Socket, "root"); err != nil {
			t.Fatal(err)
		}
		loaded = append(loaded, f)
	}
	if len(loaded) == 0 {
		t.Fatalf("no fixture of the corpus takes this path: the test would prove nothing")
	}
	return src, loaded, CorpusFingerprints(t, src, loaded)
}

// CorpusFingerprints fingerprints every fixture's database on s.
func CorpusFingerprints(t *testing.T, s *sandbox.Server, fixtures []*fidelitytest.Fixture) map[string]map[string]string {
	t.Helper()
	want := map[string]map[string]string{}
	for _, f := range fixtures {
		fp, err := fidelitytest.Fingerprint(context.Background(), s.DB(), f.Database)
		if err != nil {
			t.Fatal(err)
		}
		want[f.Name] = fp
	}
	return want
}

// CompareCorpus fingerprints every fixture's database on the restored
// server and reports each fixture that differs, with where it comes from.
func CompareCorpus(t *testing.T, restored *sandbox.Server, fixtures []*fidelitytest.Fixture, want map[string]map[string]string) {
	t.Helper()
	for _, f := range fixtures {
		got, err := fidelitytest.Fingerprint(context.Background(), restored.DB(), f.Database)
		if err != nil {
			t.Errorf("fixture %s (%s): %v", f.Name, f.Source, err)
			continue
		}
		if diffs := fidelitytest.Compare(got, want[f.Name]); len(diffs) > 0 {
			t.Errorf("fixture %s (%s, from %s): %d differences:\n%s", f.Name, f.Title, f.Source, len(diffs), strings.Join(diffs, "\n"))
		}
	}
}

// DatabasesOf is the fixtures' databases, comma-separated, as --database
// takes them.
func DatabasesOf(fixtures []*fidelitytest.Fixture) string {
	var names []string
	for _, f := range fixtures {
		names = append(names, f.Database)
	}
	return strings.Join(names, ",")
}

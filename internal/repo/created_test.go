package repo_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
)

// init prints the repository it created as text or JSON, with what an
// encrypted one encrypts to.
func TestCreated(t *testing.T) {
	r := repotest.New(t)
	var b bytes.Buffer
	r.Created().WriteText(&b)
	want := "created repository " + r.Backend.Location() + " (id " + r.Config.ID + ", format " + strconv.Itoa(r.Config.Format) + ")\n"
	if b.String() != want {
		t.Errorf("text %q, want %q", b.String(), want)
	}
	r.Config.Encryption = &repo.DefaultEncryption{Recipients: []string{"age1a", "age1b"}}
	b.Reset()
	r.Created().WriteText(&b)
	if want += "everything written into it is encrypted to age1a, age1b\n"; b.String() != want {
		t.Errorf("text %q, want %q", b.String(), want)
	}
	raw, err := json.Marshal(r.Created())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"repository":"` + r.Backend.Location() + `"`, `"id":"` + r.Config.ID + `"`, `"created":`, `"recipients":["age1a","age1b"]`} {
		if !strings.Contains(string(raw), w) {
			t.Errorf("JSON %s lacks %s", raw, w)
		}
	}
	if strings.Contains(string(raw), "encrypted") {
		t.Errorf("JSON %s has a field of its own making", raw)
	}
}

package repo_test

import (
	"bytes"
	"encoding/json"
	"errors"
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

// unlock prints each lock it removed, or that it removed none, and as
// JSON an empty list rather than null; a failure is in the JSON only.
func TestUnlocked(t *testing.T) {
	r := repotest.New(t)
	var b bytes.Buffer
	none := r.Unlocked(nil, nil)
	none.WriteText(&b)
	if b.String() != "no locks removed\n" {
		t.Errorf("text %q", b.String())
	}
	raw, err := json.Marshal(none)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"repository":"` + r.Backend.Location() + `","removed":[]}`; string(raw) != want {
		t.Errorf("JSON %s, want %s", raw, want)
	}
	l := repo.StoredLock{Name: "locks/a.json", LockInfo: repo.LockInfo{Owner: "u", Host: "h", PID: 7, Operation: "backup", Exclusive: true}}
	failed := r.Unlocked([]repo.StoredLock{l}, errors.New("delete failed"))
	b.Reset()
	failed.WriteText(&b)
	if want := "removed lock locks/a.json: " + l.Describe() + "\n"; b.String() != want {
		t.Errorf("text %q, want %q", b.String(), want)
	}
	if raw, err = json.Marshal(failed); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"name":"locks/a.json"`, `"description":"backup (exclusive lock`, `"pid":7`, `"error":"delete failed"`} {
		if !strings.Contains(string(raw), w) {
			t.Errorf("JSON %s lacks %s", raw, w)
		}
	}
}

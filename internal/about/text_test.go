package about

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestWriteText(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	info := Info{
		Version: "v1.2.3", Module: "github.com/backstream/backstream", ModuleVersion: "v1.2.3",
		Revision: "abc123", RevisionTime: &at, Modified: true, Go: "go1.26", Platform: "linux/amd64",
		Tools: []Tool{
			{Name: "mariabackup", Path: "/usr/bin/mariabackup", Version: "10.11.19-MariaDB"},
			{Name: "mariadb", Path: "/usr/bin/mariadb", Error: "exit status 1"},
			{Name: "mariadbd", Error: "not found"},
		},
	}
	var b bytes.Buffer
	if err := info.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "backstream v1.2.3\n" +
		"  revision     abc123 (2026-01-02 03:04:05 UTC), with uncommitted changes\n" +
		"  module       github.com/backstream/backstream v1.2.3\n" +
		"  go           go1.26 linux/amd64\n" +
		"  mariabackup  10.11.19-MariaDB                /usr/bin/mariabackup\n" +
		"  mariadb      version unknown: exit status 1  /usr/bin/mariadb\n" +
		"  mariadbd     not found\n"
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}

	raw, err := json.Marshal(Info{Version: "dev", Go: "go1.26", Platform: "linux/amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(raw), `{"version":"dev","go":"go1.26","platform":"linux/amd64","tools":null}`; got != want {
		t.Errorf("JSON %s, want %s", got, want)
	}
	b.Reset()
	if err := (Info{Version: "dev", Go: "go1.26", Platform: "linux/amd64"}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "backstream dev\n  revision  not recorded (built without VCS information)\n  go        go1.26 linux/amd64\n"; got != want {
		t.Errorf("text without VCS:\n%s\nwant:\n%s", got, want)
	}
}

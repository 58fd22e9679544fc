package physical

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseEvent(t *testing.T) {
	cases := []struct {
		line string
		want Event
		none bool
	}{
		{line: "[01] 2026-11-21 19:29:15 Streaming ./db1/t.ibd", want: Event{Kind: EventFileStart, Thread: 1, Path: "db1/t.ibd"}},
		{line: "[02] 2022-06-05 14:14:09 Streaming ./aria_log_control to <STDOUT>", want: Event{Kind: EventFileStart, Thread: 2, Path: "aria_log_control"}},
		{line: "[01] 2023-07-04 19:06:33 Copying /var/lib/mysql//aria_log.00000001 to /backup/aria_log.00000001", want: Event{Kind: EventFileStart, Thread: 1, Path: "/var/lib/mysql//aria_log.00000001"}},
		{line: "[01] 2026-11-21 19:29:15         ...done", want: Event{Kind: EventFileDone, Thread: 1}},
		{line: "[00] 2026-11-21 19:29:16 >> log scanned up to (7604246)", want: Event{Kind: EventLogScanned, LSN: 7604246}},
		{line: "[00] 2026-11-21 19:29:16 Waiting for log copy thread to read lsn 7604246", want: Event{Kind: EventWaitLog, LSN: 7604246}},
		{line: "[00] 2026-11-21 19:29:16 Executing BACKUP STAGE BLOCK_COMMIT", want: Event{Kind: EventStage}},
		{line: "[00] 2026-11-21 19:29:16 completed OK!", want: Event{Kind: EventCompleted}},
		{line: "[00] 2026-11-21 19:29:16 Connecting to MariaDB server host: localhost", none: true},
		{line: "mariabackup: Stopping log copying thread", none: true},
		{line: "", none: true},
	}
	for _, c := range cases {
		got, ok := parseEvent(c.line)
		if c.none {
			if ok {
				t.Errorf("%q: unexpected event %+v", c.line, got)
			}
			continue
		}
		if !ok {
			t.Errorf("%q: no event", c.line)
			continue
		}
		if got.Kind != c.want.Kind || got.Thread != c.want.Thread || got.Path != c.want.Path || got.LSN != c.want.LSN || got.Message == "" {
			t.Errorf("%q: got %+v, want %+v", c.line, got, c.want)
		}
	}
}

// TestStderrSink feeds output in awkward pieces and checks the log, the
// completion flag and the failure message.
func TestStderrSink(t *testing.T) {
	var log bytes.Buffer
	var events []Event
	s := &stderrSink{log: &log, onProgress: func(e Event) { events = append(events, e) }}
	input := "[00] 2026-11-21 19:29:15 Connecting\r\n[01] 2026-11-21 19:29:15 Streaming ./ibdata1\n" +
		"[00] 2026-11-21 19:29:16 Was only able to copy log from 58087 to 59916, not 68968; try increasing\n" +
		"innodb_log_file_size\n\n[00] 2026-11-21 19:29:17 last line without newline"
	for i := 0; i < len(input); i += 7 {
		n, err := s.Write([]byte(input[i:min(i+7, len(input))]))
		if err != nil || n != min(7, len(input)-i) {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	s.flush()
	wantLog := strings.ReplaceAll(input, "\r", "") + "\n"
	if log.String() != wantLog {
		t.Errorf("log = %q, want %q", log.String(), wantLog)
	}
	if s.completedOK() {
		t.Error("completed without completed OK!")
	}
	if len(events) != 1 || events[0].Path != "ibdata1" {
		t.Errorf("events = %+v", events)
	}
	cause := errors.New("exit status 1")
	err := s.failure("mariabackup --backup failed", cause)
	if !errors.Is(err, cause) {
		t.Errorf("failure does not wrap the cause: %v", err)
	}
	for _, w := range []string{"mariabackup --backup failed (exit status 1)", "increase innodb_log_file_size", "Was only able to copy log", "last line without newline"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("failure lacks %q: %v", w, err)
		}
	}

	var many stderrSink
	for i := 0; i < 3*tailLines; i++ {
		many.Write([]byte("line\n"))
	}
	many.Write([]byte("[00] completed OK!\n"))
	if !many.completedOK() || len(many.tail) != tailLines {
		t.Errorf("completed %v, tail %d", many.completedOK(), len(many.tail))
	}
	if err := (&stderrSink{}).failure("x", nil); !strings.Contains(err.Error(), "wrote nothing") {
		t.Errorf("empty failure: %v", err)
	}
}

// An error line that scrolled out of the tail before the child stopped is
// still quoted, once, and only the first few are kept.
func TestStderrSinkQuotesEarlierErrors(t *testing.T) {
	var s stderrSink
	s.Write([]byte("[00] 2026-11-28 20:42:07 [ERROR] InnoDB: Cannot rename ./db/t.ibd\n"))
	for i := 0; i < 2*tailLines; i++ {
		fmt.Fprintf(&s, "[01] Copying file %d\n", i)
	}
	for i := 0; i < 2*errorLines; i++ {
		fmt.Fprintf(&s, "mariabackup: Error: number %d\n", i)
	}
	err := s.failure("mariabackup --prepare failed", errors.New("exit status 1")).Error()
	if strings.Count(err, "Cannot rename ./db/t.ibd") != 1 || !strings.Contains(err, "error lines before them:") {
		t.Errorf("the first error line is not quoted once: %s", err)
	}
	// The first errorLines error lines (the [ERROR] and numbers 0 to 3)
	// and the tail (numbers 2 to 9), each line once.
	for i := 0; i < 2*errorLines; i++ {
		if n := strings.Count(err, fmt.Sprintf("Error: number %d", i)); n != 1 {
			t.Errorf("error line %d quoted %d times: %s", i, n, err)
		}
	}
	var noisy stderrSink
	for i := 0; i < 2*errorLines; i++ {
		fmt.Fprintf(&noisy, "[ERROR] early %d\n", i)
	}
	for i := 0; i < tailLines; i++ {
		fmt.Fprintf(&noisy, "[01] Copying file %d\n", i)
	}
	if e := noisy.failure("x", nil).Error(); !strings.Contains(e, fmt.Sprintf("early %d", errorLines-1)) || strings.Contains(e, fmt.Sprintf("early %d", errorLines)) {
		t.Errorf("want the first %d error lines quoted, no more: %s", errorLines, e)
	}
	var quiet stderrSink
	quiet.Write([]byte("[ERROR] last words\n"))
	if e := quiet.failure("x", nil).Error(); strings.Count(e, "last words") != 1 {
		t.Errorf("an error line in the tail is quoted twice: %s", e)
	}
}

// failingWriter fails every write; a broken log must not break the child.
type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) { f.n++; return 0, errors.New("disk full") }

func TestStderrSinkLogFailure(t *testing.T) {
	fw := &failingWriter{}
	s := &stderrSink{log: fw}
	for i := 0; i < 5; i++ {
		if n, err := s.Write([]byte("a line\n")); n != 7 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if fw.n != 1 {
		t.Errorf("log written %d times after failing, want 1", fw.n)
	}
}

func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{"[01] 2026-11-21 19:29:15 Streaming ./db1/t.ibd", "[00] >> log scanned up to (99999999999999999999999)",
		"[00] 2026-11-21 19:29:16 Waiting for log copy thread to read lsn 7", "[x] completed OK!", "...done"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		ev, ok := parseEvent(line)
		if !ok {
			return
		}
		if ev.Kind < EventFileStart || ev.Kind > EventCompleted {
			t.Fatalf("%q: kind %v", line, ev.Kind)
		}
		if ev.Kind == EventFileStart && ev.Path == "" {
			t.Fatalf("%q: file start without path", line)
		}
	})
}

func FuzzParseVersionOutput(f *testing.F) {
	f.Add("mariabackup based on MariaDB server 10.11.19-MariaDB debian-linux-gnu (x86_64)\n")
	f.Add("based on MariaDB server 11.4")
	f.Fuzz(func(t *testing.T, out string) {
		b, err := parseVersionOutput(out)
		if err != nil {
			return
		}
		if b.Version == "" || strings.ContainsAny(b.Version, " \t\n") || !strings.Contains(out, b.Version) {
			t.Fatalf("%q: version %+v", out, b)
		}
	})
}

// A withheld secret is kept out of the log and the tail, but the lines are
// read as mariabackup wrote them: a password such as "OK" must not hide
// "completed OK!".
func TestStderrSinkWithholdsAfterParsing(t *testing.T) {
	var log bytes.Buffer
	s := &stderrSink{log: &log, withhold: []string{"OK"}}
	s.Write([]byte("[00] 2026-11-21 19:29:18 completed OK!\n"))
	if !s.completedOK() {
		t.Error("completed OK! not seen with the password OK withheld")
	}
	if strings.Contains(log.String(), "OK") || !strings.Contains(log.String(), withheldMark) {
		t.Errorf("log %q: want the secret withheld", log.String())
	}
}

package progress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/testkit"
)

// waitFor polls until cond holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHumanBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{1<<20 - 1, "1.0 MiB"},
		{10 << 20, "10.0 MiB"},
		{5 << 30, "5.0 GiB"},
		{3 << 40, "3.0 TiB"},
		{-2048, "-2.0 KiB"},
		{1 << 62, "4.0 EiB"},
	}
	for _, tt := range tests {
		if got := HumanBytes(tt.n); got != tt.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	if got := HumanRate(150 << 20); got != "150.0 MiB/s" {
		t.Errorf("HumanRate(150 MiB) = %q", got)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{ModeAuto, ModeBar, ModePlain, ModeJSON, ModeQuiet} {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", m.String(), got, err, m)
		}
	}
	if got, err := ParseMode("Quiet"); err != nil || got != ModeQuiet {
		t.Errorf("ParseMode(Quiet) = %v, %v", got, err)
	}
	if _, err := ParseMode("fancy"); err == nil || !strings.Contains(err.Error(), "plain") {
		t.Errorf("ParseMode(fancy) error %v should list the modes", err)
	}
}

func TestPlainLines(t *testing.T) {
	var out testkit.SyncBuffer
	tr := Start(Options{Mode: ModePlain, Out: &out, Title: "backup", Total: 4 << 20, Interval: 10 * time.Millisecond})
	tr.Stage("streaming")
	tr.In(1 << 20)
	tr.Out(300 << 10)
	waitFor(t, "a plain line with the counters", func() bool {
		return strings.Contains(out.String(), "1.0 MiB / 4.0 MiB (25%) in, 300.0 KiB out")
	})
	if !strings.Contains(out.String(), "backup [streaming]") {
		t.Errorf("plain output lacks title and stage:\n%s", out.String())
	}
	tr.In(3 << 20)
	tr.Out(700 << 10)
	s := tr.Finish(nil)
	if s.BytesIn != 4<<20 || s.BytesOut != 1000<<10 || s.Err != nil || s.Title != "backup" {
		t.Errorf("summary = %+v", s)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "backup: done in ") || !strings.Contains(last, "4.0 MiB in, 1000.0 KiB out (ratio 0.24)") || !strings.Contains(last, "MiB/s") {
		t.Errorf("last line %q is not the summary", last)
	}
	before := out.String()
	time.Sleep(30 * time.Millisecond)
	if again := tr.Finish(errors.New("late")); again != s || out.String() != before {
		t.Errorf("second Finish changed the summary or wrote more: %+v", again)
	}
}

// After Restart the lines and the summary count the new attempt alone,
// against the same total.
func TestRestart(t *testing.T) {
	var out testkit.SyncBuffer
	tr := Start(Options{Mode: ModePlain, Out: &out, Title: "backup", Total: 4 << 20, Interval: 10 * time.Millisecond})
	tr.Stage("streaming")
	tr.In(3 << 20)
	tr.Out(1 << 20)
	waitFor(t, "a line of the first attempt", func() bool {
		return strings.Contains(out.String(), "backup [streaming]: 3.0 MiB / 4.0 MiB (75%) in, 1.0 MiB out")
	})
	tr.Restart()
	tr.Stage("streaming, attempt 2 of 3")
	tr.In(1 << 20)
	tr.Out(200 << 10)
	waitFor(t, "a line of the second attempt", func() bool {
		return strings.Contains(out.String(), "backup [streaming, attempt 2 of 3]: 1.0 MiB / 4.0 MiB (25%) in, 200.0 KiB out")
	})
	if s := tr.Finish(nil); s.BytesIn != 1<<20 || s.BytesOut != 200<<10 || s.Total != 1<<20 {
		t.Errorf("summary = %+v, want the second attempt's bytes, and them as the total", s)
	}
}

// The drop of the counters at a Restart is no negative rate: the rate so
// far carries over (and with it the ETA), measured again from the restart.
func TestRestartKeepsTheRate(t *testing.T) {
	tr := Start(Options{Mode: ModeQuiet, Out: io.Discard, Total: 4 << 20})
	defer tr.Finish(nil)
	t0 := tr.start
	tr.In(3 << 20)
	if s := tr.take(t0.Add(time.Second)); s.rate != 3<<20 {
		t.Fatalf("rate %.0f after 3 MiB in a second, want %d", s.rate, 3<<20)
	}
	tr.Restart()
	tr.In(100 << 10)
	if s := tr.take(t0.Add(1100 * time.Millisecond)); s.in != 100<<10 || s.rate != 3<<20 || !s.etaKnown {
		t.Errorf("just after the restart: %d in, rate %.0f, ETA known %v; want %d, the rate so far, an ETA", s.in, s.rate, s.etaKnown, 100<<10)
	}
	tr.In(2 << 20)
	// The average since the start (1 s of 2.1 s is the new attempt's).
	want := 1/2.1*(2<<20) + 1.1/2.1*(3<<20)
	if s := tr.take(t0.Add(2100 * time.Millisecond)); math.Abs(s.rate-want) > 1 {
		t.Errorf("a second after the restart: rate %.0f, want %.0f, the 2 MiB/s of the new attempt smoothed", s.rate, want)
	}
}

// An estimated total that grows faster than the bytes come in does not
// make the percent go back (it would read as lost work); a restart does.
func TestPercentNeverFallsBackButAtARestart(t *testing.T) {
	tr := Start(Options{Mode: ModeQuiet, Out: io.Discard, Total: 100})
	defer tr.Finish(nil)
	t0 := tr.start
	tr.In(90)
	if p := tr.take(t0.Add(time.Second)).percent(); p != 90 {
		t.Fatalf("90 of 100: %.1f%%", p)
	}
	tr.SetTotal(200)
	tr.In(10)
	if p := tr.take(t0.Add(2 * time.Second)).percent(); p != 90 {
		t.Errorf("100 of a total grown to 200, after 90%% was shown: %.1f%%, want 90%%", p)
	}
	tr.In(90)
	if p := tr.take(t0.Add(3 * time.Second)).percent(); p != 95 {
		t.Errorf("190 of 200: %.1f%%, want 95%%", p)
	}
	tr.Restart()
	tr.In(20)
	if p := tr.take(t0.Add(4 * time.Second)).percent(); p != 10 {
		t.Errorf("20 of 200 after a restart: %.1f%%, want 10%%", p)
	}
}

// The rate is the average since the start, then a smoothed one whose
// time constant does not depend on how often it is taken: a bar that takes
// it five times a second and a line every five seconds show the same ETA,
// and neither promises anything in the first second.
func TestRateSmoothing(t *testing.T) {
	rates := func(every time.Duration) (early bool, afterPause, final float64) {
		tr := Start(Options{Mode: ModeQuiet, Out: io.Discard, Total: 1 << 40})
		defer tr.Finish(nil)
		t0 := tr.start
		var s snapshot
		for at := every; at <= 60*time.Second; at += every {
			// 10 MiB/s, with nothing in from 30 s to 32 s.
			if at <= 30*time.Second || at > 32*time.Second {
				tr.In(int64(float64(10<<20) * every.Seconds()))
			}
			s = tr.take(t0.Add(at))
			if at < etaAfter && s.etaKnown {
				early = true
			}
			if at == 32*time.Second {
				afterPause = s.rate
			}
		}
		return early, afterPause, s.rate
	}
	for _, every := range []time.Duration{200 * time.Millisecond, time.Second, 2 * time.Second} {
		early, pause, final := rates(every)
		if early {
			t.Errorf("every %v: an ETA in the first second", every)
		}
		// exp(-2/8) of the rate is left after 2 s without bytes.
		if want := 10 << 20 * math.Exp(-2/rateWindow.Seconds()); math.Abs(pause-want)/want > 0.15 {
			t.Errorf("every %v: rate %.0f after a pause of 2 s, want about %.0f", every, pause, want)
		}
		if math.Abs(final-10<<20)/(10<<20) > 0.05 {
			t.Errorf("every %v: rate %.0f at the end, want about 10 MiB/s", every, final)
		}
	}
}

func TestJSONEvents(t *testing.T) {
	var out testkit.SyncBuffer
	tr := Start(Options{Mode: ModeJSON, Out: &out, Title: "restore", Interval: 10 * time.Millisecond})
	tr.In(2048)
	tr.Out(8192)
	tr.Stage("prepare")
	waitFor(t, "a progress event in stage prepare", func() bool {
		return strings.Contains(out.String(), `"stage":"prepare"`)
	})
	tr.SetTotal(4096)
	time.Sleep(30 * time.Millisecond)
	s := tr.Finish(nil)

	var progress, summary []Event
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		var raw map[string]any
		_ = json.Unmarshal(sc.Bytes(), &raw)
		for _, key := range []string{"time", "event", "bytes_in", "bytes_out", "total", "percent", "rate", "eta_seconds", "stage"} {
			if _, ok := raw[key]; !ok {
				t.Errorf("event %s lacks %q", sc.Text(), key)
			}
		}
		switch e.Event {
		case "progress":
			progress = append(progress, e)
		case "summary":
			summary = append(summary, e)
		default:
			t.Errorf("unknown event %q", e.Event)
		}
	}
	if len(progress) == 0 || len(summary) != 1 {
		t.Fatalf("got %d progress and %d summary events:\n%s", len(progress), len(summary), out.String())
	}
	if last := progress[len(progress)-1]; last.BytesIn != 2048 || last.BytesOut != 8192 || last.Title != "restore" {
		t.Errorf("last progress event = %+v", last)
	}
	sum := summary[0]
	if sum.BytesIn != 2048 || sum.BytesOut != 8192 || sum.Total != 2048 || sum.Percent == nil || *sum.Percent != 100 || sum.Ratio != 4 || sum.OK == nil || !*sum.OK || sum.Error != "" {
		t.Errorf("summary event = %+v", sum)
	}
	if !strings.HasSuffix(strings.TrimSpace(out.String()), "}") || s.Ratio() != 4 {
		t.Errorf("output does not end with the summary event, or ratio %v", s.Ratio())
	}
}

func TestJSONFailure(t *testing.T) {
	var out testkit.SyncBuffer
	tr := Start(Options{Mode: ModeJSON, Out: &out, Title: "verify", Interval: time.Hour})
	tr.Finish(errors.New("stream 00003: frame 17: checksum mismatch"))
	var e Event
	if err := json.Unmarshal([]byte(strings.TrimSpace(out.String())), &e); err != nil {
		t.Fatalf("%q: %v", out.String(), err)
	}
	if e.Event != "summary" || e.OK == nil || *e.OK || !strings.Contains(e.Error, "checksum mismatch") {
		t.Errorf("failure summary event = %+v", e)
	}
}

func TestFailureLine(t *testing.T) {
	for _, mode := range []Mode{ModePlain, ModeQuiet, ModeBar} {
		var out testkit.SyncBuffer
		tr := Start(Options{Mode: mode, Out: &out, Title: "backup 20261121T190512Z-7f3a"})
		tr.In(5 << 30)
		tr.Out(1 << 30)
		s := tr.Finish(errors.New("mariabackup exited 1:\nWas only able to copy log"))
		if s.Err == nil {
			t.Errorf("%v: summary has no error", mode)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		last := lines[len(lines)-1]
		want := "backup 20261121T190512Z-7f3a: FAILED after "
		if !strings.HasPrefix(last, want) || !strings.HasSuffix(last, " (5.0 GiB in, 1.0 GiB out)") {
			t.Errorf("%v: last line %q is not a one-line failure", mode, last)
		}
		// The command prints the error after the summary: said twice,
		// it was read twice.
		if strings.Contains(out.String(), "Was only able") {
			t.Errorf("%v: the summary repeats the error: %q", mode, out.String())
		}
	}
}

func TestQuietWritesOnlySummary(t *testing.T) {
	var out testkit.SyncBuffer
	tr := Start(Options{Mode: ModeQuiet, Out: &out, Title: "list", Interval: time.Millisecond})
	tr.In(10)
	tr.Stage("x")
	time.Sleep(20 * time.Millisecond)
	if out.String() != "" {
		t.Errorf("quiet mode wrote before Finish: %q", out.String())
	}
	tr.Finish(nil)
	if n := strings.Count(out.String(), "\n"); n != 1 || !strings.HasPrefix(out.String(), "list: done in ") {
		t.Errorf("quiet mode wrote %q, want one summary line", out.String())
	}
}

func TestBarModeOnBuffer(t *testing.T) {
	before := runtime.NumGoroutine()
	var out testkit.SyncBuffer
	tr := Start(Options{Mode: ModeBar, Out: &out, Title: "backup", Total: 100 << 20})
	tr.Stage("streaming")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				tr.In(1 << 20)
				tr.Out(256 << 10)
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	waitFor(t, "the bar to draw", func() bool {
		return strings.Contains(out.String(), "MiB out") && strings.Contains(out.String(), "[streaming]")
	})
	done := make(chan Summary)
	go func() { done <- tr.Finish(nil) }()
	select {
	case s := <-done:
		if s.BytesIn != 100<<20 || s.BytesOut != 25<<20 {
			t.Errorf("summary = %+v", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Finish in bar mode hangs")
	}
	if !strings.Contains(out.String(), "backup: done in ") {
		t.Errorf("no summary after the bar:\n%q", out.String())
	}
	waitFor(t, "the bar's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

func TestAutoModeOnPipeIsPlain(t *testing.T) {
	if got := resolve(ModeAuto, termWidth(&bytes.Buffer{})); got != ModePlain {
		t.Errorf("auto on a buffer resolved to %v, want plain", got)
	}
	for width, want := range map[int]Mode{-1: ModePlain, 0: ModePlain, 1: ModeBar, 120: ModeBar} {
		if got := resolve(ModeAuto, width); got != want {
			t.Errorf("auto on a terminal of width %d resolved to %v, want %v", width, got, want)
		}
		for _, forced := range []Mode{ModeBar, ModePlain, ModeJSON, ModeQuiet} {
			if got := resolve(forced, width); got != forced {
				t.Errorf("%v on a terminal of width %d resolved to %v", forced, width, got)
			}
		}
	}
}

// fakeTerminal makes termWidth report every testkit.SyncBuffer as a
// terminal of the given width, for the test.
func fakeTerminal(t *testing.T, width int) {
	real := termWidth
	termWidth = func(out io.Writer) int {
		if _, ok := out.(*testkit.SyncBuffer); ok {
			return width
		}
		return real(out)
	}
	t.Cleanup(func() { termWidth = real })
}

// A terminal that reports 0 columns (a serial console, an unsized
// pseudo-terminal) gets plain lines in auto mode, and in bar mode a bar of
// a usual width: neither draws nothing, hangs, or loses the summary.
func TestUnsizedTerminal(t *testing.T) {
	fakeTerminal(t, 0)

	var lines testkit.SyncBuffer
	tr := Start(Options{Out: &lines, Title: "backup", Total: 4 << 20, Interval: 10 * time.Millisecond})
	if tr.mode != ModePlain {
		t.Errorf("auto mode on a terminal of width 0 is %v, want plain", tr.mode)
	}
	tr.In(1 << 20)
	waitFor(t, "a plain line", func() bool { return strings.Contains(lines.String(), "1.0 MiB / 4.0 MiB (25%)") })
	tr.Finish(nil)

	var bar testkit.SyncBuffer
	tr = Start(Options{Mode: ModeBar, Out: &bar, Title: "backup", Total: 4 << 20})
	tr.Stage("streaming")
	tr.In(3 << 20)
	tr.Logf("a warning")
	waitFor(t, "the bar to draw", func() bool {
		return strings.Contains(bar.String(), "3.0 MiB / 4.0 MiB") && strings.Contains(bar.String(), "a warning")
	})
	done := make(chan Summary)
	go func() { done <- tr.Finish(nil) }()
	select {
	case s := <-done:
		if s.BytesIn != 3<<20 || s.Total != 3<<20 {
			t.Errorf("summary = %+v", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Finish in bar mode on an unsized terminal hangs")
	}
	out := bar.String()
	if !strings.Contains(out, "backup: done in ") {
		t.Errorf("no summary after the bar:\n%q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if w := len([]rune(stripEscapes(line))); w > unsizedWidth {
			t.Errorf("a line of %d columns on an unsized terminal, want at most %d: %q", w, unsizedWidth, line)
		}
	}
}

// stripEscapes drops the terminal's cursor and erase sequences
// (ESC [ digits letter) and carriage returns from a drawn line.
func stripEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\x1b' && i+1 < len(s) && s[i+1] == '[':
			i += 2
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == ';') {
				i++
			}
		case s[i] == '\r':
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// The bar ends full and says so, whether the estimate was long or short:
// its last drawing shows what came in as the total.
func TestBarEndsFull(t *testing.T) {
	for _, total := range []int64{10 << 20, 2 << 20} {
		var out testkit.SyncBuffer
		tr := Start(Options{Mode: ModeBar, Out: &out, Title: "restore", Total: total})
		tr.In(5 << 20)
		waitFor(t, "the bar to draw", func() bool { return strings.Contains(out.String(), "5.0 MiB / ") })
		tr.Finish(nil)
		drawn := strings.Split(stripEscapes(out.String()), "\n")
		var last string
		for _, line := range drawn {
			if strings.Contains(line, " B out, ") {
				last = line
			}
		}
		if !strings.Contains(last, "5.0 MiB / 5.0 MiB") {
			t.Errorf("estimate %s: the bar's last drawing %q does not end at what came in", HumanBytes(total), last)
		}
	}
}

func TestConcurrentCounters(t *testing.T) {
	tr := Start(Options{Mode: ModeQuiet, Out: &testkit.SyncBuffer{}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				tr.In(3)
				tr.Out(1)
			}
			tr.SetTotal(24000)
			tr.Stage("streaming")
		})
	}
	wg.Wait()
	if s := tr.Finish(nil); s.BytesIn != 24000 || s.BytesOut != 8000 || s.Total != 24000 {
		t.Errorf("summary = %+v", s)
	}
}

func TestSummaryString(t *testing.T) {
	s := Summary{Title: "backup", Elapsed: 64 * time.Second, BytesIn: 10 << 30, BytesOut: 3 << 30}
	want := "backup: done in 1m4s: 10.0 GiB in, 3.0 GiB out (ratio 0.30), 160.0 MiB/s"
	if got := s.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if (Summary{}).Ratio() != 0 || (Summary{BytesIn: 5}).Rate() != 0 {
		t.Error("empty summary should have zero ratio and rate")
	}
}

func BenchmarkIn(b *testing.B) {
	tr := Start(Options{Mode: ModeQuiet, Out: &testkit.SyncBuffer{}})
	defer tr.Finish(nil)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tr.In(4 << 20)
			tr.Out(1 << 20)
		}
	})
}

func TestLogf(t *testing.T) {
	for _, mode := range []Mode{ModePlain, ModeJSON, ModeBar, ModeQuiet} {
		var out testkit.SyncBuffer
		tr := Start(Options{Mode: mode, Out: &out, Title: "backup"})
		tr.Logf("warning: %s", "table t1 has no primary key")
		tr.Finish(nil)
		tr.Logf("after %d", 1)
		got := out.String()
		if !strings.Contains(got, "warning: table t1 has no primary key") || !strings.Contains(got, "after 1") {
			t.Errorf("%v: Logf lines missing from %q", mode, got)
		}
		if mode == ModeJSON && !strings.Contains(got, `"event":"log"`) {
			t.Errorf("json: Logf did not write a log event: %q", got)
		}
	}
}

// Lines of an operation that moves tables show tables done and rows.
func TestTablesAndRowsInLines(t *testing.T) {
	var buf testkit.SyncBuffer
	tr := Start(Options{Mode: ModePlain, Out: &buf, Title: "backup --logical", Interval: time.Hour})
	tr.SetTables(3)
	tr.TableDone()
	tr.AddRows(1234)
	tr.writePlain(time.Now())
	tr.Finish(nil)
	if !strings.Contains(buf.String(), "1/3 tables, 1234 rows") {
		t.Errorf("progress line %q lacks tables and rows", buf.String())
	}
}

// readEvents parses the JSON lines of out.
func readEvents(t *testing.T, out string) []Event {
	t.Helper()
	var events []Event
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		events = append(events, e)
	}
	return events
}

// Events carry the backup's id once it is known, and the percent of the
// estimate, never above 100: an estimate that falls short grows with what
// came in. The summary of a success says 100% of what came in.
func TestJSONBackupAndPercent(t *testing.T) {
	var out testkit.SyncBuffer
	tr := Start(Options{Mode: ModeJSON, Out: &out, Title: "backup", Total: 4 << 20, Interval: time.Hour})
	tr.Stage("connecting")
	waitFor(t, "the first event", func() bool { return strings.Contains(out.String(), "connecting") })
	tr.SetBackup("20261121T190512Z-7f3a")
	tr.In(1 << 20)
	tr.Stage("streaming")
	waitFor(t, "the streaming event", func() bool { return strings.Contains(out.String(), `"streaming"`) })
	tr.In(5 << 20)
	tr.Stage("committing")
	waitFor(t, "the committing event", func() bool { return strings.Contains(out.String(), `"committing"`) })
	tr.Finish(nil)

	events := readEvents(t, out.String())
	if len(events) != 4 {
		t.Fatalf("%d events, want 4:\n%s", len(events), out.String())
	}
	want := []struct {
		backup  string
		total   int64
		percent float64
	}{
		{"", 4 << 20, 0},
		{"20261121T190512Z-7f3a", 4 << 20, 25},
		{"20261121T190512Z-7f3a", 6 << 20, 100},
		{"20261121T190512Z-7f3a", 6 << 20, 100},
	}
	for i, e := range events {
		if e.Backup != want[i].backup || e.Total != want[i].total || e.Percent == nil || *e.Percent != want[i].percent {
			t.Errorf("event %d (%s, %s) = backup %q, total %d, percent %v; want %q, %d, %v", i, e.Event, e.Stage,
				e.Backup, e.Total, e.Percent, want[i].backup, want[i].total, want[i].percent)
		}
	}

	// An estimate too long: the summary still says 100%, of what came in.
	out = testkit.SyncBuffer{}
	tr = Start(Options{Mode: ModeJSON, Out: &out, Title: "restore", Backup: "20261121T190512Z-7f3a", Total: 8 << 20, Interval: time.Hour})
	tr.In(6 << 20)
	tr.Finish(nil)
	events = readEvents(t, out.String())
	if e := events[len(events)-1]; e.Event != "summary" || e.Backup != "20261121T190512Z-7f3a" || e.Total != 6<<20 || e.Percent == nil || *e.Percent != 100 {
		t.Errorf("summary after a long estimate = %+v", e)
	}

	// A failure says how far it came, and no total was none.
	for total, want := range map[int64]*float64{8 << 20: ptr(75.0), 0: nil} {
		out = testkit.SyncBuffer{}
		tr = Start(Options{Mode: ModeJSON, Out: &out, Title: "restore", Total: total, Interval: time.Hour})
		tr.In(6 << 20)
		tr.Finish(errors.New("broken"))
		e := readEvents(t, out.String())[0]
		if e.Total != total || (e.Percent == nil) != (want == nil) || want != nil && *e.Percent != *want {
			t.Errorf("failure summary with total %d = total %d, percent %v; want percent %v", total, e.Total, e.Percent, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// The summary event of an operation that moves tables says how many, and
// the rows.
func TestJSONSummaryTables(t *testing.T) {
	var out testkit.SyncBuffer
	tr := Start(Options{Mode: ModeJSON, Out: &out, Title: "backup --logical", Interval: time.Hour})
	tr.SetTables(2)
	tr.TableDone()
	tr.TableDone()
	tr.AddRows(77)
	tr.Finish(nil)
	e := readEvents(t, out.String())[0]
	if e.Event != "summary" || e.Tables != 2 || e.TablesDone != 2 || e.Rows != 77 {
		t.Errorf("summary = %+v, want 2 of 2 tables, 77 rows", e)
	}
}

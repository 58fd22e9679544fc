// Package progress shows how far a long operation has come: a live status
// line on a terminal, periodic plain lines otherwise, JSON events for
// machines, and always a one-line summary at the end.
package progress

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"
)

// Mode selects the display.
type Mode int

const (
	ModeAuto  Mode = iota // a live line on a terminal, plain lines otherwise
	ModeBar               // a live line, redrawn in place
	ModePlain             // a line every Interval
	ModeJSON              // one JSON event per line
	ModeQuiet             // the summary only
)

// ParseMode reads a --progress value: auto, bar, plain, json or none.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "auto":
		return ModeAuto, nil
	case "bar":
		return ModeBar, nil
	case "plain":
		return ModePlain, nil
	case "json":
		return ModeJSON, nil
	case "none", "quiet":
		return ModeQuiet, nil
	}
	return 0, fmt.Errorf("unknown progress display %q (use auto, bar, plain, json or none)", s)
}

// Options configure a Tracker.
type Options struct {
	Mode     Mode
	Out      io.Writer // default os.Stderr
	Title    string
	Total    int64 // expected bytes in; 0 if unknown
	Interval time.Duration
}

// Tracker counts bytes and shows progress. It is safe for concurrent use;
// In and Out are single atomic adds, cheap enough for every frame.
type Tracker struct {
	opt   Options
	start time.Time
	in    atomic.Int64
	out   atomic.Int64
	total atomic.Int64
	stage atomic.Value // string

	mu       sync.Mutex // serialises output
	stop     chan struct{}
	done     chan struct{}
	finished bool
	drawn    bool // a live line is on screen
}

// Start begins tracking and, unless quiet, displaying.
func Start(opt Options) *Tracker {
	if opt.Out == nil {
		opt.Out = os.Stderr
	}
	if opt.Mode == ModeAuto {
		opt.Mode = ModePlain
		if f, ok := opt.Out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			opt.Mode = ModeBar
		}
	}
	if opt.Interval <= 0 {
		opt.Interval = 5 * time.Second
		if opt.Mode == ModeBar {
			opt.Interval = 200 * time.Millisecond
		}
	}
	t := &Tracker{opt: opt, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	t.total.Store(opt.Total)
	t.stage.Store("")
	if opt.Mode == ModeQuiet {
		close(t.done)
		return t
	}
	go t.loop()
	return t
}

// In counts bytes read from the source.
func (t *Tracker) In(n int64) { t.in.Add(n) }

// Out counts bytes written to the destination.
func (t *Tracker) Out(n int64) { t.out.Add(n) }

// SetTotal sets the expected bytes in, for the ETA.
func (t *Tracker) SetTotal(n int64) { t.total.Store(n) }

// Stage names the current phase ("streaming", "prepare", ...).
func (t *Tracker) Stage(name string) { t.stage.Store(name) }

func (t *Tracker) loop() {
	defer close(t.done)
	tick := time.NewTicker(t.opt.Interval)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
			t.show()
		}
	}
}

// snapshot is the state at one moment.
type snapshot struct {
	elapsed      time.Duration
	in, out, tot int64
	rate         float64 // bytes in per second
	eta          time.Duration
	stage        string
}

func (t *Tracker) snap() snapshot {
	s := snapshot{elapsed: time.Since(t.start), in: t.in.Load(), out: t.out.Load(), tot: t.total.Load(), stage: t.stage.Load().(string)}
	if secs := s.elapsed.Seconds(); secs > 0 {
		s.rate = float64(s.in) / secs
	}
	if s.tot > s.in && s.rate > 0 {
		s.eta = time.Duration(float64(s.tot-s.in) / s.rate * float64(time.Second))
	}
	return s
}

func (t *Tracker) show() {
	s := t.snap()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished {
		return
	}
	switch t.opt.Mode {
	case ModeJSON:
		t.event("progress", s, nil)
	case ModeBar:
		fmt.Fprintf(t.opt.Out, "\r\033[K%s", t.line(s))
		t.drawn = true
	default:
		fmt.Fprintln(t.opt.Out, t.line(s))
	}
}

func (t *Tracker) line(s snapshot) string {
	l := t.opt.Title
	if s.stage != "" {
		l += " [" + s.stage + "]"
	}
	l += fmt.Sprintf(": %s in, %s out, %s/s", HumanBytes(s.in), HumanBytes(s.out), HumanBytes(int64(s.rate)))
	if s.tot > 0 {
		l += fmt.Sprintf(", %.0f%% of ~%s", min(100, 100*float64(s.in)/float64(s.tot)), HumanBytes(s.tot))
		if s.eta > 0 {
			l += ", ETA " + s.eta.Round(time.Second).String()
		}
	}
	return l + ", " + s.elapsed.Round(time.Second).String()
}

func (t *Tracker) event(kind string, s snapshot, err error) {
	ev := map[string]any{
		"time": time.Now().UTC().Format(time.RFC3339Nano), "event": kind, "title": t.opt.Title, "stage": s.stage,
		"bytes_in": s.in, "bytes_out": s.out, "total": s.tot, "rate": int64(s.rate),
		"eta_seconds": s.eta.Seconds(), "elapsed_seconds": s.elapsed.Seconds(),
	}
	if err != nil {
		ev["error"] = err.Error()
	}
	b, _ := json.Marshal(ev)
	fmt.Fprintf(t.opt.Out, "%s\n", b)
}

// Summary is the outcome of a tracked operation.
type Summary struct {
	Title    string
	Elapsed  time.Duration
	BytesIn  int64
	BytesOut int64
	Err      error
}

// String is the one-line summary: time, sizes, ratio, throughput.
func (s Summary) String() string {
	if s.Err != nil {
		return fmt.Sprintf("%s failed after %s (%s in, %s out)", s.Title, s.Elapsed.Round(10*time.Millisecond), HumanBytes(s.BytesIn), HumanBytes(s.BytesOut))
	}
	l := fmt.Sprintf("%s: %s in %s", s.Title, HumanBytes(s.BytesIn), s.Elapsed.Round(10*time.Millisecond))
	if s.BytesOut > 0 {
		l += fmt.Sprintf(", %s out", HumanBytes(s.BytesOut))
		if s.BytesIn > 0 {
			l += fmt.Sprintf(" (ratio %.2f)", float64(s.BytesIn)/float64(s.BytesOut))
		}
	}
	if secs := s.Elapsed.Seconds(); secs > 0 {
		l += fmt.Sprintf(", %s/s", HumanBytes(int64(float64(s.BytesIn)/secs)))
	}
	return l
}

// Finish stops the display and prints the summary line, or a failure line
// when err is not nil. It may be called once; later calls return the same.
func (t *Tracker) Finish(err error) Summary {
	s := t.snap()
	sum := Summary{Title: t.opt.Title, Elapsed: s.elapsed, BytesIn: s.in, BytesOut: s.out, Err: err}
	t.mu.Lock()
	if t.finished {
		t.mu.Unlock()
		return sum
	}
	t.finished = true
	t.mu.Unlock()
	if t.opt.Mode != ModeQuiet {
		close(t.stop)
	}
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.opt.Mode == ModeJSON:
		t.event("summary", s, err)
	case t.drawn:
		fmt.Fprintf(t.opt.Out, "\r\033[K%s\n", sum)
	default:
		fmt.Fprintln(t.opt.Out, sum)
	}
	return sum
}

// HumanBytes renders n with binary units: 512 B, 1.5 KiB, 3.2 GiB.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit || m <= -unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Package progress reports how a long operation (backup, restore, verify)
// is going: a live bar on a terminal, a plain line every few seconds when
// the output is a log or a pipe, or JSON events for machines; and always one
// summary at the end.
//
// The workers of an operation call In and Out once per frame or buffer from
// many goroutines; those calls only add to atomic counters. Everything else
// (rates, ETA, drawing) happens on the Tracker's own goroutine.
//
// It knows counts, stages and time; nothing of what is being counted.
package progress

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// Mode chooses how progress is shown.
type Mode int

const (
	// ModeAuto shows a bar when the output is a terminal and plain lines
	// otherwise.
	ModeAuto Mode = iota
	// ModeBar always draws a live bar.
	ModeBar
	// ModePlain writes one line every Interval.
	ModePlain
	// ModeJSON writes one JSON object per line every Interval, on every
	// stage change, and for the summary.
	ModeJSON
	// ModeQuiet shows only the summary.
	ModeQuiet
)

var modeNames = [...]string{ModeAuto: "auto", ModeBar: "bar", ModePlain: "plain", ModeJSON: "json", ModeQuiet: "none"}

// String returns the name ParseMode reads.
func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return fmt.Sprintf("Mode(%d)", int(m))
	}
	return modeNames[m]
}

// ParseMode reads the value of a --progress flag: auto, bar, plain, json or
// none (also accepted: quiet).
func ParseMode(s string) (Mode, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "", "auto":
		return ModeAuto, nil
	case "quiet":
		return ModeQuiet, nil
	default:
		for m, name := range modeNames {
			if name == v {
				return Mode(m), nil
			}
		}
	}
	return ModeAuto, fmt.Errorf("progress mode %q: valid modes are auto, bar, plain, json, none", s)
}

// DefaultInterval is how often plain and JSON modes report.
const DefaultInterval = 5 * time.Second

// barRefresh is how often the bar takes the counters.
const barRefresh = 200 * time.Millisecond

// Options configure a Tracker.
type Options struct {
	// Mode chooses the display; the zero value is ModeAuto.
	Mode Mode
	// Out receives everything; nil means os.Stderr, keeping stdout free
	// for data (backstream cat) and machine output.
	Out io.Writer
	// Title names the operation in every line: "backup", "restore 20261121T190512Z-7f3a".
	Title string
	// Backup is the id of the backup the operation makes or reads, when
	// known at the start (SetBackup otherwise); JSON events carry it.
	Backup string
	// Total is the number of bytes In is expected to reach, 0 if unknown.
	// An estimate: a total that In passes grows with it, and the summary of
	// a success takes what came in as the total.
	Total int64
	// Interval between plain lines and JSON events; 0 means DefaultInterval.
	Interval time.Duration
}

// Tracker counts the bytes of one operation and shows its progress. All
// methods are safe for concurrent use.
type Tracker struct {
	in, out, total atomic.Int64
	// Rows and tables, for operations that move tables (logical backups).
	rows, tablesDone, tables atomic.Int64
	stage                    atomic.Pointer[string]
	backup                   atomic.Pointer[string]
	stageChanged             chan struct{}
	// lag is how far a continuous operation (binlog --follow) is behind
	// its source; nil until SetLag.
	lag atomic.Pointer[Lag]
	// restarts counts Restart calls, for the display goroutine.
	restarts atomic.Int64

	opt   Options
	mode  Mode
	width int // of the terminal Out is; -1: none
	start time.Time

	mu sync.Mutex // serialises writes to opt.Out

	done    chan struct{}
	stopped chan struct{}
	once    sync.Once
	summary Summary

	progress *mpb.Progress
	bar      *mpb.Bar
	lastSnap *atomic.Pointer[snapshot] // what the bar's decorators show

	// Rate smoothing, touched only by the display goroutine.
	lastIn   int64
	lastTime time.Time
	rate     float64
	// shown is the percent last reported: an estimated total that grows
	// makes the ratio fall back, and a percent that goes back is read as
	// lost work. Only a restart lowers it.
	shown        float64
	restartsSeen int64
}

// Start begins tracking an operation and, unless the mode is quiet, starts
// showing its progress. Finish must be called to stop it.
func Start(opt Options) *Tracker {
	if opt.Out == nil {
		opt.Out = os.Stderr
	}
	if opt.Interval <= 0 {
		opt.Interval = DefaultInterval
	}
	width := termWidth(opt.Out)
	t := &Tracker{
		opt:          opt,
		mode:         resolve(opt.Mode, width),
		width:        width,
		start:        time.Now(),
		stageChanged: make(chan struct{}, 1),
		done:         make(chan struct{}),
		stopped:      make(chan struct{}),
	}
	t.lastTime = t.start
	t.total.Store(opt.Total)
	empty := ""
	t.stage.Store(&empty)
	t.backup.Store(&opt.Backup)
	switch t.mode {
	case ModeBar:
		t.startBar()
		go t.loop(barRefresh, t.refreshBar)
	case ModePlain:
		go t.loop(opt.Interval, t.writePlain)
	case ModeJSON:
		go t.loop(opt.Interval, t.writeJSONProgress)
	default:
		close(t.stopped)
	}
	return t
}

// resolve turns ModeAuto into the mode that suits an output that is a
// terminal width columns wide (-1: no terminal): a bar on a terminal that
// reports its width, plain lines otherwise. A terminal of width 0 (a
// serial console, a pseudo-terminal nobody sized) gets lines: a bar
// drawn to fit it would draw nothing.
func resolve(m Mode, width int) Mode {
	if m != ModeAuto {
		return m
	}
	if width > 0 {
		return ModeBar
	}
	return ModePlain
}

// termWidth is the width of the terminal out is, -1 when it is none (a
// file, a pipe, a buffer); a variable so that tests can be terminals.
var termWidth = func(out io.Writer) int {
	f, ok := out.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return -1
	}
	w, _, err := term.GetSize(int(f.Fd()))
	if err != nil || w < 0 {
		return 0
	}
	return w
}

// unsizedWidth is the bar's width on a terminal that reports none.
const unsizedWidth = 80

// In counts n bytes read from the source.
func (t *Tracker) In(n int64) { t.in.Add(n) }

// Out counts n bytes written to the destination.
func (t *Tracker) Out(n int64) { t.out.Add(n) }

// SetTotal sets the number of bytes In is expected to reach (0: unknown),
// for when it becomes known only after Start or the estimate improves.
func (t *Tracker) SetTotal(n int64) { t.total.Store(n) }

// SetBackup names the backup the operation makes or reads, once its id is
// known (a backup's is made as it starts, and again for each attempt).
func (t *Tracker) SetBackup(id string) { t.backup.Store(&id) }

// Restart counts from zero again, for an operation that starts its work
// over (a physical backup taken again after DDL raced its copy): what the
// discarded attempt read and wrote counts neither toward the total nor in
// the summary, which describes the attempt that finished. The elapsed time
// goes on.
func (t *Tracker) Restart() {
	t.in.Store(0)
	t.out.Store(0)
	t.rows.Store(0)
	t.tablesDone.Store(0)
	t.restarts.Add(1)
}

// AddRows counts rows dumped or loaded.
func (t *Tracker) AddRows(n int64) { t.rows.Add(n) }

// SetTables sets how many tables the operation moves; lines then show the
// tables done and the rows.
func (t *Tracker) SetTables(n int64) { t.tables.Store(n) }

// TableDone counts one table finished.
func (t *Tracker) TableDone() { t.tablesDone.Add(1) }

// Lag is how far a continuous operation is behind its source: the bytes
// it has not yet stored, and for how long it has not held everything.
type Lag struct {
	Seconds float64
	Bytes   int64
}

// SetLag records the newest measure of the lag, shown from then on.
func (t *Tracker) SetLag(l Lag) { t.lag.Store(&l) }

// Stage names the phase the operation is in ("streaming", "prepare",
// "verifying"); plain and JSON modes report a change at once.
func (t *Tracker) Stage(name string) {
	if old := t.stage.Swap(&name); *old == name {
		return
	}
	select {
	case t.stageChanged <- struct{}{}:
	default:
	}
}

// Logf writes one line of text (a warning, a child's notable stderr line)
// to the output without garbling the display: above the bar in bar mode,
// as a JSON "log" event in JSON mode, as is otherwise.
func (t *Tracker) Logf(format string, args ...any) {
	msg := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	switch t.mode {
	case ModeJSON:
		b, err := json.Marshal(struct {
			Time    time.Time `json:"time"`
			Event   string    `json:"event"`
			Title   string    `json:"title"`
			Backup  string    `json:"backup,omitempty"`
			Message string    `json:"message"`
		}{time.Now().UTC(), "log", t.opt.Title, *t.backup.Load(), msg})
		if err == nil {
			t.writeLine(string(b))
		}
		return
	case ModeBar:
		select {
		case <-t.done:
		default:
			// Progress.Write prints above the bar; it fails once the bar
			// is finished, and then the line goes out directly.
			if _, err := t.progress.Write([]byte(msg + "\n")); err == nil {
				return
			}
		}
	}
	t.writeLine(msg)
}

// Finish stops the display and writes the summary line, or a failure line
// if err is not nil, and returns the summary. Later calls return the same
// summary and write nothing.
func (t *Tracker) Finish(err error) Summary {
	t.once.Do(func() {
		close(t.done)
		<-t.stopped
		if err == nil {
			// Done: the total was what came in, whatever the estimate said.
			t.total.Store(t.in.Load())
		}
		t.summary = Summary{
			Title:      t.opt.Title,
			Backup:     *t.backup.Load(),
			Elapsed:    time.Since(t.start),
			BytesIn:    t.in.Load(),
			BytesOut:   t.out.Load(),
			Total:      t.total.Load(),
			Tables:     t.tables.Load(),
			TablesDone: t.tablesDone.Load(),
			Rows:       t.rows.Load(),
			Err:        err,
		}
		if t.bar != nil {
			t.refreshBar(time.Now())
			if err == nil {
				t.bar.SetTotal(-1, true)
			} else {
				t.bar.Abort(false)
			}
			t.progress.Wait()
		}
		if t.mode == ModeJSON {
			t.writeJSON(t.summary.event(time.Now(), *t.stage.Load()))
			return
		}
		t.writeLine(t.summary.String())
	})
	return t.summary
}

// loop calls report every interval and on stage changes until Finish.
func (t *Tracker) loop(interval time.Duration, report func(now time.Time)) {
	defer close(t.stopped)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-t.done:
			return
		case now := <-tick.C:
			report(now)
		case <-t.stageChanged:
			report(time.Now())
		}
	}
}

// snapshot is one reading of the counters with a rate and ETA.
type snapshot struct {
	in, out, total int64
	rows           int64
	tablesDone     int64
	tables         int64
	stage          string
	lag            *Lag
	rate           float64 // bytes in per second, smoothed
	eta            time.Duration
	etaKnown       bool
	floor          float64 // the percent shown before (see Tracker.shown)
}

// rateWindow is the time constant of the smoothed rate: a change of pace
// shows in the ETA within seconds, and a pause for a lock or a burst of a
// 10 MiB chunk does not swing it, however often it is drawn.
const rateWindow = 8 * time.Second

// etaAfter is how long the rate is measured before an ETA is shown: the
// first reports see a few bytes or one chunk and would promise days or
// nothing.
const etaAfter = time.Second

// take reads the counters and updates the smoothed rate. The rate is the
// average since the start while that is shorter than rateWindow, then an
// exponential average with that time constant: the same in a bar drawn
// five times a second as in a line every five seconds.
func (t *Tracker) take(now time.Time) snapshot {
	s := snapshot{in: t.in.Load(), out: t.out.Load(), total: t.total.Load(), stage: *t.stage.Load(),
		rows: t.rows.Load(), tablesDone: t.tablesDone.Load(), tables: t.tables.Load(), lag: t.lag.Load()}
	if s.total > 0 && s.in > s.total {
		// The estimate fell short: there is at least what came in.
		s.total = s.in
	}
	if s.in < t.lastIn {
		// Restarted: the rate so far is the best guess at the new
		// attempt's, measured from here on.
		t.lastIn, t.lastTime = s.in, now
	}
	if r := t.restarts.Load(); r != t.restartsSeen {
		t.restartsSeen, t.shown = r, 0
	}
	s.floor = t.shown
	t.shown = s.percent()
	if dt := now.Sub(t.lastTime).Seconds(); dt > 0.05 {
		recent := float64(s.in-t.lastIn) / dt
		measured := max(now.Sub(t.start).Seconds(), dt)
		weight := max(dt/measured, 1-math.Exp(-dt/rateWindow.Seconds()))
		t.rate = weight*recent + (1-weight)*t.rate
		t.lastIn, t.lastTime = s.in, now
	}
	s.rate = t.rate
	if s.total > 0 && s.rate > 0 && now.Sub(t.start) >= etaAfter {
		s.eta = time.Duration(float64(s.total-s.in) / s.rate * float64(time.Second))
		s.etaKnown = true
	}
	return s
}

func (t *Tracker) writePlain(now time.Time) {
	s := t.take(now)
	var b strings.Builder
	b.WriteString(t.opt.Title)
	if s.stage != "" {
		fmt.Fprintf(&b, " [%s]", s.stage)
	}
	fmt.Fprintf(&b, ": %s", HumanBytes(s.in))
	if s.total > 0 {
		fmt.Fprintf(&b, " / %s (%.0f%%)", HumanBytes(s.total), s.percent())
	}
	fmt.Fprintf(&b, " in, %s out, %s", HumanBytes(s.out), HumanRate(s.rate))
	if s.tables > 0 {
		fmt.Fprintf(&b, ", %d/%d tables, %d rows", s.tablesDone, s.tables, s.rows)
	}
	if s.lag != nil {
		fmt.Fprintf(&b, ", lag %s (%s)", (time.Duration(s.lag.Seconds * float64(time.Second))).Round(time.Second), HumanBytes(s.lag.Bytes))
	}
	if s.etaKnown {
		fmt.Fprintf(&b, ", ETA %s", s.eta.Round(time.Second))
	}
	fmt.Fprintf(&b, ", elapsed %s", now.Sub(t.start).Round(time.Second))
	t.writeLine(b.String())
}

// percent is how much of the total came in, 0 to 100.
func (s snapshot) percent() float64 {
	if s.total <= 0 {
		return 0
	}
	return max(s.floor, min(100, 100*float64(s.in)/float64(s.total)))
}

// Event is one JSON line of ModeJSON. Fields are stable: tools parse them.
type Event struct {
	Time  time.Time `json:"time"`
	Event string    `json:"event"` // "progress" or "summary" ("log" events are Logf's)
	Title string    `json:"title"`
	// Backup is the id of the backup made or read, once known.
	Backup string `json:"backup,omitempty"`
	Stage  string `json:"stage"`
	// BytesIn and BytesOut are the counters; Total is 0 when unknown. Total
	// is an estimate until the summary of a success, where it is BytesIn.
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
	Total    int64 `json:"total"`
	// Percent is BytesIn of Total, never below the event before's unless
	// the operation restarted, null when the total is unknown; 100 in the
	// summary of a success.
	Percent *float64 `json:"percent"`
	// Rate is bytes in per second: recent for progress, average for summary.
	Rate float64 `json:"rate"`
	// ETASeconds is null when the total or the rate is unknown, and in
	// the first second (see etaAfter).
	ETASeconds *float64 `json:"eta_seconds"`
	// Tables moved so far and in all, and rows, for logical backups.
	TablesDone int64 `json:"tables_done,omitempty"`
	Tables     int64 `json:"tables,omitempty"`
	Rows       int64 `json:"rows,omitempty"`
	// LagSeconds and LagBytes, for binlog --follow: how long the archive
	// has not held all the server wrote (0: caught up), and how many
	// bytes of binary log it lacks. Absent until first measured.
	LagSeconds *float64 `json:"lag_seconds,omitempty"`
	LagBytes   *int64   `json:"lag_bytes,omitempty"`
	// Summary only.
	ElapsedSeconds float64 `json:"elapsed_seconds,omitempty"`
	Ratio          float64 `json:"ratio,omitempty"`
	OK             *bool   `json:"ok,omitempty"`
	Error          string  `json:"error,omitempty"`
}

func (t *Tracker) writeJSONProgress(now time.Time) {
	s := t.take(now)
	e := Event{Time: now.UTC(), Event: "progress", Title: t.opt.Title, Backup: *t.backup.Load(), Stage: s.stage,
		BytesIn: s.in, BytesOut: s.out, Total: s.total, Rate: s.rate,
		TablesDone: s.tablesDone, Tables: s.tables, Rows: s.rows}
	if s.total > 0 {
		p := s.percent()
		e.Percent = &p
	}
	if s.lag != nil {
		e.LagSeconds, e.LagBytes = &s.lag.Seconds, &s.lag.Bytes
	}
	if s.etaKnown {
		eta := s.eta.Seconds()
		e.ETASeconds = &eta
	}
	t.writeJSON(e)
}

func (t *Tracker) writeJSON(e Event) {
	b, err := json.Marshal(e)
	if err != nil {
		// Event has only plain fields; Marshal cannot fail on it.
		return
	}
	t.writeLine(string(b))
}

// writeLine writes one line. A failing progress output (a closed pipe) must
// not fail the backup, so write errors are ignored.
func (t *Tracker) writeLine(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = io.WriteString(t.opt.Out, s+"\n")
}

func (t *Tracker) startBar() {
	out, width := t.opt.Out, 100
	if t.width == 0 {
		// The bar library would fit the bar, and every line above it, in
		// the 0 columns and rows the terminal reports: nothing would show.
		// Hidden behind a plain writer, the terminal gets a bar of a width
		// most terminals have.
		out, width = struct{ io.Writer }{out}, unsizedWidth
	}
	t.progress = mpb.New(
		mpb.WithOutput(out),
		// Forced bar mode draws even when Out is not a terminal.
		mpb.WithAutoRefresh(),
		mpb.WithRefreshRate(barRefresh),
		mpb.WithWidth(width),
	)
	var last atomic.Pointer[snapshot]
	last.Store(&snapshot{})
	t.lastSnap = &last
	// A bar created with a total completes by itself when it reaches it;
	// created with 0, it stays under our control (totals are estimates).
	t.bar = t.progress.New(0, mpb.BarStyle(),
		mpb.PrependDecorators(
			decor.Name(t.opt.Title, decor.WCSyncSpaceR),
			decor.Any(func(decor.Statistics) string {
				s := last.Load()
				if s.stage == "" {
					return ""
				}
				return "[" + s.stage + "]"
			}, decor.WCSyncSpaceR),
			decor.Any(func(decor.Statistics) string {
				s := last.Load()
				if s.total > 0 {
					return HumanBytes(s.in) + " / " + HumanBytes(s.total)
				}
				return HumanBytes(s.in)
			}, decor.WCSyncSpaceR),
		),
		mpb.AppendDecorators(
			decor.Any(func(decor.Statistics) string {
				s := last.Load()
				text := HumanBytes(s.out) + " out, " + HumanRate(s.rate)
				if s.etaKnown {
					text += ", ETA " + s.eta.Round(time.Second).String()
				}
				return text
			}),
		),
	)
}

// refreshBar hands the counters to the bar; the bar's decorators read the
// last snapshot rather than the atomics so that one redraw is consistent.
func (t *Tracker) refreshBar(now time.Time) {
	s := t.take(now)
	t.lastSnap.Store(&s)
	if s.total > 0 {
		t.bar.SetTotal(s.total, false)
		t.bar.SetCurrent(min(s.in, s.total))
	}
}

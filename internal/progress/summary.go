package progress

import (
	"fmt"
	"time"
)

// Summary is the outcome of one operation.
type Summary struct {
	Title string
	// Backup is the id of the backup made or read, "" if none was named.
	Backup   string
	Elapsed  time.Duration
	BytesIn  int64
	BytesOut int64
	// Total is BytesIn after a success; after a failure, the BytesIn that
	// was expected, 0 if it was never known.
	Total int64
	// Tables in all and done, and rows, of an operation that moves tables.
	Tables, TablesDone, Rows int64
	// Err is the error the operation failed with, nil on success.
	Err error
}

// Ratio is BytesOut/BytesIn: below 1 when compressing (a backup), above 1
// when expanding (a restore); 0 when nothing came in.
func (s Summary) Ratio() float64 {
	if s.BytesIn == 0 {
		return 0
	}
	return float64(s.BytesOut) / float64(s.BytesIn)
}

// Rate is the average of bytes in per second over the whole operation.
func (s Summary) Rate() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.BytesIn) / s.Elapsed.Seconds()
}

// String is the one-line summary:
//
//	backup: done in 1m4s: 10.0 GiB in, 3.1 GiB out (ratio 0.31), 160.0 MiB/s
//	backup: FAILED after 12s (1.0 GiB in, 312.5 MiB out)
//
// A failure's summary does not repeat the error: the command prints it
// once, on the next line, as every failure of every command is printed.
func (s Summary) String() string {
	title := s.Title
	if title == "" {
		title = "done"
	}
	elapsed := roundDuration(s.Elapsed)
	if s.Err != nil {
		return fmt.Sprintf("%s: FAILED after %s (%s in, %s out)", title, elapsed, HumanBytes(s.BytesIn), HumanBytes(s.BytesOut))
	}
	return fmt.Sprintf("%s: done in %s: %s in, %s out (ratio %.2f), %s", title, elapsed,
		HumanBytes(s.BytesIn), HumanBytes(s.BytesOut), s.Ratio(), HumanRate(s.Rate()))
}

// event is the summary as a JSON event.
func (s Summary) event(now time.Time, stage string) Event {
	ok := s.Err == nil
	e := Event{Time: now.UTC(), Event: "summary", Title: s.Title, Backup: s.Backup, Stage: stage,
		BytesIn: s.BytesIn, BytesOut: s.BytesOut, Total: s.Total, Rate: s.Rate(),
		TablesDone: s.TablesDone, Tables: s.Tables, Rows: s.Rows,
		ElapsedSeconds: s.Elapsed.Seconds(), Ratio: s.Ratio(), OK: &ok}
	zero, hundred := 0.0, 100.0
	e.ETASeconds, e.Percent = &zero, &hundred
	if s.Err != nil {
		e.Error = s.Err.Error()
		e.ETASeconds, e.Percent = nil, nil
		if s.Total > 0 {
			p := snapshot{in: s.BytesIn, total: s.Total}.percent()
			e.Percent = &p
		}
	}
	return e
}

// roundDuration keeps durations readable: milliseconds below a second,
// tenths below a minute, whole seconds above.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	default:
		return d.Round(time.Second)
	}
}

// HumanBytes formats a byte count with binary units: "512 B", "1.5 KiB",
// "3.2 GiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		v /= unit
		// Compare with what %.1f will print, so 1023.97 KiB becomes 1.0 MiB.
		if v < unit-0.05 && v > -(unit-0.05) {
			return fmt.Sprintf("%.1f %s", v, u)
		}
	}
	return fmt.Sprintf("%.1f EiB", v/unit)
}

// HumanRate formats bytes per second as MiB/s, the unit DBAs compare tools
// in.
func HumanRate(bytesPerSecond float64) string {
	return fmt.Sprintf("%.1f MiB/s", bytesPerSecond/(1<<20))
}

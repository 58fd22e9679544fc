package health

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteText writes r as check's one line for a repository without
// problems: what was found, and the limits it was judged by. A report with
// problems is told by its error (Report.Err) instead.
func (r Report) WriteText(w io.Writer) error {
	parts := []string{"OK: " + r.Location}
	if m := r.Newest; m != nil {
		s := fmt.Sprintf("newest backup %s (%s) finished %s ago", m.ID, m.Kind, Round(r.Age))
		if r.Options.MaxAge > 0 {
			s += fmt.Sprintf(" (at most %s)", Round(r.Options.MaxAge))
		}
		parts = append(parts, s)
	} else {
		parts = append(parts, "no backups")
	}
	if m := r.RestoreTested; m != nil {
		s := fmt.Sprintf("backup %s passed a restore test %s ago", m.ID, Round(r.Now.Sub(r.RestoreTestAt)))
		if r.Options.MaxRestoreTestAge > 0 {
			s += fmt.Sprintf(" (at most %s)", Round(r.Options.MaxRestoreTestAge))
		}
		parts = append(parts, s)
	}
	parts = append(parts, fmt.Sprintf("%d complete backups (%d incremental), no chain broken", r.Backups, r.Incrementals))
	for _, s := range r.Sources {
		parts = append(parts, fmt.Sprintf("binary logs of %s archived up to %s ago (at most %s)", s.Source, Round(s.Lag), Round(r.Options.MaxBinlogLag)))
	}
	_, err := fmt.Fprintln(w, strings.Join(parts, "; "))
	return err
}

// Summary is a report as check --json prints it.
type Summary struct {
	OK           bool      `json:"ok"`
	Location     string    `json:"location"`
	Now          time.Time `json:"now"`
	Newest       string    `json:"newest,omitempty"` // the newest complete backup's id
	AgeSeconds   float64   `json:"age_seconds,omitempty"`
	Backups      int       `json:"backups"`
	Incrementals int       `json:"incrementals"`
	// RestoreTested is the backup that last passed a restore test, at
	// RestoreTestAt.
	RestoreTested string           `json:"restore_tested,omitempty"`
	RestoreTestAt *time.Time       `json:"restore_test_at,omitempty"`
	Binlogs       []SummarySource  `json:"binlogs,omitempty"`
	Problems      []SummaryProblem `json:"problems,omitempty"`
}

// SummarySource is a Source in a Summary.
type SummarySource struct {
	Source     string    `json:"source"`
	CompleteAt time.Time `json:"complete_at"`
	LagSeconds float64   `json:"lag_seconds"`
}

// SummaryProblem is a Problem in a Summary.
type SummaryProblem struct {
	Kind   Kind   `json:"kind"`
	Backup string `json:"backup,omitempty"`
	Source string `json:"source,omitempty"`
	Error  string `json:"error"`
}

// Summary is r as check --json prints it.
func (r Report) Summary() Summary {
	out := Summary{OK: r.Err() == nil, Location: r.Location, Now: r.Now, Backups: r.Backups, Incrementals: r.Incrementals}
	if r.Newest != nil {
		out.Newest, out.AgeSeconds = r.Newest.ID, r.Age.Seconds()
	}
	if m := r.RestoreTested; m != nil {
		out.RestoreTested, out.RestoreTestAt = m.ID, &r.RestoreTestAt
	}
	for _, s := range r.Sources {
		out.Binlogs = append(out.Binlogs, SummarySource{Source: s.Source, CompleteAt: s.CompleteAt, LagSeconds: s.Lag.Seconds()})
	}
	for _, p := range r.Problems {
		out.Problems = append(out.Problems, SummaryProblem{Kind: p.Kind, Backup: p.Backup, Source: p.Source, Error: p.Err.Error()})
	}
	return out
}

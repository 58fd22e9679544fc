package backup

import (
	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
)

// Impact is what a backup cost the server it copied: the bytes it read,
// how long its locks held DDL and commits off (what a writer waited at
// most), and how fast the server answered a trivial query meanwhile
// (mariadb.Probe).
type Impact struct {
	ReadBytes             int64   `json:"read_bytes"`
	DDLBlockedSeconds     float64 `json:"ddl_blocked_seconds"`
	CommitsBlockedSeconds float64 `json:"commits_blocked_seconds"`
	mariadb.ProbeStats
}

// ImpactOf is the impact of backup m, with the probe's answers.
func ImpactOf(m *archive.Manifest, probe mariadb.ProbeStats) *Impact {
	return &Impact{ReadBytes: m.Stats.RawBytes, DDLBlockedSeconds: m.Stats.DDLBlockedSeconds,
		CommitsBlockedSeconds: m.Stats.CommitsBlockedSeconds, ProbeStats: probe}
}

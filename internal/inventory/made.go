package inventory

import (
	"fmt"

	"github.com/backstream/backstream/internal/archive"
)

// Made is what --json prints of a backup a command made (backup, merge,
// send, binlog): its listing, how long it took, and the encryption it got.
type Made struct {
	Backup
	Seconds    float64             `json:"seconds"`
	Encryption *archive.Encryption `json:"encryption,omitempty"`
	NoHistory  []string            `json:"no_history,omitempty"`
	Masked     []string            `json:"masked,omitempty"` // logical: columns the dump masked, as db.table.column=function
}

// MadeOf is the Made of backup m, just committed.
func MadeOf(m *archive.Manifest) Made {
	r := Made{Backup: Of(m), Seconds: m.Stats.Seconds, Encryption: m.Encryption}
	for _, d := range m.Databases {
		for _, t := range d.NoHistory {
			r.NoHistory = append(r.NoHistory, d.Name+"."+t)
		}
	}
	r.Masked = archive.MaskedColumns(m.Databases)
	return r
}

// Stored says what backup m stored, for the line a command that made it
// prints: its bytes, and how much smaller they are than what was read.
func Stored(m *archive.Manifest) string {
	s := fmt.Sprintf("%d bytes", m.Stats.StoredBytes)
	if m.Stats.StoredBytes > 0 {
		s += fmt.Sprintf(" (%.2fx of %d)", float64(m.Stats.RawBytes)/float64(m.Stats.StoredBytes), m.Stats.RawBytes)
	}
	return s
}

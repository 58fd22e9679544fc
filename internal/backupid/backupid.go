// Package backupid makes and reads backup ids: the UTC time a backup
// started, to the second, plus a short random suffix, e.g.
// 20261121T190512Z-7f3a. Ids sort in the order backups started. The
// package knows nothing of where backups are stored or what they hold.
package backupid

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"time"
)

// timeLayout is the time part of an id.
const timeLayout = "20060102T150405Z"

var pattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}$`)

// New returns a fresh id for a backup started at now.
func New(now time.Time) string {
	b := make([]byte, 2)
	rand.Read(b)
	return now.UTC().Format(timeLayout) + "-" + hex.EncodeToString(b)
}

// Valid reports whether s has the form of a backup id.
func Valid(s string) bool { return pattern.MatchString(s) }

// Time returns the start time an id records (to the second, UTC); ok is
// false for a string that is not an id.
func Time(id string) (t time.Time, ok bool) {
	if !Valid(id) {
		return time.Time{}, false
	}
	t, err := time.Parse(timeLayout, id[:len(timeLayout)])
	return t, err == nil
}

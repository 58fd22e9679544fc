package repo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"
)

// VerdictName is the object in a backup's directory that records what
// the last verify of it found: written after the manifest, by verify
// only, so that check, which reads the catalog alone, can report damage
// inside objects that only reading them finds, and when the backup was
// last proven restorable. It is stored unencrypted (check runs without
// keys) and holds no data: times and the error's message.
const VerdictName = "verified.json"

// Verdict is the content of a backup's verdict object.
type Verdict struct {
	// Checksums is the last verify of every checksum of the backup and
	// its chain; RestoreTest the last verify --restore-test of it.
	Checksums   *Outcome `json:"checksums,omitempty"`
	RestoreTest *Outcome `json:"restore_test,omitempty"`
}

// Outcome is how one check of a backup ended.
type Outcome struct {
	At time.Time `json:"at"`
	OK bool      `json:"ok"`
	// Error is what was wrong, naming the backup and the object, when
	// not OK.
	Error string `json:"error,omitempty"`
}

// ReadVerdict reads the verdict of backup id; a backup without one has
// the zero Verdict.
func (r *Repo) ReadVerdict(ctx context.Context, id string) (Verdict, error) {
	var v Verdict
	rc, err := r.Backend.Open(ctx, Dir(id)+"/"+VerdictName, 0, -1)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return v, nil
		}
		return v, fmt.Errorf("backup %s: %w", id, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		return v, fmt.Errorf("backup %s: read %s: %w", id, VerdictName, err)
	}
	if err := json.Unmarshal(data, &v); err != nil {
		// A verdict is a record, not data: an unreadable one is as if
		// no verify had run, which check then judges by its age.
		return Verdict{}, nil
	}
	return v, nil
}

// RecordVerdict stores what a verify of backup id found: checksums or
// restoreTest (either may be nil) replace those of the stored verdict.
func (r *Repo) RecordVerdict(ctx context.Context, id string, checksums, restoreTest *Outcome) error {
	v, err := r.ReadVerdict(ctx, id)
	if err != nil {
		return err
	}
	if checksums != nil {
		v.Checksums = checksums
	}
	if restoreTest != nil {
		v.RestoreTest = restoreTest
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if _, err := r.Backend.Put(ctx, Dir(id)+"/"+VerdictName, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("backup %s: store %s: %w", id, VerdictName, err)
	}
	return nil
}

package archive

import (
	"context"
	"fmt"
	"time"
)

// Destination is where a backup goes: a repository, or receivers on other
// hosts. A backup exists only once Commit returned nil.
type Destination interface {
	// Begin announces a backup: the manifest's header (id, kind, codec,
	// hash, server, stream names), before any data. A receiver answers
	// whether it can take it.
	Begin(ctx context.Context, header *Manifest) error
	// Output takes the streams of backup id.
	Output(id, hash string) Output
	// PutMeta stores a small metadata object of backup id.
	PutMeta(ctx context.Context, id, name string, data []byte, hash string) (Object, error)
	// Commit makes the backup complete; its objects are all durable.
	Commit(ctx context.Context, m *Manifest) error
	// Discard removes what a failed backup left.
	Discard(ctx context.Context, id string) error
}

// Ending is implemented by a Destination that can end: a session with
// receivers on other hosts takes no backup after it discarded one (they
// were told it failed). Ended reports whether it has ended.
type Ending interface {
	Ended() bool
}

// Ended reports whether dest takes no more backups.
func Ended(dest Destination) bool {
	e, ok := dest.(Ending)
	return ok && e.Ended()
}

// WriteTo takes a backup into dest: it announces the header, runs write,
// and when write fails removes what it left, so that a failed backup never
// leaves anything that could pass for complete. write commits the backup
// itself (Commit is its last step).
func WriteTo(ctx context.Context, dest Destination, header *Manifest, write func() (*Manifest, error)) (*Manifest, error) {
	if err := dest.Begin(ctx, header); err != nil {
		return nil, fmt.Errorf("backup %s: %w", header.ID, err)
	}
	m, err := write()
	if err != nil {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if rerr := dest.Discard(cleanup, header.ID); rerr != nil {
			err = fmt.Errorf("%w (and removing its partial objects failed: %v)", err, rerr)
		}
		return nil, fmt.Errorf("backup %s failed, nothing was committed: %w", header.ID, err)
	}
	return m, nil
}

package archive

import "context"

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

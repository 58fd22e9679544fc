// Package storage defines where a repository's objects live. A Backend knows
// named byte objects and nothing of backups; behaviour such as encryption,
// retries, rate limits or injected faults is added by wrapping a Backend in
// a decorator (crypt, retry, limit, faulty), which implements Wrapper so
// that Lookup finds the optional interfaces of what it wraps.
package storage

import (
	"context"
	"io"
	"time"
)

// Info describes one stored object.
type Info struct {
	Name string // slash-separated, relative to the backend's root
	// Size is what the object takes in the store: the bytes Put took,
	// unless a decorator transforms objects on their way (crypt stores
	// and reports the larger ciphertext).
	Size    int64
	ModTime time.Time
}

// Backend stores named objects. Names are slash-separated relative paths
// ("backups/X/manifest.json"); a name with an empty, "." or ".." element or a
// leading slash is rejected. Every method honours ctx. A missing object is
// reported with an error that matches fs.ErrNotExist under errors.Is.
//
// An error worth retrying is marked with Transient; every other error is
// permanent. A backend retries nothing a decorator can retry as well:
// Stat, List, Delete and Open are retried whole by the retry decorator,
// and a reader whose Read fails with a transient error stays usable, its
// next Read resuming at the same offset. Put is not retried from outside,
// since its reader cannot be read twice: a backend retries the requests
// of a Put itself, from bytes it buffered, or not at all.
type Backend interface {
	// Put creates or replaces the object name with everything read from r,
	// whose size need not be known. The object becomes visible under name
	// only when Put returns nil; after an error (including a cancelled ctx
	// or an error returned by r) nothing new is visible under name and no
	// temporary data is left behind. Put returns the number of bytes it
	// took from r.
	Put(ctx context.Context, name string, r io.Reader) (int64, error)

	// Open reads length bytes of the object from offset off; length < 0
	// reads to the end. Reading past the end of the object yields fewer
	// bytes, never an error of its own: callers check lengths.
	Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error)

	// Stat describes one object.
	Stat(ctx context.Context, name string) (Info, error)

	// List returns the objects whose names start with prefix, sorted by name.
	List(ctx context.Context, prefix string) ([]Info, error)

	// Delete removes the object. Deleting a missing object is not an error.
	Delete(ctx context.Context, name string) error

	// Location names the backend in messages, e.g. "/backups" or "s3://bucket/prefix".
	Location() string
}

// UploadAborter is implemented by backends whose Put can leave invisible
// partial data behind when the backend itself became unreachable before
// the Put could clean up (S3 multipart uploads). AbortUploads removes all
// such data kept for the object name and returns how many uploads it
// aborted; a name with none is no error. Find it with Lookup.
type UploadAborter interface {
	AbortUploads(ctx context.Context, name string) (int, error)
}

// Package storage defines where a repository's objects live. A Backend knows
// named byte objects and nothing of backups; behaviour such as encryption,
// retries, rate limits or injected faults is added by wrapping a Backend in
// a decorator (crypt, retry, limit, faulty), which implements Wrapper so
// that Lookup finds the optional interfaces of what it wraps.
package storage

import (
	"context"
	"io"
	"strconv"
	"strings"
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

// LeftoverRemover is implemented by backends that keep data invisible to
// List for writes that never finished: the temporary files a local Put
// leaves when its process is killed (SIGKILL, a crash), the incomplete
// multipart uploads an S3 server keeps when a Put could not abort them.
// Find it with Lookup.
//
// RemoveLeftovers removes every such leftover of objects whose names
// start with prefix, and also those of each of opts.Names: a server that
// lists incomplete uploads by whole key only (MinIO) finds no leftover by
// prefix, so a caller that knows which objects were being written names
// them. It returns what it removed (with opts.DryRun, what it would
// remove); none is no error.
//
// Call it only while nothing writes under prefix: a leftover removed under
// a running Put makes that Put fail (it never makes a torn object
// visible), so a caller makes sure through a lock that no writer runs.
type LeftoverRemover interface {
	RemoveLeftovers(ctx context.Context, prefix string, opts LeftoverOptions) (Leftovers, error)
}

// LeftoverOptions refine RemoveLeftovers.
type LeftoverOptions struct {
	// Names are objects whose leftovers go too, whether or not they start
	// with the prefix; a backend that finds leftovers by prefix may
	// ignore them.
	Names []string
	// DryRun counts the leftovers and removes nothing.
	DryRun bool
}

// Leftovers counts the leftovers of unfinished writes.
type Leftovers struct {
	TempFiles int   `json:"temp_files,omitempty"` // temporary files of a local directory
	Uploads   int   `json:"uploads,omitempty"`    // incomplete multipart uploads (S3)
	Bytes     int64 `json:"bytes,omitempty"`      // what they take, where the backend knows (temporary files)
}

// Count is the number of leftovers of every kind.
func (l Leftovers) Count() int { return l.TempFiles + l.Uploads }

// Add returns the sum of l and o.
func (l Leftovers) Add(o Leftovers) Leftovers {
	return Leftovers{TempFiles: l.TempFiles + o.TempFiles, Uploads: l.Uploads + o.Uploads, Bytes: l.Bytes + o.Bytes}
}

// String names the counts for messages: "3 temporary files, 1 incomplete
// upload"; "no leftovers" when there are none.
func (l Leftovers) String() string {
	var parts []string
	if l.TempFiles > 0 {
		parts = append(parts, plural(l.TempFiles, "temporary file"))
	}
	if l.Uploads > 0 {
		parts = append(parts, plural(l.Uploads, "incomplete upload"))
	}
	if len(parts) == 0 {
		return "no leftovers"
	}
	return strings.Join(parts, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

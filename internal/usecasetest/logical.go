package usecasetest

import (
	"context"
	"errors"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/testkit"
)

// LogicalBackupOf is the request `backup --logical` makes of src into r
// with the defaults a user gets (BackupOf's, and data files cut at 16
// MiB); the test sets the dump's filters and skips as the flags would
// (--database or --table without --users skips the accounts too).
func LogicalBackupOf(t testing.TB, r Repo, src *sandbox.Server) backup.Request {
	t.Helper()
	req := BackupOf(t, r, src)
	req.Logical = true
	req.Dump.ChunkBytes = logical.DefaultChunkBytes
	return req
}

// LoadOf is the request `restore` makes of the backup ref (RestoreOf) in
// r with the connection flags of the sandbox server dst (see Conn), which
// a logical backup loads into; the test sets the load's choices (Load)
// as the flags would.
func LoadOf(r Repo, ref string, dst *sandbox.Server) restorecase.Request {
	return withConn(RestoreOf(r, ref), Conn(dst))
}

// Catalog is what the logical backup id of r holds besides its data
// files: its objects' definitions and its data files, table by table.
func Catalog(t testing.TB, r Repo, id string) *logical.Catalog {
	t.Helper()
	ctx := context.Background()
	rp := r.Open(t)
	m, err := rp.Resolve(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	data, err := rp.ReadMeta(ctx, m, logical.CatalogName)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := logical.ParseCatalog(data)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// Said collects what a use case says through the progress trackers it
// makes (a Deferred.Tracker, a Progress): their lines as `--progress none`
// prints them on stderr, the target a load names before it starts among
// them; trackers may share it. The zero value is ready for use.
type Said struct{ testkit.SyncBuffer }

// Tracker starts a tracker titled title that writes into s.
func (s *Said) Tracker(title string, total int64) *progress.Tracker {
	return progress.Start(progress.Options{Mode: progress.ModeQuiet, Out: s, Title: title, Total: total})
}

// Refused says err refuses what was asked (it has a Refused method, as a
// *refusal.Error, a *restore.RefusedError or a *logical.FilterError do):
// what the command exits 2 for.
func Refused(err error) bool {
	var r interface{ Refused() bool }
	return errors.As(err, &r) && r.Refused()
}

// Failed says err is a failure of doing what was asked, neither a refusal
// nor stored data that does not match its checksums (archive.IsCorrupt):
// what the command exits 1 for.
func Failed(err error) bool {
	return err != nil && !Refused(err) && !archive.IsCorrupt(err)
}

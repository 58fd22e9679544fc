package usecasetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
)

// BackupOf is the request `backup` makes of src into r with the defaults
// a user gets (zstd, BLAKE3) and two streams; the test sets what else it
// asks for.
func BackupOf(t testing.TB, r Repo, src *sandbox.Server) backup.Request {
	t.Helper()
	c, err := codec.Parse(codec.Default)
	if err != nil {
		t.Fatal(err)
	}
	return backup.Request{Repo: r.Open(t), Conn: Conn(src), Parallel: 2, Codec: c, Hash: archive.DefaultHash, Version: "test"}
}

// Backup takes the backup req describes (backup.Run), failing the test
// if it fails.
func Backup(t testing.TB, req backup.Request) *backup.Result {
	t.Helper()
	res, err := backup.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	t.Logf("backup %s: %s, %d streams", res.Manifest.ID, res.Manifest.Kind, len(res.Manifest.Streams))
	return res
}

// RestoreOf is the request `restore` makes of the backup ref (an id, a
// prefix, latest; "" for latest unnamed) in r, writing without syncing
// (--no-sync: what these tests check is what a restore wrote, not when
// the disk has it; that a restore syncs is checked in internal/durable
// and internal/restore), over two connections for a load; the test sets
// what else it asks for (Restore.TargetDir, Restore.Options.Prepare, ...).
func RestoreOf(r Repo, ref string) restorecase.Request {
	req := restorecase.Request{Backup: ref, Named: ref != "", Parallel: 2,
		Deferred: restorecase.Deferred{Open: r.Access().Open}}
	if ref == "" {
		req.Backup = "latest"
	}
	req.Restore.Options.NoSync = true
	return req
}

// Restore restores as req asks (restorecase.Run), failing the test if it
// fails.
func Restore(t testing.TB, req restorecase.Request) *restorecase.Result {
	t.Helper()
	res, err := restorecase.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("restore %s: %v", req.Backup, err)
	}
	return res
}

// CatExtract writes backup ref of r as one xbstream (restorecase.Cat,
// what `backstream cat` prints) into the real `mbstream -x -C dir`, as
// `cat | mbstream -x` with pipefail would: both must succeed. The stream
// is never held in memory whole.
func CatExtract(t testing.TB, r Repo, ref, dir string) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var mbOut bytes.Buffer
	mb := exec.Command("mbstream", "-x", "-C", dir)
	mb.Stdin, mb.Stdout, mb.Stderr = pr, &mbOut, &mbOut
	if err := mb.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	catErr := restorecase.Cat(context.Background(), r.Access(), ref, pw)
	pw.Close()
	mbErr := mb.Wait()
	if catErr != nil {
		t.Fatalf("cat: %v", catErr)
	}
	if mbErr != nil {
		t.Fatalf("cat | mbstream -x: %v\n%s", mbErr, mbOut.String())
	}
}

// Verify checks backup ref of r and its chain as `verify ref` does, and
// returns the error.
func Verify(t testing.TB, r Repo, ref string) error {
	t.Helper()
	return VerifyWith(t, r.Access(), ref)
}

// List is what `list --json` prints of r.
func List(t testing.TB, r Repo) inventory.Listing {
	t.Helper()
	return ListWith(t, r.Access())
}

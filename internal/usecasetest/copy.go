package usecasetest

import (
	"context"
	"testing"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/servercopy"
)

// CopyOf is the copy `copy --from S --to T` makes from src into dst with
// the choices c (filters, renames, --drop-existing, --resume, ...) and
// copy's defaults; the test sets what else it asks for.
func CopyOf(t testing.TB, src, dst *sandbox.Server, c restorecase.Choices) servercopy.Job {
	t.Helper()
	job := servercopy.Job{From: Conn(src), To: Conn(dst),
		Parallel: options.DefaultParallel(), ChunkBytes: 16 << 20} // --chunk-size's default
	if err := job.SetChoices(c); err != nil {
		t.Fatal(err)
	}
	return job
}

// Copy copies as job asks (servercopy.Run), failing the test if it fails.
func Copy(t testing.TB, job servercopy.Job) *servercopy.Result {
	t.Helper()
	res, err := servercopy.Run(context.Background(), job)
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	t.Logf("copy %s: %d tables, %d rows, position %+v", res.ID, res.Load.Tables, res.Load.Rows, res.Position)
	return res
}

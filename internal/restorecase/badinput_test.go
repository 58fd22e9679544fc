package restorecase_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A restore into a directory that holds something is refused, naming
// it, and what is there is left untouched.
func TestRestoreRefusesNonEmptyTarget(t *testing.T) {
	t.Parallel()
	r := usecasetest.NewLocalRepo(t)
	id := smallBackup(t, r)
	target := t.TempDir()
	keep := filepath.Join(target, "precious")
	os.WriteFile(keep, []byte("do not touch"), 0o600)
	req := usecasetest.RestoreOf(r, id)
	req.Restore.TargetDir = target
	if _, err := restorecase.Run(context.Background(), req); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("%v: want a refusal naming the non-empty target", err)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "do not touch" {
		t.Errorf("the existing file was touched: %q %v", b, err)
	}
}

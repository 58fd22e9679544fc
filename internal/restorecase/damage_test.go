package restorecase_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
	"github.com/backstream/backstream/internal/xbstream"
)

// smallBackup backs up a sandbox with a little data into r (`backup
// --parallel 2`) and returns the backup's id.
func smallBackup(t *testing.T, r usecasetest.Repo) string {
	t.Helper()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 2, BigTableMB: 8}); err != nil {
		t.Fatal(err)
	}
	return usecasetest.Backup(t, usecasetest.BackupOf(t, r, src)).Manifest.ID
}

// A flipped byte or a truncated stream object: verify and restore fail
// as damage (exit 3) naming the backup, the object, the frame and what
// is wrong with it, and the failed restore leaves no target behind.
func TestDamagedBackupIsRefused(t *testing.T) {
	t.Parallel()
	usecasetest.ForEachBackend(t, func(t *testing.T, repo usecasetest.Repo) {
		id := smallBackup(t, repo)
		object := "backups/" + id + "/streams/00001.xbs.zst"
		original := repo.Read(t, object)
		cases := []struct {
			name   string
			damage func([]byte) []byte
			want   []string
		}{
			{"flipped byte", func(b []byte) []byte {
				b = bytes.Clone(b)
				b[len(b)/2] ^= 1
				return b
			}, []string{"00001.xbs.zst", "frame", "checksum mismatch"}},
			{"truncated object", func(b []byte) []byte { return b[:len(b)*2/3] }, []string{"00001.xbs.zst", "frame", "truncated"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				repo.Write(t, object, tc.damage(original))
				defer repo.Write(t, object, original)
				verifyErr := usecasetest.Verify(t, repo, id)
				target := filepath.Join(t.TempDir(), "target")
				req := usecasetest.RestoreOf(repo, id)
				req.Restore.TargetDir = target
				_, restoreErr := restorecase.Run(context.Background(), req)
				for what, err := range map[string]error{"verify": verifyErr, "restore": restoreErr} {
					if !usecasetest.Corrupt(err) {
						t.Errorf("%s: %v, want damage (exit 3)", what, err)
					}
					for _, w := range append(tc.want, id) {
						if err == nil || !strings.Contains(err.Error(), w) {
							t.Errorf("%s: error %v does not name %q", what, err, w)
						}
					}
				}
				if _, err := os.Stat(target); !os.IsNotExist(err) {
					t.Errorf("restore left its target behind after failing (%v)", err)
				}
			})
		}
		// Undamaged again, it verifies.
		if err := usecasetest.Verify(t, repo, id); err != nil {
			t.Fatalf("verify of the repaired backup: %v", err)
		}
	})
}

// cat of a backup with a flipped byte fails as damage (exit 3) naming
// the object and frame, and what it wrote before stopping holds only
// whole chunks that pass their checksums: the damaged chunk is never
// written.
func TestCatNeverWritesDamage(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	usecasetest.ForEachBackend(t, func(t *testing.T, repo usecasetest.Repo) {
		id := usecasetest.Backup(t, usecasetest.BackupOf(t, repo, src)).Manifest.ID
		object := "backups/" + id + "/streams/00000.xbs.zst"
		damaged := repo.Read(t, object)
		damaged[len(damaged)/2] ^= 1
		repo.Write(t, object, damaged)
		var written bytes.Buffer
		err := restorecase.Cat(context.Background(), repo.Access(), id, &written)
		if !usecasetest.Corrupt(err) || !strings.Contains(err.Error(), "00000.xbs.zst") || !strings.Contains(err.Error(), "frame") {
			t.Fatalf("cat of a damaged backup: %v; want damage (exit 3) naming the object and frame", err)
		}
		out := written.Bytes()
		for len(out) > 0 {
			_, n, err := xbstream.DecodeChunk(out)
			if err != nil {
				if !strings.Contains(err.Error(), "truncated") {
					t.Fatalf("cat wrote a chunk that fails its checks: %v", err)
				}
				break // the output was cut at a buffer's end, mid-chunk
			}
			out = out[n:]
		}
	})
}

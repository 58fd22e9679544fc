package restoredserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// Start gives the server the options a backup recorded through an
// option file, not its argv; when the encryption plugin they load does
// not start (a key file it cannot read), it fails saying so, with the
// server's error log, rather than leave a server that calls every
// encrypted table corrupt.
func TestStartEncryption(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{NoBinlog: true})
	if err := src.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "keys.txt")
	recorded := func() []mariadb.Option {
		return []mariadb.Option{
			{File: physical.BackupMyCnf, Key: "plugin-load", Value: "file_key_management=file_key_management"},
			{File: physical.BackupMyCnf, Key: "file-key-management-filename", Value: keyFile},
		}
	}

	if err := os.WriteFile(keyFile, []byte("this is no key file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := Start(ctx, Options{Dir: filepath.Join(t.TempDir(), "server"), Datadir: src.Datadir, Options: recorded()})
	if err == nil {
		srv.Close()
		t.Fatal("a server without its encryption plugin was accepted")
	}
	if !strings.Contains(err.Error(), "the server started without the encryption plugin that the backup's options load (plugin_load = file_key_management=file_key_management)") ||
		!strings.Contains(err.Error(), "file_key_management") {
		t.Fatalf("error: %v", err)
	}

	if err := os.WriteFile(keyFile, []byte("1;"+strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err = Start(ctx, Options{Dir: filepath.Join(t.TempDir(), "server"), Datadir: src.Datadir, Options: recorded()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var status string
	if err := srv.DB().QueryRowContext(ctx, "SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'FILE_KEY_MANAGEMENT'").Scan(&status); err != nil || status != "ACTIVE" {
		t.Fatalf("file_key_management: %q, %v", status, err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", srv.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cmdline), "file-key-management") || strings.Contains(string(cmdline), keyFile) {
		t.Fatalf("the backup's options are on the server's argv: %q", cmdline)
	}
}

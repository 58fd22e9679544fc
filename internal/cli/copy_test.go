package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// The copy itself, with filters and renames, is internal/servercopy's
// TestCopyRenameAndFilters; here, copy takes the plural spelling of the
// filter flags, as backup and restore do.
func TestCopyFilterFlagsPlural(t *testing.T) {
	t.Parallel()
	cmd, _, err := NewRoot("test").Find([]string{"copy"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags([]string{"--databases", "fid_a,fid_b", "--exclude-databases", "other", "--tables", "fid_a.t",
		"--exclude-tables", "fid_b.left_out"}); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string][]string{"database": {"fid_a", "fid_b"}, "exclude-database": {"other"},
		"table": {"fid_a.t"}, "exclude-table": {"fid_b.left_out"}} {
		if got, err := cmd.Flags().GetStringSlice(flag); err != nil || !slices.Equal(got, want) {
			t.Errorf("copy --%ss: --%s %q (%v), want %q", flag, flag, got, err, want)
		}
	}
}

// What copy refuses of its flags and option files, before anything
// changes: the same server as source and target when [backstream-copy]
// names them, --replicate with filters. The use case's own refusals are
// internal/servercopy's TestCopyRefusals.
func TestCopyRefusesFlagsAndOptionFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	journal := func(s *sandbox.Server) int {
		var n int
		s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'backstream_load'").Scan(&n)
		return n
	}
	// --from and --to from the command's group of an option file.
	cnf := filepath.Join(t.TempDir(), "copy.cnf")
	if err := os.WriteFile(cnf, []byte(fmt.Sprintf("[backstream-copy]\nfrom = %s\nto = 127.0.0.1:%d\nfrom-user = root\nto-user = root\n", src.Socket, src.Port)), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "copy", "--defaults-file", cnf); r.code != ExitFailure || !strings.Contains(r.err.Error(), "the same server") {
		t.Errorf("copy onto itself from [backstream-copy]: exit %d, %v; want a refusal", r.code, r.err)
	}
	if journal(src) != 0 {
		t.Error("a refused copy onto itself changed the server")
	}

	// Refused before any server is reached: were it not, the copy of a
	// server onto itself would be refused with another exit code.
	r := run(t, append([]string{"copy", "--replicate", "--primary-host", "127.0.0.1", "--primary-user", "repl", "--database", "sample"}, copyConn(src, src)...)...)
	if r.code != ExitUsage || !strings.Contains(r.err.Error(), "--database") {
		t.Errorf("--replicate with --database: exit %d, %v; want a usage error", r.code, r.err)
	}
}

// The masked copy is internal/servercopy's TestCopyMasked; here,
// --replicate with --mask is refused as a usage error before any server
// is reached: the replica would apply the source's writes unmasked (the
// use case refuses it: internal/servercopy's
// TestCopyRefusesReplicaOfAMaskedCopy; here, exit 2).
func TestCopyReplicateRefusesMask(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "mask.key")
	if err := os.WriteFile(keyFile, []byte("a key of more than sixteen bytes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nowhere := t.TempDir()
	r := run(t, "copy", "--replicate", "--primary-host", "127.0.0.1", "--primary-user", "repl", "--mask-key-file", keyFile,
		"--mask", "shop.customers.id=hash", "--mask", "shop.orders.customer_id=hash",
		"--mask", "shop.customers.email=email", "--mask", "shop.orders.email=email",
		"--from", filepath.Join(nowhere, "source.sock"), "--from-user", "root", "--to", filepath.Join(nowhere, "target.sock"), "--to-user", "root", "--no-defaults")
	if r.code != ExitUsage || !strings.Contains(r.err.Error(), "--replicate with --mask") {
		t.Errorf("copy --replicate --mask: exit %d, %v; want a usage error", r.code, r.err)
	}
}

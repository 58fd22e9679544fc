package cli

import (
	"context"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// The end-to-end tests of logical backups and loads are in
// internal/backup (logical_*_test.go) and internal/restorecase
// (load_*_test.go); here are what is the command's own: a restore killed
// as a process, and the flags' old names.

// A load killed mid-way refuses to start over by accident, then continues
// with --resume and ends with exact checksums; the journal is gone after.
func TestLogicalResumeAfterKill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2, BigTableMB: 40}); err != nil {
		t.Fatal(err)
	}
	want, err := sandbox.ChecksumTables(ctx, src.DB())
	if err != nil {
		t.Fatal(err)
	}
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--chunk-size", "128KiB", "--skip-users"}, sandboxConn(src)...)...).mustSucceed(t)

	dst := sandboxtest.Start(t, sandbox.Options{})
	bin := buildBinary(t)
	cmd := exec.Command(bin, append([]string{"restore", "--repo", repoDir, "--parallel", "2", "--progress", "none"}, sandboxConn(dst)...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	loaded := func() int {
		var n int
		dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM backstream_load.journal").Scan(&n)
		return n
	}
	for deadline := time.Now().Add(2 * time.Minute); loaded() < 20; {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the load did not get going")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	done := loaded()
	// The small tables are created with their indexes; versions before
	// that created every table without them and added them after the
	// load. A resumed load of a table such a version created must still
	// end with the table's every index.
	if _, err := dst.DB().ExecContext(ctx, "ALTER TABLE sample.small_01 DROP KEY k_name"); err != nil {
		t.Fatalf("the killed load had not created sample.small_01 with its indexes: %v", err)
	}

	r := run(t, append([]string{"restore", "--repo", repoDir}, sandboxConn(dst)...)...)
	if r.code == ExitOK || !strings.Contains(r.err.Error(), "--resume") {
		t.Fatalf("a second load over an interrupted one: exit %d, %v; want a refusal pointing to --resume", r.code, r.err)
	}
	r = run(t, append([]string{"restore", "--repo", repoDir, "--resume"}, sandboxConn(dst)...)...).mustSucceed(t)
	if !strings.Contains(r.stdout, "loaded before") {
		t.Errorf("resume printed %q, want it to say how many files were loaded before", r.stdout)
	}
	got, err := sandbox.ChecksumTables(ctx, dst.DB())
	if err != nil {
		t.Fatal(err)
	}
	usecasetest.CompareChecksums(t, got, want)
	srcDefs, err := sandboxtest.DescribeObjects(ctx, src.DB(), "sample")
	if err != nil {
		t.Fatal(err)
	}
	dstDefs, err := sandboxtest.DescribeObjects(ctx, dst.DB(), "sample")
	if err != nil {
		t.Fatal(err)
	}
	usecasetest.CompareDescriptions(t, dstDefs, srcDefs)
	var n int
	if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'backstream_load'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the load journal is still there after the load finished (%v)", err)
	}
	t.Logf("killed after %d journaled files", done)
}

// restore takes the plural names of the filter flags, which backup took
// first, as the singular ones: they choose the same load. (What each
// choice loads is TestLogicalFiltersAndRename, in internal/restorecase.)
func TestRestoreFilterOldNames(t *testing.T) {
	t.Parallel()
	choices := func(args ...string) any {
		t.Helper()
		var o restoreFlags
		f := pflag.NewFlagSet("restore", pflag.ContinueOnError)
		o.register(f)
		if err := f.Parse(args); err != nil {
			t.Fatalf("%s: %v", strings.Join(args, " "), err)
		}
		return o.l.load
	}
	for _, c := range []struct{ old, name string }{
		{"--tables", "--table"}, {"--databases", "--database"}, {"--exclude-tables", "--exclude-table"}, {"--exclude-databases", "--exclude-database"},
	} {
		got, want := choices(c.old, "a.log,b.t2"), choices(c.name, "a.log", c.name, "b.t2")
		if !reflect.DeepEqual(got, want) || reflect.DeepEqual(want, choices()) {
			t.Errorf("restore %s a.log,b.t2 chooses %+v; %s a.log %s b.t2 chooses %+v", c.old, got, c.name, c.name, want)
		}
	}
}

// Package demo shows backstream end to end on this machine: a throwaway
// server with sample data is backed up, restored and prepared into a second
// datadir, a second throwaway server starts on it, and every table's
// checksum is compared with the source's. It composes the same use cases
// the commands do; it knows nothing of flags.
package demo

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/storage/local"
)

// Options configure the demo.
type Options struct {
	Dir      string // working directory; "" means a temp dir, removed at the end
	BigMB    int    // size of the large sample table
	Parallel int
	Version  string
	Out      io.Writer
}

// Run runs the demo and returns an error if anything differs.
func Run(ctx context.Context, opt Options) error {
	out := opt.Out
	dir := opt.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "backstream-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	step := func(format string, a ...any) func() {
		start := time.Now()
		fmt.Fprintf(out, "==> "+format+"\n", a...)
		return func() { fmt.Fprintf(out, "    done in %s\n", time.Since(start).Round(10*time.Millisecond)) }
	}

	done := step("starting a sandbox MariaDB server and loading sample data (%d MB table, blobs with every byte value)", opt.BigMB)
	src, err := sandbox.Start(ctx, sandbox.Options{Dir: filepath.Join(dir, "source")})
	if err != nil {
		return err
	}
	defer src.Close()
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 4, BigTableMB: opt.BigMB, Blobs: true}); err != nil {
		return err
	}
	want, err := sandbox.ChecksumTables(ctx, src.DB())
	if err != nil {
		return err
	}
	done()

	b, err := local.New(filepath.Join(dir, "repo"))
	if err != nil {
		return err
	}
	r, err := repo.Init(ctx, b, repo.Options{})
	if err != nil {
		return err
	}
	c, err := codec.Parse("")
	if err != nil {
		return err
	}
	done = step("backstream backup --repo %s --parallel %d", b.Location(), opt.Parallel)
	m, err := physical.RunBackup(ctx, physical.BackupJob{
		Dest: r, Conn: mariadb.Config{Socket: src.Socket, User: "root", Protocol: mariadb.ProtocolSocket},
		Parallel: opt.Parallel, Codec: c, Version: opt.Version,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "    backup %s: %d streams, %d files, %d MiB -> %d MiB\n", m.ID, len(m.Streams), len(m.Files), m.Stats.RawBytes>>20, m.Stats.StoredBytes>>20)
	done()

	target := filepath.Join(dir, "restored")
	done = step("backstream restore %s --target-dir %s --prepare", m.ID, target)
	if err := restore.Datadir(ctx, restore.Job{
		Links: []restore.Link{{Manifest: m, Input: r.Input(m)}}, TargetDir: target, Owner: physical.DefaultOwner(),
		Options: restore.Options{Prepare: true},
	}); err != nil {
		return err
	}
	done()

	done = step("starting a second server on the restored datadir and comparing CHECKSUM TABLE")
	dst, err := sandbox.Start(ctx, sandbox.Options{Dir: filepath.Join(dir, "replica"), Datadir: target})
	if err != nil {
		return err
	}
	defer dst.Close()
	got, err := sandbox.ChecksumTables(ctx, dst.DB())
	if err != nil {
		return err
	}
	for _, table := range slices.Sorted(maps.Keys(want)) {
		if got[table] != want[table] {
			return fmt.Errorf("table %s: checksum %s after restore, %s in the source", table, got[table], want[table])
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("restored server has %d tables, the source %d", len(got), len(want))
	}
	done()
	fmt.Fprintf(out, "OK: all %d tables identical after backup, restore and prepare\n", len(want))
	return nil
}

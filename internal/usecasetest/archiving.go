package usecasetest

import (
	"context"
	"sync"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/sandbox"
)

// ArchiverOf is the archiver `binlog` makes of src's binary logs into r
// with the defaults a user gets (zstd, BLAKE3, the default flush
// interval, mariadb-binlog found by the server's version), encrypting as
// the repository asks; the test sets what else it asks for (AllowGap,
// Codec, FlushInterval, Log, Lag, ...) and runs it: once (RunOnce), or
// following (Run with follow) until its context ends, as `binlog
// --follow` does until SIGINT.
func ArchiverOf(t testing.TB, r Repo, src *sandbox.Server) *binlog.Archiver {
	t.Helper()
	c, err := codec.Parse(codec.Default)
	if err != nil {
		t.Fatal(err)
	}
	a := &binlog.Archiver{Repo: r.Open(t), Conn: Conn(src), Codec: c, Hash: archive.DefaultHash,
		FlushInterval: binlog.DefaultFlushInterval, Version: "test"}
	if a.Encryption, err = r.Access().Encryption(context.Background(), a.Repo); err != nil {
		t.Fatal(err)
	}
	return a
}

// Follow runs a in the background as `binlog --follow` does, until stop
// cancels its context as SIGINT cancels the command's; stop waits for it
// and returns what Run returned (nil: stopped cleanly, what it archived
// stays). A test that ends without calling stop stops it then.
func Follow(t testing.TB, a *binlog.Archiver) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, true) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// ListBinlogs is what `list --binlogs` reads of r: its Entries are what
// `list --binlogs --json` prints, its Overviews each server's window
// (what `list --binlogs --status --json` prints).
func ListBinlogs(t testing.TB, r Repo) inventory.Binlogs {
	t.Helper()
	b, err := inventory.ListBinlogs(context.Background(), r.Open(t))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ArchivedBinlogs is what `list --binlogs --json` prints of r, each entry
// as the index of a file: every file archived whole (of one whose
// manifest is damaged, its source and name), held only as segments, or
// missing.
func ArchivedBinlogs(t testing.TB, r Repo) []archive.BinlogFile {
	t.Helper()
	var out []archive.BinlogFile
	for _, e := range ListBinlogs(t, r).Entries() {
		out = append(out, *e.BinlogFile)
	}
	return out
}

// ArchiveBinlogs archives every closed binary log of src that r lacks, as
// `binlog` does, failing the test if it fails, and returns what it
// archived.
func ArchiveBinlogs(t testing.TB, r Repo, src *sandbox.Server) *binlog.Summary {
	t.Helper()
	return ArchiveBinlogsWith(t, r, src, nil)
}

package restoretest_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// forgeBackup writes a copy of backup id of r under a new id whose files
// went through tamper on the way, with every checksum (chunk CRCs, frame
// index, object and file digests) made to match the tampered bytes: what
// a bug in backstream's writer would leave, which verify cannot catch.
func forgeBackup(t *testing.T, r usecasetest.Repo, id string, tamper func(path string, data []byte) []byte) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	usecasetest.CatExtract(t, r, id, dir)

	rp := r.Open(t)
	m, err := rp.Resolve(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	c, err := codec.Parse(m.Codec)
	if err != nil {
		t.Fatal(err)
	}
	forged := *m
	forged.ID = backupid.New(time.Now().Add(time.Second))
	forged.Streams, forged.Files, forged.Meta = nil, nil, nil
	header := forged
	_, err = archive.WriteTo(ctx, rp, &header, func() (*archive.Manifest, error) {
		w, err := archive.NewWriter(ctx, archive.WriterOptions{Output: rp.Output(forged.ID, m.Hash), Streams: len(m.Streams), Codec: c, Hash: m.Hash})
		if err != nil {
			return nil, err
		}
		tampered, paths := false, []string{}
		for _, f := range m.Files {
			paths = append(paths, f.Path)
			data, err := os.ReadFile(filepath.Join(dir, f.Path))
			if err != nil {
				w.Abort(err)
				return nil, err
			}
			if out := tamper(f.Path, data); !bytes.Equal(out, data) {
				data, tampered = out, true
			}
			if err := w.AddFile(f.Path, bytes.NewReader(data), 1<<20); err != nil {
				w.Abort(err)
				return nil, err
			}
		}
		if !tampered {
			t.Fatalf("forgeBackup: tamper changed none of %q", paths)
		}
		res, err := w.Close()
		if err != nil {
			return nil, err
		}
		for _, o := range m.Meta {
			data, err := rp.ReadMeta(ctx, m, o.Name)
			if err != nil {
				return nil, err
			}
			obj, err := rp.PutMeta(ctx, forged.ID, o.Name, data, m.Hash)
			if err != nil {
				return nil, err
			}
			forged.Meta = append(forged.Meta, obj)
		}
		forged.Complete(res)
		return &forged, rp.Commit(ctx, &forged)
	})
	if err != nil {
		t.Fatal(err)
	}
	return forged.ID
}

// A good physical backup passes its restore test; a forged copy whose
// table file has damaged pages, with every checksum made to match, passes
// verify but fails the restore test naming the table.
func TestRestoreTestPhysical(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2, BigTableMB: 8}); err != nil {
		t.Fatal(err)
	}
	// A restart checkpoints the load: the backup's redo log then holds no
	// page of the tables, and prepare cannot repair the damage below by
	// rewriting those pages from it.
	if err := src.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	src = usecasetest.ServerOn(t, src.Datadir)
	r := usecasetest.NewLocalRepo(t)
	id := usecasetest.Backup(t, usecasetest.BackupOf(t, r, src)).Manifest.ID

	rep, err := usecasetest.RestoreTest(t, r, id)
	if err != nil || !rep.Passed || len(rep.Problems) > 0 {
		t.Fatalf("good backup: %v, report %+v", err, rep)
	}
	for _, name := range []string{"sample.big", "sample.small_01", "sample.small_02", "mysql.global_priv"} {
		if tb := usecasetest.TableOf(t, rep, name); tb.Check != "OK" || !tb.Passed {
			t.Fatalf("%s: %+v", name, tb)
		}
	}

	// Damage a byte in the body of every fourth page of the big table,
	// past the headers, where only InnoDB's own page checksum can see it.
	const page = 16 << 10
	forged := forgeBackup(t, r, id, func(path string, data []byte) []byte {
		// mariabackup names a table rebuilt shortly before the backup
		// (its DDL still in the redo log it copies) big.new; prepare
		// renames it.
		if path != "sample/big.ibd" && path != "sample/big.new" {
			return data
		}
		out := bytes.Clone(data)
		for p := 4; p < len(out)/page-1; p += 4 {
			out[p*page+page/2] ^= 0x5a
		}
		return out
	})
	if err := usecasetest.Verify(t, r, forged); err != nil {
		t.Fatalf("verify of the forged backup: %v", err)
	}
	rep, err = usecasetest.RestoreTest(t, r, forged)
	if rep == nil || !archive.IsCorrupt(err) || rep.Passed {
		t.Fatalf("damaged pages: %v (want corruption), report %+v", err, rep)
	}
	if tb := usecasetest.TableOf(t, rep, "sample.big"); tb.Passed {
		t.Fatalf("sample.big passed its check: %+v", tb)
	}
	if tb := usecasetest.TableOf(t, rep, "sample.small_01"); !tb.Passed {
		t.Fatalf("an intact table failed: %+v", tb)
	}
	// The text report prints each problem as a FAIL line: one of them is
	// the table's; the error the command exits with names it too.
	if !slices.ContainsFunc(rep.Problems, func(p string) bool { return strings.HasPrefix(p, "sample.big") }) {
		t.Fatalf("no problem is the table's: %q", rep.Problems)
	}
	if !strings.Contains(err.Error(), "sample.big") {
		t.Fatalf("the error does not name the table: %v", err)
	}
}

// A logical backup's restore test loads it into a sandbox and compares the
// row count and row sum of every table with what the dump recorded; a
// forged copy with one value changed in a data file (same length, same
// row count, every checksum matching) fails naming the table.
func TestRestoreTestLogical(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 3, Blobs: true}); err != nil {
		t.Fatal(err)
	}
	r := usecasetest.NewLocalRepo(t)
	id := usecasetest.Backup(t, usecasetest.LogicalBackupOf(t, r, src)).Manifest.ID

	rep, err := usecasetest.RestoreTest(t, r, id)
	if err != nil || !rep.Passed {
		t.Fatalf("good backup: %v, report %+v", err, rep)
	}
	for _, name := range []string{"sample.small_01", "sample.small_03", "sample.blobs"} {
		tb := usecasetest.TableOf(t, rep, name)
		if !tb.Passed || tb.Rows == nil || *tb.Rows == 0 || *tb.Rows != *tb.ExpectedRows || tb.RowSum == "" || tb.RowSum != tb.ExpectedRowSum {
			t.Fatalf("%s: %+v", name, tb)
		}
	}

	done := false
	forged := forgeBackup(t, r, id, func(path string, data []byte) []byte {
		if done || !strings.HasPrefix(path, "sample/small_02.") || !strings.HasSuffix(path, ".tsv") {
			return data
		}
		// One digit of the first row's second column (an integer) changes:
		// same length, same row count, same key.
		out := bytes.Clone(data)
		i := bytes.IndexByte(out, '\t') + 1
		if i == 0 || out[i] < '0' || out[i] > '9' {
			t.Fatalf("%s: unexpected first row %q", path, out[:min(len(out), 40)])
		}
		out[i] = '0' + (out[i]-'0'+1)%10
		done = true
		return out
	})
	if err := usecasetest.Verify(t, r, forged); err != nil {
		t.Fatalf("verify of the forged backup: %v", err)
	}
	rep, err = usecasetest.RestoreTest(t, r, forged)
	if rep == nil || !archive.IsCorrupt(err) || rep.Passed {
		t.Fatalf("changed row: %v (want corruption), report %+v", err, rep)
	}
	if tb := usecasetest.TableOf(t, rep, "sample.small_02"); tb.Passed || tb.RowSum == tb.ExpectedRowSum {
		t.Fatalf("sample.small_02 passed: %+v", tb)
	}
	if tb := usecasetest.TableOf(t, rep, "sample.small_01"); !tb.Passed {
		t.Fatalf("an intact table failed: %+v", tb)
	}
	if !strings.Contains(strings.Join(rep.Problems, "\n"), "sample.small_02: the rows differ") {
		t.Fatalf("the problems do not name the table: %q", rep.Problems)
	}
}

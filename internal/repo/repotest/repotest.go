// Package repotest makes repositories and backups for tests: a repository
// on a local directory, and backups stored through the real archive
// writer, so that use cases can be tested without a server. Only _test.go
// files import it; it never reaches the binary.
package repotest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/xbstream"
)

// New makes a repository in a new temporary directory.
func New(t testing.TB) *repo.Repo {
	t.Helper()
	b, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := repo.Init(context.Background(), b, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Backup describes a physical backup to store.
type Backup struct {
	ID     string            // required; its time is the backup's start
	Parent *archive.Manifest // the backup an incremental builds on
	Files  map[string]string // path -> content
	// Server is the manifest's server; Version defaults to 10.11.6.
	Server archive.Server
	// Finished is when it became complete; by default a minute after
	// its start.
	Finished time.Time
	// Tables is the manifest's table list.
	Tables []archive.Table
	// LastLSN, if set, is the manifest's last_lsn (to_lsn stays below).
	LastLSN uint64
	// Streams is how many streams it has (default 2), and Chunk the most
	// bytes of a file a chunk holds (default: a file is one chunk).
	Streams, Chunk int
}

// Store commits b to r through the archive writer (b.Streams zstd
// streams, or streams for the block store in a deduplicating repository) and
// returns its manifest. An incremental gets its chain, depth and LSNs
// from Parent, so that the chain checks pass.
func Store(t testing.TB, r *repo.Repo, b Backup) *archive.Manifest {
	t.Helper()
	ctx := context.Background()
	spec, storage := "zstd", ""
	if r.Dedup() {
		// The block store takes whole chunks, as a backup gives it.
		spec, storage = "none", archive.StorageDedup
	}
	c, err := codec.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	w, err := archive.NewWriter(ctx, archive.WriterOptions{Output: r.Output(b.ID, archive.DefaultHash), Streams: cmp.Or(b.Streams, 2), Codec: c})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range slices.Sorted(maps.Keys(b.Files)) {
		for _, ch := range chunksOf(p, []byte(b.Files[p]), b.Chunk) {
			raw, err := xbstream.AppendChunk(nil, &ch)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Add(&ch, raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	started, ok := backupid.Time(b.ID)
	if !ok {
		t.Fatalf("repotest: %q is not a backup id", b.ID)
	}
	m := &archive.Manifest{Format: archive.FormatVersion, ID: b.ID, Kind: archive.KindPhysical, Codec: c.String(),
		Hash: archive.DefaultHash, Streams: res.Streams, Files: res.Files, Barriers: res.Barriers, FileHash: res.FileHash,
		Started: started, Finished: b.Finished, Server: b.Server, Chain: b.ID, Tables: b.Tables, Storage: storage}
	if m.Finished.IsZero() {
		m.Finished = started.Add(time.Minute)
	}
	if m.Server.Version == "" {
		m.Server.Version = "10.11.6-MariaDB"
	}
	m.Positions.ToLSN = 1000 * uint64(started.Unix()%1000+1)
	if p := b.Parent; p != nil {
		m.Parent, m.Chain, m.Depth = p.ID, p.Chain, p.Depth+1
		m.Positions.FromLSN, m.Positions.ToLSN = p.Positions.ToLSN, p.Positions.ToLSN+1000
		if m.Server.Hostname == "" {
			m.Server = p.Server
		}
	}
	if b.LastLSN != 0 {
		m.Positions.ToLSN, m.Positions.LastLSN = min(m.Positions.ToLSN, b.LastLSN), b.LastLSN
	}
	for _, s := range res.Streams {
		m.Stats.StoredBytes += s.Size
	}
	if err := r.Commit(ctx, m); err != nil {
		t.Fatal(err)
	}
	return m
}

// RedoLog is a redo log as mariabackup copies it (ib_logfile0, MariaDB
// 10.8's format) whose log starts at LSN first and holds one mini-
// transaction: it ends at LSN first + 8.
func RedoLog(first uint64) string {
	log := make([]byte, 12288)
	binary.BigEndian.PutUint32(log, 0x50687973)
	binary.BigEndian.PutUint64(log[8:], first)
	recs := []byte{0x32, 0, 0}
	log = append(append(log, recs...), 1)
	return string(binary.BigEndian.AppendUint32(log, crc32.Checksum(recs, crc32.MakeTable(crc32.Castagnoli))))
}

// DamageManifest truncates the stored manifest of backup id to half its
// length, as a crash of the storage or a torn copy would.
func DamageManifest(t testing.TB, r *repo.Repo, id string) {
	t.Helper()
	name := repo.Dir(id) + "/" + repo.ManifestName
	data := Object(t, r, name)
	PutObject(t, r, name, data[:len(data)/2])
}

// Object is the stored object name of r.
func Object(t testing.TB, r *repo.Repo, name string) []byte {
	t.Helper()
	rc, err := r.Backend.Open(context.Background(), name, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// PutObject stores data as the object name of r.
func PutObject(t testing.TB, r *repo.Repo, name string, data []byte) {
	t.Helper()
	if _, err := r.Backend.Put(context.Background(), name, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

// StoreBinlog archives the binary log file name of source, served by
// server, whole and closed, as binlog does: a stream object, then the
// manifest. Its content is a short text.
func StoreBinlog(t testing.TB, r *repo.Repo, server archive.Server, source, name string) {
	t.Helper()
	ctx := context.Background()
	c, err := codec.Parse("zstd")
	if err != nil {
		t.Fatal(err)
	}
	content := "binary log " + name
	w, err := archive.NewWriter(ctx, archive.WriterOptions{Output: r.BinlogOutput(source, name, archive.DefaultHash),
		Streams: 1, Codec: c, Hash: archive.DefaultHash})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddFile(name, bytes.NewReader([]byte(content)), 1<<20); err != nil {
		t.Fatal(err)
	}
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	m := &archive.Manifest{Format: archive.FormatVersion, ID: name, Kind: archive.KindBinlog, Started: time.Now().UTC(),
		Server: server, Codec: c.String(), Hash: archive.DefaultHash,
		Binlog: &archive.BinlogFile{Source: source, Name: name, Size: int64(len(content)), Closed: true}}
	m.Complete(res)
	if err := r.CommitBinlog(ctx, m); err != nil {
		t.Fatal(err)
	}
}

// chunksOf is file p's content as payload chunks of at most size bytes
// (one chunk if size is 0), then its end.
func chunksOf(p string, content []byte, size int) []xbstream.Chunk {
	if size <= 0 {
		size = max(len(content), 1)
	}
	var out []xbstream.Chunk
	for off := 0; ; {
		n := min(size, len(content)-off)
		out = append(out, xbstream.Chunk{Type: xbstream.TypePayload, Path: p, Offset: uint64(off), Payload: content[off : off+n]})
		if off += n; off >= len(content) {
			return append(out, xbstream.Chunk{Type: xbstream.TypeEOF, Path: p})
		}
	}
}

package backup

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// request is a backup of s into r, two streams, zstd.
func request(t *testing.T, s *sandbox.Server, r *repo.Repo) Request {
	t.Helper()
	c, err := codec.Parse("zstd")
	if err != nil {
		t.Fatal(err)
	}
	return Request{Repo: r, Conn: mariadb.Config{Socket: s.Socket, User: "root"}, Parallel: 2, Codec: c, Version: "test"}
}

func listed(t *testing.T, r *repo.Repo) []*archive.Manifest {
	t.Helper()
	ms, err := r.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// The engine is the request's: a physical full, an incremental on it, and
// a logical dump of one database, each committed with what its kind
// holds, and the Result describing what was made.
func TestRunChoosesTheEngineFromTheRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	r := repotest.New(t)

	var why []string
	req := request(t, src, r)
	req.Physical.Incremental = &Incremental{FullBecause: func(w string) { why = append(why, w) }}
	full, err := Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if m := full.Manifest; m.Kind != archive.KindPhysical || m.Parent != "" || len(m.Streams) != 2 || m.Positions.ToLSN == 0 || len(why) != 1 {
		t.Errorf("first incremental request: %+v (full because %q); want a physical full, as the repository holds nothing", m, why)
	}

	inc, err := Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if m := inc.Manifest; m.Kind != archive.KindPhysical || m.Parent != full.Manifest.ID || m.Depth != 1 || m.Chain != full.Manifest.ID ||
		m.Positions.FromLSN != full.Manifest.Positions.LastLSN {
		t.Errorf("incremental: parent %q depth %d chain %q from_lsn %d; want on %s at depth 1 from its last_lsn %d",
			m.Parent, m.Depth, m.Chain, m.Positions.FromLSN, full.Manifest.ID, full.Manifest.Positions.LastLSN)
	}

	req = request(t, src, r)
	req.Logical = true
	req.Dump = DumpOptions{Filter: schema.Filter{Databases: []string{"sample"}}, Skip: schema.Skip{Users: true}}
	dump, err := Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	m := dump.Manifest
	if m.Kind != archive.KindLogical || len(m.Databases) != 1 || m.Databases[0].Name != "sample" || m.Positions.GTID == "" {
		t.Fatalf("logical request made %+v; want a logical dump of sample with its GTID position", m)
	}
	if dump.Tables != m.Databases[0].Tables || dump.Tables < 2 || dump.Rows != m.Databases[0].Rows || dump.Rows == 0 {
		t.Errorf("result says %d tables, %d rows; the manifest %d, %d", dump.Tables, dump.Rows, m.Databases[0].Tables, m.Databases[0].Rows)
	}
	if ms := listed(t, r); len(ms) != 3 {
		t.Errorf("%d backups listed, want 3", len(ms))
	}
}

// An incremental on a backup of another server is refused, naming both;
// asked for without a parent, it is a full one when the repository holds
// only another server's backups. (Moved from the cli's tests: the flags
// only map onto Incremental.)
func TestIncrementalParentFromAnotherServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := sandboxtest.Start(t, sandbox.Options{})
	b := sandboxtest.Start(t, sandbox.Options{})
	r := repotest.New(t)
	other, err := Run(ctx, request(t, a, r))
	if err != nil {
		t.Fatal(err)
	}

	req := request(t, b, r)
	req.Physical.Incremental = &Incremental{}
	res, err := Run(ctx, req)
	if err != nil || res.Manifest.Parent != "" {
		t.Fatalf("incremental with only another server's backup: %+v, %v; want a full backup", res, err)
	}
	req.Physical.Incremental = &Incremental{Parent: other.Manifest.ID}
	_, err = Run(ctx, req)
	if err == nil || !strings.Contains(err.Error(), other.Manifest.ID) || !strings.Contains(err.Error(), "not of this one") {
		t.Errorf("incremental on another server's backup: %v", err)
	}
	if n := len(listed(t, r)); n != 2 {
		t.Errorf("%d backups after a refused incremental, want 2", n)
	}
}

// Check refuses each engine's own options given to the other engine, and
// says so as a refusal.
func TestRequestCheck(t *testing.T) {
	inc := &Incremental{}
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{Parallel: 1}, ""},
		{Request{Parallel: 1, Physical: PhysicalOptions{Incremental: inc, Checkpoint: true, MaxIO: 5}}, ""},
		{Request{Parallel: 1, Logical: true, Given: Given{Mask: true, Dump: "database"}}, ""},
		{Request{}, "--parallel must be at least 1"},
		{Request{Parallel: 2, Memory: archive.NewMemory(16 << 20)}, ""},
		{Request{Parallel: 3, Memory: archive.NewMemory(16 << 20)}, "--memory is too small for --parallel 3: a backup's frames need at least 20 MiB (one being built for each stream, and two more) and get 16 MiB"},
		{Request{Parallel: 1, Physical: PhysicalOptions{MaxIO: -1}}, "--max-io -1: want"},
		{Request{Parallel: 1, Logical: true, Given: Given{MaxIO: true}}, "--max-io is mariabackup's I/O limit"},
		{Request{Parallel: 1, Logical: true, Physical: PhysicalOptions{Checkpoint: true}}, "--checkpoint is for physical backups"},
		{Request{Parallel: 1, Given: Given{Mask: true}}, "--mask needs --logical"},
		{Request{Parallel: 1, Given: Given{Dump: "chunk-size"}}, "--chunk-size needs --logical"},
		{Request{Parallel: 1, Logical: true, Physical: PhysicalOptions{Incremental: inc}}, "--incremental is for physical backups"},
		{Request{Parallel: 1, Given: Given{Parent: "max-chain"}}, "--max-chain needs --incremental"},
	} {
		err := c.req.Check()
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.req, err)
			}
			continue
		}
		var r interface{ Refused() bool }
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &r) || !r.Refused() {
			t.Errorf("%+v: got %v, want a refusal with %q", c.req, err, c.want)
		}
	}
}

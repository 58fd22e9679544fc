package s3

import (
	"bytes"
	"io"
	"math"
	"testing"
)

// TestRequestsCounted checks each operation's requests, by billing class,
// against a real MinIO: what docs/benchmarks.md's S3 costs are made of.
func TestRequestsCounted(t *testing.T) {
	srv := minioForTest(t)
	var reqs Requests
	b := srv.newBackend(t, Config{Requests: &reqs, PartSize: MinPartSize})
	ctx := t.Context()
	if c := reqs.Counts(); c != (RequestCounts{Read: 1}) {
		t.Fatalf("New: %+v, want one read (the bucket's HEAD)", c)
	}
	step := func(what string, want RequestCounts, op func() error) {
		t.Helper()
		before := reqs.Counts()
		if err := op(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		after := reqs.Counts()
		got := RequestCounts{Write: after.Write - before.Write, Read: after.Read - before.Read, Free: after.Free - before.Free}
		if got != want {
			t.Errorf("%s: %+v, want %+v", what, got, want)
		}
	}
	step("a small Put", RequestCounts{Write: 1}, func() error {
		_, err := b.Put(ctx, "small", bytes.NewReader([]byte("hello")))
		return err
	})
	// Three parts: start (POST), three part PUTs, complete (POST).
	step("a Put of three parts", RequestCounts{Write: 5}, func() error {
		_, err := b.Put(ctx, "big", bytes.NewReader(patterned(1, 2*MinPartSize+1)))
		return err
	})
	step("a Stat", RequestCounts{Read: 1}, func() error {
		_, err := b.Stat(ctx, "small")
		return err
	})
	step("a List", RequestCounts{Write: 1}, func() error {
		infos, err := b.List(ctx, "")
		if err == nil && len(infos) != 2 {
			t.Errorf("List: %d objects, want 2", len(infos))
		}
		return err
	})
	step("a ranged read", RequestCounts{Read: 1}, func() error {
		r, err := b.Open(ctx, "big", MinPartSize, 10)
		if err != nil {
			return err
		}
		defer r.Close()
		got, err := io.ReadAll(r)
		if err == nil && !bytes.Equal(got, patterned(1, 2*MinPartSize+1)[MinPartSize:MinPartSize+10]) {
			t.Errorf("ranged read: wrong bytes")
		}
		return err
	})
	step("a Delete", RequestCounts{Free: 1}, func() error { return b.Delete(ctx, "small") })

	// New's HEAD and the steps: 7 writes ($0.000035), 3 reads ($0.0000012).
	c := reqs.Counts()
	if want := (RequestCounts{Write: 7, Read: 3, Free: 1}); c != want || c.Total() != 11 || math.Abs(c.Cost()-0.0000362) > 1e-12 {
		t.Errorf("in all %+v (total %d, $%g), want %+v (11, $0.0000362)", c, c.Total(), c.Cost(), want)
	}
	var none *Requests
	if none.Counts() != (RequestCounts{}) {
		t.Error("a nil Requests counted something")
	}
}

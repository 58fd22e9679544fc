package dedup_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/dedup"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/xbstream"
)

// pauseAfterIndex holds the first Put of an index object, once it
// returned, until the test lets it go.
type pauseAfterIndex struct {
	storage.Backend
	indexed chan string   // the index object stored
	resume  chan struct{} // closed by the test
}

func (p *pauseAfterIndex) Unwrap() storage.Backend { return p.Backend }

func (p *pauseAfterIndex) Put(ctx context.Context, name string, r io.Reader) (int64, error) {
	n, err := p.Backend.Put(ctx, name, r)
	if err == nil && strings.HasPrefix(name, "dedup/index/") {
		select {
		case p.indexed <- name:
			<-p.resume
		default:
		}
	}
	return n, err
}

// A backup's packs are made durable all at once, before the first index
// object that names them is stored (storage.DeferSync), not each on its
// own. The power cut right after a backup stored its first index object
// loses what the backup wrote after, never a block that index object
// names: the next backup of the same files takes those blocks as stored,
// and restores to its files.
func TestPowerCutKeepsEveryIndexedPack(t *testing.T) {
	defer dedup.SetPackTarget(1 << 20)()
	defer dedup.SetIndexPartBlocks(40)() // an index object each 2.5 MiB of new blocks
	pc := testkit.NewPowerCut(t, 256<<20)
	ctx := context.Background()
	b, err := local.New(pc.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := dedup.Init(ctx, b); err != nil {
		t.Fatal(err)
	}
	pause := &pauseAfterIndex{Backend: b, indexed: make(chan string), resume: make(chan struct{})}
	s, err := dedup.Open(ctx, pause)
	if err != nil {
		t.Fatal(err)
	}
	fs := files{"db/t.ibd": random(24 << 20), "db/u.ibd": random(3 << 20)}
	c, err := codec.Parse("none")
	if err != nil {
		t.Fatal(err)
	}
	w, err := archive.NewWriter(ctx, archive.WriterOptions{
		Output: dedup.NewOutput(s, "backups/cut", archive.DefaultHash), Streams: 1, Codec: c, FrameSize: 1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	raws := chunks(t, fs, 300<<10)
	failed := make(chan error, 1)
	go func() {
		err := func() error {
			for _, raw := range raws {
				ch, _, err := xbstream.DecodeChunk(raw)
				if err != nil {
					return err
				}
				if err := w.Add(&ch, raw); err != nil {
					return err
				}
			}
			_, err := w.Close()
			return err
		}()
		if err != nil {
			w.Abort(err)
		}
		failed <- err
	}()
	var name string
	select {
	case name = <-pause.indexed:
	case err := <-failed:
		t.Fatalf("the backup ended (%v) before it stored an index object: the test proves nothing", err)
	}
	pc.Cut()
	close(pause.resume)
	if err := <-failed; err == nil {
		t.Fatal("a backup went on to succeed on a file system whose power was cut")
	}
	b.Close()
	pc.Recover()

	b, err = local.New(pc.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err = dedup.Open(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stat(ctx, name); err != nil {
		t.Fatalf("the index object stored before the cut: %v", err)
	}
	if missing, err := s.MissingPacks(ctx); err != nil || len(missing) > 0 {
		t.Fatalf("after the power cut the index objects name packs the store lacks: %v (%v)", missing, err)
	}
	m := backup(t, s, "next", fs)
	got, err := restore(s, m)
	if err != nil {
		t.Fatalf("the backup after the power cut, which took the blocks indexed before it as stored: %v", err)
	}
	for p, want := range fs {
		if !bytes.Equal(got[p], want) {
			t.Errorf("%s restored differs from the backup's", p)
		}
	}
}

package archive

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/backstream/backstream/internal/xbstream"
)

// verifiedSink is an eventSink that also records, among the chunks, the
// files Read reports verified, so that a test sees a report come after
// the chunk that ended its file.
type verifiedSink struct{ eventSink }

func (s *verifiedSink) verified(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, "verified "+p)
}

func (s *verifiedSink) reported() []string {
	var out []string
	for _, e := range s.events {
		if p, ok := bytes.CutPrefix([]byte(e), []byte("verified ")); ok {
			out = append(out, string(p))
		}
	}
	slices.Sort(out)
	return out
}

func TestVerifiedReportsEachFileAfterItsEnd(t *testing.T) {
	fx := writeBackup(t, "zstd", 3)
	var sink verifiedSink
	err := Read(context.Background(), ReadOptions{Input: BackendInput{Backend: fx.backend, Dir: "backups/x"}, Manifest: fx.m,
		Sink: &sink, Verified: sink.verified})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range fx.files {
		want = append(want, f.path)
	}
	slices.Sort(want)
	if got := sink.reported(); !slices.Equal(got, want) {
		t.Fatalf("verified %v, want every file %v", got, want)
	}
	// Each report follows its file's end chunk, which follows its payload.
	ended := map[string]bool{}
	for _, e := range sink.events {
		switch {
		case e[0] == 'E':
			ended[e[2:]] = true
		case bytes.HasPrefix([]byte(e), []byte("verified ")):
			if p := e[len("verified "):]; !ended[p] {
				t.Errorf("%s reported verified before its end chunk reached the sink", p)
			}
		}
	}
	// A partial read reports only the files it delivers.
	sink = verifiedSink{}
	one := fx.files[3].path
	if err := Read(context.Background(), ReadOptions{Input: BackendInput{Backend: fx.backend, Dir: "backups/x"}, Manifest: fx.m,
		Sink: &sink, Verified: sink.verified, Only: func(p string) bool { return p == one }}); err != nil {
		t.Fatal(err)
	}
	if got := sink.reported(); !slices.Equal(got, []string{one}) {
		t.Errorf("a read of %s alone verified %v", one, got)
	}
}

func TestVerifiedNeverReportsWhatDiffersFromTheManifest(t *testing.T) {
	t.Run("manifest record differs", func(t *testing.T) {
		fx := writeBackup(t, "zstd", 2)
		// A manifest whose record of one file does not match its stream
		// fails the read at the stream's end; until then, that file must
		// not be reported.
		bad := fx.files[2].path
		for i := range fx.m.Files {
			if fx.m.Files[i].Path == bad {
				fx.m.Files[i].Digest = fx.m.Files[(i+1)%len(fx.m.Files)].Digest
			}
		}
		var sink verifiedSink
		err := Read(context.Background(), ReadOptions{Input: BackendInput{Backend: fx.backend, Dir: "backups/x"}, Manifest: fx.m,
			Sink: &sink, Verified: sink.verified})
		if err == nil || !IsCorrupt(err) {
			t.Fatalf("read of a manifest with a wrong digest: %v, want a corruption", err)
		}
		if slices.Contains(sink.reported(), bad) {
			t.Errorf("%s reported verified against a digest it does not have", bad)
		}
	})
	t.Run("renaming stream", func(t *testing.T) {
		b, c, w, add := chunkWriter(t, 1, 64)
		add(xbstream.Chunk{Type: xbstream.TypePayload, Path: "a/kept", Payload: bytes.Repeat([]byte{2}, 100)})
		add(xbstream.Chunk{Type: xbstream.TypeEOF, Path: "a/kept"})
		add(xbstream.Chunk{Type: xbstream.TypePayload, Path: "a/old", Payload: bytes.Repeat([]byte{1}, 100)})
		add(xbstream.Chunk{Type: xbstream.TypeEOF, Path: "a/old"})
		add(xbstream.Chunk{Type: xbstream.TypeRename, Path: "a/old", NewPath: "a/new"})
		res, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		m := &Manifest{Format: FormatVersion, ID: "x", Kind: KindPhysical, Codec: c.String(), Hash: DefaultHash, Streams: res.Streams, Files: res.Files}
		var sink verifiedSink
		if err := Read(context.Background(), ReadOptions{Input: BackendInput{Backend: b, Dir: "backups/x"}, Manifest: m,
			Sink: &sink, Verified: sink.verified}); err != nil {
			t.Fatal(err)
		}
		// a/kept never moved, but its stream did: a file's history there
		// spans more than its chunks, so nothing is reported.
		if got := sink.reported(); len(got) != 0 {
			t.Errorf("a stream that renamed a path verified %v", got)
		}
	})
	t.Run("written out of order", func(t *testing.T) {
		b, c, w, add := chunkWriter(t, 1, 64)
		add(xbstream.Chunk{Type: xbstream.TypePayload, Path: "seq", Payload: bytes.Repeat([]byte{3}, 100)})
		add(xbstream.Chunk{Type: xbstream.TypeEOF, Path: "seq"})
		add(xbstream.Chunk{Type: xbstream.TypePayload, Path: "holes", Offset: 0, Payload: bytes.Repeat([]byte{4}, 10)})
		add(xbstream.Chunk{Type: xbstream.TypeSeek, Path: "holes", Offset: 100})
		add(xbstream.Chunk{Type: xbstream.TypePayload, Path: "holes", Offset: 100, Payload: bytes.Repeat([]byte{5}, 10)})
		add(xbstream.Chunk{Type: xbstream.TypeEOF, Path: "holes"})
		res, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		m := &Manifest{Format: FormatVersion, ID: "x", Kind: KindPhysical, Codec: c.String(), Hash: DefaultHash, Streams: res.Streams, Files: res.Files}
		var sink verifiedSink
		if err := Read(context.Background(), ReadOptions{Input: BackendInput{Backend: b, Dir: "backups/x"}, Manifest: m,
			Sink: &sink, Verified: sink.verified}); err != nil {
			t.Fatal(err)
		}
		// A file with a seek has no digest: only its size is checked.
		if got := sink.reported(); !slices.Equal(got, []string{"seq"}) {
			t.Errorf("verified %v, want only the file written front to back", got)
		}
	})
}

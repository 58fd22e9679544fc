package archive

import (
	"bufio"
	"context"
	"io"
	"sync"

	"github.com/backstream/backstream/internal/xbstream"
)

// WriteStream reads the backup opt names (its Sink is set here) and
// writes it to w as one xbstream, as mbstream -x takes it: what cat
// prints.
func WriteStream(ctx context.Context, opt ReadOptions, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	opt.Sink = &streamSink{w: xbstream.NewWriter(bw)}
	if err := Read(ctx, opt); err != nil {
		return err
	}
	return bw.Flush()
}

// streamSink writes every chunk to one xbstream. Chunks from different
// streams interleave, which xbstream allows: each chunk names its file.
type streamSink struct {
	mu sync.Mutex
	w  *xbstream.Writer
}

func (s *streamSink) Chunk(c *xbstream.Chunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.WriteChunk(c)
}

package cli

import (
	"bufio"
	"fmt"
	"os"
	"sync"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/xbstream"
)

// xbstreamSink writes every chunk to one xbstream. Chunks from different
// streams interleave, which xbstream allows: each chunk names its file.
type xbstreamSink struct {
	mu sync.Mutex
	w  *xbstream.Writer
}

func (s *xbstreamSink) Chunk(c *xbstream.Chunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.WriteChunk(c)
}

func newCatCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use: "cat",
		RunE: func(cmd *cobra.Command, args []string) error {
			if term.IsTerminal(int(os.Stdout.Fd())) {
				return usagef("refusing to write a binary stream to a terminal; pipe it into mbstream -x or a file")
			}
			r, m, ctx, release, err := g.resolveLocked(cmd.Context(), args, "", repo.OpCat)
			if err != nil {
				return err
			}
			defer release()
			bw := bufio.NewWriterSize(g.stdout, 1<<20)
			err = archive.Read(ctx, archive.ReadOptions{
				Input: r.Input(m), Manifest: m, Sink: &xbstreamSink{w: xbstream.NewWriter(bw)}, Memory: g.mem,
			})
			if err == nil {
				err = bw.Flush()
			}
			if err != nil {
				return fmt.Errorf("backup %s: %w", m.ID, err)
			}
			return nil
		},
	}
	return cmd
}

package progress

import (
	"io"
	"os"
	"sync"
)

// Serialised makes w safe for the writes of several goroutines: a
// tracker's lines and an operation's callbacks (a restore naming its
// target, a receiver refusing a peer) reach stderr at the same time. A
// file is safe as it is, one write a system call, and is returned as it
// is, so that Start can tell a terminal.
func Serialised(w io.Writer) io.Writer {
	if _, ok := w.(*os.File); ok {
		return w
	}
	return &syncWriter{w: w}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

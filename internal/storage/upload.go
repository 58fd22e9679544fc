package storage

import (
	"context"
	"errors"
	"io"
)

// Upload is a Put whose data is written as it comes: Write hands bytes to
// the backend's Put, which runs in its own goroutine, and Close ends the
// data and waits for the Put, so that what Put does once it has read
// everything (a local backend's fsync and rename, an object store's last
// request) can be waited for later than the data was written.
type Upload struct {
	pw    *io.PipeWriter
	done  chan putResult
	ended bool
	res   putResult
}

type putResult struct {
	n   int64
	err error
}

// errPutReturned ends the pipe to a Put that returned before its data did.
var errPutReturned = errors.New("backend stopped reading before the stream ended")

// StartUpload starts a Put of object name in b, fed by Write.
func StartUpload(ctx context.Context, b Backend, name string) *Upload {
	pr, pw := io.Pipe()
	u := &Upload{pw: pw, done: make(chan putResult, 1)}
	go func() {
		n, err := b.Put(ctx, name, pr)
		closeErr := err
		if closeErr == nil {
			closeErr = errPutReturned
		}
		pr.CloseWithError(closeErr)
		u.done <- putResult{n, err}
	}()
	return u
}

// Write hands p to the Put, waiting until it has taken it.
func (u *Upload) Write(p []byte) (int, error) { return u.pw.Write(p) }

// Close ends the data and waits for the Put: the bytes it took and its
// error. It may be called again, and after Abort.
func (u *Upload) Close() (int64, error) {
	u.pw.Close()
	return u.wait()
}

// Abort ends the data with cause, so that the Put makes nothing visible,
// and waits for it.
func (u *Upload) Abort(cause error) {
	u.pw.CloseWithError(cause)
	u.wait()
}

func (u *Upload) wait() (int64, error) {
	if !u.ended {
		u.ended = true
		u.res = <-u.done
	}
	return u.res.n, u.res.err
}

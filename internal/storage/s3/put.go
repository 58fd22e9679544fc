package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/backstream/backstream/internal/recycle"
	"github.com/backstream/backstream/internal/storage"
)

// Timing of the requests that end an upload: completing may take the
// server a while for many parts (AWS keeps the connection alive with
// whitespace meanwhile, which the watchdog cannot see), and an abort after
// a failure should not hold the caller long.
const (
	completeStall = 10 * time.Minute
	abortWindow   = 30 * time.Second

	// smallObject is what Put reads before it commits a whole part
	// buffer; it must stay below MinPartSize.
	smallObject = 1 << 20
)

// partSizeAt returns the size of part n (0-based) of an upload whose first
// part size is first. The schedule keeps small streams cheap in memory and
// still fits S3's largest object (5 TiB) into its 10,000 parts:
//
//   - parts 0-999 are first bytes, and the size doubles every 1000 parts
//     after that (first << n/1000), capped at S3's 5 GiB part limit;
//   - parts 9000-9999 are 5 GiB whatever first is.
//
// With the default 16 MiB: the first 15.6 GiB go in 16 MiB parts, the
// next 31 GiB in 32 MiB parts, and so on; 10,000 parts hold 7.8 TiB. With
// the 5 MiB minimum, 9000 parts hold 2.4 TiB and the last 1000 another
// 4.9 TiB.
func partSizeAt(first int64, n int) int64 {
	if n >= 9000 {
		return MaxPartSize
	}
	s := first << (n / 1000)
	if s > MaxPartSize || s <= 0 {
		return MaxPartSize
	}
	return s
}

// Put stores everything read from r under name.
//
// Input shorter than one part goes up in a single PUT. Longer input is a
// multipart upload: parts are read into buffers (so a retry re-sends the
// same bytes, and the caller's reader is read exactly once) and up to
// PartConcurrency parts of this Put upload at once. Memory: each Put owns
// the one buffer it is filling; parts being uploaded, of all Puts of the
// Backend together, hold at most UploadMemory bytes (a part bigger than
// that uploads alone). So the peak is about
//
//	concurrent Puts x current part size + UploadMemory
//
// 8 streams with the defaults: 8 x 16 MiB + 256 MiB = 384 MiB, growing
// with the part size only for streams beyond 15.6 GiB. Keeping each Put's
// filling buffer out of the shared budget means a Put waiting for input
// (as a fan-out writer's streams do in turn) never starves another Put.
//
// On any failure, including a cancelled ctx or an error from r, the
// multipart upload is aborted (under a fresh, short context) so no parts
// are left behind, and the old object, if any, is untouched.
func (b *Backend) Put(ctx context.Context, name string, r io.Reader) (int64, error) {
	if err := storage.CheckName(name); err != nil {
		return 0, err
	}
	desc := b.desc(name)
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("writing %s: %w", desc, err)
	}
	// Most objects of a repository are small (manifests, indexes, locks):
	// read a little first and take a whole part buffer only when the
	// input turns out to be larger.
	buf := b.getBuf(smallObject)
	n, err := fill(ctx, r, buf)
	if err == nil {
		part := b.getBuf(partSizeAt(b.partSize, 0))
		copy(part, buf)
		b.putBuf(buf)
		buf = part
		var m int
		m, err = fill(ctx, r, buf[n:])
		n += m
	}
	switch {
	case err == io.EOF:
		defer b.putBuf(buf)
		return int64(n), b.putSingle(ctx, name, buf[:n])
	case err != nil:
		b.putBuf(buf)
		return int64(n), b.inputError(ctx, desc, err)
	}
	return b.putMultipart(ctx, name, r, buf)
}

// inputError words a failure of fill: the caller's context or reader.
func (b *Backend) inputError(ctx context.Context, desc string, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("writing %s: %w", desc, err)
	}
	return fmt.Errorf("writing %s: reading its input: %w", desc, err)
}

// fill reads into buf until it is full (nil error), the input ends
// (io.EOF, with n possibly short) or fails, checking ctx between reads
// because a reader need not honour it.
func fill(ctx context.Context, r io.Reader, buf []byte) (int, error) {
	n, empty := 0, 0
	for n < len(buf) {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
		if m == 0 {
			if empty++; empty > 100 {
				return n, io.ErrNoProgress
			}
		}
	}
	return n, nil
}

// kickReader tells the watchdog each time the HTTP client takes bytes of
// a request body: an upload that stops taking them has stalled.
type kickReader struct {
	r    io.Reader
	kick func()
}

func (k *kickReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	k.kick()
	return n, err
}

func (b *Backend) putSingle(ctx context.Context, name string, data []byte) error {
	return b.retry(ctx, "writing "+b.desc(name), func(ctx context.Context, kick func()) error {
		_, err := b.core.PutObject(ctx, b.bucket, b.key(name), &kickReader{r: bytes.NewReader(data), kick: kick},
			int64(len(data)), "", "", minio.PutObjectOptions{})
		return err
	})
}

func (b *Backend) putMultipart(ctx context.Context, name string, r io.Reader, buf []byte) (int64, error) {
	desc, key := b.desc(name), b.key(name)
	var uploadID string
	err := b.retry(ctx, "writing "+desc+": starting multipart upload", func(ctx context.Context, _ func()) error {
		var err error
		uploadID, err = b.core.NewMultipartUpload(ctx, b.bucket, key, minio.PutObjectOptions{})
		return err
	})
	if err != nil {
		b.putBuf(buf)
		return 0, err
	}

	uctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(uctx)
	var (
		mu    sync.Mutex
		parts []minio.CompletePart
		inErr error // of the caller's reader or a too large input
		total int64
		sem   = make(chan struct{}, b.concurrency)
	)
	n, last := len(buf), false
	for partNo := 1; ; partNo++ {
		data := buf[:n]
		total += int64(n)
		weight := min(int64(len(buf)), b.memLimit)
		if err := b.mem.Acquire(gctx, weight); err != nil {
			b.putBuf(buf)
			break
		}
		acquired := false
		select {
		case sem <- struct{}{}:
			acquired = true
		case <-gctx.Done():
		}
		if !acquired {
			b.mem.Release(weight)
			b.putBuf(buf)
			break
		}
		pbuf := buf
		g.Go(func() error {
			defer func() {
				<-sem
				b.mem.Release(weight)
				b.putBuf(pbuf)
			}()
			part, err := b.uploadPart(gctx, desc, key, uploadID, partNo, data)
			if err != nil {
				return err
			}
			mu.Lock()
			parts = append(parts, part)
			mu.Unlock()
			return nil
		})
		if last {
			break
		}
		if partNo == MaxParts {
			var one [1]byte
			if m, err := fill(gctx, r, one[:]); m > 0 || (err != nil && err != io.EOF) {
				inErr = fmt.Errorf("writing %s: input exceeds %d parts, the most S3 allows in one object", desc, MaxParts)
				if m == 0 {
					inErr = err
				}
				cancel()
			}
			break
		}
		buf = b.getBuf(partSizeAt(b.partSize, partNo))
		var err error
		n, err = fill(gctx, r, buf)
		if err == io.EOF {
			if n == 0 {
				b.putBuf(buf)
				break
			}
			last = true
			continue
		}
		if err != nil {
			b.putBuf(buf)
			if ctx.Err() != nil || gctx.Err() == nil {
				inErr = err
				cancel()
			}
			break
		}
	}
	werr := g.Wait()
	var fail error
	switch {
	case ctx.Err() != nil:
		fail = fmt.Errorf("writing %s: %w", desc, ctx.Err())
	case inErr != nil:
		fail = b.inputError(ctx, desc, inErr)
	case werr != nil:
		fail = werr
	}
	if fail != nil {
		return total, b.abort(ctx, desc, key, uploadID, fail)
	}

	slices.SortFunc(parts, func(x, y minio.CompletePart) int { return x.PartNumber - y.PartNumber })
	attempts := 0
	err = b.retryWith(ctx, b.window, max(b.stall, completeStall), "writing "+desc+": completing multipart upload", func(ctx context.Context, _ func()) error {
		attempts++
		_, err := b.core.CompleteMultipartUpload(ctx, b.bucket, key, uploadID, parts, minio.PutObjectOptions{})
		var er minio.ErrorResponse
		if err != nil && attempts > 1 && errors.As(err, &er) && er.Code == "NoSuchUpload" {
			// An earlier attempt may have completed the upload and lost
			// the answer: the object's ETag tells whether it is ours.
			if want := multipartETag(parts); want != "" {
				info, serr := b.core.StatObject(ctx, b.bucket, key, minio.StatObjectOptions{})
				if serr == nil && strings.Trim(info.ETag, `"`) == want {
					return nil
				}
			}
		}
		return err
	})
	if err != nil {
		return total, b.abort(ctx, desc, key, uploadID, err)
	}
	return total, nil
}

func (b *Backend) uploadPart(ctx context.Context, desc, key, uploadID string, partNo int, data []byte) (minio.CompletePart, error) {
	var part minio.ObjectPart
	err := b.retry(ctx, fmt.Sprintf("writing %s: part %d", desc, partNo), func(ctx context.Context, kick func()) error {
		var err error
		part, err = b.core.PutObjectPart(ctx, b.bucket, key, uploadID, partNo,
			&kickReader{r: bytes.NewReader(data), kick: kick}, int64(len(data)), minio.PutObjectPartOptions{})
		return err
	})
	return minio.CompletePart{PartNumber: partNo, ETag: part.ETag}, err
}

// abort removes the parts of a failed upload and returns cause, noting
// when the abort failed too (the parts then wait for a lifecycle rule or
// a prune).
func (b *Backend) abort(ctx context.Context, desc, key, uploadID string, cause error) error {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortWindow)
	defer cancel()
	err := b.retryWith(actx, min(b.window, abortWindow), b.stall, "aborting multipart upload of "+desc, func(ctx context.Context, _ func()) error {
		return b.abortUpload(ctx, key, uploadID)
	})
	if err != nil {
		return fmt.Errorf("%w (and the incomplete upload %s could not be aborted: %v)", cause, uploadID, err)
	}
	return cause
}

// multipartETag is the ETag S3 gives an object completed from parts: the
// MD5 of the parts' binary MD5s, "-", the part count. It is "" when a
// part's ETag is no plain MD5 (as with some encryption modes).
func multipartETag(parts []minio.CompletePart) string {
	h := md5.New()
	for _, p := range parts {
		sum, err := hex.DecodeString(strings.Trim(p.ETag, `"`))
		if err != nil || len(sum) != md5.Size {
			return ""
		}
		h.Write(sum)
	}
	return fmt.Sprintf("%x-%d", h.Sum(nil), len(parts))
}

// getBuf and putBuf recycle part buffers, which are large and many,
// held weakly (see recycle): a part given back with the upload budget is
// what the next part reuses, never memory kept above the runtime's limit.
func (b *Backend) getBuf(size int64) []byte {
	b.bufMu.Lock()
	l := b.bufs[size]
	b.bufMu.Unlock()
	if l != nil {
		if buf := l.Get(); buf != nil {
			return buf
		}
	}
	return make([]byte, size)
}

func (b *Backend) putBuf(buf []byte) {
	size := int64(cap(buf))
	b.bufMu.Lock()
	l := b.bufs[size]
	if l == nil {
		l = &recycle.List{}
		b.bufs[size] = l
	}
	b.bufMu.Unlock()
	l.Put(buf[:size])
}

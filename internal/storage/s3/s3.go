// Package s3 stores a repository's objects in an S3-compatible object
// store (AWS S3, MinIO, ...) through minio-go. It knows objects, a bucket
// and its endpoint, nothing of what the objects hold or of flags.
//
// minio-go's own retries are switched off, so that one rule, package
// retry's (transient errors retried with jittered exponential backoff for
// a bounded window, permanent ones reported at once), and one stall
// watchdog apply to every request. The package marks which failures are
// transient (5xx, 408, 429, S3's "try again" codes, stalls, network
// errors) and explains permanent ones naming bucket and endpoint.
//
// Where the retries happen: Stat, List, Delete and Open make one attempt
// and a failed read returns a transient error after which the reader
// resumes (on the same version of the object), so that the retry
// decorator (package retry) retries them like any store's. What only this
// package can repeat it retries itself with retry.Policy: the requests of
// a Put, which re-send bytes this package buffered rather than relying on
// the caller's reader, and those of RemoveLeftovers and New. Used without the
// decorator, a Backend therefore reports a failed Stat, List, Delete, Open
// or read at once.
//
// Integrity in transit: over http minio-go signs each chunk of a body
// with SHA-256 (streaming SigV4), over https TLS protects it; the layers
// above check every object against the SHA-256 in its manifest.
package s3

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/sync/semaphore"

	"github.com/backstream/backstream/internal/recycle"
	"github.com/backstream/backstream/internal/storage"
)

// Backend is a storage.Backend on one bucket and prefix. It is safe for
// concurrent use.
type Backend struct {
	core     minio.Core
	bucket   string
	prefix   string // "" or ending in "/"
	location string
	endpoint string // for messages: scheme://host

	partSize    int64
	concurrency int
	mem         *semaphore.Weighted
	memLimit    int64
	window      time.Duration
	stall       time.Duration

	bufMu sync.Mutex
	bufs  map[int64]*recycle.List

	// For tests: how often a request was retried, and how often the
	// watchdog cancelled one.
	retries, stalls atomic.Int64
}

var _ storage.Backend = (*Backend)(nil)

// New connects to the bucket of cfg and checks that it exists and that the
// credentials may reach it, so that a wrong name or key fails here with a
// clear message rather than halfway through a backup.
//
// Credentials are looked up in this order: AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN) from the environment,
// then the profile AWS_PROFILE (default "default") of the shared
// credentials file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials,
// merged with the config file as the AWS tools do).
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if err := checkBucket(cfg.Bucket); err != nil {
		return nil, err
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	if prefix != "" {
		if err := storage.CheckName(prefix); err != nil {
			return nil, fmt.Errorf("s3 prefix: %w", err)
		}
	}
	host, secure, err := parseEndpoint(cfg.Endpoint, cfg.Insecure)
	if err != nil {
		return nil, err
	}
	partSize := cfg.PartSize
	if partSize == 0 {
		partSize = DefaultPartSize
	}
	if partSize < MinPartSize || partSize > MaxPartSize {
		return nil, fmt.Errorf("s3 part size %d: must be between %d (5 MiB) and %d (5 GiB)", partSize, MinPartSize, MaxPartSize)
	}

	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("s3 transport: %w", err)
	}
	// The stall watchdog, not a fixed deadline, decides when a slow
	// answer is a dead one.
	tr.ResponseHeaderTimeout = 0
	tr.MaxIdleConnsPerHost = 64
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA bundle: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA bundle %s: no PEM certificate in it", cfg.CAFile)
		}
		if tr.TLSClientConfig == nil {
			return nil, fmt.Errorf("CA bundle %s given for plain http endpoint %s", cfg.CAFile, host)
		}
		tr.TLSClientConfig.RootCAs = pool
	}

	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{},
	})
	v, err := creds.GetWithContext(nil)
	if err != nil {
		return nil, fmt.Errorf("s3 credentials: %w", err)
	}
	if v.SignerType.IsAnonymous() {
		return nil, errors.New("s3: no credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws/credentials (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE)")
	}

	lookup := minio.BucketLookupAuto
	switch {
	case cfg.PathStyle:
		lookup = minio.BucketLookupPath
	case cfg.VirtualHostStyle:
		lookup = minio.BucketLookupDNS
	case cfg.Endpoint != "":
		lookup = minio.BucketLookupPath
	}
	var transport http.RoundTripper = tr
	if cfg.Requests != nil {
		transport = countingTransport{tr, cfg.Requests}
	}
	client, err := minio.New(host, &minio.Options{
		Creds:        creds,
		Secure:       secure,
		Transport:    transport,
		Region:       cfg.Region,
		BucketLookup: lookup,
		MaxRetries:   1, // this package retries; see the package comment
	})
	if err != nil {
		return nil, fmt.Errorf("s3 endpoint %s: %w", host, err)
	}

	scheme := "https"
	if !secure {
		scheme = "http"
	}
	b := &Backend{
		core:        minio.Core{Client: client},
		bucket:      cfg.Bucket,
		location:    "s3://" + cfg.Bucket,
		endpoint:    scheme + "://" + host,
		partSize:    partSize,
		concurrency: orDefaultInt(cfg.PartConcurrency, DefaultPartConcurrency),
		memLimit:    orDefaultInt(cfg.UploadMemory, DefaultUploadMemory),
		window:      orDefaultInt(cfg.RetryWindow, DefaultRetryWindow),
		stall:       orDefaultInt(cfg.StallTimeout, DefaultStallTimeout),
		bufs:        make(map[int64]*recycle.List),
	}
	if prefix != "" {
		b.prefix = prefix + "/"
		b.location += "/" + prefix
	}
	b.mem = semaphore.NewWeighted(b.memLimit)

	var exists bool
	err = b.retry(ctx, "checking bucket "+b.bucket, func(ctx context.Context, _ func()) error {
		var err error
		exists, err = client.BucketExists(ctx, b.bucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("s3 repository %s: %w", b.location, err)
	}
	if !exists {
		return nil, fmt.Errorf("s3 repository %s: bucket %q does not exist at endpoint %s", b.location, b.bucket, b.endpoint)
	}
	return b, nil
}

func orDefaultInt[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Location returns "s3://bucket/prefix".
func (b *Backend) Location() string { return b.location }

func (b *Backend) key(name string) string { return b.prefix + name }

// desc names an object in messages.
func (b *Backend) desc(name string) string { return b.location + "/" + name }

func isNotFound(err error) bool {
	var er minio.ErrorResponse
	if !errors.As(err, &er) {
		return false
	}
	return er.Code == "NoSuchKey" || er.Code == "NotFound" || (er.StatusCode == http.StatusNotFound && er.Code != "NoSuchBucket")
}

// notExist turns S3's "no such key" into an error matching fs.ErrNotExist.
func (b *Backend) notExist(name string) error {
	return fmt.Errorf("%s: %w", b.desc(name), fs.ErrNotExist)
}

// Stat describes one object.
func (b *Backend) Stat(ctx context.Context, name string) (storage.Info, error) {
	if err := storage.CheckName(name); err != nil {
		return storage.Info{}, err
	}
	info, err := b.stat(ctx, name)
	if err != nil {
		return storage.Info{}, err
	}
	return storage.Info{Name: name, Size: info.Size, ModTime: info.LastModified}, nil
}

func (b *Backend) stat(ctx context.Context, name string) (minio.ObjectInfo, error) {
	var info minio.ObjectInfo
	missing := false
	err := b.once(ctx, "stat "+b.desc(name), func(ctx context.Context, _ func()) error {
		var err error
		info, err = b.core.StatObject(ctx, b.bucket, b.key(name), minio.StatObjectOptions{})
		if isNotFound(err) {
			missing = true
			return nil
		}
		return err
	})
	if err != nil {
		return minio.ObjectInfo{}, err
	}
	if missing {
		return minio.ObjectInfo{}, b.notExist(name)
	}
	return info, nil
}

// List returns the objects whose names start with prefix, sorted by name.
// Keys below the backend's prefix that are no valid object names (such
// as the "dir/" markers some tools create) are not objects of this
// backend and are left out.
func (b *Backend) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	if err := storage.CheckPrefix(prefix); err != nil {
		return nil, err
	}
	var out []storage.Info
	err := b.once(ctx, "listing "+b.desc(prefix), func(ctx context.Context, kick func()) error {
		out = out[:0]
		for obj := range b.core.ListObjectsIter(ctx, b.bucket, minio.ListObjectsOptions{Prefix: b.key(prefix), Recursive: true}) {
			kick()
			if obj.Err != nil {
				return obj.Err
			}
			name, ok := strings.CutPrefix(obj.Key, b.prefix)
			if !ok || storage.CheckName(name) != nil {
				continue
			}
			out = append(out, storage.Info{Name: name, Size: obj.Size, ModTime: obj.LastModified})
		}
		// The iterator ends silently when ctx does, between pages: a
		// cancelled or stalled listing is not a complete one.
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(x, y storage.Info) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

// Delete removes the object; a missing one is no error, as in S3.
func (b *Backend) Delete(ctx context.Context, name string) error {
	if err := storage.CheckName(name); err != nil {
		return err
	}
	return b.once(ctx, "deleting "+b.desc(name), func(ctx context.Context, _ func()) error {
		err := b.core.RemoveObject(ctx, b.bucket, b.key(name), minio.RemoveObjectOptions{})
		if isNotFound(err) {
			return nil
		}
		return err
	})
}

// Open reads length bytes of the object from off (length < 0: to the end)
// with a ranged GET. The first request is made here, so a missing object
// is reported by Open. A read that fails or stalls midway returns a
// Transient error, and the next Read resumes where it stopped, on the
// same version of the object (If-Match on its ETag); the retry decorator
// makes that next Read.
func (b *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if err := storage.CheckName(name); err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("opening %s: negative offset %d", b.desc(name), off)
	}
	end := int64(-1) // exclusive; -1: to the end of the object
	if length >= 0 {
		end = off + length
		if end < off { // overflow: as good as "to the end"
			end = math.MaxInt64
		}
	}
	r := &objectReader{b: b, ctx: ctx, name: name, pos: off, end: end}
	if length == 0 {
		if _, err := b.stat(ctx, name); err != nil {
			return nil, err
		}
		r.done = true
		return r, nil
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

// objectReader reads a range of one object, resuming after failures.
type objectReader struct {
	b    *Backend
	ctx  context.Context
	name string
	etag string // of the version first read; resumes must match it
	pos  int64
	end  int64

	body   io.ReadCloser
	bctx   context.Context // of body; its cause tells a stall from a failure
	cancel context.CancelCauseFunc
	wd     *watchdog
	done   bool
	err    error
}

// open starts (or resumes) the GET at r.pos, in one attempt.
func (r *objectReader) open() error {
	b := r.b
	what := fmt.Sprintf("reading %s at offset %d", b.desc(r.name), r.pos)
	missing, beyond := false, false
	err := b.once(r.ctx, what, func(ctx context.Context, kick func()) error {
		opts := minio.GetObjectOptions{}
		if r.etag != "" {
			if err := opts.SetMatchETag(r.etag); err != nil {
				return err
			}
		}
		switch {
		case r.end >= 0:
			if err := opts.SetRange(r.pos, r.end-1); err != nil {
				return err
			}
		case r.pos > 0:
			if err := opts.SetRange(r.pos, 0); err != nil {
				return err
			}
		}
		// The body must outlive this attempt, so it gets its own context
		// and watchdog, which Read arms while it waits for bytes.
		bctx, cancel := context.WithCancelCause(r.ctx)
		stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
		body, info, _, err := b.core.GetObject(bctx, b.bucket, b.key(r.name), opts)
		stop()
		if err != nil {
			cancel(nil)
			var er minio.ErrorResponse
			switch {
			case isNotFound(err):
				missing = true
				return nil
			case errors.As(err, &er) && er.Code == "InvalidRange":
				beyond = true
				return nil
			case errors.As(err, &er) && er.Code == "PreconditionFailed":
				return fmt.Errorf("object was replaced while being read: %w", err)
			}
			return err
		}
		if r.etag == "" {
			r.etag = strings.Trim(info.ETag, `"`)
		}
		r.body, r.bctx, r.cancel = body, bctx, cancel
		r.wd = newWatchdog(b.stall, func() {
			b.stalls.Add(1)
			cancel(errStalled)
		})
		r.wd.pause()
		return nil
	})
	switch {
	case err != nil:
		return err
	case missing:
		return b.notExist(r.name)
	case beyond:
		// S3 answers 416 for a range starting at or past the end; the
		// contract wants an empty read then, if the object exists.
		if r.etag == "" {
			if _, err := b.stat(r.ctx, r.name); err != nil {
				return err
			}
		}
		r.done = true
	}
	return nil
}

func (r *objectReader) closeBody() {
	if r.body != nil {
		r.wd.stop()
		r.cancel(nil)
		_ = r.body.Close()
		r.body = nil
	}
}

// Read reads from the current GET, or starts one at the current position
// after a transient failure. Such a failure is returned once (after the
// bytes read before it, if any) and leaves the reader usable; any other
// error ends it.
func (r *objectReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if r.done || (r.end >= 0 && r.pos >= r.end) {
			r.closeBody()
			return 0, io.EOF
		}
		if err := r.ctx.Err(); err != nil {
			r.closeBody()
			r.err = fmt.Errorf("reading %s at offset %d: %w", r.b.desc(r.name), r.pos, err)
			return 0, r.err
		}
		if r.body == nil {
			if err := r.open(); err != nil {
				if !storage.IsTransient(err) {
					r.err = err
				}
				return 0, err
			}
			continue
		}
		r.wd.kick()
		n, err := r.body.Read(p)
		r.wd.pause()
		r.pos += int64(n)
		if err == io.EOF {
			// The server sent the whole range it promised (a short body
			// is io.ErrUnexpectedEOF), so this is the object's end.
			r.done = true
			r.closeBody()
			if n > 0 {
				return n, nil
			}
			return 0, io.EOF
		}
		if err != nil {
			if errors.Is(context.Cause(r.bctx), errStalled) {
				err = fmt.Errorf("%w for %v: %w", errStalled, r.b.stall, err)
			}
			r.closeBody()
			if cerr := r.ctx.Err(); cerr != nil {
				err = fmt.Errorf("reading %s at offset %d: %w", r.b.desc(r.name), r.pos, cerr)
			} else {
				err = r.b.explain(fmt.Sprintf("reading %s at offset %d", r.b.desc(r.name), r.pos), err)
			}
			if !storage.IsTransient(err) {
				r.err = err
			}
			if n > 0 {
				// The bytes first: the next Read reports a permanent
				// error, or resumes after a transient one.
				return n, nil
			}
			return 0, err
		}
		if n > 0 {
			return n, nil
		}
	}
}

// Close ends the GET.
func (r *objectReader) Close() error {
	r.closeBody()
	if r.err == nil {
		r.err = fmt.Errorf("reading %s: %w", r.b.desc(r.name), fs.ErrClosed)
	}
	return nil
}

package s3

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/retry"
)

// errStalled is the cause of a request the watchdog cancelled because no
// byte moved for StallTimeout; such a request is retried.
var errStalled = errors.New("no progress")

// transientS3Codes are error codes S3 documents as "try again".
var transientS3Codes = map[string]bool{
	"RequestTimeout": true, "RequestTimeTooSkewed": false, "SlowDown": true, "SlowDownRead": true,
	"SlowDownWrite": true, "InternalError": true, "ServiceUnavailable": true, "Throttling": true,
	"ThrottlingException": true, "RequestLimitExceeded": true, "RequestThrottled": true,
	"XMinioServerNotInitialized": true, "XMinioStorageFull": false, "OperationAborted": true,
	"ExpiredToken": true,
}

// transient reports whether err, from one request, is worth retrying:
// server errors (5xx but 501), 408, 429, the codes above, a stall, and
// transport failures (refused, reset, timeouts, cut bodies). Certificate
// trouble and every other S3 error answer (access denied, no such
// bucket, bad signature) are permanent: retrying cannot fix them.
func transient(err error) bool {
	if errors.Is(err, errStalled) {
		return true
	}
	var er minio.ErrorResponse
	if errors.As(err, &er) && (er.StatusCode != 0 || er.Code != "") {
		if v, ok := transientS3Codes[er.Code]; ok {
			return v
		}
		s := er.StatusCode
		return s == http.StatusRequestTimeout || s == http.StatusTooManyRequests ||
			(s >= 500 && s != http.StatusNotImplemented)
	}
	var (
		unknownCA  x509.UnknownAuthorityError
		hostname   x509.HostnameError
		invalidCrt x509.CertificateInvalidError
		recordHdr  tls.RecordHeaderError
		verifyErr  *tls.CertificateVerificationError
	)
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalidCrt) ||
		errors.As(err, &recordHdr) || errors.As(err, &verifyErr) {
		return false
	}
	// Everything else is the network: refused or reset connections,
	// timeouts, a body cut short. Errors of the caller's own reader never
	// get here, because Put reads its input outside any request.
	return true
}

// racyDenialRetries is how often an AccessDenied is retried before it
// counts as permanent. MinIO answers AccessDenied to a PUT that races a
// DELETE emptying the key's parent prefix (seen in the conformance suite's
// concurrent put/delete test); New already proved that the credentials
// work, so a denial is first retried briefly (about 0.75 s in all) and a
// real one still fails fast.
const racyDenialRetries = 2

func racyDenial(err error) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && er.Code == "AccessDenied"
}

// watchdog cancels a request when kick has not been called for d.
type watchdog struct {
	d     time.Duration
	timer *time.Timer
}

func newWatchdog(d time.Duration, fire func()) *watchdog {
	return &watchdog{d: d, timer: time.AfterFunc(d, fire)}
}

func (w *watchdog) kick()  { w.timer.Reset(w.d) }
func (w *watchdog) pause() { w.timer.Stop() }
func (w *watchdog) stop()  { w.timer.Stop() }

// attempt runs one request under a watchdog: fn gets a context that ends
// when ctx does or when fn stops calling kick for stall.
func (b *Backend) attempt(ctx context.Context, stall time.Duration, fn func(ctx context.Context, kick func()) error) error {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := newWatchdog(stall, func() {
		b.stalls.Add(1)
		cancel(errStalled)
	})
	defer wd.stop()
	err := fn(actx, wd.kick)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errStalled) {
		err = fmt.Errorf("%w for %v: %w", errStalled, stall, err)
	}
	return err
}

// retry runs the request fn until it succeeds, fails permanently, ctx
// ends, or transient failures have gone on for the retry window (the
// rule of package retry). what names the operation and object for the
// error message. fn must be repeatable: a request body is rebuilt from
// the same buffered bytes on every call. Only what the retry decorator
// cannot repeat goes through here (the requests of a Put, and of
// RemoveLeftovers and New); Stat, List, Delete and Open make one attempt
// (see once) and the decorator retries them whole.
func (b *Backend) retry(ctx context.Context, what string, fn func(ctx context.Context, kick func()) error) error {
	return b.retryWith(ctx, b.window, b.stall, what, fn)
}

// retryWith is retry with its own window and stall timeout.
func (b *Backend) retryWith(ctx context.Context, window, stall time.Duration, what string, fn func(ctx context.Context, kick func()) error) error {
	try := 0
	policy := retry.Policy{Window: window, OnRetry: func(error, time.Duration) { b.retries.Add(1) }}
	err := policy.Do(ctx, func(ctx context.Context) error {
		err := b.attempt(ctx, stall, fn)
		if err != nil && (transient(err) || racyDenial(err) && try < racyDenialRetries) {
			err = storage.Transient(err)
		}
		try++
		return err
	})
	var ex *retry.ExhaustedError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("%s: %w", what, err)
	case errors.As(err, &ex):
		return storage.Permanent(fmt.Errorf("%s: still failing after %d attempts in %v (retry window %v; endpoint %s): %w",
			what, ex.Attempts, ex.Elapsed.Round(time.Millisecond), ex.Window, b.endpoint, ex.Err))
	}
	return b.permanent(what, err)
}

// once makes one attempt of a request the retry decorator retries whole,
// under the stall watchdog, and marks what went wrong: a transient
// failure Transient, naming the endpoint, and a permanent one explained
// (see permanent).
func (b *Backend) once(ctx context.Context, what string, fn func(ctx context.Context, kick func()) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	err := b.attempt(ctx, b.stall, fn)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	return b.explain(what, err)
}

// explain marks err, the failure of one request, Transient when it is,
// and explains it otherwise.
func (b *Backend) explain(what string, err error) error {
	if transient(err) {
		return storage.Transient(fmt.Errorf("%s (endpoint %s): %w", what, b.endpoint, err))
	}
	return b.permanent(what, err)
}

// permanent explains the S3 errors a user can act on; the original error
// stays wrapped for errors.As.
func (b *Backend) permanent(what string, err error) error {
	var er minio.ErrorResponse
	if !errors.As(err, &er) {
		return fmt.Errorf("%s (endpoint %s): %w", what, b.endpoint, err)
	}
	switch er.Code {
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "AllAccessDisabled", "AccountProblem":
		return fmt.Errorf("%s: access denied: check credentials (bucket %q, endpoint %s): %w", what, b.bucket, b.endpoint, err)
	case "NoSuchBucket":
		return fmt.Errorf("%s: bucket %q does not exist at endpoint %s: %w", what, b.bucket, b.endpoint, err)
	}
	if er.StatusCode == http.StatusForbidden {
		return fmt.Errorf("%s: access denied: check credentials (bucket %q, endpoint %s): %w", what, b.bucket, b.endpoint, err)
	}
	return fmt.Errorf("%s (endpoint %s): %w", what, b.endpoint, err)
}

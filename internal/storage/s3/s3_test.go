package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/retry"
	"github.com/backstream/backstream/internal/storage/storagetest"
)

func TestConformance(t *testing.T) {
	srv := minioForTest(t)
	n := 0
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		n++
		return srv.newBackend(t, Config{Prefix: fmt.Sprintf("conformance/%d", n)})
	})
}

// TestConformanceRetried runs the suite on the backend as the commands
// use it, under the retry decorator.
func TestConformanceRetried(t *testing.T) {
	srv := minioForTest(t)
	n := 0
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		n++
		return retry.New(srv.newBackend(t, Config{Prefix: fmt.Sprintf("retried/%d", n)}), retry.Policy{})
	})
}

// TestConformanceSmallParts runs the suite again with the smallest parts
// S3 allows, so that its 20 MiB objects are multipart uploads of several
// concurrent parts and its cancellations hit an upload in flight.
func TestConformanceSmallParts(t *testing.T) {
	srv := minioForTest(t)
	n := 0
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		n++
		return srv.newBackend(t, Config{Prefix: fmt.Sprintf("small/%d", n), PartSize: MinPartSize, PartConcurrency: 2, UploadMemory: 3 * MinPartSize})
	})
}

// patterned returns n pseudo-random bytes.
func patterned(seed uint64, n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	_, _ = r.Read(b)
	return b
}

// dribble yields its data in short, uneven reads, as a pipe does; after
// at (if > 0) bytes it calls hook once.
type dribble struct {
	data []byte
	off  int
	rnd  *rand.Rand
	at   int
	hook func()
	err  error // returned instead of io.EOF once data is used up
}

func (d *dribble) Read(p []byte) (int, error) {
	if d.off >= len(d.data) {
		if d.err != nil {
			return 0, d.err
		}
		return 0, io.EOF
	}
	if d.rnd == nil {
		d.rnd = rand.New(rand.NewPCG(3, 4))
	}
	n := min(len(p), len(d.data)-d.off, 1+d.rnd.IntN(200_000))
	if d.at > 0 && d.off < d.at && d.off+n >= d.at && d.hook != nil {
		d.hook()
	}
	copy(p, d.data[d.off:d.off+n])
	d.off += n
	return n, nil
}

// readObject reads an object back as the commands do, under the retry
// decorator: a server that was just restarted may still ask to try again.
func readObject(t *testing.T, b *Backend, name string) []byte {
	t.Helper()
	rc, err := retry.New(b, retry.Policy{}).Open(t.Context(), name, 0, -1)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %q: %v", name, err)
	}
	return got
}

// wantMissing fails unless name is absent from the backend (asked under
// the retry decorator, as readObject does).
func wantMissing(t *testing.T, b *Backend, name string) {
	t.Helper()
	if _, err := retry.New(b, retry.Policy{}).Stat(t.Context(), name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(%q) = %v, want the object missing", name, err)
	}
}

func TestMultipart(t *testing.T) {
	srv := minioForTest(t)
	b := srv.newBackend(t, Config{PartSize: MinPartSize})
	const size = 70 << 20
	data := patterned(1, size)
	n, err := b.Put(t.Context(), "big", &dribble{data: data})
	if err != nil || n != size {
		t.Fatalf("Put of 70 MiB = %d, %v", n, err)
	}
	if got := readObject(t, b, "big"); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes that differ from the 70 MiB put", len(got))
	}
	// The object really is 14 parts of 5 MiB: its ETag is the one S3
	// computes from those parts, which is also what Put relies on when a
	// completion's answer was lost.
	var parts []minio.CompletePart
	for off := 0; off < size; off += MinPartSize {
		sum := md5.Sum(data[off:min(off+MinPartSize, size)])
		parts = append(parts, minio.CompletePart{ETag: hex.EncodeToString(sum[:])})
	}
	info, err := srv.Client(t).StatObject(t.Context(), srv.Bucket, b.key("big"), minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := multipartETag(parts); info.ETag != want || !strings.HasSuffix(want, "-14") {
		t.Errorf("ETag = %q, want %q (14 parts)", info.ETag, want)
	}
	// Ranged reads across part boundaries.
	for _, r := range [][2]int64{{MinPartSize - 10, 20}, {3*MinPartSize + 1, 2 * MinPartSize}, {size - 5, 100}} {
		rc, err := b.Open(t.Context(), "big", r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		want := data[r[0]:min(r[0]+r[1], size)]
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Open(%d, %d) read %d bytes, %v; want %d bytes", r[0], r[1], len(got), err, len(want))
		}
	}
	if ups := srv.incompleteUploads(t, ""); len(ups) != 0 {
		t.Errorf("incomplete uploads left: %q", ups)
	}
}

func TestAbortLeavesNothing(t *testing.T) {
	srv := minioForTest(t)
	b := srv.newBackend(t, Config{PartSize: MinPartSize})
	errBroken := errors.New("producer broke")

	// The reader fails after three parts went up.
	_, err := b.Put(t.Context(), "broken", &dribble{data: patterned(2, 17<<20), err: errBroken})
	if !errors.Is(err, errBroken) || !strings.Contains(err.Error(), "broken") {
		t.Errorf("Put from a failing reader = %v, want the reader's error naming the object", err)
	}
	wantMissing(t, b, "broken")

	// The context ends midway.
	ctx, cancel := context.WithCancel(t.Context())
	_, err = b.Put(ctx, "cancelled", &dribble{data: patterned(3, 40<<20), at: 16 << 20, hook: cancel})
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Put = %v, want context.Canceled", err)
	}
	wantMissing(t, b, "cancelled")

	if ups := srv.incompleteUploads(t, ""); len(ups) != 0 {
		t.Errorf("incomplete multipart uploads left: %q", ups)
	}
	if infos, err := b.List(t.Context(), ""); err != nil || len(infos) != 0 {
		t.Errorf("List = %v, %v; want nothing", infos, err)
	}
}

func TestNewErrors(t *testing.T) {
	srv := minioForTest(t)
	ctx := t.Context()

	t.Run("missing bucket", func(t *testing.T) {
		_, err := New(ctx, Config{Bucket: "no-such-bucket", Endpoint: srv.Endpoint, Region: "us-east-1"})
		if err == nil || !strings.Contains(err.Error(), `"no-such-bucket" does not exist`) || !strings.Contains(err.Error(), srv.Endpoint) {
			t.Errorf("New on a missing bucket = %v, want an error naming bucket and endpoint", err)
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-key")
		start := time.Now()
		_, err := New(ctx, Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint, Region: "us-east-1"})
		if err == nil || !strings.Contains(err.Error(), "access denied: check credentials") || !strings.Contains(err.Error(), srv.Bucket) {
			t.Errorf("New with a wrong secret = %v, want access denied naming the bucket", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("New with a wrong secret took %v, want a fast failure", d)
		}
	})
	t.Run("bucket removed", func(t *testing.T) {
		c := srv.Client(t)
		if err := c.MakeBucket(ctx, "bs-gone", minio.MakeBucketOptions{}); err != nil {
			t.Fatal(err)
		}
		b, err := New(ctx, Config{Bucket: "bs-gone", Prefix: "p", Endpoint: srv.Endpoint, Region: "us-east-1"})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.RemoveBucket(ctx, "bs-gone"); err != nil {
			t.Fatal(err)
		}
		// A permanent error fails at once and names bucket and object.
		start := time.Now()
		_, err = b.Put(ctx, "obj", strings.NewReader("x"))
		if err == nil || !strings.Contains(err.Error(), `bucket "bs-gone" does not exist`) || !strings.Contains(err.Error(), "s3://bs-gone/p/obj") {
			t.Errorf("Put into a removed bucket = %v, want an error naming bucket and object", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Put into a removed bucket took %v, want a fast failure", d)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		_, err := New(ctx, Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint})
		if err == nil || !strings.Contains(err.Error(), "no credentials") {
			t.Errorf("New without credentials = %v", err)
		}
	})
	t.Run("bad config", func(t *testing.T) {
		for _, cfg := range []Config{
			{Bucket: "x"},
			{Bucket: srv.Bucket, Prefix: "a//b", Endpoint: srv.Endpoint},
			{Bucket: srv.Bucket, Endpoint: srv.Endpoint, PartSize: 1 << 20},
			{Bucket: srv.Bucket, Endpoint: "ftp://x"},
			{Bucket: srv.Bucket, Endpoint: srv.Endpoint, CAFile: "/nonexistent/ca.pem"},
		} {
			if _, err := New(ctx, cfg); err == nil {
				t.Errorf("New(%+v) succeeded", cfg)
			}
		}
	})
	t.Run("location", func(t *testing.T) {
		b := srv.newBackend(t, Config{Prefix: "p/q/"})
		if got, want := b.Location(), "s3://"+srv.Bucket+"/p/q"; got != want {
			t.Errorf("Location() = %q, want %q", got, want)
		}
	})
}

// TestRestartDuringPut kills MinIO while parts are in flight and starts
// it again a little later: the Put rides it out on retries and the object
// is intact.
func TestRestartDuringPut(t *testing.T) {
	srv := minioForTest(t)
	b := srv.newBackend(t, Config{PartSize: MinPartSize, RetryWindow: time.Minute, StallTimeout: 5 * time.Second})
	data := patterned(4, 30<<20)
	restarted := make(chan struct{})
	hook := func() {
		srv.Stop()
		go func() {
			defer close(restarted)
			time.Sleep(2 * time.Second)
			if err := srv.TryRestart(); err != nil {
				t.Error(err)
			}
		}()
	}
	n, err := b.Put(t.Context(), "survivor", &dribble{data: data, at: 12 << 20, hook: hook})
	<-restarted
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Put across a restart = %d, %v", n, err)
	}
	if b.retries.Load() == 0 {
		t.Error("the Put needed no retry: the restart did not hit it")
	}
	if got := readObject(t, b, "survivor"); !bytes.Equal(got, data) {
		t.Fatalf("object read back after a restart differs (%d bytes)", len(got))
	}
	if ups := srv.incompleteUploads(t, ""); len(ups) != 0 {
		t.Errorf("incomplete uploads left: %q", ups)
	}
}

// TestServerGone stops MinIO for good during a Put: the Put fails once the
// retry window is over, clearly, and no object appears.
func TestServerGone(t *testing.T) {
	srv := minioForTest(t)
	const window = 3 * time.Second
	b := srv.newBackend(t, Config{PartSize: MinPartSize, RetryWindow: window, StallTimeout: 2 * time.Second})
	start := time.Now()
	_, err := b.Put(t.Context(), "doomed", &dribble{data: patterned(5, 30<<20), at: 12 << 20, hook: srv.Stop})
	took := time.Since(start)
	if err == nil {
		t.Fatal("Put with the server gone succeeded")
	}
	for _, want := range []string{b.Location() + "/doomed", "retry window", srv.Endpoint} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// The window, plus one backoff and the (failing) abort's own window.
	if took > 4*window {
		t.Errorf("Put failed after %v, want about the retry window %v", took, window)
	}

	// Reads fail the same way, naming the object: the backend makes one
	// attempt and marks the failure transient, the retry decorator gives
	// up after its window.
	_, err = b.Stat(t.Context(), "anything")
	if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "anything") || !storage.IsTransient(err) {
		t.Errorf("Stat with the server gone = %v, want a transient failure naming the object", err)
	}
	start = time.Now()
	_, err = retry.New(b, retry.Policy{Window: window}).Stat(t.Context(), "anything")
	for _, want := range []string{"anything", "retry window", srv.Endpoint} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("retried Stat with the server gone = %v, want a failure mentioning %q", err, want)
		}
	}
	if took := time.Since(start); took < window/3 || took > 2*window {
		t.Errorf("retried Stat gave up after %v, want about the retry window %v", took, window)
	}

	srv.Start()
	wantMissing(t, b, "doomed")
}

// TestStallWatchdog freezes MinIO (SIGSTOP: connections stay open but
// silent) during an upload and during a download; the watchdog must
// cancel the hung requests and the retries must finish the work once the
// server continues.
func TestStallWatchdog(t *testing.T) {
	srv := minioForTest(t)
	b := srv.newBackend(t, Config{PartSize: MinPartSize, RetryWindow: time.Minute, StallTimeout: time.Second})
	data := patterned(6, 24<<20)
	var thawed atomic.Bool
	freeze := func() {
		srv.Freeze()
		go func() {
			time.Sleep(3 * time.Second)
			thawed.Store(true)
			srv.Thaw()
		}()
	}
	t.Cleanup(srv.Thaw)
	n, err := b.Put(t.Context(), "frozen", &dribble{data: data, at: 8 << 20, hook: freeze})
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Put across a frozen server = %d, %v", n, err)
	}
	if !thawed.Load() {
		t.Error("Put finished while the server was still frozen; the test did not test")
	}
	if b.stalls.Load() == 0 {
		t.Error("the watchdog never fired during the upload")
	}
	stallsBefore := b.stalls.Load()

	// Download: read a little, freeze, read the rest. The backend cancels
	// the stalled GET and resumes when read again, which the retry
	// decorator does.
	rc, err := retry.New(b, retry.Policy{Window: time.Minute}).Open(t.Context(), "frozen", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, 1<<20)
	if _, err := io.ReadFull(rc, head); err != nil {
		t.Fatal(err)
	}
	thawed.Store(false)
	freeze()
	rest, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading across a frozen server: %v", err)
	}
	if got := append(head, rest...); !bytes.Equal(got, data) {
		t.Errorf("read %d bytes across a freeze that differ from the %d put", len(got), len(data))
	}
	if b.stalls.Load() == stallsBefore {
		t.Error("the watchdog never fired during the download")
	}
}

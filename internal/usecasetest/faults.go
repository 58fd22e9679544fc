package usecasetest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/retention"
	"github.com/backstream/backstream/internal/storage/s3/s3test"
)

// Corrupt says err reports stored data that does not match its checksums
// or structure (archive.IsCorrupt) and refuses nothing: what the command
// exits 3 for.
func Corrupt(err error) bool {
	return archive.IsCorrupt(err) && !Refused(err)
}

// ListWith is List of the repository o reaches (a MinIO of the test's
// own through Location.S3Endpoint, key files, ...): what `list --json`
// prints of it.
func ListWith(t testing.TB, o repoaccess.Options) inventory.Listing {
	t.Helper()
	r, err := o.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	l, err := inventory.List(context.Background(), r, inventory.Request{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// ExpireWith is Expire of the repository o reaches: it returns the plan,
// with what was deleted marked, and the error the command exits with.
func ExpireWith(t testing.TB, o repoaccess.Options, req retention.Request) (retention.Result, error) {
	t.Helper()
	req.Now = time.Now()
	if err := req.Check(); err != nil {
		return retention.Result{}, err
	}
	r, ctx, release, err := o.OpenLocked(context.Background(), repoaccess.OpExpire, true)
	if err != nil {
		return retention.Result{}, err
	}
	defer release()
	return retention.Run(ctx, r, req)
}

// BackupDirs maps every backup directory of r, committed or not, to the
// names of its objects, relative to it.
func (r Repo) BackupDirs(t testing.TB) map[string][]string {
	t.Helper()
	objs, err := r.Backend.List(context.Background(), "backups/")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string][]string{}
	for _, o := range objs {
		id, rest, _ := strings.Cut(strings.TrimPrefix(o.Name, "backups/"), "/")
		dirs[id] = append(dirs[id], rest)
	}
	return dirs
}

// BegunStreams reads the names of the stream objects backup id announced
// in its begun marker (nil if it has none).
func (r Repo) BegunStreams(t testing.TB, id string) []string {
	t.Helper()
	rc, err := r.Backend.Open(context.Background(), "backups/"+id+"/"+repo.BegunName, 0, -1)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var header archive.Manifest
	if err := json.NewDecoder(rc).Decode(&header); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range header.Streams {
		names = append(names, s.Name)
	}
	return names
}

// Uploads counts the incomplete multipart uploads of the named stream
// objects of backup id (always 0 in a local repository).
func (r Repo) Uploads(t *testing.T, id string, streams []string) int {
	t.Helper()
	if r.S3 == nil {
		return 0
	}
	keys := make([]string, len(streams))
	for i, s := range streams {
		keys[i] = "repo/backups/" + id + "/" + s
	}
	return IncompleteUploads(t, r.S3, r.Bucket, keys)
}

// IncompleteUploads counts the incomplete multipart uploads of the keys
// in bucket of srv. MinIO lists uploads only by whole key.
func IncompleteUploads(t *testing.T, srv *s3test.Server, bucket string, keys []string) int {
	t.Helper()
	c := srv.Client(t)
	n := 0
	for _, k := range keys {
		for u := range c.ListIncompleteUploads(context.Background(), bucket, k, true) {
			if u.Err != nil {
				t.Fatal(u.Err)
			}
			n++
		}
	}
	return n
}

// CheckUnfinished checks what a backup that died mid-way (killed, or
// failed without cleaning up) left in r: one backup directory, with its
// begun marker and without a manifest, that list does not show and
// expire --prune-incomplete plans as incomplete. It returns the backup's
// id and the stream objects it announced.
func (r Repo) CheckUnfinished(t testing.TB) (string, []string) {
	t.Helper()
	dirs := r.BackupDirs(t)
	if len(dirs) != 1 {
		t.Fatalf("%d backup directories after one unfinished backup, want 1: %v", len(dirs), dirs)
	}
	var id string
	for d, objs := range dirs {
		id = d
		names := strings.Join(objs, " ")
		if strings.Contains(names, repo.ManifestName) {
			t.Errorf("backup %s of an unfinished backup has a manifest: %v", id, objs)
		}
		if !strings.Contains(names, repo.BegunName) {
			t.Errorf("backup %s of an unfinished backup has no %s: %v", id, repo.BegunName, objs)
		}
	}
	if l := List(t, r); len(l) != 0 {
		t.Errorf("list shows %+v after an unfinished backup, want nothing", l)
	}
	plan, err := Expire(t, r, retention.Request{PruneIncomplete: true})
	if err != nil {
		t.Fatalf("expire --prune-incomplete (a dry run): %v", err)
	}
	var e retention.Entry
	ok := false
	for _, p := range plan.Entries {
		if p.ID == id {
			e, ok = p, true
		}
	}
	if !ok || e.Complete || e.Deleted {
		t.Errorf("expire's dry run shows the unfinished backup %s as %+v (listed %v), want it incomplete and not deleted", id, e, ok)
	}
	return id, r.BegunStreams(t, id)
}

// PruneUnfinished runs expire --prune-incomplete --confirm on r and
// checks that nothing of backup id is left, not even an invisible upload
// of its streams.
func (r Repo) PruneUnfinished(t *testing.T, id string, streams []string) {
	t.Helper()
	if _, err := Expire(t, r, retention.Request{PruneIncomplete: true, Confirm: true}); err != nil {
		t.Fatalf("expire --prune-incomplete --confirm: %v", err)
	}
	if objs := r.BackupDirs(t)[id]; len(objs) != 0 {
		t.Errorf("objects of backup %s left after expire --prune-incomplete: %v", id, objs)
	}
	if n := r.Uploads(t, id, streams); n != 0 {
		t.Errorf("%d incomplete uploads of backup %s left after expire --prune-incomplete", n, id)
	}
}

// Gate is a TCP proxy in front of a server that lets the first limit
// bytes of the server's answers through (all connections together), then
// holds the rest until opened: whoever reads through it is stuck
// mid-transfer, for as long as the test needs, at a point set in bytes,
// not in time.
type Gate struct {
	Addr   string // where clients connect: 127.0.0.1:port
	target string
	limit  int64

	mu     sync.Mutex
	passed int64
	conns  []net.Conn
	held   chan struct{} // closed once the limit is reached
	opened chan struct{} // closed by Open
	once   sync.Once
}

// NewGate starts a gate in front of target (host:port) that holds what
// comes back after limit bytes; the test's end opens and closes it.
func NewGate(t testing.TB, target string, limit int64) *Gate {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &Gate{Addr: l.Addr().String(), target: target, limit: limit, held: make(chan struct{}), opened: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		g.Open()
		g.mu.Lock()
		for _, c := range g.conns {
			c.Close()
		}
		g.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { g.serve(c) })
		}
	})
	return g
}

func (g *Gate) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", g.target)
	if err != nil {
		return
	}
	defer server.Close()
	g.mu.Lock()
	g.conns = append(g.conns, client, server)
	g.mu.Unlock()
	go func() {
		io.Copy(server, client)
		server.(*net.TCPConn).CloseWrite()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			g.wait(int64(n))
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait counts n bytes going to a client and blocks while the gate holds.
func (g *Gate) wait(n int64) {
	g.mu.Lock()
	g.passed += n
	over := g.passed > g.limit
	g.mu.Unlock()
	if over {
		g.once.Do(func() { close(g.held) })
		<-g.opened
	}
}

// Holding reports whether the limit was reached: a client is stuck.
func (g *Gate) Holding() bool {
	select {
	case <-g.held:
		return true
	default:
		return false
	}
}

// Open lets everything through from now on.
func (g *Gate) Open() {
	select {
	case <-g.opened:
	default:
		close(g.opened)
	}
}

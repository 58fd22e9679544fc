package s3

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/backstream/backstream/internal/storage"
)

// startUpload begins a multipart upload of name that nobody completes, as
// a killed backup leaves one.
func startUpload(t *testing.T, b *Backend, name string) string {
	t.Helper()
	id, err := b.core.NewMultipartUpload(t.Context(), b.bucket, b.key(name), minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// On MinIO, which lists incomplete uploads by whole key only, the uploads
// of the names given are aborted, every one of each, and no other key's.
func TestRemoveLeftoversMinIO(t *testing.T) {
	srv := minioForTest(t)
	b := srv.newBackend(t, Config{})
	const stream, index, other = "backups/x/streams/00000.xbs.zst", "backups/x/streams/00000.idx", "backups/y/streams/00000.xbs.zst"
	startUpload(t, b, stream)
	startUpload(t, b, stream)
	startUpload(t, b, index)
	startUpload(t, b, other)
	opts := storage.LeftoverOptions{Names: []string{stream, index, "backups/x/none"}, DryRun: true}
	got, err := b.RemoveLeftovers(t.Context(), "backups/x/", opts)
	if err != nil || got != (storage.Leftovers{Uploads: 3}) {
		t.Errorf("dry run = %+v, %v; want 3 uploads", got, err)
	}
	if n := len(srv.incompleteUploads(t, b.key(stream))); n != 2 {
		t.Fatalf("the dry run aborted something: %d uploads of %s left of 2", n, stream)
	}
	opts.DryRun = false
	if got, err = b.RemoveLeftovers(t.Context(), "backups/x/", opts); err != nil || got != (storage.Leftovers{Uploads: 3}) {
		t.Errorf("RemoveLeftovers = %+v, %v; want 3 uploads", got, err)
	}
	for _, name := range []string{stream, index} {
		if ups := srv.incompleteUploads(t, b.key(name)); len(ups) != 0 {
			t.Errorf("uploads of %s left: %q", name, ups)
		}
	}
	if ups := srv.incompleteUploads(t, b.key(other)); len(ups) != 1 {
		t.Errorf("uploads of %s, under another prefix: %q, want the one untouched", other, ups)
	}
	if got, err = b.RemoveLeftovers(t.Context(), "backups/x/", opts); err != nil || got.Count() != 0 {
		t.Errorf("again = %+v, %v; want nothing", got, err)
	}
	if _, err := b.RemoveLeftovers(t.Context(), "backups/x/", storage.LeftoverOptions{Names: []string{"../x"}}); err == nil {
		t.Error("RemoveLeftovers accepted an invalid name")
	}
}

// fakeS3 is the part of an S3 server that RemoveLeftovers talks to, with
// what MinIO lacks: listing incomplete uploads by prefix, a page of two at
// a time.
type fakeS3 struct {
	mu      sync.Mutex
	uploads []upload // sorted by key, then id
	aborted []upload
	lists   int
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	switch {
	case bucket != "bucket":
		http.Error(w, "no such bucket", http.StatusNotFound)
	case r.Method == http.MethodHead && key == "":
	case r.Method == http.MethodGet && key == "" && q.Has("uploads"):
		f.lists++
		type xu struct {
			Key      string
			UploadId string
		}
		var res struct {
			XMLName            xml.Name `xml:"ListMultipartUploadsResult"`
			Bucket, Prefix     string
			NextKeyMarker      string
			NextUploadIdMarker string
			IsTruncated        bool
			Upload             []xu
		}
		res.Bucket, res.Prefix = bucket, q.Get("prefix")
		km, im := q.Get("key-marker"), q.Get("upload-id-marker")
		for _, u := range f.uploads {
			if !strings.HasPrefix(u.key, res.Prefix) || u.key < km || (u.key == km && (im == "" || u.id <= im)) {
				continue
			}
			if len(res.Upload) == 2 {
				res.IsTruncated = true
				break
			}
			res.Upload = append(res.Upload, xu{u.key, u.id})
			res.NextKeyMarker, res.NextUploadIdMarker = u.key, u.id
		}
		w.Header().Set("Content-Type", "application/xml")
		_ = xml.NewEncoder(w).Encode(res)
	case r.Method == http.MethodDelete && q.Get("uploadId") != "":
		u := upload{key, q.Get("uploadId")}
		i := slices.Index(f.uploads, u)
		if i < 0 {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `<Error><Code>NoSuchUpload</Code><Message>gone</Message></Error>`)
			return
		}
		f.uploads = slices.Delete(f.uploads, i, i+1)
		f.aborted = append(f.aborted, u)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "not implemented: "+r.Method+" "+r.URL.String(), http.StatusNotImplemented)
	}
}

// On a server that lists incomplete uploads by prefix, every upload under
// the prefix is aborted, through every page of the listing, and none
// outside it (a sibling whose name merely begins the same way, the
// backend's prefix) nor twice when a name repeats what the prefix found.
func TestRemoveLeftoversByPrefix(t *testing.T) {
	f := &fakeS3{}
	for i, k := range []string{"p/backups/x/meta/big", "p/backups/x/streams/00000.xbs.zst", "p/backups/x/streams/00000.xbs.zst",
		"p/backups/x/streams/00001.xbs.zst", "p/backups/xy/a", "p/other", "q/backups/x/a"} {
		f.uploads = append(f.uploads, upload{k, "id" + strconv.Itoa(i)})
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	b, err := New(ctx, Config{Bucket: "bucket", Prefix: "p", Endpoint: srv.URL, Region: "us-east-1", RetryWindow: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	opts := storage.LeftoverOptions{Names: []string{"backups/x/streams/00000.xbs.zst"}, DryRun: true}
	got, err := b.RemoveLeftovers(ctx, "backups/x/", opts)
	if err != nil || got != (storage.Leftovers{Uploads: 4}) || len(f.aborted) != 0 {
		t.Errorf("dry run = %+v, %v, aborting %v; want 4 uploads and none aborted", got, err, f.aborted)
	}
	opts.DryRun = false
	f.lists = 0
	got, err = b.RemoveLeftovers(ctx, "backups/x/", opts)
	want := []upload{{"p/backups/x/meta/big", "id0"}, {"p/backups/x/streams/00000.xbs.zst", "id1"}, {"p/backups/x/streams/00000.xbs.zst", "id2"},
		{"p/backups/x/streams/00001.xbs.zst", "id3"}}
	if err != nil || got != (storage.Leftovers{Uploads: 4}) || !slices.Equal(f.aborted, want) {
		t.Errorf("RemoveLeftovers = %+v, %v, aborting %v; want %v", got, err, f.aborted, want)
	}
	if f.lists != 3 {
		t.Errorf("%d listings, want 3: the prefix's 4 uploads take 2 pages of 2, and the name one more", f.lists)
	}
}

package s3

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/backstream/backstream/internal/storage"
)

var _ storage.LeftoverRemover = (*Backend)(nil)

// upload is one incomplete multipart upload.
type upload struct{ key, id string }

// RemoveLeftovers aborts every incomplete multipart upload of an object
// whose name starts with prefix, and of each of opts.Names. An S3 server
// lists the uploads under a prefix; MinIO does not (it takes the prefix
// for a whole key and lists the uploads of that one object), so each
// name is asked for by its whole key too, the one listing every
// S3-compatible server supports. On MinIO an upload is thus found only
// through its name; those nobody names are left to MinIO's own expiry of
// stale uploads (24 hours by default).
func (b *Backend) RemoveLeftovers(ctx context.Context, prefix string, opts storage.LeftoverOptions) (storage.Leftovers, error) {
	var done storage.Leftovers
	if err := storage.CheckPrefix(prefix); err != nil {
		return done, err
	}
	for _, name := range opts.Names {
		if err := storage.CheckName(name); err != nil {
			return done, err
		}
	}
	seen := map[upload]bool{}
	var found []upload
	add := func(ups []upload) {
		for _, u := range ups {
			if !seen[u] {
				seen[u] = true
				found = append(found, u)
			}
		}
	}
	pk := b.key(prefix)
	ups, err := b.listUploads(ctx, pk, "incomplete uploads under "+b.desc(prefix), func(key string) bool { return strings.HasPrefix(key, pk) })
	if err != nil {
		return done, err
	}
	add(ups)
	for _, name := range opts.Names {
		key := b.key(name)
		ups, err := b.listUploads(ctx, key, "incomplete uploads of "+b.desc(name), func(k string) bool { return k == key })
		if err != nil {
			return done, err
		}
		add(ups)
	}
	if opts.DryRun {
		done.Uploads = len(found)
		return done, nil
	}
	slices.SortFunc(found, func(x, y upload) int { return strings.Compare(x.key+"\x00"+x.id, y.key+"\x00"+y.id) })
	for _, u := range found {
		name := strings.TrimPrefix(u.key, b.prefix)
		err := b.retry(ctx, "aborting multipart upload of "+b.desc(name), func(ctx context.Context, _ func()) error {
			return b.abortUpload(ctx, u.key, u.id)
		})
		if err != nil {
			return done, fmt.Errorf("aborting incomplete upload %s of %s: %w", u.id, b.desc(name), err)
		}
		done.Uploads++
	}
	return done, nil
}

// listUploads lists the incomplete multipart uploads the server reports
// for the key prefix, keeping those whose key match accepts.
func (b *Backend) listUploads(ctx context.Context, keyPrefix, what string, match func(key string) bool) ([]upload, error) {
	var ups []upload
	err := b.retry(ctx, "listing "+what, func(ctx context.Context, _ func()) error {
		ups = ups[:0]
		keyMarker, idMarker := "", ""
		for {
			res, err := b.core.ListMultipartUploads(ctx, b.bucket, keyPrefix, keyMarker, idMarker, "", 1000)
			if err != nil {
				return err
			}
			for _, u := range res.Uploads {
				if match(u.Key) {
					ups = append(ups, upload{u.Key, u.UploadID})
				}
			}
			if !res.IsTruncated {
				return nil
			}
			if res.NextKeyMarker == keyMarker && res.NextUploadIDMarker == idMarker {
				return fmt.Errorf("the server's listing of incomplete uploads does not advance past key %q, upload %q", keyMarker, idMarker)
			}
			keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
		}
	})
	return ups, err
}

// abortUpload aborts one multipart upload; one already gone is no error.
func (b *Backend) abortUpload(ctx context.Context, key, uploadID string) error {
	err := b.core.AbortMultipartUpload(ctx, b.bucket, key, uploadID)
	var er minio.ErrorResponse
	if errors.As(err, &er) && er.Code == "NoSuchUpload" {
		return nil
	}
	return err
}

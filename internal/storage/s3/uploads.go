package s3

import (
	"context"
	"errors"

	"github.com/minio/minio-go/v7"

	"github.com/backstream/backstream/internal/storage"
)

// AbortUploads aborts every incomplete multipart upload of the object
// name. It asks for the exact key, the one listing every S3-compatible
// server supports (MinIO lists incomplete uploads of exact keys only).
func (b *Backend) AbortUploads(ctx context.Context, name string) (int, error) {
	if err := storage.CheckName(name); err != nil {
		return 0, err
	}
	key := b.key(name)
	var ids []string
	err := b.retry(ctx, "listing incomplete uploads of "+b.desc(name), func(ctx context.Context, _ func()) error {
		ids = ids[:0]
		keyMarker, idMarker := "", ""
		for {
			res, err := b.core.ListMultipartUploads(ctx, b.bucket, key, keyMarker, idMarker, "", 1000)
			if err != nil {
				return err
			}
			for _, u := range res.Uploads {
				if u.Key == key {
					ids = append(ids, u.UploadID)
				}
			}
			if !res.IsTruncated {
				return nil
			}
			keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
		}
	})
	if err != nil {
		return 0, err
	}
	for i, id := range ids {
		err := b.retry(ctx, "aborting multipart upload of "+b.desc(name), func(ctx context.Context, _ func()) error {
			return b.abortUpload(ctx, key, id)
		})
		if err != nil {
			return i, err
		}
	}
	return len(ids), nil
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

package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/backstream/backstream/internal/storage"
)

// MaxSmallObject bounds what is read into memory as a whole: indexes,
// metadata copies and manifests.
const MaxSmallObject = 256 << 20

// PutSmall stores data as dir/name and returns its record.
func PutSmall(ctx context.Context, b storage.Backend, dir, name string, data []byte, alg string) (Object, error) {
	o, err := ObjectOf(name, data, alg)
	if err != nil {
		return Object{}, err
	}
	n, err := b.Put(ctx, dir+"/"+name, bytes.NewReader(data))
	if err != nil {
		return Object{}, fmt.Errorf("store %s/%s: %w", dir, name, err)
	}
	if n != int64(len(data)) {
		return Object{}, fmt.Errorf("store %s/%s: backend kept %d bytes of %d", dir, name, n, len(data))
	}
	return o, nil
}

// GetSmall reads the object o of the backup in dir and checks its size and
// digest.
func GetSmall(ctx context.Context, b storage.Backend, dir string, o Object) ([]byte, error) {
	if o.Size > MaxSmallObject {
		return nil, fmt.Errorf("object %s: %d bytes is too large to read whole", o.Name, o.Size)
	}
	rc, err := b.Open(ctx, dir+"/"+o.Name, 0, -1)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, missing(dir+"/"+o.Name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", o.Name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, o.Size+1))
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", o.Name, err)
	}
	if int64(len(data)) != o.Size {
		return nil, Corruptf("object %s: %d bytes, manifest says %d", o.Name, len(data), o.Size)
	}
	alg, err := digestAlg(o.Digest)
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", o.Name, err)
	}
	h, _ := NewHash(alg)
	h.Write(data)
	if got := formatDigest(alg, h); got != o.Digest {
		return nil, Corruptf("object %s: digest %s, manifest says %s", o.Name, got, o.Digest)
	}
	return data, nil
}

// ObjectOf describes data as the object name, with its size and digest.
func ObjectOf(name string, data []byte, alg string) (Object, error) {
	h, err := NewHash(alg)
	if err != nil {
		return Object{}, err
	}
	h.Write(data)
	return Object{Name: name, Size: int64(len(data)), Digest: formatDigest(alg, h)}, nil
}

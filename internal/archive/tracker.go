package archive

import (
	"fmt"
	"hash"
	"sort"
	"strings"

	"github.com/backstream/backstream/internal/xbstream"
)

// fileTracker follows the files of one stream, chunk by chunk in stream
// order: their final size and, while a file is written front to back, a
// running digest of its content; on the writer's side also the frames that
// hold each file's chunks. The writer records what it saw; the reader
// recomputes the same and compares.
type fileTracker struct {
	alg   string
	files map[string]*fileState
	// moved is set once the stream removed or renamed a path: a file's
	// history then spans more than its own chunks (an old name, a removed
	// incarnation), so no file of the stream gets frame ranges.
	moved bool
}

type fileState struct {
	size       int64
	next       int64
	sequential bool
	h          hash.Hash // while the file is open: its digest so far
	// digest is the file's, once its EOF chunk ended it: the hash's
	// state is then let go (a stream of 10,000 tables held a BLAKE3
	// state for each of them until the end, 400 MB).
	digest string
	frames []FrameRange
}

// end ends the file at its EOF chunk, keeping its digest.
func (st *fileState) end(alg string) {
	if st.sequential && st.h != nil {
		st.digest = formatDigest(alg, st.h)
	}
	st.h = nil
}

// inFrame notes that one of the file's chunks is in frame n.
func (st *fileState) inFrame(n int) {
	if k := len(st.frames); k > 0 && st.frames[k-1][1] >= n-1 {
		st.frames[k-1][1] = max(st.frames[k-1][1], n)
		return
	}
	st.frames = append(st.frames, FrameRange{n, n})
}

func newFileTracker(alg string) *fileTracker {
	return &fileTracker{alg: alg, files: make(map[string]*fileState)}
}

func (t *fileTracker) open(path string) (*fileState, error) {
	st := t.files[path]
	if st == nil {
		h, err := newDigestHash(t.alg)
		if err != nil {
			return nil, err
		}
		st = &fileState{sequential: true, h: h}
		t.files[path] = st
	}
	return st, nil
}

// track follows chunk c, which is in frame n of the stream (n < 0: the
// frames are not recorded).
func (t *fileTracker) track(c *xbstream.Chunk, n int) error {
	var st *fileState // the file whose chunk it is, when it stays
	switch c.Type {
	case xbstream.TypePayload:
		var err error
		if st, err = t.open(c.Path); err != nil {
			return err
		}
		end := int64(c.Offset) + int64(len(c.Payload))
		if st.sequential && st.h != nil && c.Flags&xbstream.FlagRewrite == 0 && int64(c.Offset) == st.next {
			st.h.Write(c.Payload)
			st.next = end
		} else {
			// Out of order, rewritten, or written again after its end (whose
			// hash state is gone): the file gets no digest.
			st.sequential, st.h, st.digest = false, nil, ""
		}
		st.size = max(st.size, end)
	case xbstream.TypeSeek:
		if st = t.files[c.Path]; st != nil {
			st.sequential, st.h, st.digest = false, nil, ""
		}
	case xbstream.TypeRemove:
		t.remove(c.Path)
	case xbstream.TypeRename:
		t.moved = true
		if st := t.files[c.Path]; st != nil {
			delete(t.files, c.Path)
			t.files[c.NewPath] = st
		}
	case xbstream.TypeEOF:
		// A file opened and ended without payload exists, empty.
		var err error
		if st, err = t.open(c.Path); err != nil {
			return err
		}
		st.end(t.alg)
	}
	if st != nil && n >= 0 {
		st.inFrame(n)
	}
	return nil
}

// endedAs reports whether the file at path, just ended by its EOF chunk,
// is as want records it: a digest (the whole file written front to back)
// and the size, both equal.
func (t *fileTracker) endedAs(path string, want File) bool {
	st := t.files[path]
	return st != nil && st.digest != "" && want.Digest != "" && st.digest == want.Digest && st.size == want.Size && want.Path == path
}

// remove forgets what a remove chunk deletes, as mbstream applies it: the
// path and everything below it; a path ending in "*" removes only the file
// named by the rest (see physical.DatadirWriter).
func (t *fileTracker) remove(p string) {
	t.moved = true
	if name, ok := strings.CutSuffix(p, "*"); ok {
		delete(t.files, name)
		return
	}
	delete(t.files, p)
	for q := range t.files {
		if strings.HasPrefix(q, p+"/") {
			delete(t.files, q)
		}
	}
}

// records returns the manifest records of the tracked files, sorted by path.
func (t *fileTracker) records(stream int) []File {
	files := make([]File, 0, len(t.files))
	for p, st := range t.files {
		f := File{Path: p, Size: st.size, Stream: stream}
		switch {
		case !st.sequential:
		case st.h != nil: // never ended
			f.Digest = formatDigest(t.alg, st.h)
		default:
			f.Digest = st.digest
		}
		if !t.moved {
			f.Frames = st.frames
		}
		files = append(files, f)
	}
	sort.Slice(files, func(a, b int) bool { return files[a].Path < files[b].Path })
	return files
}

// compare checks what a reader tracked against the manifest's records of
// the same stream.
func (t *fileTracker) compare(stream int, want []File) error {
	got := t.records(stream)
	byPath := make(map[string]File, len(got))
	for _, f := range got {
		byPath[f.Path] = f
	}
	for _, w := range want {
		g, ok := byPath[w.Path]
		if !ok {
			return fmt.Errorf("file %s: listed in the manifest but not in the stream", w.Path)
		}
		delete(byPath, w.Path)
		if g.Size != w.Size {
			return fmt.Errorf("file %s: size %d, manifest says %d", w.Path, g.Size, w.Size)
		}
		if w.Digest != "" && g.Digest != w.Digest {
			return fmt.Errorf("file %s: content digest %s, manifest says %s", w.Path, g.Digest, w.Digest)
		}
	}
	for p := range byPath {
		return fmt.Errorf("file %s: in the stream but not in the manifest", p)
	}
	return nil
}

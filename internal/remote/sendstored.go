package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/transport"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// StoredBackup is a backup of a repository sent as it is stored (send ID
// --repo R) rather than taken as it is sent: its manifest, with its
// contents loaded, what reads its streams, and its metadata objects.
type StoredBackup struct {
	Manifest *archive.Manifest
	Input    archive.Input // a repository's: it also fetches chosen frames (archive.FrameRanger)
	Meta     map[string][]byte
}

// wire is the manifest as a sender sends it: its contents in it, as a
// backup being taken has them, without the repository's own encryption
// (what travels is plain, inside TLS) and without the metadata object
// that held the contents apart.
func (b *StoredBackup) wire() *archive.Manifest {
	w := *b.Manifest
	w.Contents, w.Format, w.Encryption = nil, archive.FormatVersion, nil
	w.Meta = slices.DeleteFunc(slices.Clone(w.Meta), func(o archive.Object) bool { return o.Name == archive.ContentsName })
	return &w
}

// SendStored sends the stored backup b to every receiver at once: each
// gets the streams, or the frames of them, that it asks for (a resumed
// receive asks only for what it does not hold yet), then the metadata
// objects and the manifest; and waits for each one's outcome. As Commit,
// it fails only if every receiver failed, or if what the repository holds
// is damaged (a frame that fails its CRC-32C, named); Reports then says
// what each receiver reported or why it failed, and SentBytes how much it
// was sent.
func (s *Sender) SendStored(ctx context.Context, b *StoredBackup, counter archive.Counter) error {
	m := b.wire()
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	failed := s.each(func(p *peer) error {
		if p.err = p.sendStored(ctx, s, b, m, data, counter); p.err != nil {
			// The receiver hears why at once, rather than wait for the
			// streams it still expects until its idle timeout.
			p.control.Abort("the sender failed: " + p.err.Error())
			return fmt.Errorf("receiver %s: %w", p.addr, p.err)
		}
		return nil
	})
	for _, p := range s.peers {
		if archive.IsCorrupt(p.err) && errors.Is(p.err, errStoredDamage) {
			return p.err
		}
	}
	for _, p := range s.peers {
		if p.err == nil {
			return nil
		}
	}
	return failed
}

// errStoredDamage marks damage found in the sender's own repository, as
// opposed to a receiver's report of damage in what it received.
var errStoredDamage = errors.New("the stored backup is damaged")

// sendStored sends b (m, marshalled as data) to one receiver: the
// manifest, the streams it asks for, the metadata objects, then the
// manifest again as the commit, and reads its outcome.
func (p *peer) sendStored(ctx context.Context, s *Sender, b *StoredBackup, m *archive.Manifest, data []byte, counter archive.Counter) error {
	wants, err := p.announce(msgStored, data, b.Manifest, true)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	for i, w := range wants {
		if w.Skip {
			continue
		}
		g.Go(func() error { return p.sendStream(gctx, s, b, i, w, counter) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, o := range m.Meta {
		content, ok := b.Meta[o.Name]
		if !ok {
			return fmt.Errorf("backup %s: metadata object %s was not read", m.ID, o.Name)
		}
		if err := p.control.WriteMessage(msgMeta, metaMessage(o.Name, content)); err != nil {
			return p.failed(err)
		}
	}
	return p.commit(ctx, data)
}

// sendStream sends stream i of b, as much of it as w asks, on a
// connection of its own: each frame read from the repository and checked
// against its CRC-32C (a deduplicating repository's Input proves its
// frames itself: their CRC-32C is computed here, for the receiver), then
// the stream's record.
func (p *peer) sendStream(ctx context.Context, s *Sender, b *StoredBackup, i int, w streamWant, counter archive.Counter) (err error) {
	m, st := b.Manifest, b.Manifest.Streams[i]
	var src archive.FrameSource
	if w.whole() {
		src, err = b.Input.OpenStream(ctx, i, st)
	} else {
		src, err = b.Input.(archive.FrameRanger).OpenFrames(ctx, i, st, w.Frames)
	}
	if err != nil {
		return stored(m, st, err)
	}
	defer src.Close()
	_, verified := b.Input.(archive.ContentVerifier)
	c, err := transport.Dial(ctx, p.addr, streamPurpose(i, m.ID), s.opt)
	if err != nil {
		return p.errorf("stream %d: %w", i, err)
	}
	defer func() {
		if err != nil {
			c.Abort("the sender failed: " + err.Error())
		}
		c.Close()
	}()
	for n := 0; ; n++ {
		f, buf, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return stored(m, st, err)
		}
		if crc := crc32.Checksum(buf, castagnoli); verified {
			f.CRC = crc // the input proved the frame; the receiver checks the CRC
		} else if crc != f.CRC {
			archive.ReleaseFrameBuffer(buf)
			return stored(m, st, archive.Corruptf("frame %d at offset %d: checksum mismatch, the stored data is corrupt", frameNum(w, n), f.Offset))
		}
		if err := c.WriteMessage(msgFrame, frameRecord(f)); err != nil {
			archive.ReleaseFrameBuffer(buf)
			return p.failed(err)
		}
		err = c.WriteMessage(msgData, buf)
		archive.ReleaseFrameBuffer(buf)
		if err != nil {
			return p.failed(err)
		}
		p.sent.Add(int64(f.Stored))
		if counter != nil {
			counter.In(int64(f.Raw))
			counter.Out(int64(f.Stored))
		}
	}
	rec, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := c.WriteMessage(msgTrailer, rec); err != nil {
		return p.failed(err)
	}
	if err := c.CloseWrite(); err != nil {
		return p.failed(err)
	}
	return nil
}

// frameNum is the stream's number of the n-th frame sent of what w asks.
func frameNum(w streamWant, n int) int {
	if w.Frames != nil && n < len(w.Frames) {
		return w.Frames[n]
	}
	return n
}

// stored names damage the repository's copy of stream st holds as such:
// the backup, the stream's object, the frame and offset.
func stored(m *archive.Manifest, st archive.Stream, err error) error {
	if !archive.IsCorrupt(err) {
		return fmt.Errorf("backup %s: reading %s: %w", m.ID, st.Name, err)
	}
	return fmt.Errorf("backup %s: %w: %w", m.ID, errStoredDamage, archive.Corruptf("object %s: %v", st.Name, err))
}

package binlog

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/backstream/backstream/internal/archive"
)

// SegmentFormat is the version of a segment object's header.
const SegmentFormat = 1

// maxSegmentHeader bounds a segment object's header line.
const maxSegmentHeader = 64 << 10

// Segment is the header of a segment object: bytes [Start, End) of a
// binary log file the server is still writing, which begin and end at
// transaction boundaries. One object holds the header (one JSON line)
// and then the bytes, so that a segment costs one write; the header's
// Digest covers the bytes.
type Segment struct {
	Format int `json:"format"`
	archive.BinlogFile
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
	Digest string `json:"digest"`
}

// SegmentHeader encodes the header line of the segment of file bytes
// payload, indexed by ix, with a digest by alg.
func SegmentHeader(ix archive.BinlogFile, start, end int64, payload io.Reader, alg string) ([]byte, error) {
	h, err := archive.NewHash(alg)
	if err != nil {
		return nil, err
	}
	if n, err := io.Copy(h, payload); err != nil {
		return nil, err
	} else if n != end-start {
		return nil, fmt.Errorf("segment %d..%d of %s: %d bytes", start, end, ix.Name, n)
	}
	ix.Size = end - start
	line, err := json.Marshal(Segment{Format: SegmentFormat, BinlogFile: ix, Start: start, End: end,
		Digest: alg + ":" + hex.EncodeToString(h.Sum(nil))})
	if err != nil {
		return nil, err
	}
	return append(line, '\n'), nil
}

// ReadSegment reads a segment object from r, which its name says holds
// bytes [start, end) of the binary log file name of source, and copies
// those bytes to w (nil: it reads the header only). Everything is
// checked: the header against the name, the length, the digest. Damage
// is archive.IsCorrupt.
func ReadSegment(r io.Reader, source, name string, start, end int64, w io.Writer) (Segment, error) {
	what := fmt.Sprintf("segment %d..%d of binary log %s of %s", start, end, name, source)
	br := bufio.NewReaderSize(r, 64<<10)
	line, err := readLine(br)
	if errors.Is(err, errHeaderLine) {
		return Segment{}, archive.Corruptf("%s: %v", what, err)
	} else if err != nil {
		return Segment{}, fmt.Errorf("%s: %w", what, err)
	}
	var s Segment
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Segment{}, archive.Corruptf("%s: header: %v", what, err)
	}
	switch {
	case s.Format != SegmentFormat:
		return s, archive.Corruptf("%s: header format %d, want %d", what, s.Format, SegmentFormat)
	case s.Source != source || s.Name != name || s.Start != start || s.End != end || s.Size != end-start:
		return s, archive.Corruptf("%s: the header describes bytes %d..%d (%d) of %s of %s", what, s.Start, s.End, s.Size, s.Name, s.Source)
	}
	if w == nil {
		return s, nil
	}
	alg, _, _ := strings.Cut(s.Digest, ":")
	h, err := archive.NewHash(alg)
	if err != nil {
		return s, archive.Corruptf("%s: digest %q: %v", what, s.Digest, err)
	}
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(br, end-start))
	if err != nil {
		return s, fmt.Errorf("%s: %w", what, err)
	}
	if n != end-start {
		return s, archive.Corruptf("%s: %d bytes, want %d", what, n, end-start)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return s, archive.Corruptf("%s: longer than its %d bytes", what, end-start)
	}
	if got := alg + ":" + hex.EncodeToString(h.Sum(nil)); got != s.Digest {
		return s, archive.Corruptf("%s: digest %s, the header says %s", what, got, s.Digest)
	}
	return s, nil
}

// errHeaderLine is a segment object without a header line of sane size.
var errHeaderLine = errors.New("no header line")

// readLine reads the header line, newline excluded.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > maxSegmentHeader {
			return nil, fmt.Errorf("%w of at most %d bytes", errHeaderLine, maxSegmentHeader)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil, errHeaderLine
		default:
			return nil, err
		}
	}
}

package binlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
)

// More event types the Segmenter looks at, to find where transactions end.
const (
	eventQuery           = 2
	eventXID             = 16
	eventXAPrepare       = 38
	eventQueryCompressed = 165
	eventStartEncryption = 164

	logInUse       = 0x0001 // LOG_EVENT_BINLOG_IN_USE_F, in a format description's header flags
	logArtificial  = 0x0020 // LOG_EVENT_ARTIFICIAL_F: an event no server wrote to its binary log
	gtidStandalone = 0x01   // FL_STANDALONE: the group is the GTID event and the next Query event

	checksumOff   = 0
	checksumCRC32 = 1
	checksumUndef = 255

	// maxInspected bounds the body of an event read to learn where its
	// group ends: COMMIT and ROLLBACK are short, and no other event whose
	// body matters is large.
	maxInspected = 64 << 10
	readWindow   = 1 << 20
)

// Segmenter follows a binary log file while mariadb-binlog appends to it
// and finds the transaction boundaries in it: the offsets where no event
// group is open, so that the bytes up to one can be stored and replayed
// without a transaction cut in two. Only whole events count: a tail still
// being written is read again by the next Advance.
//
// An event group starts at a GTID event. One flagged standalone (DDL)
// ends with the next Query event; any other ends with an XID event, an XA
// PREPARE event, or a Query event whose text is COMMIT or ROLLBACK.
// Events outside groups (format description, GTID list, binlog
// checkpoint, rotate, stop) end where they end.
type Segmenter struct {
	f         *os.File
	name      string
	off       int64 // end of the last whole event read
	stored    int64 // where the next segment starts
	boundary  int64 // the newest transaction boundary
	crc       bool  // events end with a CRC-32 (binlog_checksum=CRC32)
	queryPost int   // a Query event's post-header length, from the format description
	inGroup   bool
	alone     bool               // the open group is standalone
	open      archive.BinlogFile // index of the events of the open group from stored on
	ready     archive.BinlogFile // index of the events in [stored, boundary)
	// onUnit, when set (ReadUnits), is told of every unit as it ends.
	onUnit   func(Unit) error
	unit     Unit
	unitOpen bool
	serverID uint32 // of the format description
	buf      []byte // file bytes from bufOff
	bufOff   int64
}

// OpenSegmenter opens the binary log file at path. Segments before stored
// (what an earlier run already stored) are not offered again; stored must
// be a boundary, as every stored segment ends at one.
func OpenSegmenter(path string, stored int64) (*Segmenter, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &Segmenter{f: f, name: path, stored: stored, boundary: stored}, nil
}

// Close closes the file.
func (s *Segmenter) Close() error { return s.f.Close() }

// Ready returns the segment the Segmenter has for storing: the bytes
// [start, end) of the file, from where the last one ended to the newest
// boundary, and their index; end == start when there is none.
func (s *Segmenter) Ready() (start, end int64, ix archive.BinlogFile) {
	if s.boundary <= s.stored {
		return s.stored, s.stored, archive.BinlogFile{}
	}
	ix = s.ready
	ix.Size = s.boundary - s.stored
	return s.stored, s.boundary, ix
}

// Stored records that the segment Ready returned, up to end, is durable.
func (s *Segmenter) Stored(end int64) {
	s.stored = end
	s.ready = archive.BinlogFile{}
}

// Advance reads every whole event the file holds now.
func (s *Segmenter) Advance() error {
	st, err := s.f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if s.off == 0 {
		head, ok, err := s.bytesAt(0, int64(len(Magic)), size)
		if err != nil || !ok {
			return err
		}
		if !bytes.Equal(head, Magic) {
			return fmt.Errorf("binlog: %s: bad magic %x (not a binary log file)", s.name, head)
		}
		s.off = int64(len(Magic))
	}
	for {
		hdr, ok, err := s.bytesAt(s.off, headerLen, size)
		if err != nil || !ok {
			return err
		}
		typ := hdr[4]
		n := binary.LittleEndian.Uint32(hdr[9:])
		if n < headerLen || n > maxEventSize {
			return fmt.Errorf("binlog: %s: event at offset %d: size %d out of range", s.name, s.off, n)
		}
		ts := binary.LittleEndian.Uint32(hdr[0:])
		server := binary.LittleEndian.Uint32(hdr[5:])
		if s.off+int64(n) > size {
			return nil // not whole yet
		}
		var body []byte
		if inspected(typ, n) {
			ev, _, err := s.bytesAt(s.off, int64(n), size)
			if err != nil {
				return err
			}
			if body, err = s.checkedBody(ev); err != nil {
				return err
			}
		}
		if err := s.event(typ, ts, server, body, int64(n)); err != nil {
			return err
		}
	}
}

// inspected says whether an event's body is read: those that say where
// a group starts or ends, and the GTID list a segment's index records.
func inspected(typ byte, size uint32) bool {
	switch typ {
	case eventFormatDescription, eventGTID, eventGTIDList:
		return true
	case eventQuery:
		return size <= maxInspected
	}
	return false
}

// checkedBody returns the body of the whole event ev without its
// checksum, checking the checksum. The format description says whether
// there is one, and its own always ends with the algorithm and 4 bytes.
func (s *Segmenter) checkedBody(ev []byte) ([]byte, error) {
	typ := ev[4]
	body := ev[headerLen:]
	crc := s.crc
	if typ == eventFormatDescription {
		// binlog_version(2) server_version(50) created(4) header_length(1),
		// post-header lengths, checksum algorithm(1), checksum(4).
		if len(body) < 57+eventQuery+5 || binary.LittleEndian.Uint16(body) != 4 || body[56] != headerLen {
			return nil, fmt.Errorf("binlog: %s: format description at offset %d is not one of binary log version 4 with %d-byte headers", s.name, s.off, headerLen)
		}
		alg := body[len(body)-5]
		switch alg {
		case checksumOff, checksumUndef:
			crc = false
		case checksumCRC32:
			crc = true
		default:
			return nil, fmt.Errorf("binlog: %s: format description at offset %d: unknown binlog_checksum algorithm %d", s.name, s.off, alg)
		}
		s.crc = crc
		s.queryPost = int(body[57+eventQuery-1])
		if alg == checksumCRC32 {
			if err := checkCRC(ev); err != nil {
				return nil, fmt.Errorf("binlog: %s: event at offset %d: %w", s.name, s.off, err)
			}
		}
		return body[:len(body)-5], nil
	}
	if s.queryPost == 0 {
		return nil, fmt.Errorf("binlog: %s: event at offset %d (type %d) before any format description", s.name, s.off, typ)
	}
	if !crc {
		return body, nil
	}
	if len(body) < 4 {
		return nil, fmt.Errorf("binlog: %s: event at offset %d: too short for its checksum", s.name, s.off)
	}
	if err := checkCRC(ev); err != nil {
		return nil, fmt.Errorf("binlog: %s: event at offset %d: %w", s.name, s.off, err)
	}
	return body[:len(body)-4], nil
}

// checkCRC checks the CRC-32 that ends the event ev. The server computes
// a format description's with the flag that marks its file in use
// (LOG_EVENT_BINLOG_IN_USE_F) clear: it clears the flag when it closes
// the file, and the checksum must hold either way.
func checkCRC(ev []byte) error {
	want := binary.LittleEndian.Uint32(ev[len(ev)-4:])
	got := crc32.ChecksumIEEE(ev[:17])
	flags := binary.LittleEndian.Uint16(ev[17:])
	if ev[4] == eventFormatDescription {
		flags &^= logInUse
	}
	got = crc32.Update(got, crc32.IEEETable, binary.LittleEndian.AppendUint16(nil, flags))
	got = crc32.Update(got, crc32.IEEETable, ev[headerLen:len(ev)-4])
	if got != want {
		return fmt.Errorf("CRC32 %08x, the event says %08x", got, want)
	}
	return nil
}

// event takes one whole event at s.off and moves on past it.
func (s *Segmenter) event(typ byte, ts, server uint32, body []byte, size int64) error {
	start := s.off
	end := start + size
	s.off = end
	if typ == eventStartEncryption {
		return fmt.Errorf("binlog: %s: event at offset %d starts encrypted events, which backstream cannot read (mariadb-binlog should receive them decrypted)", s.name, start)
	}
	if typ == eventFormatDescription {
		s.serverID = server
	}
	if typ == eventGTID && s.inGroup {
		if s.onUnit != nil {
			return fmt.Errorf("binlog: %s: the transaction at offset %d does not end before the next one at offset %d", s.name, s.unit.Start, start)
		}
		// A group that never ended: its server stopped in the middle of
		// writing it. What follows starts afresh.
		s.inGroup = false
		s.open = archive.BinlogFile{}
		s.boundary = max(s.boundary, start)
	}
	if start >= s.stored {
		if err := indexEvent(&s.open, start, ts, typ, server, body); err != nil {
			return err
		}
	}
	ends := true
	switch {
	case typ == eventGTID && !s.inGroup:
		if len(body) < 13 {
			return fmt.Errorf("binlog: %s: GTID event at offset %d: %d bytes", s.name, start, len(body))
		}
		s.inGroup, s.alone = true, body[12]&gtidStandalone != 0
		ends = false
	case !s.inGroup:
	case s.alone:
		ends = typ == eventQuery || typ == eventQueryCompressed
	case typ == eventXID || typ == eventXAPrepare:
	case typ == eventQuery:
		ends = body != nil && endsTransaction(s.queryText(body))
	default:
		ends = false
	}
	if s.onUnit != nil {
		if err := s.unitEvent(typ, ts, server, body, start, end, ends); err != nil {
			return err
		}
	}
	if !ends {
		return nil
	}
	s.inGroup = false
	if end > s.stored {
		s.ready = merge(s.ready, s.open)
		s.boundary = end
	}
	s.open = archive.BinlogFile{}
	return nil
}

// queryText returns the statement of a Query event body (checksum cut
// off): after the post-header, the status variables and the database
// name with its NUL. A body too short for what it declares has none.
func (s *Segmenter) queryText(body []byte) []byte {
	if s.queryPost < 13 || len(body) < s.queryPost {
		return nil
	}
	dbLen := int(body[8])
	varsLen := int(binary.LittleEndian.Uint16(body[11:]))
	at := s.queryPost + varsLen + dbLen + 1
	if at > len(body) {
		return nil
	}
	return body[at:]
}

func endsTransaction(q []byte) bool {
	q = bytes.TrimSpace(q)
	return bytes.EqualFold(q, []byte("COMMIT")) || bytes.EqualFold(q, []byte("ROLLBACK"))
}

// merge appends the index b of the events after a's.
func merge(a, b archive.BinlogFile) archive.BinlogFile {
	a.Events += b.Events
	if a.FirstTime.IsZero() {
		a.FirstTime = b.FirstTime
	}
	if !b.LastTime.IsZero() {
		a.LastTime = b.LastTime
	}
	if a.FirstGTID == "" {
		a.FirstGTID = b.FirstGTID
	}
	if b.LastGTID != "" {
		a.LastGTID = b.LastGTID
	}
	if a.Previous == "" {
		a.Previous = b.Previous
	}
	return a
}

// bytesAt returns n bytes of the file from off, reading a window of it
// at a time; ok is false when the file (size bytes now) does not hold
// them yet.
func (s *Segmenter) bytesAt(off, n, size int64) ([]byte, bool, error) {
	if off+n > size {
		return nil, false, nil
	}
	if off >= s.bufOff && off+n <= s.bufOff+int64(len(s.buf)) {
		return s.buf[off-s.bufOff : off-s.bufOff+n], true, nil
	}
	want := min(max(n, readWindow), size-off)
	if int64(cap(s.buf)) < want {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	got, err := s.f.ReadAt(s.buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, fmt.Errorf("binlog: read %s: %w", s.name, err)
	}
	s.buf, s.bufOff = s.buf[:got], off
	if int64(got) < n {
		return nil, false, nil
	}
	return s.buf[:n], true, nil
}

// Bytes reads the file's bytes [start, end), which Advance has seen whole.
func (s *Segmenter) Bytes(start, end int64) *io.SectionReader {
	return io.NewSectionReader(s.f, start, end-start)
}

// Chain picks, from the segments of one file sorted by start (as
// repo.BinlogSegments lists them), those that hold its bytes from offset
// 0 on without a hole, and returns them with the offset they reach. A
// segment may start before the previous one ends (two archivers cut the
// same bytes at different boundaries): the bytes are the file's either
// way, and a reader skips what it has. gap names the first missing range
// after the chain, if segments lie beyond it.
func Chain(segs []repo.BinlogSegment) (chain []repo.BinlogSegment, end int64, gap string) {
	for i := 0; i < len(segs); {
		best := -1
		for ; i < len(segs) && segs[i].Start <= end; i++ {
			if segs[i].End > end && (best < 0 || segs[i].End > segs[best].End) {
				best = i
			}
		}
		if best < 0 {
			if i < len(segs) {
				return chain, end, fmt.Sprintf("bytes %d..%d", end, segs[i].Start)
			}
			break
		}
		chain = append(chain, segs[best])
		end = segs[best].End
		i = best + 1
	}
	return chain, end, ""
}

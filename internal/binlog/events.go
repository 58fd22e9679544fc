// Package binlog archives a server's binary logs into a repository and
// reads back what is archived: which files, which GTIDs and which moments
// each one covers, written as list --binlogs shows it (WriteListing).
// Following a server, it stores the file being written
// as segments cut at transaction boundaries (Segmenter), in segment
// objects whose format it defines (Segment, ReadSegment). A server
// promoted after a failover continues the old primary's archive through
// a link (and CutBefore trims the first linked file to what follows it).
// It runs mariadb-binlog as a child and stores through the
// repository's API; it knows nothing of flags, and nothing of replaying
// (that is pitr's job).
package binlog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/gtid"
)

// Magic starts every binary log file.
var Magic = []byte{0xfe, 'b', 'i', 'n'}

// Event types this package looks at (MariaDB's numbering).
const (
	eventStop              = 3
	eventRotate            = 4
	eventFormatDescription = 15
	eventGTID              = 162
	eventGTIDList          = 163
	headerLen              = 19
	maxEventSize           = 1 << 30 // max_allowed_packet's ceiling
)

// GTID is one MariaDB global transaction id, domain-server-sequence.
type GTID = gtid.GTID

// Scan reads a whole binary log file and indexes it. It checks the magic,
// that every event header is whole and its size sane, and that events
// follow each other to the end of the file; errors name the offset.
func Scan(r io.Reader) (archive.BinlogFile, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var ix archive.BinlogFile
	head := make([]byte, len(Magic))
	if _, err := io.ReadFull(br, head); err != nil {
		return ix, fmt.Errorf("binlog: no magic: %w", err)
	}
	if string(head) != string(Magic) {
		return ix, fmt.Errorf("binlog: bad magic %x (not a binary log file)", head)
	}
	off := int64(len(Magic))
	var hdr [headerLen]byte
	var body []byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err == io.EOF {
			break
		} else if err != nil {
			return ix, fmt.Errorf("binlog: event at offset %d: truncated header", off)
		}
		ts := binary.LittleEndian.Uint32(hdr[0:])
		typ := hdr[4]
		server := binary.LittleEndian.Uint32(hdr[5:])
		size := binary.LittleEndian.Uint32(hdr[9:])
		if size < headerLen || size > maxEventSize {
			return ix, fmt.Errorf("binlog: event at offset %d: size %d out of range", off, size)
		}
		n := int(size) - headerLen
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(br, body); err != nil {
			return ix, fmt.Errorf("binlog: event at offset %d (type %d, %d bytes): truncated", off, typ, size)
		}
		if err := indexEvent(&ix, off, ts, typ, server, body); err != nil {
			return ix, err
		}
		ix.Closed = typ == eventRotate || typ == eventStop
		off += int64(size)
	}
	ix.Size = off
	return ix, nil
}

// indexEvent adds one event (its header's time, type and server, and its
// body) to ix: the count, the times and the GTIDs. Scan and the Segmenter
// share it, so a segment's index and its file's agree.
func indexEvent(ix *archive.BinlogFile, off int64, ts uint32, typ byte, server uint32, body []byte) error {
	ix.Events++
	if ts != 0 && typ != eventFormatDescription {
		t := time.Unix(int64(ts), 0).UTC()
		if ix.FirstTime.IsZero() {
			ix.FirstTime = t
		}
		ix.LastTime = t
	}
	switch typ {
	case eventGTID:
		if len(body) < 12 {
			return fmt.Errorf("binlog: GTID event at offset %d: %d bytes", off, len(body))
		}
		g := GTID{Seq: binary.LittleEndian.Uint64(body), Domain: binary.LittleEndian.Uint32(body[8:]), Server: server}
		if ix.FirstGTID == "" {
			ix.FirstGTID = g.String()
		}
		ix.LastGTID = g.String()
	case eventGTIDList:
		if list, err := parseGTIDList(body); err == nil {
			ix.Previous = list
		}
	}
	return nil
}

// parseGTIDList reads a GTID list event's body: a count (low 28 bits) and
// that many domain, server, sequence triples.
func parseGTIDList(b []byte) (string, error) {
	if len(b) < 4 {
		return "", errors.New("short GTID list")
	}
	n := int(binary.LittleEndian.Uint32(b) & 0x0fffffff)
	b = b[4:]
	if n > len(b)/16 {
		return "", errors.New("GTID list longer than its event")
	}
	out := ""
	for i := range n {
		g := GTID{Domain: binary.LittleEndian.Uint32(b[16*i:]), Server: binary.LittleEndian.Uint32(b[16*i+4:]), Seq: binary.LittleEndian.Uint64(b[16*i+8:])}
		if i > 0 {
			out += ","
		}
		out += g.String()
	}
	return out, nil
}

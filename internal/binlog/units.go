package binlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Unit is a stretch of a binary log file that replays whole: an event
// group (a transaction, from its GTID event to the event that ends it, as
// the Segmenter finds them) or one event outside any group.
type Unit struct {
	Start, End int64
	Type       byte // the type of its first event
	Group      bool
	GTID       GTID   // a group's
	MaxTime    uint32 // the latest time in its events' headers (seconds since 1970)
	// Statements holds the start (up to statementHead bytes) of each
	// statement its Query events run, but BEGIN, COMMIT and ROLLBACK; "?"
	// for one that cannot be read (a compressed event).
	Statements []string
}

// statementHead is how much of a statement a Unit keeps.
const statementHead = 1024

// File is what ReadUnits learns of a binary log file besides its units.
type File struct {
	CRC      bool   // its events end with a CRC-32
	ServerID uint32 // the server that wrote its format description
}

// ReadUnits reads the binary log file at path and calls fn with each of
// its units in order. A file that is not a whole sequence of them (an
// event cut short, a group never ended, a checksum that does not hold) is
// an error naming the offset.
func ReadUnits(path string, fn func(Unit) error) (File, error) {
	s, err := OpenSegmenter(path, 0)
	if err != nil {
		return File{}, err
	}
	defer s.Close()
	s.onUnit = fn
	if err := s.Advance(); err != nil {
		return File{}, err
	}
	st, err := s.f.Stat()
	if err != nil {
		return File{}, err
	}
	switch {
	case s.off != st.Size():
		return File{}, fmt.Errorf("binlog: %s: the event at offset %d is cut short (the file has %d bytes)", path, s.off, st.Size())
	case s.inGroup:
		return File{}, fmt.Errorf("binlog: %s: the transaction at offset %d does not end in the file", path, s.unit.Start)
	}
	return File{CRC: s.crc, ServerID: s.serverID}, nil
}

// ArtificialRotate encodes the Rotate event a replica's I/O thread writes
// near the head of each relay log, naming the source's file it continues
// (position 4): flagged artificial, with no position of its own, and
// with a CRC-32 when the events around it have one. A binary log file
// made a relay log needs it: parallel replication reads the source's
// file name from it.
func ArtificialRotate(name string, serverID uint32, crc bool) []byte {
	size := headerLen + 8 + len(name)
	if crc {
		size += 4
	}
	ev := make([]byte, headerLen, size)
	ev[4] = eventRotate
	binary.LittleEndian.PutUint32(ev[5:], serverID)
	binary.LittleEndian.PutUint32(ev[9:], uint32(size))
	// log_pos (13..16) stays 0; flags (17..18): LOG_EVENT_ARTIFICIAL_F.
	binary.LittleEndian.PutUint16(ev[17:], logArtificial)
	ev = binary.LittleEndian.AppendUint64(ev, uint64(len(Magic)))
	ev = append(ev, name...)
	if crc {
		ev = binary.LittleEndian.AppendUint32(ev, crc32.ChecksumIEEE(ev))
	}
	return ev
}

// unitEvent adds the event at [start, end) to the unit being read and
// reports the unit when ends says it is whole.
func (s *Segmenter) unitEvent(typ byte, ts, server uint32, body []byte, start, end int64, ends bool) error {
	var stmt []byte
	if typ == eventQuery || typ == eventQueryCompressed {
		var err error
		if stmt, err = s.statement(typ, body, start, end); err != nil {
			return err
		}
	}
	if !s.unitOpen {
		s.unit, s.unitOpen = Unit{Start: start, Type: typ}, true
		if typ == eventGTID {
			s.unit.Group = true
			s.unit.GTID = GTID{Seq: binary.LittleEndian.Uint64(body), Domain: binary.LittleEndian.Uint32(body[8:]), Server: server}
		}
	}
	s.unit.MaxTime = max(s.unit.MaxTime, ts)
	if stmt != nil && !bytes.EqualFold(bytes.TrimSpace(stmt), []byte("BEGIN")) && !endsTransaction(stmt) {
		s.unit.Statements = append(s.unit.Statements, string(stmt[:min(len(stmt), statementHead)]))
	}
	if !ends {
		return nil
	}
	s.unit.End, s.unitOpen = end, false
	return s.onUnit(s.unit)
}

// statement returns the start of the statement of the Query event at
// [start, end): from body when Advance read it, else from the file.
func (s *Segmenter) statement(typ byte, body []byte, start, end int64) ([]byte, error) {
	if typ == eventQueryCompressed {
		return []byte("?"), nil
	}
	if body == nil {
		n := min(end-start-headerLen, 4*statementHead)
		head, ok, err := s.bytesAt(start+headerLen, n, end)
		if err != nil || !ok {
			return nil, fmt.Errorf("binlog: %s: Query event at offset %d: %v", s.name, start, err)
		}
		body = head
	}
	if q := s.queryText(body); q != nil {
		return q, nil
	}
	return []byte("?"), nil
}

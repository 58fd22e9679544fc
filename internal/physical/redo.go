package physical

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/xbstream"
)

// The redo log a backup's prepare applies is the copy mariabackup streams
// as ib_logfile0. Its header holds the format (4 bytes, big-endian) and, at
// byte 8, the LSN of the first byte of log. In the format of MariaDB 10.8
// and later the log starts at byte 12288 and holds mini-transactions, each
// its records (whose lengths are never encrypted), an end byte (0 or 1),
// an 8-byte nonce when the log is encrypted, and a CRC-32C (big-endian) of the records and the nonce. In
// the format of MariaDB 10.5 and 10.6 it starts at byte 2048, in blocks of
// 512 bytes: a 12-byte header whose bytes 4-5 are how much of the block
// holds log (the header counted), and a CRC-32C of the first 508 bytes in
// the last 4. A prepare applies the log up to the end of its last whole
// mini-transaction (10.5: block) and fails when that is short of the LSN
// the backup's checkpoints file says it ends at; mariabackup can end a
// backup with a copy that stops short of it (the copy raced the server's
// last writes). RedoCopy follows the copy as the stream passes, so that such
// a backup is caught, and taken again, before it is committed, and so
// that verify catches one committed before backstream checked.
const (
	redoLogName      = "ib_logfile0"
	redoFormat105    = 0x50485953 // "PHYS": MariaDB 10.5's format
	redoFormat108    = 0x50687973 // "Phys": MariaDB 10.8's format
	redoEncrypted    = 1 << 31    // the format's flag for innodb_encrypt_log
	redoFormatEnc11  = 0xf09f979d // an encrypted log in the format that followed (11.x, later 10.11s)
	redoNonce        = 8
	redoMaxMTR       = 1 << 20 // the records of one mini-transaction, at most (as recovery bounds them)
	redoFirstLSNAt   = 8
	redoHeaderNeeded = 16
	redoBlock        = 512 // 10.5's block
	redoBlockHeader  = 12
)

// redoLayout is what the check knows of a log format: where the log
// starts in the file, and how it is framed.
type redoLayout struct {
	start  uint64
	nonce  int  // 10.8: the size of each mini-transaction's nonce
	blocks bool // 10.5: 512-byte blocks
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// RedoCopy follows the redo log's chunks in a physical backup's stream,
// to Check where the log ends. Its zero value follows nothing yet.
type RedoCopy struct {
	seen    bool
	next    uint64  // the offset the next chunk starts at: the file's length so far
	head    []byte  // the file's first redoHeaderNeeded bytes
	carry   []byte  // the start of a mini-transaction not yet whole
	scan    mtrScan // how far carry is scanned
	whole   uint64  // bytes of log from its start up to the end of its last whole mini-transaction (10.5: the log in its last block)
	ended   bool    // 10.5: a block not full was met, where the log ends
	stopped string  // why the log stopped before the file's end
	skipped string  // why the log cannot be followed ("" while it is)
}

// Chunk takes chunk c of the stream, when it is the redo log's (an
// archive.Sink: chunks of other files may come at once from other
// goroutines, and are not looked at).
func (r *RedoCopy) Chunk(c *xbstream.Chunk) error {
	if c.Type != xbstream.TypePayload || strings.TrimPrefix(c.Path, "./") != redoLogName || r.skipped != "" {
		return nil
	}
	r.seen = true
	if c.Offset != r.next {
		// mariabackup writes the file front to back; anything else is
		// a layout this check does not know.
		r.skipped = fmt.Sprintf("a chunk at offset %d where %d was next", c.Offset, r.next)
		return nil
	}
	p := c.Payload
	r.next += uint64(len(p))
	if n := min(redoHeaderNeeded-len(r.head), len(p)); n > 0 {
		r.head = append(r.head, p[:n]...)
	}
	l, ok := r.layout()
	if !ok {
		if len(r.head) == redoHeaderNeeded {
			r.skipped = fmt.Sprintf("format %#x, which backstream does not read", binary.BigEndian.Uint32(r.head))
		}
		return nil
	}
	if c.Offset < l.start {
		p = p[min(uint64(len(p)), l.start-c.Offset):]
	}
	switch {
	case len(p) == 0 || r.stopped != "" || r.ended:
	case l.blocks:
		r.parseBlocks(p)
	default:
		r.parse(p, l.nonce)
	}
	return nil
}

// layout is the log's layout, once its header has passed, and whether
// backstream reads its format.
func (r *RedoCopy) layout() (redoLayout, bool) {
	if len(r.head) < redoHeaderNeeded {
		return redoLayout{}, false
	}
	switch binary.BigEndian.Uint32(r.head) {
	case redoFormat108:
		return redoLayout{start: 12288}, true
	case redoFormat108 | redoEncrypted, redoFormatEnc11:
		return redoLayout{start: 12288, nonce: redoNonce}, true
	case redoFormat105, redoFormat105 | redoEncrypted:
		return redoLayout{start: 2048, blocks: true}, true
	}
	return redoLayout{}, false
}

// parseBlocks counts the log in the whole 10.5 blocks of p, which follows
// the bytes counted and carried so far, up to a block not full.
func (r *RedoCopy) parseBlocks(p []byte) {
	for len(p) > 0 && !r.ended && r.stopped == "" {
		b := p
		if len(r.carry) > 0 || len(p) < redoBlock {
			n := min(redoBlock-len(r.carry), len(p))
			r.carry, p = append(r.carry, p[:n]...), p[n:]
			if len(r.carry) < redoBlock {
				return
			}
			b = r.carry
		} else {
			p = p[redoBlock:]
		}
		data := int(binary.BigEndian.Uint16(b[4:6]))
		if crc32.Checksum(b[:redoBlock-4], castagnoli) != binary.BigEndian.Uint32(b[redoBlock-4:redoBlock]) || data < redoBlockHeader || data > redoBlock {
			r.stopped = fmt.Sprintf("the next block (at byte %d of the log) is damaged", r.whole)
		} else {
			r.whole += uint64(data)
			r.ended = data < redoBlock
		}
		r.carry = r.carry[:0]
	}
}

// parse counts the whole mini-transactions in p, which follows the bytes
// counted and carried so far.
func (r *RedoCopy) parse(p []byte, nonce int) {
	// The carried mini-transaction first, completed from p's start (a
	// mini-transaction is at most about twice redoMaxMTR).
	for len(r.carry) > 0 && len(p) > 0 {
		k := len(r.carry)
		take := min(len(p), 2*redoMaxMTR+64)
		r.carry = append(r.carry, p[:take]...)
		n, more := redoMTR(r.carry, nonce, &r.scan)
		switch {
		case n > 0:
			r.whole += uint64(n)
			p = p[n-k:]
			r.carry, r.scan = r.carry[:0], mtrScan{}
		case more && take == len(p):
			return
		default:
			r.stop()
			return
		}
	}
	for len(p) > 0 {
		r.scan = mtrScan{}
		n, more := redoMTR(p, nonce, &r.scan)
		if n == 0 {
			if !more {
				r.stop()
				return
			}
			break
		}
		r.whole += uint64(n)
		p = p[n:]
	}
	r.carry = append(r.carry[:0], p...)
}

// stop ends the count at a mini-transaction that does not parse.
func (r *RedoCopy) stop() {
	r.stopped = fmt.Sprintf("the next mini-transaction (at byte %d of the log) does not parse or its CRC-32C is wrong", r.whole)
	r.carry = nil
}

// mtrScan is how far redoMTR got into a mini-transaction not yet whole:
// the offset of the next record (past the bytes it had) and the records'
// length so far, so that more bytes resume the scan rather than repeat it.
type mtrScan struct{ next, total int }

// redoMTR returns the length of the mini-transaction b starts with when
// it is whole and its CRC-32C is right; else 0, and whether more bytes
// could make it whole (then s says how far the scan got).
func redoMTR(b []byte, nonce int, s *mtrScan) (n int, more bool) {
	if len(b) == 0 {
		return 0, true
	}
	if b[0] <= 1 {
		return 0, false // recovery ends at an empty mini-transaction
	}
	i, total := s.next, s.total
	for ; ; s.next, s.total = i, total {
		if total >= redoMaxMTR {
			return 0, false
		}
		if i >= len(b) {
			return 0, true
		}
		if b[i] <= 1 {
			break
		}
		rlen := int(b[i] & 0xf)
		if rlen == 0 {
			// The record's length is 15 plus a varint, counted in it.
			if i+1 >= len(b) || i+1+redoVarintLen(b[i+1]) > len(b) {
				return 0, true
			}
			add, ok := redoVarint(b[i+1:])
			if !ok || add >= redoMaxMTR {
				return 0, false
			}
			rlen = int(add) + 15
		}
		i += 1 + rlen
		total += rlen
	}
	end := i + 1 + nonce + 4
	if end > len(b) {
		return 0, true
	}
	sum := crc32.Update(0, castagnoli, b[:i])
	sum = crc32.Update(sum, castagnoli, b[i+1:i+1+nonce])
	if sum != binary.BigEndian.Uint32(b[i+1+nonce:end]) {
		return 0, false
	}
	return end, false
}

// redoVarintLen is the length of the varint whose first byte is b.
func redoVarintLen(b byte) int {
	switch {
	case b < 0x80:
		return 1
	case b < 0xc0:
		return 2
	case b < 0xe0:
		return 3
	case b < 0xf0:
		return 4
	}
	return 5
}

// redoVarint decodes the log's varint at b's start (b holds all of it).
func redoVarint(b []byte) (uint32, bool) {
	const min2, min3, min4, min5 = 0x80, 0x4080, 0x204080, 0x10204080
	i := uint32(b[0])
	if i < 0x80 {
		return i, true
	}
	j := uint32(b[1])
	if i < 0xc0 {
		return min2 + ((i&0x3f)<<8 | j), true
	}
	j = j<<8 | uint32(b[2])
	if i < 0xe0 {
		return min3 + ((i&0x1f)<<16 | j), true
	}
	j = j<<8 | uint32(b[3])
	if i < 0xf0 {
		return min4 + ((i&0xf)<<24 | j), true
	}
	if i == 0xf0 {
		if j = j<<8 | uint32(b[4]); j <= ^uint32(min5) {
			return min5 + j, true
		}
	}
	return 0, false
}

// RedoShortError is a backup whose copy of the redo log ends before the
// LSN its checkpoints file says the backup ends at: its prepare would
// fail ("The log was not applied to the intended LSN"). mariabackup's copy
// raced the server's last writes; the backup is taken again.
type RedoShortError struct {
	End, Want uint64
	Why       string // what ends the copy there: the file's end, or a mini-transaction that does not parse
}

func (e *RedoShortError) Error() string {
	return fmt.Sprintf("the redo log mariabackup copied (%s) ends at LSN %d (%s), short of LSN %d, where the backup's checkpoints say it ends: its prepare would fail (\"The log was not applied to the intended LSN\")",
		redoLogName, e.End, e.Why, e.Want)
}

// Check returns a *RedoShortError when the log followed ends before the
// backup's checkpoints say it does. A stream without the log in the
// format followed (MariaDB before 10.8 copies xtrabackup_logfile) is not
// checked here.
func (r *RedoCopy) Check(cp Checkpoints) error {
	if !r.seen || r.skipped != "" {
		return nil
	}
	if _, ok := r.layout(); !ok {
		return nil
	}
	first := binary.BigEndian.Uint64(r.head[redoFirstLSNAt:])
	want := max(cp.ToLSN, cp.LastLSN)
	if end := first + r.whole; end < want {
		why := "the file ends there"
		switch {
		case r.stopped != "":
			why = r.stopped
		case len(r.carry) > 0:
			why = fmt.Sprintf("the file ends %d bytes into the next mini-transaction or block", len(r.carry))
		}
		return &RedoShortError{End: end, Want: want, Why: why}
	}
	return nil
}

// CheckBackup is Check for stored backup m, whose stream was followed
// whole: damage (archive.Corruptf) when m is a physical backup not yet
// prepared (a merged one's log is applied) whose log ends short.
func (r *RedoCopy) CheckBackup(m *archive.Manifest) error {
	if m.Kind != archive.KindPhysical || len(m.MergedFrom) > 0 {
		return nil
	}
	if err := r.Check(Checkpoints{ToLSN: m.Positions.ToLSN, LastLSN: m.Positions.LastLSN}); err != nil {
		return archive.Corruptf("%v", err)
	}
	return nil
}

// RedoSink passes chunks to Sink, and the redo log's to Redo on the way.
type RedoSink struct {
	archive.Sink
	Redo *RedoCopy
}

func (s RedoSink) Chunk(c *xbstream.Chunk) error {
	if err := s.Redo.Chunk(c); err != nil {
		return err
	}
	return s.Sink.Chunk(c)
}

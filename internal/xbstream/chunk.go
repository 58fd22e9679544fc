// Package xbstream reads and writes the xbstream chunk format produced by
// mariabackup --stream=xbstream and consumed by mbstream -x.
//
// A stream is a sequence of chunks. Every chunk starts with a 14-byte fixed
// header; all integers are little-endian:
//
//	magic "XBSTCK01" (8) | flags (1) | type (1) | path length (u32) | path
//
// What follows the path depends on the type (MariaDB 10.11 dialect):
//
//	'P' payload: length (u64) | offset (u64) | CRC-32 IEEE of payload (u32) | payload
//	'E' end:     nothing; closes the file (an 'E' alone creates an empty file)
//	'S' seek:    offset (u64); no payload, no checksum
//	'D' remove:  nothing; mbstream removes the path (a directory recursively)
//	'R' rename:  new path length (u32) | new path
//
// Flags: 0x01 ignorable (unknown types may be skipped), 0x02 rewrite (the
// chunk that opens the file truncates an existing file instead of failing
// because it exists). Percona XtraBackup 8 also uses type 'S', for a sparse
// chunk with a different layout; this package detects it and refuses it.
//
// Paths are relative, shorter than MaxPathLen, have no "", "." or ".."
// element and no NUL byte. Payloads are at most maxPayloadLen bytes: that
// bounds what a forged length can make a reader allocate.
//
// It knows the chunk format and nothing else: not what the files mean,
// not how chunks are framed, compressed or stored.
package xbstream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
)

// Magic starts every chunk.
const Magic = "XBSTCK01"

// MaxPathLen is FN_REFLEN of MariaDB: mbstream refuses a chunk whose path
// (or rename target) is this long or longer, so we refuse it too.
const MaxPathLen = 512

// maxPayloadLen bounds one payload chunk. mariabackup and mbstream -c write
// chunks of at most about 10 MiB (XB_STREAM_MIN_CHUNK_SIZE); the headroom
// covers larger single writes of a datasink without letting a corrupt length
// ask for gigabytes.
const maxPayloadLen = 64 << 20

// Type is the chunk type byte.
type Type byte

// Chunk types of the MariaDB dialect.
const (
	TypePayload Type = 'P'
	TypeEOF     Type = 'E'
	// TypeSeek is MariaDB's seek. Percona's sparse chunk also uses 'S' and is
	// detected and refused, never misread.
	TypeSeek   Type = 'S'
	TypeRemove Type = 'D'
	TypeRename Type = 'R'
)

// String returns the type as mbstream's letter, or its hex value when it is
// not a printable letter.
func (t Type) String() string {
	if t >= 'A' && t <= 'Z' {
		return string(rune(t))
	}
	return fmt.Sprintf("0x%02x", byte(t))
}

// Flags is the chunk flags byte.
type Flags byte

// Chunk flags (XB_STREAM_FLAG_IGNORABLE, XB_STREAM_FLAG_REWRITE).
const (
	FlagIgnorable Flags = 0x01
	FlagRewrite   Flags = 0x02
)

const knownFlags = FlagIgnorable | FlagRewrite

// Chunk is one decoded chunk. Payload aliases the buffer it was decoded from.
type Chunk struct {
	Flags   Flags
	Type    Type
	Path    string
	NewPath string // TypeRename only
	Offset  uint64 // TypePayload: file offset of Payload; TypeSeek: the absolute offset
	Payload []byte // TypePayload only
}

const (
	fixedLen      = len(Magic) + 1 + 1 + 4 // magic, flags, type, path length
	payloadExtra  = 8 + 8 + 4              // length, offset, checksum
	seekExtra     = 8                      // offset
	renameLenSize = 4                      // new path length
)

// extraLen is the size of the type's fields between the path and the
// variable tail (payload or new path).
func extraLen(t Type) int {
	switch t {
	case TypePayload:
		return payloadExtra
	case TypeSeek:
		return seekExtra
	case TypeRename:
		return renameLenSize
	}
	return 0
}

func knownType(t Type) bool {
	switch t {
	case TypePayload, TypeEOF, TypeSeek, TypeRemove, TypeRename:
		return true
	}
	return false
}

// validPath checks the rules every path of a stream obeys; they keep an
// extractor inside its target directory and make a path name one file.
func validPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case len(p) >= MaxPathLen:
		return fmt.Errorf("path length %d is not below the limit %d", len(p), MaxPathLen)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("path %q contains a NUL byte", p)
	case p[0] == '/':
		return fmt.Errorf("path %q is absolute", p)
	}
	for elem := range strings.SplitSeq(p, "/") {
		switch elem {
		case "..":
			return fmt.Errorf("path %q has a \"..\" element", p)
		case ".":
			return fmt.Errorf("path %q has a \".\" element", p)
		case "":
			return fmt.Errorf("path %q has an empty element", p)
		}
	}
	return nil
}

// validateChunk checks what a single chunk can be checked for, except the
// checksum, which only exists in encoded form.
func validateChunk(c *Chunk) error {
	if !knownType(c.Type) {
		return fmt.Errorf("unknown chunk type %v", c.Type)
	}
	if c.Flags&^knownFlags != 0 {
		return fmt.Errorf("chunk %v for %q: unknown flags 0x%02x", c.Type, c.Path, byte(c.Flags))
	}
	if err := validPath(c.Path); err != nil {
		return fmt.Errorf("chunk %v: %w", c.Type, err)
	}
	if c.Type == TypeRename {
		if err := validPath(c.NewPath); err != nil {
			return fmt.Errorf("chunk R for %q: new name: %w", c.Path, err)
		}
	} else if c.NewPath != "" {
		return fmt.Errorf("chunk %v for %q: only a rename chunk has a new path", c.Type, c.Path)
	}
	if c.Type != TypePayload && c.Payload != nil {
		return fmt.Errorf("chunk %v for %q: only a payload chunk has a payload", c.Type, c.Path)
	}
	if c.Type == TypePayload && len(c.Payload) > maxPayloadLen {
		return fmt.Errorf("chunk P for %q: payload of %d bytes exceeds the limit of %d", c.Path, len(c.Payload), maxPayloadLen)
	}
	if c.Type != TypePayload && c.Type != TypeSeek && c.Offset != 0 {
		return fmt.Errorf("chunk %v for %q: only payload and seek chunks have an offset", c.Type, c.Path)
	}
	return nil
}

// encodedLen is the size of c's encoding; c must be valid.
func encodedLen(c *Chunk) int {
	n := fixedLen + len(c.Path) + extraLen(c.Type)
	switch c.Type {
	case TypePayload:
		n += len(c.Payload)
	case TypeRename:
		n += len(c.NewPath)
	}
	return n
}

// appendHeader appends everything of c but a payload; c must be valid.
func appendHeader(dst []byte, c *Chunk) []byte {
	dst = append(dst, Magic...)
	dst = append(dst, byte(c.Flags), byte(c.Type))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(c.Path)))
	dst = append(dst, c.Path...)
	switch c.Type {
	case TypePayload:
		dst = binary.LittleEndian.AppendUint64(dst, uint64(len(c.Payload)))
		dst = binary.LittleEndian.AppendUint64(dst, c.Offset)
		dst = binary.LittleEndian.AppendUint32(dst, crc32.ChecksumIEEE(c.Payload))
	case TypeSeek:
		dst = binary.LittleEndian.AppendUint64(dst, c.Offset)
	case TypeRename:
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(c.NewPath)))
		dst = append(dst, c.NewPath...)
	}
	return dst
}

// AppendChunk appends the encoding of c to dst (computing the CRC-32) after
// validating it (same path rules as decoding).
func AppendChunk(dst []byte, c *Chunk) ([]byte, error) {
	if err := validateChunk(c); err != nil {
		return dst, fmt.Errorf("xbstream: %w", err)
	}
	if free := cap(dst) - len(dst); free < encodedLen(c) {
		grown := make([]byte, len(dst), len(dst)+encodedLen(c))
		copy(grown, dst)
		dst = grown
	}
	dst = appendHeader(dst, c)
	if c.Type == TypePayload {
		dst = append(dst, c.Payload...)
	}
	return dst, nil
}

// DecodeChunk decodes the one complete chunk at the start of b and returns it
// and its encoded length. If b holds only part of a chunk it returns an error
// matching io.ErrUnexpectedEOF. It validates magic, type, path (length, not
// absolute, no ".." element, not empty, no NUL) and the CRC-32 of the payload.
//
// A seek chunk must be followed in b by the start of another chunk (or by
// nothing): otherwise it is a Percona sparse chunk and is refused.
func DecodeChunk(b []byte) (Chunk, int, error) { return decodeWhole(b, nil) }

// DecodeKnownChunk is DecodeChunk for the bytes of a chunk this process
// already checked or encoded (a backup's frames, whose chunks were
// checked as they were read): its payload's CRC-32 is not computed again.
func DecodeKnownChunk(b []byte) (Chunk, int, error) { return decodeWhole(b, &known) }

// known, as decodeSummed's sum, stands for the stored CRC-32 itself.
var known uint32

func decodeWhole(b []byte, sum *uint32) (Chunk, int, error) {
	c, n, err := decodeSummed(b, sum)
	if err == nil && c.Type == TypeSeek {
		err = checkAfterSeek(b[n:], c.Path)
	}
	if err != nil {
		return Chunk{}, 0, fmt.Errorf("xbstream: %w", err)
	}
	return c, n, nil
}

// errPerconaSparse explains the one chunk that looks valid but is not ours.
func errPerconaSparse(path string) error {
	return fmt.Errorf("chunk S for %q is not followed by a chunk: it is a Percona XtraBackup sparse chunk, which the MariaDB xbstream dialect does not have (stream not made by mariabackup?)", path)
}

// checkAfterSeek tells a MariaDB seek chunk from a Percona sparse chunk: the
// MariaDB chunk ends after its offset, where the next magic starts, while the
// Percona chunk continues with lengths, a checksum, a map and a payload.
func checkAfterSeek(next []byte, path string) error {
	n := min(len(next), len(Magic))
	if !bytes.Equal(next[:n], []byte(Magic[:n])) {
		return errPerconaSparse(path)
	}
	return nil
}

// truncated reports that b ends before the need bytes of a chunk.
func truncated(c *Chunk, need, have int) error {
	if c.Path == "" {
		return fmt.Errorf("chunk header truncated: need %d bytes, have %d: %w", need, have, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("chunk %v for %q truncated: need %d bytes, have %d: %w", c.Type, c.Path, need, have, io.ErrUnexpectedEOF)
}

// parseFixed checks the 14-byte fixed header (or as much of it as b holds)
// and returns the flags, type and path length.
func parseFixed(b []byte) (Flags, Type, int, error) {
	n := min(len(b), len(Magic))
	if !bytes.Equal(b[:n], []byte(Magic[:n])) {
		return 0, 0, 0, fmt.Errorf("bad chunk magic %q, want %q", b[:n], Magic)
	}
	if len(b) < fixedLen {
		return 0, 0, 0, truncated(&Chunk{}, fixedLen, len(b))
	}
	f, t := Flags(b[8]), Type(b[9])
	if !knownType(t) {
		if f&FlagIgnorable != 0 {
			return 0, 0, 0, fmt.Errorf("unknown chunk type %v (flagged ignorable, but its layout is unknown)", t)
		}
		return 0, 0, 0, fmt.Errorf("unknown chunk type %v", t)
	}
	if f&^knownFlags != 0 {
		return 0, 0, 0, fmt.Errorf("chunk %v: unknown flags 0x%02x", t, byte(f))
	}
	pathLen := binary.LittleEndian.Uint32(b[10:14])
	if pathLen >= MaxPathLen {
		return 0, 0, 0, fmt.Errorf("chunk %v: path length %d is not below the limit %d", t, pathLen, MaxPathLen)
	}
	return f, t, int(pathLen), nil
}

// decodeSummed decodes one chunk without looking past it, its payload's
// CRC-32 computed here (sum nil), or already by a reader that checksummed
// the payload as it read it, or taken as right (&known); errors are
// unprefixed so that callers can add the context they know.
func decodeSummed(b []byte, sum *uint32) (Chunk, int, error) {
	var c Chunk
	f, t, pathLen, err := parseFixed(b)
	if err != nil {
		return c, 0, err
	}
	c.Flags, c.Type = f, t
	end := fixedLen + pathLen
	if len(b) < end {
		return Chunk{}, 0, truncated(&Chunk{}, end, len(b))
	}
	c.Path = string(b[fixedLen:end])
	if err := validPath(c.Path); err != nil {
		return Chunk{}, 0, fmt.Errorf("chunk %v: %w", t, err)
	}
	need := end + extraLen(t)
	if len(b) < need {
		return Chunk{}, 0, truncated(&c, need, len(b))
	}
	switch t {
	case TypeEOF, TypeRemove:
		return c, end, nil
	case TypeSeek:
		c.Offset = binary.LittleEndian.Uint64(b[end:])
		return c, need, nil
	case TypeRename:
		newLen := binary.LittleEndian.Uint32(b[end:])
		if newLen >= MaxPathLen {
			return Chunk{}, 0, fmt.Errorf("chunk R for %q: new path length %d is not below the limit %d", c.Path, newLen, MaxPathLen)
		}
		total := need + int(newLen)
		if len(b) < total {
			return Chunk{}, 0, truncated(&c, total, len(b))
		}
		c.NewPath = string(b[need:total])
		if err := validPath(c.NewPath); err != nil {
			return Chunk{}, 0, fmt.Errorf("chunk R for %q: new name: %w", c.Path, err)
		}
		return c, total, nil
	}
	// TypePayload
	length := binary.LittleEndian.Uint64(b[end:])
	c.Offset = binary.LittleEndian.Uint64(b[end+8:])
	stored := binary.LittleEndian.Uint32(b[end+16:])
	if length > maxPayloadLen {
		return Chunk{}, 0, fmt.Errorf("chunk P for %q: payload length %d exceeds the limit of %d", c.Path, length, maxPayloadLen)
	}
	if c.Offset+length < c.Offset {
		return Chunk{}, 0, fmt.Errorf("chunk P for %q: offset %d plus length %d overflows", c.Path, c.Offset, length)
	}
	total := need + int(length)
	if len(b) < total {
		return Chunk{}, 0, truncated(&c, total, len(b))
	}
	c.Payload = b[need:total:total]
	var got uint32
	switch sum {
	case &known:
		got = stored
	case nil:
		got = crc32.ChecksumIEEE(c.Payload)
	default:
		got = *sum
	}
	if got != stored {
		return Chunk{}, 0, fmt.Errorf("chunk P for %q at file offset %d: payload checksum mismatch: stored 0x%08x, computed 0x%08x", c.Path, c.Offset, stored, got)
	}
	return c, total, nil
}

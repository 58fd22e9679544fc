package xbstream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"
)

// rawHeader builds a fixed header and path by hand, so tests can forge what
// AppendChunk refuses to write.
func rawHeader(flags byte, typ byte, path string) []byte {
	b := []byte(Magic)
	b = append(b, flags, typ)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(path)))
	return append(b, path...)
}

// rawPayload builds a payload chunk by hand with the given stored checksum.
func rawPayload(path string, off uint64, data []byte, sum uint32) []byte {
	b := rawHeader(0, 'P', path)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(data)))
	b = binary.LittleEndian.AppendUint64(b, off)
	b = binary.LittleEndian.AppendUint32(b, sum)
	return append(b, data...)
}

// perconaSparse builds a Percona XtraBackup 8 sparse chunk: after the path a
// u32 map size, u64 payload length, u64 offset, u32 CRC of map and payload,
// the map (u32 skip, u32 len pairs) and the payload.
func perconaSparse(path string, off uint64, skips, lens []uint32, payload []byte) []byte {
	var m []byte
	for i := range skips {
		m = binary.LittleEndian.AppendUint32(m, skips[i])
		m = binary.LittleEndian.AppendUint32(m, lens[i])
	}
	b := rawHeader(0, 'S', path)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(skips)))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(payload)))
	b = binary.LittleEndian.AppendUint64(b, off)
	b = binary.LittleEndian.AppendUint32(b, crc32.Update(crc32.ChecksumIEEE(m), crc32.IEEETable, payload))
	b = append(b, m...)
	return append(b, payload...)
}

func mustAppend(t testing.TB, dst []byte, cs ...Chunk) []byte {
	t.Helper()
	for i := range cs {
		var err error
		if dst, err = AppendChunk(dst, &cs[i]); err != nil {
			t.Fatalf("AppendChunk(%+v): %v", cs[i], err)
		}
	}
	return dst
}

func TestChunkLayout(t *testing.T) {
	// Byte-exact expectations, written out from the MariaDB sources and
	// checked against mbstream in the interop tests.
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	le64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	data := []byte("hello")
	tests := []struct {
		name string
		c    Chunk
		want []byte
	}{
		{"payload", Chunk{Type: TypePayload, Path: "db/t.ibd", Offset: 7, Payload: data},
			cat([]byte("XBSTCK01\x00P"), le32(8), []byte("db/t.ibd"), le64(5), le64(7), le32(crc32.ChecksumIEEE(data)), data)},
		{"payload rewrite", Chunk{Type: TypePayload, Flags: FlagRewrite, Path: "a", Payload: []byte{}},
			cat([]byte("XBSTCK01\x02P"), le32(1), []byte("a"), le64(0), le64(0), le32(0))},
		{"eof", Chunk{Type: TypeEOF, Path: "ibdata1"}, cat([]byte("XBSTCK01\x00E"), le32(7), []byte("ibdata1"))},
		{"seek", Chunk{Type: TypeSeek, Path: "aria_log.00000001", Offset: 0x1234},
			cat([]byte("XBSTCK01\x00S"), le32(17), []byte("aria_log.00000001"), le64(0x1234))},
		{"remove", Chunk{Type: TypeRemove, Path: "db/t.MAD"}, cat([]byte("XBSTCK01\x00D"), le32(8), []byte("db/t.MAD"))},
		{"rename", Chunk{Type: TypeRename, Path: "db/a.MAI", NewPath: "db2/bb.MAI"},
			cat([]byte("XBSTCK01\x00R"), le32(8), []byte("db/a.MAI"), le32(10), []byte("db2/bb.MAI"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustAppend(t, []byte("prefix"), tt.c)
			if !bytes.Equal(got[6:], tt.want) || string(got[:6]) != "prefix" {
				t.Fatalf("AppendChunk:\n got %q\nwant %q", got, tt.want)
			}
			c, n, err := DecodeChunk(tt.want)
			if err != nil {
				t.Fatalf("DecodeChunk: %v", err)
			}
			if n != len(tt.want) {
				t.Fatalf("DecodeChunk length %d, want %d", n, len(tt.want))
			}
			if c.Type != tt.c.Type || c.Flags != tt.c.Flags || c.Path != tt.c.Path ||
				c.NewPath != tt.c.NewPath || c.Offset != tt.c.Offset || !bytes.Equal(c.Payload, tt.c.Payload) {
				t.Fatalf("DecodeChunk = %+v, want %+v", c, tt.c)
			}
			if (c.Payload != nil) != (tt.c.Type == TypePayload) {
				t.Fatalf("Payload nil-ness wrong for type %v: %v", c.Type, c.Payload)
			}
		})
	}
}

func TestDecodePayloadAliases(t *testing.T) {
	b := mustAppend(t, nil, Chunk{Type: TypePayload, Path: "a", Payload: []byte("xyz")})
	c, _, err := DecodeChunk(b)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] = 'Q'
	if string(c.Payload) != "xyQ" {
		t.Fatalf("Payload %q does not alias the input", c.Payload)
	}
	if cap(c.Payload) != len(c.Payload) {
		t.Fatalf("Payload capacity %d exceeds its length %d: an append would clobber the buffer", cap(c.Payload), len(c.Payload))
	}
}

// DecodeKnownChunk takes the stored CRC-32 as right, which DecodeChunk
// checks; every other check holds.
func TestDecodeKnownChunkSkipsOnlyTheCRC(t *testing.T) {
	bad := rawPayload("db/t.ibd", 0, []byte("data"), 1)
	if _, _, err := DecodeChunk(bad); err == nil {
		t.Fatal("DecodeChunk took a payload whose CRC-32 is wrong")
	}
	c, n, err := DecodeKnownChunk(bad)
	if err != nil || n != len(bad) || string(c.Payload) != "data" {
		t.Errorf("DecodeKnownChunk: %q, %d, %v", c.Payload, n, err)
	}
	if _, _, err := DecodeKnownChunk(bad[:len(bad)-1]); err == nil {
		t.Error("DecodeKnownChunk took a truncated chunk")
	}
	if _, _, err := DecodeKnownChunk(rawPayload("../x", 0, []byte("data"), 1)); err == nil {
		t.Error("DecodeKnownChunk took a path outside the datadir")
	}
}

func TestDecodeErrors(t *testing.T) {
	good := rawPayload("db/t.ibd", 0, []byte("data"), crc32.ChecksumIEEE([]byte("data")))
	tests := []struct {
		name string
		in   []byte
		want string // substring of the error
		eof  bool   // error must match io.ErrUnexpectedEOF
	}{
		{"bad magic", append([]byte("XBSTCK02"), good[8:]...), "bad chunk magic", false},
		{"bad magic short", []byte("XBX"), "bad chunk magic", false},
		{"bad crc names path", rawPayload("db/t.ibd", 0, []byte("data"), 1), `"db/t.ibd"`, false},
		{"bad crc says checksum", rawPayload("db/t.ibd", 0, []byte("data"), 1), "checksum mismatch", false},
		{"path too long", rawHeader(0, 'E', strings.Repeat("x", MaxPathLen)), "path length 512", false},
		{"path too long without path bytes", rawHeader(0, 'E', strings.Repeat("x", MaxPathLen))[:fixedLen], "path length 512", false},
		{"absolute", rawHeader(0, 'E', "/etc/x"), "absolute", false},
		{"dotdot", rawHeader(0, 'E', "../x"), `".." element`, false},
		{"dotdot inside", rawHeader(0, 'E', "a/../../x"), `".." element`, false},
		{"dotdot last", rawHeader(0, 'E', "a/.."), `".." element`, false},
		{"dot", rawHeader(0, 'E', "./a"), `"." element`, false},
		{"double slash", rawHeader(0, 'E', "a//b"), "empty element", false},
		{"trailing slash", rawHeader(0, 'E', "a/"), "empty element", false},
		{"empty path", rawHeader(0, 'E', ""), "empty path", false},
		{"nul", rawHeader(0, 'E', "a\x00b"), "NUL", false},
		{"unknown type", rawHeader(0, 'X', "a"), "unknown chunk type X", false},
		{"unknown type zero", rawHeader(0, 0, "a"), "unknown chunk type 0x00", false},
		{"unknown type ignorable", rawHeader(1, 'Z', "a"), "unknown chunk type Z", false},
		{"unknown flags", rawHeader(0x80, 'E', "a"), "unknown flags 0x80", false},
		{"percona sparse", append(perconaSparse("test/t1.ibd", 0, []uint32{0, 100}, []uint32{10, 6}, make([]byte, 16)), good...), "Percona", false},
		{"percona sparse alone", perconaSparse("test/t1.ibd", 0, []uint32{0}, []uint32{4}, []byte("abcd")), "Percona", false},
		{"rename new path too long", append(binary.LittleEndian.AppendUint32(rawHeader(0, 'R', "a"), MaxPathLen), strings.Repeat("n", MaxPathLen)...), "new path length 512", false},
		{"rename new path absolute", append(binary.LittleEndian.AppendUint32(rawHeader(0, 'R', "a"), 4), "/etc"...), "absolute", false},
		{"rename new path dotdot", append(binary.LittleEndian.AppendUint32(rawHeader(0, 'R', "a"), 5), "../up"...), `".." element`, false},
		{"payload too long", func() []byte {
			b := rawHeader(0, 'P', "a")
			b = binary.LittleEndian.AppendUint64(b, maxPayloadLen+1)
			return append(b, make([]byte, 12)...)
		}(), "exceeds the limit", false},
		{"offset overflow", func() []byte {
			b := rawHeader(0, 'P', "a")
			b = binary.LittleEndian.AppendUint64(b, 2)
			b = binary.LittleEndian.AppendUint64(b, ^uint64(0))
			b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE([]byte("ab")))
			return append(b, "ab"...)
		}(), "overflows", false},
		{"empty input", nil, "truncated", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, n, err := DecodeChunk(tt.in)
			if err == nil {
				t.Fatalf("DecodeChunk succeeded (n=%d), want error containing %q", n, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
			if got := errors.Is(err, io.ErrUnexpectedEOF); got != tt.eof {
				t.Fatalf("errors.Is(%q, io.ErrUnexpectedEOF) = %v, want %v", err, got, tt.eof)
			}
		})
	}
}

func TestDecodeTruncated(t *testing.T) {
	chunks := []Chunk{
		{Type: TypePayload, Path: "db/t.ibd", Offset: 3, Payload: []byte("0123456789")},
		{Type: TypeEOF, Path: "db/t.ibd"},
		{Type: TypeSeek, Path: "aria_log.00000001", Offset: 9},
		{Type: TypeRemove, Path: "db/x.MAD"},
		{Type: TypeRename, Path: "db/x.MAI", NewPath: "db/y.MAI"},
	}
	for _, c := range chunks {
		b := mustAppend(t, nil, c)
		for cut := range len(b) {
			_, _, err := DecodeChunk(b[:cut])
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("chunk %v cut at %d of %d: error %v, want io.ErrUnexpectedEOF", c.Type, cut, len(b), err)
			}
			if cut > fixedLen+len(c.Path) && err != nil && !strings.Contains(err.Error(), c.Path) {
				t.Errorf("chunk %v cut at %d: error %q does not name the path", c.Type, cut, err)
			}
		}
	}
}

func TestDecodeSeekFollowedByChunk(t *testing.T) {
	seek := mustAppend(t, nil, Chunk{Type: TypeSeek, Path: "a", Offset: 5})
	next := mustAppend(t, nil, Chunk{Type: TypePayload, Path: "a", Offset: 5, Payload: []byte("x")})
	for cut := 0; cut <= len(next); cut++ {
		b := append(append([]byte{}, seek...), next[:cut]...)
		c, n, err := DecodeChunk(b)
		if err != nil || n != len(seek) || c.Offset != 5 {
			t.Fatalf("seek followed by %d bytes of a chunk: got %+v, %d, %v", cut, c, n, err)
		}
	}
}

func TestAppendChunkRejects(t *testing.T) {
	tests := []struct {
		name string
		c    Chunk
		want string
	}{
		{"unknown type", Chunk{Type: 'Z', Path: "a"}, "unknown chunk type"},
		{"unknown flag", Chunk{Type: TypeEOF, Flags: 0x10, Path: "a"}, "unknown flags"},
		{"absolute", Chunk{Type: TypeEOF, Path: "/a"}, "absolute"},
		{"dotdot", Chunk{Type: TypeEOF, Path: "a/../../b"}, `".."`},
		{"empty", Chunk{Type: TypeEOF}, "empty path"},
		{"long", Chunk{Type: TypeEOF, Path: strings.Repeat("a", MaxPathLen)}, "limit 512"},
		{"payload on E", Chunk{Type: TypeEOF, Path: "a", Payload: []byte{1}}, "only a payload chunk"},
		{"offset on D", Chunk{Type: TypeRemove, Path: "a", Offset: 1}, "offset"},
		{"new path on P", Chunk{Type: TypePayload, Path: "a", NewPath: "b"}, "new path"},
		{"rename without target", Chunk{Type: TypeRename, Path: "a"}, "new name: empty path"},
		{"rename to absolute", Chunk{Type: TypeRename, Path: "a", NewPath: "/b"}, "absolute"},
		{"payload too big", Chunk{Type: TypePayload, Path: "a", Payload: make([]byte, maxPayloadLen+1)}, "exceeds the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := AppendChunk([]byte("keep"), &tt.c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("AppendChunk error %v, want one containing %q", err, tt.want)
			}
			if string(out) != "keep" {
				t.Fatalf("AppendChunk changed dst on error: %q", out)
			}
		})
	}
	if _, err := AppendChunk(nil, &Chunk{Type: TypeEOF, Path: strings.Repeat("a", MaxPathLen-1)}); err != nil {
		t.Fatalf("path of length MaxPathLen-1 refused: %v", err)
	}
}

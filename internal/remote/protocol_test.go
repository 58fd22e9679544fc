package remote

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
)

const testID = "20261121T190512Z-7f3a"

// testHeader is a header as a sender announces it: names, no sizes yet.
func testHeader(streams int) *archive.Manifest {
	h := &archive.Manifest{Format: archive.FormatVersion, ID: testID, Kind: archive.KindPhysical,
		Codec: "zstd:1", Hash: archive.DefaultHash}
	for i := range streams {
		h.Streams = append(h.Streams, archive.Stream{Object: archive.Object{Name: streamName(i)}})
	}
	return h
}

func streamName(i int) string { return fmt.Sprintf("streams/%05d.xbs.zst", i) }

// testFinal is the manifest a sender commits after header h.
func testFinal(h *archive.Manifest) *archive.Manifest {
	m := *h
	m.Streams = nil
	for _, s := range h.Streams {
		s.Size, s.Digest, s.Frames = 0, digestOf(nil), 0
		m.Streams = append(m.Streams, s)
	}
	return &m
}

func digestOf(data []byte) string {
	o, err := archive.ObjectOf("x", data, archive.DefaultHash)
	if err != nil {
		panic(err)
	}
	return o.Digest
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantError(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one saying %q", what, want)
		return
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %q, want one saying %q", what, err, want)
	}
}

func TestStreamPurpose(t *testing.T) {
	for _, tt := range []struct {
		i  int
		id string
	}{{0, testID}, {7, testID}, {1023, "x"}} {
		p := streamPurpose(tt.i, tt.id)
		i, id, ok := parseStreamPurpose(p)
		if !ok || i != tt.i || id != tt.id {
			t.Errorf("parseStreamPurpose(%q) = %d, %q, %v; want %d, %q", p, i, id, ok, tt.i, tt.id)
		}
	}
	for _, p := range []string{
		"", "control", "listener", "stream", "stream 1", "stream x " + testID, "stream -1 " + testID,
		"stream 1 " + testID + " more", "streams 1 " + testID, "stream 99999999999999999999 " + testID,
		"stream 1.5 " + testID, "stream +1 " + testID + " x",
	} {
		if i, id, ok := parseStreamPurpose(p); ok {
			t.Errorf("parseStreamPurpose(%q) accepted: %d, %q", p, i, id)
		}
	}
}

func TestFrameRecord(t *testing.T) {
	for _, f := range []archive.Frame{
		{Stored: 1, Raw: 1, CRC: 0},
		{Stored: 4 << 20, Raw: 4<<20 + 17, CRC: 0xdeadbeef},
		{Stored: maxFrame, Raw: maxFrame, CRC: 0xffffffff, Offset: 1 << 40},
		{Stored: 7, Raw: 9, CRC: 3, Offset: math.MaxInt64 - maxFrame},
	} {
		rec := frameRecord(f)
		if len(rec) != frameRecordLen {
			t.Fatalf("record of %d bytes, want %d", len(rec), frameRecordLen)
		}
		got, err := parseFrameRecord(rec)
		if err != nil || got != f {
			t.Errorf("parseFrameRecord(frameRecord(%+v)) = %+v, %v", f, got, err)
		}
	}
	recordAt := func(stored, raw uint32, off uint64) []byte {
		b := binary.LittleEndian.AppendUint32(nil, stored)
		b = binary.LittleEndian.AppendUint32(b, raw)
		b = binary.LittleEndian.AppendUint32(b, 1)
		return binary.LittleEndian.AppendUint64(b, off)
	}
	record := func(stored, raw uint32) []byte { return recordAt(stored, raw, 0) }
	for _, tt := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "frame record of 0 bytes"},
		{"short", record(1, 1)[:19], "frame record of 19 bytes"},
		{"the version 3 record", record(1, 1)[:12], "frame record of 12 bytes, want 20"},
		{"long", append(record(1, 1), 0), "frame record of 21 bytes"},
		{"negative offset", recordAt(1, 1, 1<<63), "implausible offset"},
		{"offset past the largest stream", recordAt(1, 1, math.MaxInt64-maxFrame+1), "implausible offset"},
		{"no stored bytes", record(0, 1), "implausible sizes (stored 0, raw 1)"},
		{"no raw bytes", record(1, 0), "implausible sizes (stored 1, raw 0)"},
		{"stored too large", record(maxFrame+1, 1), "implausible sizes"},
		{"raw too large", record(1, maxFrame+1), "implausible sizes"},
		{"all ones", record(^uint32(0), ^uint32(0)), "implausible sizes"},
	} {
		_, err := parseFrameRecord(tt.b)
		wantError(t, tt.name, err, tt.want)
	}
}

func TestMetaMessage(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"xtrabackup_checkpoints", []byte("backup_type = full-backuped\n")},
		{"backup-my.cnf", nil},
		{"m", []byte{0, 1, 2}},
		{strings.Repeat("n", 1<<16-1), []byte("longest name")},
	} {
		name, data, err := parseMeta(metaMessage(tt.name, tt.data))
		if err != nil || name != tt.name || !bytes.Equal(data, tt.data) {
			t.Errorf("parseMeta(metaMessage(%.20q, %q)) = %.20q, %q, %v", tt.name, tt.data, name, data, err)
		}
	}
	for _, tt := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "metadata message of 0 bytes"},
		{"one byte", []byte{1}, "metadata message of 1 bytes"},
		{"no name", []byte{0, 0, 'x'}, "bad name length 0"},
		{"name cut short", []byte{5, 0, 'a', 'b'}, "bad name length 5"},
		{"name one byte short", []byte{2, 0, 'a'}, "bad name length 2"},
		{"name longer than anything", []byte{0xff, 0xff}, "bad name length 65535"},
	} {
		_, _, err := parseMeta(tt.b)
		wantError(t, tt.name, err, tt.want)
	}
}

func TestCheckHeader(t *testing.T) {
	good := testHeader(2)
	h, err := checkHeader(mustJSON(t, good))
	if err != nil {
		t.Fatalf("a good header: %v", err)
	}
	if h.ID != good.ID || h.Codec != good.Codec || len(h.Streams) != 2 || h.Streams[1].Name != good.Streams[1].Name {
		t.Errorf("checkHeader = %+v, want %+v", h, good)
	}
	if _, err := checkHeader(mustJSON(t, testHeader(1024))); err != nil {
		t.Errorf("1024 streams: %v", err)
	}
	with := func(change func(h *archive.Manifest)) []byte {
		h := testHeader(2)
		change(h)
		return mustJSON(t, h)
	}
	for _, tt := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "backup header: unexpected end of JSON input"},
		{"not JSON", []byte("hello"), "backup header: invalid character"},
		{"not an object", []byte("[1,2]"), "backup header: json: cannot unmarshal array"},
		{"wrong type", []byte(`{"format":"1"}`), "backup header: json: cannot unmarshal string"},
		{"trailing data", append(mustJSON(t, good), '}'), "backup header: invalid character"},
		{"old format", with(func(h *archive.Manifest) { h.Format = 0 }), "format 0, this backstream reads 1"},
		{"newer format", with(func(h *archive.Manifest) { h.Format = 2 }), "format 2, this backstream reads 1"},
		{"no id", with(func(h *archive.Manifest) { h.ID = "" }), `bad backup id ""`},
		{"id with a slash", with(func(h *archive.Manifest) { h.ID = "../x" }), `bad backup id "../x"`},
		{"id with a backslash", with(func(h *archive.Manifest) { h.ID = `a\b` }), `bad backup id "a\\b"`},
		{"id with a space", with(func(h *archive.Manifest) { h.ID = "a b" }), `bad backup id "a b"`},
		{"logical", with(func(h *archive.Manifest) { h.Kind = archive.KindLogical }), `kind "logical" cannot be received`},
		{"binlog", with(func(h *archive.Manifest) { h.Kind = archive.KindBinlog }), `kind "binlog" cannot be received`},
		{"no kind", with(func(h *archive.Manifest) { h.Kind = "" }), `kind "" cannot be received`},
		{"unknown hash", with(func(h *archive.Manifest) { h.Hash = "md5" }), "backup " + testID + ": "},
		{"no streams", with(func(h *archive.Manifest) { h.Streams = nil }), "backup " + testID + ": 0 streams"},
		{"too many streams", mustJSON(t, testHeader(1025)), "backup " + testID + ": 1025 streams"},
	} {
		h, err := checkHeader(tt.b)
		wantError(t, tt.name, err, tt.want)
		if h != nil {
			t.Errorf("%s: checkHeader returned a header with its error", tt.name)
		}
	}
}

func TestCheckFinal(t *testing.T) {
	h := testHeader(2)
	final := testFinal(h)
	data, err := final.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkFinal(h, data)
	if err != nil {
		t.Fatalf("a matching manifest: %v", err)
	}
	if m.ID != h.ID || len(m.Streams) != 2 || m.Streams[0].Digest != final.Streams[0].Digest {
		t.Errorf("checkFinal = %+v, want %+v", m, final)
	}
	with := func(change func(m *archive.Manifest)) []byte {
		m := testFinal(h)
		change(m)
		return mustJSON(t, m)
	}
	const mismatch = "the manifest does not match the header it follows"
	for _, tt := range []struct {
		name string
		b    []byte
		want string
	}{
		{"not JSON", []byte("{"), "manifest: unexpected EOF"},
		{"invalid manifest", with(func(m *archive.Manifest) { m.Streams[0].Digest = "" }), "stream 0"},
		{"another id", with(func(m *archive.Manifest) { m.ID = "20261121T190512Z-0000" }), mismatch},
		{"another codec", with(func(m *archive.Manifest) { m.Codec = "lz4:1" }), mismatch},
		{"another hash", with(func(m *archive.Manifest) { m.Hash = archive.HashSHA256 }), mismatch},
		{"fewer streams", with(func(m *archive.Manifest) { m.Streams = m.Streams[:1] }), mismatch},
	} {
		m, err := checkFinal(h, tt.b)
		wantError(t, tt.name, err, tt.want)
		if m != nil {
			t.Errorf("%s: checkFinal returned a manifest with its error", tt.name)
		}
	}
}

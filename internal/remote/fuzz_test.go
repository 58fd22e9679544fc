package remote

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
)

// The parsers of what a sender puts on the wire, each fuzzed from valid
// messages: none may panic, and what one accepts must be what its encoder
// makes, or pass the checks its callers rely on.

func FuzzParseStreamPurpose(f *testing.F) {
	f.Add(streamPurpose(0, testID))
	f.Add(streamPurpose(1023, testID))
	f.Add(controlPurpose)
	f.Add("stream -1 x")
	f.Fuzz(func(t *testing.T, p string) {
		i, id, ok := parseStreamPurpose(p)
		if !ok {
			return
		}
		if i < 0 || id == "" || strings.ContainsAny(id, " \t\n") {
			t.Fatalf("parseStreamPurpose(%q) accepted stream %d of %q", p, i, id)
		}
		if i2, id2, ok := parseStreamPurpose(streamPurpose(i, id)); !ok || i2 != i || id2 != id {
			t.Fatalf("stream %d of %q does not survive a round trip: %d, %q, %v", i, id, i2, id2, ok)
		}
	})
}

func FuzzParseFrameRecord(f *testing.F) {
	f.Add(frameRecord(archive.Frame{Stored: 1000, Raw: 4 << 20, CRC: 0x12345678}))
	f.Add(frameRecord(archive.Frame{Stored: maxFrame, Raw: maxFrame, Offset: 1 << 33}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := parseFrameRecord(b)
		if err != nil {
			return
		}
		if fr.Stored == 0 || fr.Stored > maxFrame || fr.Raw == 0 || fr.Raw > maxFrame || fr.Offset < 0 || fr.Offset > math.MaxInt64-maxFrame {
			t.Fatalf("accepted implausible sizes or offset %+v", fr)
		}
		if !bytes.Equal(frameRecord(fr), b) {
			t.Fatalf("%x parsed as %+v, which encodes as %x", b, fr, frameRecord(fr))
		}
	})
}

func FuzzParseMeta(f *testing.F) {
	f.Add(metaMessage(metaName, metaData))
	f.Add(metaMessage("backup-my.cnf", nil))
	f.Add([]byte{0xff, 0xff, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		name, data, err := parseMeta(b)
		if err != nil {
			return
		}
		if name == "" {
			t.Fatal("accepted an empty name")
		}
		if !bytes.Equal(metaMessage(name, data), b) {
			t.Fatalf("%q parsed as %q, %q, which does not encode back", b, name, data)
		}
	})
}

func FuzzCheckHeader(f *testing.F) {
	f.Add(mustJSON(f, testHeader(1)))
	f.Add(mustJSON(f, testHeader(3)))
	f.Add([]byte(`{"format":1,"id":"x","kind":"physical","hash":"sha256","streams":[{}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := checkHeader(b)
		if err != nil {
			if h != nil {
				t.Fatal("a header with an error")
			}
			return
		}
		if h.Format != archive.FormatVersion || h.ID == "" || strings.ContainsAny(h.ID, " /\\") ||
			h.Kind != archive.KindPhysical || len(h.Streams) < 1 || len(h.Streams) > 1024 {
			t.Fatalf("accepted header %+v", h)
		}
		if _, err := archive.NewHash(h.Hash); err != nil {
			t.Fatalf("accepted hash %q: %v", h.Hash, err)
		}
	})
}

func FuzzCheckFinal(f *testing.F) {
	h := testHeader(2)
	final, err := testFinal(h).Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(final)
	f.Add(mustJSON(f, testFinal(testHeader(1))))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := checkFinal(h, b)
		if err != nil {
			if m != nil {
				t.Fatal("a manifest with an error")
			}
			return
		}
		if m.ID != h.ID || m.Codec != h.Codec || m.Hash != h.Hash || len(m.Streams) != len(h.Streams) {
			t.Fatalf("accepted a manifest unlike its header: %+v", m)
		}
	})
}

// script is a connection that delivers messages cut from fuzz input: a
// type byte, a length (u32 little endian) and that many bytes, or what is
// left; then a clean end of stream. It fills the caller's buffer when the
// payload fits, as transport.Conn does.
type script struct {
	in   []byte
	last byte // type of the last message delivered
}

func (s *script) ReadMessage(buf []byte) (byte, []byte, error) {
	if len(s.in) < 5 {
		s.in = nil
		return 0, nil, io.EOF
	}
	typ, n := s.in[0], int(binary.LittleEndian.Uint32(s.in[1:5]))
	s.in = s.in[5:]
	n = min(n, len(s.in))
	p := s.in[:n]
	s.in = s.in[n:]
	if cap(buf) >= n {
		p = append(buf[:0], p...)
	} else {
		p = bytes.Clone(p)
	}
	s.last = typ
	return typ, p, nil
}

func (s *script) Close() error { return nil }

// message encodes one message of a script.
func message(typ byte, payload []byte) []byte {
	b := append([]byte{typ}, binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))...)
	return append(b, payload...)
}

// FuzzStreamMessages reads a stream's messages as the receiver does, of a
// stream sent whole and of one sent in part: every frame it returns is
// whole and where its record says (whole: where the one before ended; in
// part: at or after that), io.EOF comes only after the trailer, and what
// it allocates is bounded by what the format allows for one frame plus
// what was sent.
func FuzzStreamMessages(f *testing.F) {
	frame := []byte("stored frame bytes")
	rec := frameRecord(archive.Frame{Stored: uint32(len(frame)), Raw: 100, CRC: 7})
	trailer := mustJSON(f, archive.Stream{Object: archive.Object{Name: streamName(0), Size: int64(len(frame))}, Frames: 1, RawSize: 100})
	var whole []byte
	for _, m := range [][]byte{message(msgFrame, rec), message(msgData, frame), message(msgTrailer, trailer)} {
		whole = append(whole, m...)
	}
	f.Add(whole)
	f.Add(whole[:len(whole)-len(trailer)-5])
	f.Add(append(bytes.Clone(whole), message(msgFrame, rec)...))
	f.Add(append(message(msgFrame, frameRecord(archive.Frame{Stored: 200 << 20, Raw: 1, CRC: 1})), message(msgData, frame)...))
	f.Add(message('X', nil))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, whole := range []bool{true, false} {
			s := &session{trailers: make([]archive.Stream, 1)}
			sc := &script{in: in}
			nf := &netFrames{s: s, c: sc, whole: whole}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var off int64
			for n := 0; ; n++ {
				fr, data, err := nf.Next()
				if errors.Is(err, io.EOF) {
					if err != io.EOF || sc.last != msgTrailer {
						t.Fatalf("end of stream (%v) after message %q, not after a trailer", err, sc.last)
					}
					break
				}
				if err != nil {
					break
				}
				if len(data) != int(fr.Stored) || fr.Offset < off || whole && fr.Offset != off || fr.Stored == 0 || fr.Stored > maxFrame || fr.Raw == 0 || fr.Raw > maxFrame {
					t.Fatalf("frame %d (whole %v): %+v with %d bytes, want them at offset %d", n, whole, fr, len(data), off)
				}
				off = fr.Offset + int64(fr.Stored)
			}
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > maxFrame+16*uint64(len(in))+1<<20 {
				t.Fatalf("allocated %d bytes reading %d bytes of messages", grew, len(in))
			}
		}
	})
}

func FuzzParseOutcome(f *testing.F) {
	for _, o := range []Outcome{
		{Status: StatusOK, Backup: testID, Into: IntoRepository},
		{Status: StatusOK, Backup: testID, Into: IntoDatadir, Server: &Server{Address: "/run/m.sock", Datadir: "/var/lib/mysql", Version: "11.8.3"},
			Replication: &Replication{Primary: "db1:3306", UsingGTID: true, GTID: "0-1-9,1-2-3", CaughtUp: true}, Text: "replicating\n"},
		{Status: StatusFailed, Backup: testID, Into: IntoDatadir, Step: StepStart, Error: "exit status 3"},
	} {
		b, err := encodeOutcome(o)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"status":"ok","backup":"x","into":"datadir"} {}`))
	f.Add([]byte(`{"status":"failed","backup":"x","into":"datadir","error":"\u001b[2J"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := parseOutcome(b)
		if err != nil {
			return
		}
		if why := o.check(); why != "" {
			t.Fatalf("%q accepted as %+v, which fails its checks: %s", b, o, why)
		}
		if o.Replicating() && (o.Status != StatusOK || o.Server == nil || o.Into != IntoDatadir) {
			t.Fatalf("%q accepted as replicating: %+v", b, o)
		}
		if printable(o.Text) != o.Text || printable(o.Error) != o.Error {
			t.Fatalf("%q accepted with unprintable text: %+v", b, o)
		}
		again, err := encodeOutcome(*o)
		if err != nil {
			t.Fatal(err)
		}
		o2, err := parseOutcome(again)
		if err != nil || !reflect.DeepEqual(o, o2) {
			t.Fatalf("%+v does not survive a round trip: %+v, %v", o, o2, err)
		}
	})
}

// planManifest is a manifest of three streams of 0, 5 and 300 frames, for
// acceptances to be read against.
func planManifest() *archive.Manifest {
	m := testHeader(3)
	for i, n := range []int{0, 5, 300} {
		m.Streams[i].Frames = n
	}
	return m
}

// FuzzParsePlan reads a receiver's acceptance as a sender does: what it
// accepts asks, of a stored backup, for ascending frames within each
// stream's count, and of a backup being taken for every stream whole; and
// it says again, encoded, what it was read as.
func FuzzParsePlan(f *testing.F) {
	m := planManifest()
	for _, plans := range [][]archive.StreamPlan{
		make([]archive.StreamPlan, 3),
		{{Skip: true}, {Frames: []int{0, 1, 3}}, {Frames: []int{7, 8, 9, 299}}},
	} {
		b, err := encodePlan(plans)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, true)
		f.Add(b, false)
	}
	f.Add([]byte(`{"streams":[{},{"runs":[[3,1]]},{"skip":true,"runs":[[0,0]]}]}`), true)
	f.Fuzz(func(t *testing.T, b []byte, stored bool) {
		wants, err := parsePlan(b, m, stored)
		if err != nil {
			return
		}
		plans := make([]archive.StreamPlan, len(wants))
		for i, w := range wants {
			if !stored && !w.whole() {
				t.Fatalf("stream %d of a backup being taken asked in part: %+v", i, w)
			}
			for k, n := range w.Frames {
				if n < 0 || n >= m.Streams[i].Frames || k > 0 && n <= w.Frames[k-1] {
					t.Fatalf("stream %d: frames %v, not ascending within %d", i, w.Frames, m.Streams[i].Frames)
				}
			}
			plans[i] = archive.StreamPlan{Skip: w.Skip, Frames: w.Frames}
		}
		again, err := encodePlan(plans)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := parsePlan(again, m, stored); err != nil || !reflect.DeepEqual(back, wants) {
			t.Fatalf("%s read as %+v, encoded as %s, read back as %+v, %v", b, wants, again, back, err)
		}
	})
}

// FuzzCheckStoredManifest reads a stored backup's manifest as a receiver
// does before claiming anything: what it accepts is a complete physical
// manifest it can read.
func FuzzCheckStoredManifest(f *testing.F) {
	final, err := testFinal(testHeader(2)).Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(final)
	f.Add(mustJSON(f, testHeader(1)))
	f.Add([]byte(`{"format":2,"contents":{"files":1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := checkStoredManifest(b)
		if err != nil {
			if m != nil {
				t.Fatal("a manifest with an error")
			}
			return
		}
		if m.Detached() || m.Kind != archive.KindPhysical || len(m.Streams) < 1 || len(m.Streams) > 1024 {
			t.Fatalf("accepted manifest %+v", m)
		}
	})
}

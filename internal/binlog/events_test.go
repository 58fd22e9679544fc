package binlog

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// event encodes one binary log event with a 19-byte header.
func event(ts uint32, typ byte, server uint32, body []byte) []byte {
	h := make([]byte, headerLen)
	binary.LittleEndian.PutUint32(h[0:], ts)
	h[4] = typ
	binary.LittleEndian.PutUint32(h[5:], server)
	binary.LittleEndian.PutUint32(h[9:], uint32(headerLen+len(body)))
	return append(h, body...)
}

func gtidBody(domain uint32, seq uint64) []byte {
	b := make([]byte, 13)
	binary.LittleEndian.PutUint64(b, seq)
	binary.LittleEndian.PutUint32(b[8:], domain)
	return b
}

func sample() []byte {
	var f bytes.Buffer
	f.Write(Magic)
	f.Write(event(1700000000, eventFormatDescription, 7, make([]byte, 40)))
	list := make([]byte, 4+16)
	binary.LittleEndian.PutUint32(list, 1)
	binary.LittleEndian.PutUint32(list[4:], 0)
	binary.LittleEndian.PutUint32(list[8:], 7)
	binary.LittleEndian.PutUint64(list[12:], 41)
	f.Write(event(1700000001, eventGTIDList, 7, list))
	f.Write(event(1700000002, eventGTID, 7, gtidBody(0, 42)))
	f.Write(event(1700000002, 2, 7, []byte("BEGIN")))
	f.Write(event(1700000005, eventGTID, 7, gtidBody(0, 43)))
	f.Write(event(1700000009, eventRotate, 7, []byte("\x04\x00\x00\x00\x00\x00\x00\x00next.000002")))
	return f.Bytes()
}

func TestScan(t *testing.T) {
	data := sample()
	ix, err := Scan(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if ix.FirstGTID != "0-7-42" || ix.LastGTID != "0-7-43" || ix.Previous != "0-7-41" || !ix.Closed || ix.Events != 6 || ix.Size != int64(len(data)) {
		t.Errorf("index %+v", ix)
	}
	if !ix.FirstTime.Equal(time.Unix(1700000001, 0)) || !ix.LastTime.Equal(time.Unix(1700000009, 0)) {
		t.Errorf("times %v .. %v", ix.FirstTime, ix.LastTime)
	}
	// An open file (no rotate at the end) is not closed.
	open := data[:len(data)-len(event(0, eventRotate, 0, []byte("\x04\x00\x00\x00\x00\x00\x00\x00next.000002")))]
	if ix, err := Scan(bytes.NewReader(open)); err != nil || ix.Closed {
		t.Errorf("open file: %+v, %v", ix, err)
	}
	for name, bad := range map[string][]byte{
		"magic":     append([]byte("nope"), data[4:]...),
		"truncated": data[:len(data)-3],
		"size":      append(append([]byte{}, data[:4]...), event(1, 2, 7, nil)[:9]...),
	} {
		if _, err := Scan(bytes.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "binlog") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzScan(f *testing.F) {
	f.Add(sample())
	f.Add(Magic)
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := Scan(bytes.NewReader(data))
		if err == nil && ix.Size != int64(len(data)) {
			t.Fatalf("size %d of %d bytes", ix.Size, len(data))
		}
	})
}

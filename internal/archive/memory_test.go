package archive

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/backstream/backstream/internal/codec"
)

// bigFiles are n files of size bytes each, compressible but not trivially.
func bigFiles(n, size int) []testFile {
	var files []testFile
	for i := range n {
		b := make([]byte, size)
		for j := range b {
			if j%5 == 0 {
				b[j] = byte(j*31 + i)
			}
		}
		files = append(files, testFile{path: "f" + string(rune('a'+i)), data: b})
	}
	return files
}

// Every stream and worker draws on one budget: however many frames the
// queues could hold, what is taken at once never exceeds it, and all of
// it is given back at the end.
func TestReadStaysWithinMemory(t *testing.T) {
	for _, spec := range []string{"zstd", "none"} {
		t.Run(spec, func(t *testing.T) {
			// 6 streams x 4 frames of 2 MiB: the queues could hold all
			// 24 frames, 48 MiB, three times the 16 MiB budget.
			f := writeBackupOf(t, spec, 6, 2<<20, 512<<10, bigFiles(6, 8<<20))
			mem := NewMemory(MinMemory)
			var sink memSink
			err := Read(context.Background(), ReadOptions{Input: BackendInput{Backend: f.backend, Dir: "backups/x"},
				Manifest: f.m, Workers: 4, Sink: &sink, Memory: mem})
			if err != nil {
				t.Fatal(err)
			}
			for _, file := range f.files {
				if !bytes.Equal(sink.files[file.path], file.data) {
					t.Fatalf("%s: content differs", file.path)
				}
			}
			frame := chargeOf(Frame{Stored: 2 << 20, Raw: 2 << 20}, mem.Size()).total()
			if mem.Peak() > mem.Size() || mem.Peak() < 2*frame {
				t.Errorf("peak %d bytes taken, want between two frames (%d) and the budget %d", mem.Peak(), 2*frame, mem.Size())
			}
			if held := mem.held.Load(); held != 0 {
				t.Errorf("%d bytes still held after the read", held)
			}
		})
	}
}

// A frame larger than the whole budget takes all of it and is read alone,
// rather than waiting for room that can never come.
func TestFrameLargerThanBudgetIsReadAlone(t *testing.T) {
	// One 24 MiB chunk is a frame of its own, over the 16 MiB budget.
	f := writeBackupOf(t, "zstd", 2, 1<<20, 24<<20, bigFiles(3, 24<<20))
	mem := NewMemory(MinMemory)
	var sink memSink
	err := Read(context.Background(), ReadOptions{Input: BackendInput{Backend: f.backend, Dir: "backups/x"},
		Manifest: f.m, Sink: &sink, Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	if mem.Peak() != mem.Size() {
		t.Errorf("peak %d bytes taken, want the whole budget %d", mem.Peak(), mem.Size())
	}
	for _, file := range f.files {
		if !bytes.Equal(sink.files[file.path], file.data) {
			t.Fatalf("%s: content differs", file.path)
		}
	}
}

// A read that fails gives back what its dropped frames held, so the
// process's budget is whole for the next one.
func TestFailedReadGivesMemoryBack(t *testing.T) {
	f := writeBackupOf(t, "zstd", 3, 1<<20, 256<<10, bigFiles(3, 8<<20))
	obj := filepath.Join(f.root, "backups/x", f.m.Streams[1].Name)
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(obj, data, 0o600); err != nil {
		t.Fatal(err)
	}
	mem := NewMemory(MinMemory)
	err = Read(context.Background(), ReadOptions{Input: BackendInput{Backend: f.backend, Dir: "backups/x"}, Manifest: f.m, Memory: mem})
	if !IsCorrupt(err) {
		t.Fatalf("read of a damaged stream: %v, want corruption", err)
	}
	if held := mem.held.Load(); held != 0 {
		t.Errorf("%d bytes still held after the failed read", held)
	}
}

// A frame record's sizes are checked against the format before anything
// is allocated for it: too large, or stored larger than any codec makes
// of its raw size.
func TestImplausibleFrameSizesAreRefused(t *testing.T) {
	for _, f := range []Frame{
		{Stored: maxFrameBytes + 1, Raw: 100},
		{Stored: 100, Raw: maxFrameBytes + 1},
		{Stored: 0xffffffff, Raw: 0xffffffff},
		{Stored: 200 << 20, Raw: 1 << 20}, // a codec never grows 1 MiB to 200
		{Stored: 0, Raw: 10},
	} {
		idx := []byte(indexMagic)
		idx = binary.LittleEndian.AppendUint32(idx, f.Stored)
		idx = binary.LittleEndian.AppendUint32(idx, f.Raw)
		idx = binary.LittleEndian.AppendUint32(idx, 0)
		if _, err := ParseIndex(idx, int64(f.Stored)); err == nil {
			t.Errorf("index with stored %d, raw %d accepted", f.Stored, f.Raw)
		}
		if buf, err := FrameBuffer(context.Background(), f); err == nil || !IsCorrupt(err) || buf != nil {
			t.Errorf("FrameBuffer(stored %d, raw %d): %v, want corruption and no buffer", f.Stored, f.Raw, err)
		}
	}
	if err := checkFrameSizes(Frame{Stored: maxFrameBytes, Raw: maxFrameBytes}); err != nil {
		t.Errorf("the largest frame: %v", err)
	}
}

// A zstd frame whose header claims more content than its record's raw size
// is refused before it is decoded: the record bounds the decoding, never
// the data.
func TestZstdFrameClaimingHugeContentIsRefused(t *testing.T) {
	z, _ := codec.Parse("zstd")
	frame, err := z.Compress(nil, make([]byte, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	// Frame_Header_Descriptor: 4-byte content size; write 4 GiB - 1.
	hdr := frame[4]
	if hdr>>6 != 2 {
		t.Skipf("content size field of %d bytes; the test patches a 4-byte one", 1<<(hdr>>6))
	}
	pos := 5
	if hdr&0x20 == 0 {
		pos++ // a window descriptor byte
	}
	binary.LittleEndian.PutUint32(frame[pos:], 0xffffffff)
	if _, err := z.Decompress(make([]byte, 0, 1<<20), frame, 1<<20); err == nil {
		t.Fatal("a frame claiming 4 GiB of content decoded into 1 MiB")
	}
}

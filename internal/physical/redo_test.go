package physical

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/xbstream"
)

// redoStart108 is where the log starts in MariaDB 10.8's format.
const redoStart108 = 12288

// redoRecord encodes one log record with a payload of n bytes: short ones
// carry their length in the first byte, long ones as 15 plus a varint
// counted in it, as the server writes them.
func redoRecord(rng *rand.Rand, n int) []byte {
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = byte(rng.Uint32())
	}
	if n > 0 && n <= 15 {
		return append([]byte{0x30 | byte(n)}, payload...)
	}
	// rest = varint + payload = 15 + add.
	for vl := 1; vl <= 3; vl++ {
		add := vl + n - 15
		var v []byte
		switch {
		case add < 0:
			continue
		case add < 0x80 && vl == 1:
			v = []byte{byte(add)}
		case add >= 0x80 && add < 0x4080 && vl == 2:
			a := add - 0x80
			v = []byte{0x80 | byte(a>>8), byte(a)}
		case add >= 0x4080 && add < 0x204080 && vl == 3:
			a := add - 0x4080
			v = []byte{0xc0 | byte(a>>16), byte(a >> 8), byte(a)}
		default:
			continue
		}
		return append(append([]byte{0x30}, v...), payload...)
	}
	panic("record too long for the test")
}

// redoMini is a whole mini-transaction of the given records.
func redoMini(rng *rand.Rand, nonce int, sizes ...int) []byte {
	var b []byte
	for _, n := range sizes {
		b = append(b, redoRecord(rng, n)...)
	}
	recs := len(b)
	b = append(b, byte(rng.IntN(2)))
	for range nonce {
		b = append(b, byte(rng.Uint32()))
	}
	sum := crc32.Update(crc32.Update(0, castagnoli, b[:recs]), castagnoli, b[recs+1:])
	return binary.BigEndian.AppendUint32(b, sum)
}

// redoFile is a redo log as mariabackup copies it: the header block at
// first LSN, then the mini-transactions; ends are the offsets after each.
func redoFile(rng *rand.Rand, format uint32, first uint64, minis int) (file []byte, ends []int) {
	file = make([]byte, redoStart108)
	binary.BigEndian.PutUint32(file, format)
	binary.BigEndian.PutUint64(file[redoFirstLSNAt:], first)
	nonce := redoNonce
	if format == redoFormat108 {
		nonce = 0
	}
	for i := range minis {
		sizes := []int{rng.IntN(15) + 1, 16 + rng.IntN(200)}
		if i%17 == 3 {
			sizes = append(sizes, 20000+rng.IntN(60000)) // a 3-byte length
		}
		file = append(file, redoMini(rng, nonce, sizes...)...)
		ends = append(ends, len(file))
	}
	return file, ends
}

// follow feeds file to a RedoCopy in chunks of about size bytes.
func follow(rng *rand.Rand, file []byte, size int) *RedoCopy {
	r := &RedoCopy{}
	for off := 0; off < len(file); {
		n := min(len(file)-off, 1+rng.IntN(size))
		r.Chunk(&xbstream.Chunk{Type: xbstream.TypePayload, Path: "./" + redoLogName, Offset: uint64(off), Payload: file[off : off+n]})
		off += n
	}
	return r
}

func TestRedoLogEndsWhereItsLastWholeMiniTransactionEnds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const first = 50_000_000
	for _, format := range []uint32{redoFormat108, redoFormat108 | redoEncrypted, redoFormatEnc11} {
		file, ends := redoFile(rng, format, first, 120)
		end := first + uint64(len(file)-redoStart108)
		for _, size := range []int{1 << 30, 65536, 4096, 300} {
			r := follow(rng, file, size)
			if err := r.Check(Checkpoints{ToLSN: end - 5000, LastLSN: end}); err != nil {
				t.Errorf("format %#x, chunks of up to %d: a whole copy: %v", format, size, err)
			}
			var short *RedoShortError
			if err := r.Check(Checkpoints{ToLSN: end - 5000, LastLSN: end + 16}); !errors.As(err, &short) || short.End != end || short.Want != end+16 {
				t.Errorf("format %#x: a copy 16 bytes short of last_lsn: %v, want the end %d and %d", format, err, end, end+16)
			}
			if err := r.Check(Checkpoints{ToLSN: end + 1, LastLSN: end}); !errors.As(err, &short) {
				t.Errorf("format %#x: a copy short of to_lsn: %v, want a *RedoShortError", format, err)
			}
		}

		// The file ends inside its last mini-transaction.
		last := ends[len(ends)-2]
		cut := follow(rng, file[:len(file)-16], 8192)
		err := cut.Check(Checkpoints{ToLSN: first, LastLSN: end})
		var short *RedoShortError
		if !errors.As(err, &short) || short.End != first+uint64(last-redoStart108) || !strings.Contains(err.Error(), "bytes into the next mini-transaction") {
			t.Errorf("format %#x: a copy cut 16 bytes early: %v, want it to end at LSN %d, inside the next", format, err, first+uint64(last-redoStart108))
		}

		// A flipped byte ends the log at the mini-transaction it is in.
		k := len(ends) / 2
		damaged := append([]byte(nil), file...)
		damaged[ends[k]+3] ^= 0x40
		err = follow(rng, damaged, 8192).Check(Checkpoints{ToLSN: first, LastLSN: end})
		if !errors.As(err, &short) || short.End != first+uint64(ends[k]-redoStart108) || !strings.Contains(err.Error(), "does not parse") {
			t.Errorf("format %#x: a flipped byte after byte %d: %v, want the end at LSN %d and the reason", format, ends[k], err, first+uint64(ends[k]-redoStart108))
		}
	}
}

// redoBlocks is a redo log in MariaDB 10.5's format: the header at first
// LSN, then full blocks and one holding data bytes (header counted).
func redoBlocks(rng *rand.Rand, first uint64, full, data int) []byte {
	file := make([]byte, 2048)
	binary.BigEndian.PutUint32(file, redoFormat105)
	binary.BigEndian.PutUint64(file[redoFirstLSNAt:], first)
	for i := range full + 1 {
		b := make([]byte, redoBlock)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		n := redoBlock
		if i == full {
			n = data
		}
		binary.BigEndian.PutUint16(b[4:], uint16(n))
		binary.BigEndian.PutUint32(b[redoBlock-4:], crc32.Checksum(b[:redoBlock-4], castagnoli))
		file = append(file, b...)
	}
	return file
}

func TestRedoLogInBlocksEndsWithItsLastBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const first, full, data = 45_056, 40, 300
	file := redoBlocks(rng, first, full, data)
	end := uint64(first + full*redoBlock + data)
	var short *RedoShortError
	for _, size := range []int{1 << 30, 4096, 700, 100} {
		r := follow(rng, file, size)
		if err := r.Check(Checkpoints{ToLSN: first, LastLSN: end}); err != nil {
			t.Errorf("chunks of up to %d: a whole copy: %v", size, err)
		}
		if err := r.Check(Checkpoints{ToLSN: first, LastLSN: end + 1}); !errors.As(err, &short) || short.End != end {
			t.Errorf("chunks of up to %d: a copy 1 byte short: %v, want the end at %d", size, err, end)
		}
	}
	err := follow(rng, file[:len(file)-16], 4096).Check(Checkpoints{ToLSN: first, LastLSN: end})
	if !errors.As(err, &short) || short.End != end-data {
		t.Errorf("the last block cut: %v, want the end at %d", err, end-data)
	}
	damaged := append([]byte(nil), file...)
	damaged[2048+5*redoBlock+100] ^= 1
	err = follow(rng, damaged, 4096).Check(Checkpoints{ToLSN: first, LastLSN: end})
	if !errors.As(err, &short) || short.End != first+5*redoBlock || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("block 5 damaged: %v, want the end at %d", err, first+5*redoBlock)
	}
}

// A log in a layout the check does not know is not judged: another format,
// chunks out of order, or no log at all.
func TestRedoLogNotFollowedIsNotJudged(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	file, _ := redoFile(rng, 0x50687974, 60_000, 10) // a format to come
	if err := follow(rng, file, 4096).Check(Checkpoints{ToLSN: 1 << 40, LastLSN: 1 << 40}); err != nil {
		t.Errorf("another format: %v, want it not judged", err)
	}
	file, _ = redoFile(rng, redoFormat108, 60_000, 10)
	r := &RedoCopy{}
	r.Chunk(&xbstream.Chunk{Type: xbstream.TypePayload, Path: redoLogName, Offset: 4096, Payload: file[4096:]})
	r.Chunk(&xbstream.Chunk{Type: xbstream.TypePayload, Path: redoLogName, Offset: 0, Payload: file[:4096]})
	if err := r.Check(Checkpoints{ToLSN: 1 << 40, LastLSN: 1 << 40}); err != nil || r.skipped == "" {
		t.Errorf("chunks out of order: %v (skipped %q), want it not judged and the reason kept", err, r.skipped)
	}
	if err := (&RedoCopy{}).Check(Checkpoints{ToLSN: 1 << 40}); err != nil {
		t.Errorf("no log: %v", err)
	}
}

// FuzzRedoLog: any bytes, in any chunks, count as in one chunk, and never
// panic or hold more than a mini-transaction.
func FuzzRedoLog(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	file, _ := redoFile(rng, redoFormat108, 70_000, 5)
	f.Add(file[redoStart108:redoStart108+2000], uint16(100))
	f.Add([]byte{0x30, 0xf0, 0xff, 0xff, 0xff, 0xff}, uint16(1))
	f.Fuzz(func(t *testing.T, body []byte, size uint16) {
		file := append(append([]byte(nil), file[:redoStart108]...), body...)
		one := follow(rng, file, 1<<30)
		many := follow(rand.New(rand.NewPCG(uint64(size), 7)), file, int(size)+1)
		if one.whole != many.whole || (one.stopped == "") != (many.stopped == "") {
			t.Fatalf("in one chunk %d bytes whole (stopped %q), in chunks of up to %d: %d (stopped %q)",
				one.whole, one.stopped, size+1, many.whole, many.stopped)
		}
		if len(many.carry) > 2*redoMaxMTR+64 {
			t.Fatalf("carries %d bytes", len(many.carry))
		}
	})
}

// shortRedoWrapper is a mariabackup that streams its backup with the
// redo log's last 16 bytes cut (through mbstream), as a copy that raced
// the server's last writes leaves it: always, or only the first time.
func shortRedoWrapper(t *testing.T, always bool) string {
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "mariabackup")
	once := `[ -e ` + dir + `/cut ] && exec ` + testBinary(t).Path + ` "$@"
: >` + dir + `/cut
`
	if always {
		once = ""
	}
	script := `#!/bin/sh
case " $* " in *" --backup "*) ;; *) exec ` + testBinary(t).Path + ` "$@";; esac
` + once + `x=$(mktemp -d ` + dir + `/x.XXXX)
` + testBinary(t).Path + ` "$@" >$x.xb || exit $?
mbstream -x -C $x <$x.xb && truncate -s -16 $x/` + redoLogName + ` || exit 1
cd $x && find . -type f | sed 's|^\./||' | xargs mbstream -c
`
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// A backup whose copy of the redo log stops short of where its
// checkpoints say it ends is taken again, and the attempt that is
// committed has its whole log.
func TestShortRedoCopyIsTakenAgain(t *testing.T) {
	srv := sharedServer(t)
	b := backupThrough(t, srv, shortRedoWrapper(t, false))
	if b.err != nil {
		t.Fatalf("RunBackup: %v", b.err)
	}
	if again := retries(b.rec.logs); len(again) != 1 || !strings.Contains(again[0], "redo log mariabackup copied") || !strings.Contains(again[0], "attempt 2 of 3") {
		t.Errorf("logged %q, want one retry, saying the redo log was short, and attempt 2 of 3", b.rec.logs)
	}
	b.holds(t, b.m.ID)
}

// A copy that is always short is never committed: the backup fails with
// the LSNs, and the repository holds nothing.
func TestShortRedoCopyIsNeverCommitted(t *testing.T) {
	srv := sharedServer(t)
	b := backupThrough(t, srv, shortRedoWrapper(t, true))
	var short *RedoShortError
	if !errors.As(b.err, &short) || short.End >= short.Want {
		t.Fatalf("RunBackup: %v, want a *RedoShortError", b.err)
	}
	t.Log(b.err)
	b.holds(t)
}

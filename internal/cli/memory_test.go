package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/xbstream"
)

// hostileRepo writes a repository holding one backup built to make a
// reader hold as much as it can: streams streams of frames frames each,
// every frame four chunks of chunk bytes of zeros (the format allows 256
// MiB a frame), yet a few KiB stored. Every byte is valid, so a reader
// goes through all of it.
func hostileRepo(t *testing.T, streams, frames, chunk int) string {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	b, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := repo.Init(ctx, b, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const id = "20261121T190512Z-7f3a"
	z, _ := codec.Parse("zstd")
	zeros := make([]byte, chunk)
	out := r.Output(id, archive.DefaultHash)
	m := &archive.Manifest{Format: archive.FormatVersion, ID: id, Kind: archive.KindPhysical, Codec: z.String(), Hash: archive.DefaultHash,
		Started: time.Now().UTC(), Finished: time.Now().UTC()}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	raw := make([]byte, 0, 4*(chunk+1<<10))
	for s := range streams {
		path := "f" + strconv.Itoa(s)
		so, err := out.OpenStream(ctx, s, archive.StreamName(s, z))
		if err != nil {
			t.Fatal(err)
		}
		var all []byte // the stored bytes, a few KiB, for the digest
		var off uint64
		var st archive.Stream
		for range frames {
			raw = raw[:0]
			for range 4 {
				raw = appendPayload(t, raw, path, off, zeros)
				off += uint64(len(zeros))
			}
			stored, err := z.Compress(nil, raw)
			if err != nil {
				t.Fatal(err)
			}
			f := archive.Frame{Offset: st.Size, Stored: uint32(len(stored)), Raw: uint32(len(raw)), CRC: crc32.Checksum(stored, castagnoli)}
			if err := so.WriteFrame(f, stored); err != nil {
				t.Fatal(err)
			}
			all = append(all, stored...)
			st.Size += int64(len(stored))
			st.RawSize += int64(len(raw))
			st.Frames++
		}
		end, err := xbstream.AppendChunk(nil, &xbstream.Chunk{Type: xbstream.TypeEOF, Path: path})
		if err != nil {
			t.Fatal(err)
		}
		stored, _ := z.Compress(nil, end)
		if err := so.WriteFrame(archive.Frame{Offset: st.Size, Stored: uint32(len(stored)), Raw: uint32(len(end)), CRC: crc32.Checksum(stored, castagnoli)}, stored); err != nil {
			t.Fatal(err)
		}
		all = append(all, stored...)
		st.Size += int64(len(stored))
		st.RawSize += int64(len(end))
		st.Frames++
		obj, err := archive.ObjectOf(archive.StreamName(s, z), all, archive.DefaultHash)
		if err != nil {
			t.Fatal(err)
		}
		st.Object = obj
		if st, err = so.Close(st); err != nil {
			t.Fatal(err)
		}
		m.Streams = append(m.Streams, st)
		m.Files = append(m.Files, archive.File{Path: path, Size: int64(off), Stream: s})
	}
	if err := r.Commit(ctx, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

func appendPayload(t *testing.T, dst []byte, path string, off uint64, payload []byte) []byte {
	t.Helper()
	out, err := xbstream.AppendChunk(dst, &xbstream.Chunk{Type: xbstream.TypePayload, Path: path, Offset: off, Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// peakRSS runs backstream with args, its standard output to /dev/null, and
// returns its exit code and its peak resident set size: VmHWM, read from
// /proc while it runs (a child's rusage would count the test process,
// whose memory it starts from at fork).
func peakRSS(t *testing.T, bin string, args ...string) (int, int64) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	cmd.Stdout = devnull
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var peak int64
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-tick.C:
		}
		data, err := os.ReadFile(status)
		if err != nil {
			continue // gone
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				peak = max(peak, kb<<10)
			}
		}
	}
	code := cmd.ProcessState.ExitCode()
	if code != 0 {
		t.Logf("%v: exit %d: %s", args, code, stderr.String())
	}
	return code, peak
}

// The frames a reading command holds are bounded by --memory, not by
// streams x queues x the largest frame: verify and cat of a backup of
// many streams of large, highly compressed frames stay within the budget
// plus a fixed overhead. Eight streams of 64 MiB frames under a budget of
// 128 MiB: without the budget the eight frames alone are 512 MiB. (With
// 256 MiB frames and the default budget: 530 MiB where main reached 2-2.6
// GiB; see the closing note of issue 13. The smaller frames keep the
// suite's time.)
//
// The overhead is what is not frame data: the Go runtime and the binary
// (about 30 MiB), a 1 MiB read buffer per stream, cat's 1 MiB output
// buffer, and the buffers given back that the runtime has not yet
// returned to the system between collections; 64 MiB, the bound the
// guide promises (the runtime's memory limit, --memory + 48 MiB, makes it
// collect before the heap passes it).
func TestMemoryBudgetBoundsReaders(t *testing.T) {
	bin := buildBinary(t)
	dir := hostileRepo(t, 8, 1, 16<<20-64)
	const budget = 128 << 20
	const overhead = 64 << 20
	for _, c := range []struct {
		name   string
		budget int64
		args   []string
	}{
		{"verify", budget, []string{"verify", "--repo", dir, "--memory", "128MiB", "--progress", "none", "latest"}},
		{"cat", budget, []string{"cat", "--repo", dir, "--memory", "128MiB", "--progress", "none", "latest"}},
	} {
		code, rss := peakRSS(t, bin, c.args...)
		t.Logf("%s: exit %d, peak RSS %d MiB (budget %d MiB)", c.name, code, rss>>20, c.budget>>20)
		if code != 0 {
			t.Errorf("%s: exit %d", c.name, code)
		}
		if rss > c.budget+overhead {
			t.Errorf("%s: peak RSS %d MiB, over the budget %d MiB + %d MiB", c.name, rss>>20, c.budget>>20, overhead>>20)
		}
	}
	// The backup does strain a reader: with a budget that does not bind,
	// the same verify holds more than the bound above, so the bound is what
	// the budget does.
	code, rss := peakRSS(t, bin, "verify", "--repo", dir, "--memory", "8GiB", "--progress", "none", "latest")
	t.Logf("verify --memory 8GiB: exit %d, peak RSS %d MiB", code, rss>>20)
	if code != 0 || rss <= budget+overhead {
		t.Errorf("verify --memory 8GiB: exit %d, peak RSS %d MiB; want exit 0 and more than %d MiB, or the test proves nothing",
			code, rss>>20, (budget+overhead)>>20)
	}
}

// A read of a deduplicating repository holds, beside its frames, the
// pack frames each stream's reassembly keeps and reads ahead: those come
// out of a quarter of --memory too. cat and verify --read-data of eight
// streams under 32 MiB stay within the budget plus the fixed overhead,
// where eight reassemblies holding all they would like (about 14 MiB
// each) would pass it by some 80 MiB.
func TestMemoryBudgetBoundsDedupReaders(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	b, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := repo.Init(context.Background(), b, repo.Options{Dedup: true})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for i := range 8 {
		files["f"+strconv.Itoa(i)] = string(incompressible(t, 24<<20))
	}
	repotest.Store(t, r, repotest.Backup{ID: "20261121T190512Z-7f3a", Files: files, Streams: 8, Chunk: 1 << 20})
	const budget = 32 << 20
	const overhead = 64 << 20
	for _, args := range [][]string{
		{"cat", "--repo", dir, "--memory", "32MiB", "--progress", "none", "latest"},
		{"verify", "--repo", dir, "--read-data", "--memory", "32MiB", "--progress", "none", "latest"},
	} {
		code, rss := peakRSS(t, bin, args...)
		t.Logf("%s: exit %d, peak RSS %d MiB (budget %d MiB)", args[0], code, rss>>20, budget>>20)
		if code != 0 {
			t.Errorf("%s: exit %d", args[0], code)
		}
		if rss > budget+overhead {
			t.Errorf("%s: peak RSS %d MiB, over the budget %d MiB + %d MiB", args[0], rss>>20, budget>>20, overhead>>20)
		}
	}
	// With a budget that does not bind, the reassemblies hold all they
	// would like, more than the bound above: the bound is the budget's.
	code, rss := peakRSS(t, bin, "cat", "--repo", dir, "--memory", "8GiB", "--progress", "none", "latest")
	t.Logf("cat --memory 8GiB: exit %d, peak RSS %d MiB", code, rss>>20)
	if code != 0 || rss <= budget+overhead {
		t.Errorf("cat --memory 8GiB: exit %d, peak RSS %d MiB; want exit 0 and more than %d MiB, or the test proves nothing",
			code, rss>>20, (budget+overhead)>>20)
	}
}

// incompressible is n random bytes.
func incompressible(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

package archive

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/xbstream"
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

// gatedOutput holds every frame written until open is closed.
type gatedOutput struct {
	BackendOutput
	open chan struct{}
}

func (g gatedOutput) OpenStream(ctx context.Context, i int, name string) (StreamOutput, error) {
	s, err := g.BackendOutput.OpenStream(ctx, i, name)
	return gatedStream{s, g.open}, err
}

type gatedStream struct {
	StreamOutput
	open chan struct{}
}

func (s gatedStream) WriteFrame(f Frame, b []byte) error {
	<-s.open
	return s.StreamOutput.WriteFrame(f, b)
}

// A writer with a Memory budget queues no more chunk bytes than the budget
// while its output stands still (without one, its queues hold three times
// as much: 16 chunks and the frames in flight of each stream), then
// writes everything, gives every byte back, and the backup reads back
// equal.
func TestWriterStaysWithinMemory(t *testing.T) {
	files := bigFiles(4, 12<<20)
	b, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, _ := codec.Parse("zstd")
	mem := NewMemory(MinMemory)
	open := make(chan struct{})
	w, err := NewWriter(context.Background(), WriterOptions{Output: gatedOutput{BackendOutput{Backend: b, Dir: "backups/x", Hash: DefaultHash}, open},
		Streams: 2, Workers: 2, Codec: c, FrameSize: 1 << 20, Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	// Chunks of 1 MiB (each a frame of its own) and of 100 KiB (copied
	// into frames), as mariabackup's large and small files.
	chunks := append(streamChunks(t, files[:2], 1<<20), streamChunks(t, files[2:], 100<<10)...)
	var accepted atomic.Int64
	added := make(chan error, 1)
	go func() {
		for i, raw := range chunks {
			ch, _, err := xbstream.DecodeChunk(raw)
			if err == nil {
				err = w.Add(&ch, raw)
			}
			if err != nil {
				added <- fmt.Errorf("chunk %d: %w", i, err)
				return
			}
			accepted.Add(int64(len(raw)))
		}
		added <- nil
	}()
	for last := int64(-1); accepted.Load() != last; time.Sleep(300 * time.Millisecond) {
		last = accepted.Load()
	}
	if got := accepted.Load(); got > mem.Size() || got < mem.Size()/2 {
		t.Errorf("%d bytes accepted while nothing was written; want at most the budget, %d, and at least half of it", got, mem.Size())
	}
	close(open)
	if err := <-added; err != nil {
		t.Fatal(err)
	}
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if held := mem.held.Load(); held != 0 {
		t.Errorf("%d bytes still held after Close", held)
	}
	m := &Manifest{Format: FormatVersion, ID: "x", Kind: KindPhysical, Codec: c.String(), Hash: DefaultHash, Streams: res.Streams, Files: res.Files}
	var sink memSink
	if err := Read(context.Background(), ReadOptions{Input: BackendInput{Backend: b, Dir: "backups/x"}, Manifest: m, Sink: &sink}); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !bytes.Equal(sink.files[f.path], f.data) {
			t.Fatalf("%s: content differs", f.path)
		}
	}
}

// The smallest budget a writer takes, with more streams than it has room
// for frames at once and chunks of every size, never stalls: the frames
// being built hold less than the budget leaves for them. (Without that
// rule Add can wait for room that only frames still waiting for its
// chunks would give back.)
func TestWriterWithLeastMemoryNeverStalls(t *testing.T) {
	lz4, _ := codec.Parse("lz4")
	for _, chunk := range []int{50 << 10, 700 << 10, 1900 << 10, 3 << 20} {
		t.Run(fmt.Sprint(chunk>>10, "KiB"), func(t *testing.T) {
			writeWithLeastMemory(t, lz4, streamChunks(t, bigFiles(8, 6<<20), chunk))
		})
	}
	// The case that rule is for: each of 6 streams builds a frame of one
	// 1.9 MiB chunk (11.4 MiB held, waiting for more), then a 6 MiB chunk
	// comes, which would not fit in what is left.
	t.Run("frames being built hold most of it", func(t *testing.T) {
		var chunks [][]byte
		for i := range 6 {
			chunks = append(chunks, streamChunks(t, []testFile{{path: fmt.Sprint("small", i), data: make([]byte, 1900<<10)}}, 2<<20)[0])
		}
		writeWithLeastMemory(t, codec.None{}, append(chunks, streamChunks(t, []testFile{{path: "big", data: make([]byte, 6<<20)}}, 6<<20)...))
	})
	if _, err := NewWriter(context.Background(), WriterOptions{Output: BackendOutput{}, Streams: 4, Codec: codec.None{}, Memory: NewMemory(MinMemory)}); err == nil ||
		err.Error() != "a memory budget of 16 MiB is too small to write 4 streams: it needs at least 24 MiB" {
		t.Errorf("a budget too small for the streams: %v", err)
	}
}

// writeWithLeastMemory writes chunks into 6 streams of 2 MiB frames with
// the least budget that takes, failing if the writer stalls or keeps any
// of the budget after Close.
func writeWithLeastMemory(t *testing.T, c codec.Codec, chunks [][]byte) {
	t.Helper()
	b, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const streams, frame = 6, 2 << 20
	mem := NewMemory(MinWriterMemory(streams, frame))
	w, err := NewWriter(context.Background(), WriterOptions{Output: BackendOutput{Backend: b, Dir: "backups/x", Hash: DefaultHash},
		Streams: streams, Workers: 2, Codec: c, FrameSize: frame, Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for _, raw := range chunks {
			ch, _, err := xbstream.DecodeChunk(raw)
			if err == nil {
				err = w.Add(&ch, raw)
			}
			if err != nil {
				done <- err
				return
			}
		}
		_, err := w.Close()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the writer stalled: %d of %d bytes held", mem.held.Load(), mem.Size())
	}
	if held := mem.held.Load(); held != 0 {
		t.Errorf("%d bytes still held after Close", held)
	}
}

// hungryInput is a MemoryUser: it records what each stream's source was
// given.
type hungryInput struct {
	BackendInput
	wants int64
	given sync.Map // stream number -> int64
}

func (in *hungryInput) SourceWants() int64 { return in.wants }

func (in *hungryInput) OpenStream(ctx context.Context, i int, s Stream) (FrameSource, error) {
	n, ok := SourceMemory(ctx)
	if !ok {
		return nil, fmt.Errorf("stream %d: opened outside a Read", i)
	}
	in.given.Store(i, n)
	return in.BackendInput.OpenStream(ctx, i, s)
}

// A source that holds memory of its own (the block store's reassembly)
// is given its share of the Read's budget, a quarter over all streams,
// for as long as its stream is read, and gives it back with the rest.
func TestSourcesHoldTheirShareOfTheBudget(t *testing.T) {
	f := writeBackupOf(t, "zstd", 3, 1<<20, 256<<10, bigFiles(3, 4<<20))
	mem := NewMemory(MinMemory)
	in := &hungryInput{BackendInput: BackendInput{Backend: f.backend, Dir: "backups/x"}, wants: 8 << 20}
	var sink memSink
	if err := Read(context.Background(), ReadOptions{Input: in, Manifest: f.m, Sink: &sink, Memory: mem}); err != nil {
		t.Fatal(err)
	}
	for _, file := range f.files {
		if !bytes.Equal(sink.files[file.path], file.data) {
			t.Fatalf("%s: content differs", file.path)
		}
	}
	each := mem.Size() / sourceShare / 3
	for i := range 3 {
		if got, _ := in.given.Load(i); got != each {
			t.Errorf("stream %d's source was given %v bytes, want its share %d", i, got, each)
		}
	}
	if held := mem.held.Load(); held != 0 {
		t.Errorf("%d bytes still held after the read", held)
	}
	if _, ok := SourceMemory(context.Background()); ok {
		t.Error("SourceMemory outside a Read says it is bounded")
	}
}

// What is set aside for a source never waits: it takes what is free at
// once, halving down to minSourceMemory, else nothing.
func TestSetAsideTakesWhatIsFree(t *testing.T) {
	mem := NewMemory(MinMemory)
	if err := mem.acquire(context.Background(), mem.Size()-minSourceMemory-1000); err != nil {
		t.Fatal(err)
	}
	b := &readBudget{mem: mem}
	if got := b.setAside(8<<20, 8<<20); got != minSourceMemory {
		t.Errorf("set aside %d bytes with %d free, want %d", got, minSourceMemory+1000, minSourceMemory)
	}
	if got := b.setAside(8<<20, 8<<20); got != 0 {
		t.Errorf("set aside %d bytes with 1000 free, want none", got)
	}
	if b.held.Load() != minSourceMemory {
		t.Errorf("the Read holds %d bytes, want what was set aside", b.held.Load())
	}
}

// planningInput is a PlanTaker that holds plan bytes for the whole Read
// (the block store's table of where blocks are).
type planningInput struct {
	BackendInput
	plan    int64
	heldAt  int64 // the budget held when the first stream opened
	opened  atomic.Bool
	budget  *Memory
	planErr error
}

func (in *planningInput) TakePlan(ctx context.Context, plans []StreamPlan) error {
	in.planErr = PlanMemory(ctx, in.plan, "the test's table")
	return in.planErr
}

// twiceInput takes its plan twice.
type twiceInput struct{ *planningInput }

func (in twiceInput) TakePlan(ctx context.Context, plans []StreamPlan) error {
	if err := PlanMemory(ctx, in.plan, "the test's table"); err != nil {
		return err
	}
	return PlanMemory(ctx, in.plan, "the test's table")
}

func (in *planningInput) OpenStream(ctx context.Context, i int, s Stream) (FrameSource, error) {
	if !in.opened.Swap(true) {
		in.heldAt = in.budget.held.Load()
	}
	return in.BackendInput.OpenStream(ctx, i, s)
}

// What an Input holds for a whole Read is taken from its budget before
// any stream opens and given back at the end; more than half the budget
// is refused, naming the --memory it needs.
func TestPlanMemoryIsTakenFromTheBudget(t *testing.T) {
	f := writeBackupOf(t, "zstd", 2, 1<<20, 256<<10, bigFiles(2, 2<<20))
	mem := NewMemory(MinMemory)
	in := &planningInput{BackendInput: BackendInput{Backend: f.backend, Dir: "backups/x"}, plan: 5 << 20, budget: mem}
	var sink memSink
	if err := Read(context.Background(), ReadOptions{Input: in, Manifest: f.m, Sink: &sink, Memory: mem}); err != nil {
		t.Fatal(err)
	}
	if in.heldAt < in.plan {
		t.Errorf("the budget held %d bytes when the first stream opened, want the plan's %d at least", in.heldAt, in.plan)
	}
	if held := mem.held.Load(); held != 0 {
		t.Errorf("%d bytes still held after the read", held)
	}

	in = &planningInput{BackendInput: BackendInput{Backend: f.backend, Dir: "backups/x"}, plan: MinMemory/2 + 1, budget: mem}
	err := Read(context.Background(), ReadOptions{Input: in, Manifest: f.m, Sink: &memSink{}, Memory: mem})
	var pe *PlanMemoryError
	if !errors.As(err, &pe) || in.opened.Load() {
		t.Fatalf("a plan of more than half the budget: %v (a stream opened: %v), want a PlanMemoryError before any stream", err, in.opened.Load())
	}
	want := "the test's table takes 9 MiB, more than half of --memory (16 MiB; the rest is for the frames read): give --memory 17MiB or more"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if held := mem.held.Load(); held != 0 {
		t.Errorf("%d bytes still held after the refused read", held)
	}
	// Two takes count together: the second one that passes half is
	// refused, naming both.
	in = &planningInput{BackendInput: BackendInput{Backend: f.backend, Dir: "backups/x"}, plan: 5 << 20, budget: mem}
	twice := &twiceInput{in}
	err = Read(context.Background(), ReadOptions{Input: twice, Manifest: f.m, Sink: &memSink{}, Memory: mem})
	if !errors.As(err, &pe) || pe.Need != 10<<20 {
		t.Fatalf("two plans of 5 MiB in 16: %v, want refused as 10 MiB", err)
	}
	if held := mem.held.Load(); held != 0 {
		t.Errorf("%d bytes still held after the refused read", held)
	}
	if err := PlanMemory(context.Background(), 1<<40, "outside"); err != nil {
		t.Errorf("outside a Read's TakePlan: %v", err)
	}
}

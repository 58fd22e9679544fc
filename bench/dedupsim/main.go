// Package dedupsim is the measuring tool of bench/dedup.sh: it reads one
// physical backup as xbstream on stdin (backstream cat), cuts every file
// into blocks of each size asked, aligned to the file's offsets (so an
// InnoDB page never straddles two blocks whose size is a multiple of the
// page size), and counts against the blocks earlier runs saw (kept in a
// state file) how many bytes a block-level deduplicating repository would
// have to store new, plain and compressed (zstd level 1, block by block),
// and the blocks it would index. It stores nothing of the data: a block
// is known by a 128-bit hash.
//
//	dedupsim --state FILE --blocks 16K,64K,256K,1M --label NAME < stream
//
// It prints one line per block size: label, block size, bytes in, blocks,
// new blocks, new bytes, new bytes compressed, and the state's blocks.
package main

import (
	"encoding/gob"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/xxh3"

	"github.com/backstream/backstream/internal/xbstream"
)

type sizeState struct {
	Known map[xxh3.Uint128]struct{}
}

type counter struct {
	size                    int
	in, blocks, news        int64
	newBytes, newCompressed int64
	known                   map[xxh3.Uint128]struct{}
	seen                    map[xxh3.Uint128]struct{} // this run's, counted once
}

type fileBuf struct {
	block int64  // index of the block being filled
	buf   []byte // its bytes so far
}

func main() {
	state := flag.String("state", "", "file the known blocks are kept in between runs")
	blocks := flag.String("blocks", "16K,64K,256K,1M", "block sizes, comma-separated")
	label := flag.String("label", "", "what to call this run in the output")
	flag.Parse()
	if err := run(*state, *blocks, *label); err != nil {
		fmt.Fprintln(os.Stderr, "dedupsim:", err)
		os.Exit(1)
	}
}

func parseSize(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("block size %q", s)
	}
	return n * mult, nil
}

func run(statePath, blockList, label string) error {
	states := map[int]*sizeState{}
	if f, err := os.Open(statePath); err == nil {
		err = gob.NewDecoder(f).Decode(&states)
		f.Close()
		if err != nil {
			return fmt.Errorf("state %s: %w", statePath, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var cs []*counter
	for _, s := range strings.Split(blockList, ",") {
		n, err := parseSize(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		st := states[n]
		if st == nil {
			st = &sizeState{Known: map[xxh3.Uint128]struct{}{}}
			states[n] = st
		}
		cs = append(cs, &counter{size: n, known: st.Known, seen: map[xxh3.Uint128]struct{}{}})
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return err
	}
	files := make([]map[string]*fileBuf, len(cs))
	for i := range files {
		files[i] = map[string]*fileBuf{}
	}
	var scratch []byte
	emit := func(c *counter, b []byte) {
		c.blocks++
		h := xxh3.Hash128(b)
		if _, ok := c.known[h]; ok {
			return
		}
		if _, ok := c.seen[h]; ok {
			return
		}
		c.seen[h] = struct{}{}
		c.news++
		c.newBytes += int64(len(b))
		scratch = enc.EncodeAll(b, scratch[:0])
		c.newCompressed += int64(len(scratch))
	}
	r := xbstream.NewReader(os.Stdin)
	for {
		ch, _, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		for i, c := range cs {
			switch ch.Type {
			case xbstream.TypePayload:
				c.in += int64(len(ch.Payload))
				feed(files[i], c, ch.Path, int64(ch.Offset), ch.Payload, emit)
			case xbstream.TypeEOF:
				if f := files[i][ch.Path]; f != nil && len(f.buf) > 0 {
					emit(c, f.buf)
				}
				delete(files[i], ch.Path)
			}
		}
	}
	for i, c := range cs {
		for _, f := range files[i] {
			if len(f.buf) > 0 {
				emit(c, f.buf)
			}
		}
		for h := range c.seen {
			c.known[h] = struct{}{}
		}
		fmt.Printf("%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", label, c.size, c.in, c.blocks, c.news, c.newBytes, c.newCompressed, len(c.known))
	}
	f, err := os.Create(statePath)
	if err != nil {
		return err
	}
	if err := gob.NewEncoder(f).Encode(states); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// feed adds a payload at off of file path to its block buffer, emitting
// each block it completes. A payload that does not continue the block
// being filled (a seek, or a file sent out of order) ends that block.
func feed(files map[string]*fileBuf, c *counter, path string, off int64, p []byte, emit func(*counter, []byte)) {
	size := int64(c.size)
	f := files[path]
	if f == nil {
		f = &fileBuf{block: off / size}
		files[path] = f
	}
	for len(p) > 0 {
		at := f.block*size + int64(len(f.buf))
		if off != at {
			if len(f.buf) > 0 {
				emit(c, f.buf)
			}
			// A block entered part way holds only what follows off.
			f.block, f.buf = off/size, f.buf[:0]
		}
		room := int((f.block+1)*size - off)
		n := min(room, len(p))
		f.buf = append(f.buf, p[:n]...)
		p, off = p[n:], off+int64(n)
		if off == (f.block+1)*size {
			emit(c, f.buf)
			f.block, f.buf = f.block+1, f.buf[:0]
		}
	}
}

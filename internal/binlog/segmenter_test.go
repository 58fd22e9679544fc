package binlog

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// A real server's binary log (single-row transactions, a transaction of
// several statements, DDL, a non-transactional insert, a rollback, a
// transaction of several MiB), fed to the Segmenter as it would grow,
// in pieces of random size cut anywhere, with a segment taken after
// every piece: no segment ends inside a transaction (between a GTID event
// and the end of its commit, as the server reports them), the segments
// join into the file up to its last commit, and their indexes add up to
// the file's. With binlog_checksum CRC32 and NONE.
func TestSegmenterOnServerBinlog(t *testing.T) {
	t.Parallel()
	for _, checksum := range []string{"CRC32", "NONE"} {
		t.Run(checksum, func(t *testing.T) {
			t.Parallel()
			src := sandboxtest.Start(t, sandbox.Options{Args: []string{"--binlog-checksum=" + checksum}})
			db := src.DB()
			db.SetMaxOpenConns(1) // BEGIN .. COMMIT on one connection
			var file string
			commits := []int64{}
			exec := func(qs ...string) {
				t.Helper()
				for _, q := range qs {
					if _, err := db.Exec(q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
				var pos int64
				if err := db.QueryRow("SHOW MASTER STATUS").Scan(&file, &pos, new(string), new(string)); err != nil {
					t.Fatal(err)
				}
				commits = append(commits, pos)
			}
			exec("FLUSH BINARY LOGS") // a file that holds only what follows
			exec("CREATE DATABASE m")
			exec("CREATE TABLE m.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(200))")
			exec("CREATE TABLE m.plain (id INT) ENGINE=MyISAM")
			for i := range 20 {
				exec(fmt.Sprintf("INSERT INTO m.t (v) VALUES ('%d')", i))
			}
			exec("BEGIN", "INSERT INTO m.t (v) VALUES ('a')", "UPDATE m.t SET v = 'b' WHERE id < 5", "DELETE FROM m.t WHERE id = 7", "COMMIT")
			exec("INSERT INTO m.plain VALUES (1)")
			exec("BEGIN", "INSERT INTO m.t (v) VALUES ('gone')", "ROLLBACK")
			exec("ALTER TABLE m.t ADD COLUMN w INT")
			// Several MiB in one transaction: many row events, more than
			// one read window.
			exec("BEGIN",
				"INSERT INTO m.t (v) SELECT REPEAT('x', 200) FROM mysql.seq_1_to_20000",
				"UPDATE m.t SET w = id",
				"COMMIT")
			for i := range 20 {
				exec(fmt.Sprintf("INSERT INTO m.t (v) VALUES ('after %d')", i))
			}
			gtids, checkpoints := gtidPositions(t, db, file)
			// A position read after a statement may follow a binlog
			// checkpoint event that the server wrote on its own after
			// the statement's group: the group ends before it.
			for i, c := range commits {
				for start, ok := checkpoints[c]; ok; start, ok = checkpoints[c] {
					c = start
				}
				commits[i] = c
			}
			var datadir string
			db.QueryRow("SELECT @@datadir").Scan(&datadir)
			data, err := os.ReadFile(filepath.Join(datadir, file))
			if err != nil {
				t.Fatal(err)
			}
			last := commits[len(commits)-1]
			if int64(len(data)) < last {
				t.Fatalf("%s: %d bytes, the server says %d", file, len(data), last)
			}
			// inside reports an offset strictly inside a transaction:
			// after its GTID event starts, before its commit ends.
			inside := func(off int64) bool {
				for _, g := range gtids {
					for _, c := range commits {
						if c > g {
							if off > g && off < c {
								return true
							}
							break
						}
					}
				}
				return false
			}
			for seed := range uint64(3) {
				rng := rand.New(rand.NewPCG(seed, 14))
				grown := filepath.Join(t.TempDir(), file)
				f, err := os.Create(grown)
				if err != nil {
					t.Fatal(err)
				}
				s, err := OpenSegmenter(grown, 0)
				if err != nil {
					t.Fatal(err)
				}
				var joined bytes.Buffer
				var ix archive.BinlogFile
				segments := 0
				for at := 0; at < len(data); {
					// Small pieces where the small transactions are, so
					// that many segments are cut.
					bits := 14
					if at < 32<<10 || at > len(data)-32<<10 {
						bits = 9
					}
					n := min(1+rng.IntN(1<<rng.IntN(bits)), len(data)-at)
					f.Write(data[at : at+n])
					at += n
					if err := s.Advance(); err != nil {
						t.Fatalf("after %d bytes: %v", at, err)
					}
					start, end, part := s.Ready()
					if end == start {
						continue
					}
					if end > int64(at) || inside(end) {
						t.Fatalf("segment %d..%d with %d bytes written: it ends inside a transaction or past the file", start, end, at)
					}
					if start != int64(joined.Len()) {
						t.Fatalf("segment %d..%d after %d bytes taken", start, end, joined.Len())
					}
					if part.Size != end-start {
						t.Errorf("segment %d..%d: index size %d", start, end, part.Size)
					}
					b := make([]byte, end-start)
					if _, err := s.Bytes(start, end).ReadAt(b, 0); err != nil {
						t.Fatal(err)
					}
					joined.Write(b)
					s.Stored(end)
					ix = merge(ix, part)
					segments++
				}
				s.Close()
				f.Close()
				if int64(joined.Len()) < last || !bytes.Equal(joined.Bytes(), data[:joined.Len()]) {
					t.Fatalf("seed %d: the segments hold %d bytes, want the file's first %d (or more) as they are", seed, joined.Len(), last)
				}
				want, err := Scan(bytes.NewReader(joined.Bytes()))
				if err != nil {
					t.Fatal(err)
				}
				if ix.Events != want.Events || ix.FirstGTID != want.FirstGTID || ix.LastGTID != want.LastGTID ||
					!ix.FirstTime.Equal(want.FirstTime) || !ix.LastTime.Equal(want.LastTime) || ix.Previous != want.Previous {
					t.Errorf("seed %d: the %d segments' indexes add up to %+v; the file's is %+v", seed, segments, ix, want)
				}
				if segments < 10 {
					t.Errorf("seed %d: only %d segments: the test cut too little", seed, segments)
				}
			}
		})
	}
}

// gtidPositions returns the offsets of the GTID events of file, as the
// server lists them, and where each binlog checkpoint event starts, by
// where it ends.
func gtidPositions(t *testing.T, db *sql.DB, file string) (gtids []int64, checkpoints map[int64]int64) {
	t.Helper()
	rows, err := db.Query("SHOW BINLOG EVENTS IN '" + file + "'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	checkpoints = map[int64]int64{} // end -> start of each binlog checkpoint event
	for rows.Next() {
		var log, typ, info string
		var pos, server, end int64
		if err := rows.Scan(&log, &pos, &typ, &server, &end, &info); err != nil {
			t.Fatal(err)
		}
		switch typ {
		case "Gtid":
			gtids = append(gtids, pos)
		case "Binlog_checkpoint":
			checkpoints[end] = pos
		}
	}
	if len(gtids) == 0 {
		t.Fatal("no GTID events listed")
	}
	return gtids, checkpoints
}

// A segmenter resumed after the segments an earlier run stored offers
// only what follows them, and a tail that is not a whole event yet is
// not offered.
func TestSegmenterResumesAndWaitsForWholeEvents(t *testing.T) {
	data := synthetic(checksumCRC32)
	path := filepath.Join(t.TempDir(), "bin.000001")
	firstEnd := int64(len(data) - len(commitGroup(checksumCRC32, 2)))
	if err := os.WriteFile(path, data[:len(data)-3], 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenSegmenter(path, firstEnd)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Advance(); err != nil {
		t.Fatal(err)
	}
	if start, end, _ := s.Ready(); end != start {
		t.Errorf("segment %d..%d offered with the last event cut short", start, end)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(data[len(data)-3:])
	f.Close()
	if err := s.Advance(); err != nil {
		t.Fatal(err)
	}
	start, end, ix := s.Ready()
	if start != firstEnd || end != int64(len(data)) || ix.FirstGTID != "0-7-2" || ix.LastGTID != "0-7-2" {
		t.Errorf("segment %d..%d %+v; want %d..%d holding GTID 0-7-2 only", start, end, ix, firstEnd, len(data))
	}
}

// What the Segmenter cannot read is refused, naming the offset.
func TestSegmenterRefuses(t *testing.T) {
	good := synthetic(checksumCRC32)
	flipped := bytes.Clone(good)
	flipped[len(good)-len(commitGroup(checksumCRC32, 2))+headerLen+2] ^= 1 // in the last GTID event, under its CRC
	for name, tt := range map[string]struct {
		data []byte
		want string
	}{
		"not a binary log": {append([]byte("nope"), good[4:]...), "bad magic"},
		"bad checksum":     {flipped, "CRC32"},
		"unknown checksum": {append(append([]byte{}, Magic...), event(1, eventFormatDescription, 7, fdeBody(7))...), "unknown binlog_checksum algorithm 7"},
		"event size":       {append(append([]byte{}, good[:4+headerLen+len(fdeBody(checksumCRC32))]...), event(1, 2, 7, nil)[:9]...), ""},
	} {
		path := filepath.Join(t.TempDir(), "bin.000001")
		data := tt.data
		if name == "event size" {
			h := event(1, 2, 7, nil)
			binary.LittleEndian.PutUint32(h[9:], 3)
			data = append(data[:4+headerLen+len(fdeBody(checksumCRC32))], h...)
			tt.want = "size 3 out of range"
		}
		os.WriteFile(path, data, 0o600)
		s, err := OpenSegmenter(path, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Advance()
		s.Close()
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v; want an error naming the file and saying %q", name, err, tt.want)
		}
	}
}

// fdeBody is a format description body of binary log version 4 with the
// checksum algorithm alg (and room for its checksum).
func fdeBody(alg byte) []byte {
	b := make([]byte, 57+eventQueryCompressed)
	binary.LittleEndian.PutUint16(b, 4)
	copy(b[2:], "10.11.0-MariaDB")
	b[56] = headerLen
	b[57+eventQuery-1] = 13
	return append(b, alg, 0, 0, 0, 0)
}

// withCRC sets the last 4 bytes of ev to its CRC-32.
func withCRC(ev []byte) []byte {
	binary.LittleEndian.PutUint32(ev[len(ev)-4:], crc32.ChecksumIEEE(ev[:len(ev)-4]))
	return ev
}

// checked is an event whose body ends with a checksum when alg says so.
func checked(alg byte, ts uint32, typ byte, body []byte) []byte {
	if alg != checksumCRC32 {
		return event(ts, typ, 7, body)
	}
	return withCRC(event(ts, typ, 7, append(bytes.Clone(body), 0, 0, 0, 0)))
}

func queryBody(q string) []byte {
	return append(make([]byte, 13+1), q...) // post-header, no status variables, empty database name and its NUL
}

// commitGroup is one transaction: GTID, BEGIN, a row event, XID.
func commitGroup(alg byte, seq uint64) []byte {
	var b []byte
	b = append(b, checked(alg, 1700000002, eventGTID, gtidBody(0, seq))...)
	b = append(b, checked(alg, 1700000002, eventQuery, queryBody("BEGIN"))...)
	b = append(b, checked(alg, 1700000002, 30, make([]byte, 40))...)
	return append(b, checked(alg, 1700000003, eventXID, make([]byte, 8))...)
}

// synthetic is a small binary log: a format description and two
// transactions.
func synthetic(alg byte) []byte {
	b := append([]byte{}, Magic...)
	fde := event(1700000000, eventFormatDescription, 7, fdeBody(alg))
	if alg == checksumCRC32 {
		fde = withCRC(fde)
	}
	b = append(b, fde...)
	b = append(b, commitGroup(alg, 1)...)
	return append(b, commitGroup(alg, 2)...)
}

func FuzzSegmenter(f *testing.F) {
	f.Add(synthetic(checksumCRC32))
	f.Add(synthetic(checksumOff))
	f.Add(sample())
	// One file, rewritten for each input: a directory made and removed per
	// input (t.TempDir) made the fuzzer run a few inputs a second.
	path := filepath.Join(f.TempDir(), "bin.000001")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := OpenSegmenter(path, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		err = s.Advance()
		start, end, ix := s.Ready()
		if start != 0 || end < 0 || end > int64(len(data)) || (end > 0 && ix.Size != end) {
			t.Fatalf("segment %d..%d (%+v) of %d bytes (%v)", start, end, ix, len(data), err)
		}
		if end == 0 {
			return
		}
		// What it offers goes into a segment object and back.
		ix.Source, ix.Name = "db-1", "bin.000001"
		head, err := SegmentHeader(ix, start, end, bytes.NewReader(data[:end]), archive.HashBLAKE3)
		if err != nil {
			t.Fatal(err)
		}
		var back bytes.Buffer
		if _, err := ReadSegment(bytes.NewReader(append(head, data[:end]...)), "db-1", "bin.000001", start, end, &back); err != nil || !bytes.Equal(back.Bytes(), data[:end]) {
			t.Fatalf("segment object does not read back: %v", err)
		}
	})
}

func FuzzReadSegment(f *testing.F) {
	data := synthetic(checksumCRC32)
	ix := archive.BinlogFile{Source: "db-1", Name: "bin.000001", Events: 9}
	head, _ := SegmentHeader(ix, 0, int64(len(data)), bytes.NewReader(data), archive.HashBLAKE3)
	f.Add(append(head, data...))
	f.Add(head)
	f.Add([]byte("{}\n"))
	f.Fuzz(func(t *testing.T, obj []byte) {
		var out bytes.Buffer
		s, err := ReadSegment(bytes.NewReader(obj), "db-1", "bin.000001", 0, int64(len(data)), &out)
		if err == nil && (int64(out.Len()) != s.End-s.Start || !bytes.HasSuffix(obj, out.Bytes())) {
			t.Fatalf("read %d bytes for segment %d..%d", out.Len(), s.Start, s.End)
		}
		if err != nil && !archive.IsCorrupt(err) {
			t.Fatalf("damage not reported as such: %v", err)
		}
	})
}

// Chain joins segments from offset 0, skipping what overlaps, and names
// the first hole.
func TestChain(t *testing.T) {
	seg := func(a, b int64) repo.BinlogSegment { return repo.BinlogSegment{Start: a, End: b} }
	for _, tt := range []struct {
		segs  []repo.BinlogSegment
		chain string
		end   int64
		gap   string
	}{
		{nil, "", 0, ""},
		{[]repo.BinlogSegment{seg(0, 10), seg(10, 20)}, "0-10 10-20", 20, ""},
		{[]repo.BinlogSegment{seg(0, 10), seg(0, 15), seg(10, 20), seg(15, 30)}, "0-15 15-30", 30, ""},
		{[]repo.BinlogSegment{seg(0, 10), seg(5, 12), seg(10, 11)}, "0-10 5-12", 12, ""},
		{[]repo.BinlogSegment{seg(0, 10), seg(20, 30)}, "0-10", 10, "bytes 10..20"},
		{[]repo.BinlogSegment{seg(4, 10)}, "", 0, "bytes 0..4"},
	} {
		chain, end, gap := Chain(tt.segs)
		var got []string
		for _, s := range chain {
			got = append(got, fmt.Sprintf("%d-%d", s.Start, s.End))
		}
		if strings.Join(got, " ") != tt.chain || end != tt.end || gap != tt.gap {
			t.Errorf("Chain(%v) = %v, %d, %q; want %s, %d, %q", tt.segs, got, end, gap, tt.chain, tt.end, tt.gap)
		}
	}
}

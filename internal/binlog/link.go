package binlog

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/gtid"
	"github.com/backstream/backstream/internal/repo"
)

// link returns the link of src to the source it continues: the one
// recorded, or, on the first run of src (nothing of it archived), a new
// one if the server's binary log holds the last archived transaction of
// another source (a replica with log_slave_updates promoted after a
// failover, or this server under its old server_id): the archive of src
// then starts after that transaction instead of with a gap or a second
// copy of the same history. nil if src continues nothing.
func (a *Archiver) link(ctx context.Context, db *sql.DB, src string, done map[string]bool, files []serverFile) (*repo.BinlogLink, error) {
	links, err := a.Repo.BinlogLinks(ctx)
	if err != nil {
		return nil, err
	}
	continued := map[string]bool{}
	for i, l := range links {
		if l.Source == src {
			return &links[i], nil
		}
		continued[l.Continues] = true
	}
	if len(done) > 0 {
		return nil, nil
	}
	entries, err := a.Repo.Binlogs(ctx)
	if err != nil {
		return nil, err
	}
	views, err := Overviews(ctx, a.Repo, nil, entries)
	if err != nil {
		return nil, err
	}
	var best *repo.BinlogLink
	var bestTime time.Time
	for _, v := range views {
		// A source already continued by another is not where the stream
		// goes on from: its successor is.
		if v.Source == src || continued[v.Source] || v.To.GTID == "" {
			continue
		}
		// Of several servers whose last archived transaction this one
		// holds, the one archived last: sequence numbers of different
		// domains do not compare.
		g, err := gtid.Parse(v.To.GTID)
		if err != nil || (best != nil && !v.To.Time.After(bestTime)) {
			continue
		}
		file, offset, ok, err := findGTID(ctx, db, files, g)
		if err != nil {
			return nil, err
		}
		if ok {
			best = &repo.BinlogLink{Source: src, Continues: v.Source, GTID: g.String(), File: file, Offset: offset, Recorded: time.Now().UTC()}
			bestTime = v.To.Time
		}
	}
	if best == nil {
		return nil, nil
	}
	if err := a.Repo.PutBinlogLink(ctx, *best); err != nil {
		return nil, err
	}
	a.log("binlog: %s continues %s after GTID %s: archiving from %s (the first transaction after it at offset %d); recorded as %s",
		src, best.Continues, best.GTID, best.File, best.Offset, best.Object())
	return best, nil
}

// findGTID finds the transaction g in the server's binary log: the file
// that holds it (the newest whose GTID list is before g in g's domain) and
// the offset where what follows its transaction starts. ok is false if
// the server's files do not hold it.
func findGTID(ctx context.Context, db *sql.DB, files []serverFile, g GTID) (file string, offset int64, ok bool, err error) {
	for i := len(files) - 1; i >= 0; i-- {
		if seqIn(gtidListOf(ctx, db, files[i].name), g.Domain) >= g.Seq {
			continue // g is before this file
		}
		offset, ok, err := transactionEnd(ctx, db, files[i].name, g)
		return files[i].name, offset, ok, err
	}
	return "", 0, false, nil
}

// seqIn is the sequence number of domain's GTID in a GTID list, 0 if none.
func seqIn(list string, domain uint32) uint64 {
	for _, g := range gtid.Entries(list) {
		if g.Domain == domain {
			return g.Seq
		}
	}
	return 0
}

// transactionEnd reads the events of the server's file name and returns
// where the first event after transaction g's starts: the next GTID
// event, or the end of what the file holds so far.
func transactionEnd(ctx context.Context, db *sql.DB, name string, g GTID) (int64, bool, error) {
	rows, err := db.QueryContext(ctx, "SHOW BINLOG EVENTS IN '"+strings.ReplaceAll(name, "'", "''")+"'")
	if err != nil {
		return 0, false, fmt.Errorf("SHOW BINLOG EVENTS IN '%s': %w", name, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, false, err
	}
	col := func(name string) int { return slices.Index(cols, name) }
	pos, typ, end, info := col("Pos"), col("Event_type"), col("End_log_pos"), col("Info")
	if pos < 0 || typ < 0 || end < 0 || info < 0 {
		return 0, false, fmt.Errorf("SHOW BINLOG EVENTS: unexpected columns %v", cols)
	}
	found, last := false, int64(0)
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return 0, false, err
		}
		if vals[typ].String == "Gtid" {
			if found {
				at, err := strconv.ParseInt(vals[pos].String, 10, 64)
				return at, err == nil, err
			}
			found = slices.Contains(strings.Fields(vals[info].String), g.String())
		}
		if n, err := strconv.ParseInt(vals[end].String, 10, 64); err == nil {
			last = n
		}
	}
	return last, found, rows.Err()
}

// CutBefore rewrites the binary log file at path to hold its format
// description event and then its events from offset from on: the first
// file of a server that continues another's archive, whose events before
// from are the other server's transactions, already replayed. Each event
// carries its own checksum, and mariadb-binlog reads a file event by
// event, so the events after the cut read as before.
func CutBefore(path string, from int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, len(Magic)+headerLen)
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head[:len(Magic)], Magic) {
		return fmt.Errorf("%s: no binary log header to keep (%v)", path, err)
	}
	fdEnd := int64(len(Magic)) + int64(binary.LittleEndian.Uint32(head[len(Magic)+9:]))
	if head[len(Magic)+4] != eventFormatDescription || from < fdEnd {
		return fmt.Errorf("%s: cannot start at offset %d: the file does not start with a format description event ending before it", path, from)
	}
	if st, err := f.Stat(); err != nil || from > st.Size() {
		return fmt.Errorf("%s: cannot start at offset %d: the file is shorter (%v)", path, from, err)
	}
	out, err := os.CreateTemp(filepath.Dir(path), ".cut-*")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name())
	if _, err := io.Copy(out, io.NewSectionReader(f, 0, fdEnd)); err != nil {
		out.Close()
		return err
	}
	if _, err := io.Copy(out, io.NewSectionReader(f, from, 1<<62)); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(out.Name(), path)
}

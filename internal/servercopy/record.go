package servercopy

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/replica"
)

// recordTable is where a target keeps a row per copy made into it: its
// source and, once complete, the source's position its data stands for,
// so that it can replicate from there later (Recorded). It lives in the
// load journal's database, which stays while it holds a row.
var recordTable = mariadb.QuoteIdent(logical.JournalDatabase) + ".copies"

// record is a row of recordTable.
type record struct {
	id, source string
	started    time.Time
	position   archive.Positions // once finished
}

// sourceName identifies a source in the record: its @@hostname and
// @@port, the same however it is reached.
func sourceName(s Server) string { return s.Hostname + ":" + strconv.Itoa(s.Port) }

// hasRecords reports whether the target has the record table.
func hasRecords(ctx context.Context, dst *sql.DB) (bool, error) {
	var n int
	err := dst.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'copies'", logical.JournalDatabase).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("target: %w", err)
	}
	return n > 0, nil
}

// unfinished returns the copy the target holds unfinished, or nil.
func unfinished(ctx context.Context, dst *sql.DB) (*record, error) {
	rs, err := records(ctx, dst, "finished IS NULL")
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return &rs[0], nil
}

// records reads the rows of the record table where cond holds, newest
// first; none if the target has no such table.
func records(ctx context.Context, dst *sql.DB, cond string) ([]record, error) {
	if ok, err := hasRecords(ctx, dst); err != nil || !ok {
		return nil, err
	}
	rows, err := dst.QueryContext(ctx, "SELECT id, source, started, gtid_binlog_pos, binlog_file, binlog_pos FROM "+recordTable+" WHERE "+cond+" ORDER BY started DESC, id DESC")
	if err != nil {
		return nil, fmt.Errorf("target: the record of copies: %w", err)
	}
	defer rows.Close()
	var out []record
	for rows.Next() {
		var r record
		var started string
		var gtid, file sql.NullString
		var pos sql.NullInt64
		if err := rows.Scan(&r.id, &r.source, &started, &gtid, &file, &pos); err != nil {
			return nil, fmt.Errorf("target: the record of copies: %w", err)
		}
		r.started, _ = time.Parse(time.DateTime, started)
		r.position = archive.Positions{GTID: gtid.String, BinlogFile: file.String, BinlogPosition: uint64(pos.Int64)}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("target: the record of copies: %w", err)
	}
	return out, nil
}

// begin records copy id from source on the target as unfinished (again,
// when resumed), creating the record table where it is missing.
func begin(ctx context.Context, dst *sql.DB, id string, source Server) error {
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS " + mariadb.QuoteIdent(logical.JournalDatabase),
		"CREATE TABLE IF NOT EXISTS " + recordTable + " (id VARCHAR(64) NOT NULL PRIMARY KEY, source VARCHAR(300) NOT NULL," +
			" source_version VARCHAR(100) NOT NULL, started DATETIME NOT NULL, finished DATETIME NULL," +
			" gtid_binlog_pos TEXT NULL, binlog_file VARCHAR(512) NULL, binlog_pos BIGINT UNSIGNED NULL) ENGINE=InnoDB",
	} {
		if _, err := dst.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("target: the record of copies: %w", err)
		}
	}
	_, err := dst.ExecContext(ctx, "INSERT INTO "+recordTable+" (id, source, source_version, started) VALUES (?, ?, ?, ?)"+
		" ON DUPLICATE KEY UPDATE source = VALUES(source), source_version = VALUES(source_version), started = VALUES(started), finished = NULL",
		id, sourceName(source), source.Version, time.Now().UTC().Format(time.DateTime))
	if err != nil {
		return fmt.Errorf("target: the record of copies: %w", err)
	}
	return nil
}

// finish records copy id as complete, with the source's position.
func finish(ctx context.Context, dst *sql.DB, id string, p archive.Positions) error {
	_, err := dst.ExecContext(ctx, "UPDATE "+recordTable+" SET finished = ?, gtid_binlog_pos = ?, binlog_file = ?, binlog_pos = ? WHERE id = ?",
		time.Now().UTC().Format(time.DateTime), p.GTID, p.BinlogFile, p.BinlogPosition, id)
	if err != nil {
		return fmt.Errorf("target: the record of copies: %w", err)
	}
	return nil
}

// Copied is what a server records of the newest copy made into it.
type Copied struct {
	ID       string
	Source   string // the source's @@hostname:@@port
	Position archive.Positions
}

// StartAt sets opt to start a replica of the source where the copy c
// stands.
func (c *Copied) StartAt(opt *replica.Options) {
	startAt(opt, c.Position, "copy "+c.ID+" from "+c.Source)
}

// startAt sets opt to start a replica at the source's position p, read
// from what from names.
func startAt(opt *replica.Options, p archive.Positions, from string) {
	opt.Coordinates = &physical.BinlogInfo{File: p.BinlogFile, Position: p.BinlogPosition, GTID: p.GTID}
	opt.CoordinatesFrom = from
}

// LastCopy reads, on the server cfg reaches, the record of the newest
// copy made into it that finished: for a replica of the copy's source
// that starts later than the copy (replicate --from-copy).
func LastCopy(ctx context.Context, cfg mariadb.Config) (*Copied, error) {
	db, err := mariadb.Open(ctx, cfg, "")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rs, err := records(ctx, db, "finished IS NOT NULL")
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("the server records no finished copy into it (table %s)", recordTable)
	}
	return &Copied{ID: rs[0].id, Source: rs[0].source, Position: rs[0].position}, nil
}

package sandbox

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
)

// systemSchemas are left out of checksums: they differ between any two
// servers (users, statistics, timestamps) and are not what a restore compares.
var systemSchemas = []string{"mysql", "information_schema", "performance_schema", "sys"}

// ChecksumTables returns CHECKSUM TABLE ... EXTENDED of every base table
// (including system-versioned ones) outside the system schemas, keyed
// "db.table". Two servers of the same version holding the same rows in the
// same table definitions give equal maps, which is how restore tests compare
// a restored server with its source.
func ChecksumTables(ctx context.Context, db *sql.DB) (map[string]string, error) {
	q := `SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES
		WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED')
		AND TABLE_SCHEMA NOT IN (` + placeholders(len(systemSchemas)) + `)
		ORDER BY TABLE_SCHEMA, TABLE_NAME`
	args := make([]any, len(systemSchemas))
	for i, s := range systemSchemas {
		args[i] = s
	}
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sandbox: list tables: %w", err)
	}
	var tables [][2]string
	for rows.Next() {
		var schema, name string
		if err := rows.Scan(&schema, &name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sandbox: list tables: %w", err)
		}
		tables = append(tables, [2]string{schema, name})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: list tables: %w", err)
	}

	sums := make(map[string]string, len(tables))
	var mu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	// A few at once: checksumming is a full scan per table, and big tables
	// should not wait behind each other, but the test machine is small.
	g.SetLimit(4)
	for _, t := range tables {
		g.Go(func() error {
			key := t[0] + "." + t[1]
			var name string
			var sum sql.NullString
			err := db.QueryRowContext(ctx, "CHECKSUM TABLE "+quoteIdent(t[0])+"."+quoteIdent(t[1])+" EXTENDED").Scan(&name, &sum)
			if err != nil {
				return fmt.Errorf("sandbox: checksum table %s: %w", key, err)
			}
			if !sum.Valid {
				// NULL means the server could not read the table (it
				// reports a warning, not an error).
				return fmt.Errorf("sandbox: checksum table %s: server returned NULL", key)
			}
			mu.Lock()
			sums[key] = sum.String
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return sums, nil
}

// SampleOptions says what LoadSample creates. All data is a deterministic
// function of the options, so two servers loaded alike have equal checksums.
type SampleOptions struct {
	// Database to create the tables in; default "sample".
	Database string
	// Tables is the number of small tables small_01, small_02, ...: a few
	// thousand rows each of mixed types (signed and unsigned integers,
	// decimal, double, utf8mb4 text with emoji, text with tabs, newlines,
	// backslashes, NUL and a literal \N, datetime(6), date) and NULLs.
	Tables int
	// BigTableMB, if positive, adds table "big" of about this many MB of
	// InnoDB data (data_length plus index_length).
	BigTableMB int
	// Blobs adds table "blobs": one row per byte value 0..255, one row with
	// all 256 byte values, NULL and empty blobs, and blobs of 1 MiB and more
	// (random and zeros).
	Blobs bool
}

// SmallTableRows is the row count of small table i (1-based).
func SmallTableRows(i int) int { return 2000 + 500*i }

// bigRowBytes is the InnoDB footprint of one row of "big" (clustered record
// at about 15/16 page fill plus its secondary index entry), measured on 10.11.
const bigRowBytes = 420

// insertBatch bounds one INSERT ... SELECT, so a big table is not one huge
// transaction (undo log, lock memory) on a small buffer pool.
const insertBatch = 50000

// LoadSample creates the sample tables with INSERT ... SELECT from the
// sequence engine, so the server generates the rows. Existing tables of the
// same names are replaced.
func LoadSample(ctx context.Context, db *sql.DB, opt SampleOptions) error {
	if opt.Database == "" {
		opt.Database = "sample"
	}
	dbq := quoteIdent(opt.Database)
	exec := func(what, q string, args ...any) error {
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("sandbox: load sample %s: %s: %w", opt.Database, what, err)
		}
		return nil
	}
	if err := exec("create database", "CREATE DATABASE IF NOT EXISTS "+dbq+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		return err
	}
	seq := func(from, to int) string { return fmt.Sprintf("%s.`seq_%d_to_%d`", dbq, from, to) }

	for i := 1; i <= opt.Tables; i++ {
		name := fmt.Sprintf("small_%02d", i)
		tq := dbq + "." + quoteIdent(name)
		if err := exec(name, "DROP TABLE IF EXISTS "+tq); err != nil {
			return err
		}
		if err := exec(name, "CREATE TABLE "+tq+smallTableDDL); err != nil {
			return err
		}
		if err := exec(name, "INSERT INTO "+tq+smallTableSelect+seq(1, SmallTableRows(i))); err != nil {
			return err
		}
	}

	if opt.BigTableMB > 0 {
		tq := dbq + ".`big`"
		if err := exec("big", "DROP TABLE IF EXISTS "+tq); err != nil {
			return err
		}
		if err := exec("big", "CREATE TABLE "+tq+bigTableDDL); err != nil {
			return err
		}
		total := opt.BigTableMB << 20 / bigRowBytes
		for from := 1; from <= total; from += insertBatch {
			to := min(from+insertBatch-1, total)
			if err := exec("big", "INSERT INTO "+tq+bigTableSelect+seq(from, to)); err != nil {
				return err
			}
		}
	}

	if opt.Blobs {
		if err := loadBlobs(exec, dbq, seq(0, 255)); err != nil {
			return err
		}
	}
	return nil
}

const smallTableDDL = ` (
	id INT NOT NULL PRIMARY KEY,
	qty INT NULL,
	big BIGINT UNSIGNED NOT NULL,
	price DECIMAL(12,2) NULL,
	ratio DOUBLE NULL,
	name VARCHAR(100) NOT NULL,
	note TEXT NULL,
	created DATETIME(6) NULL,
	day DATE NULL,
	KEY k_qty (qty),
	KEY k_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

// The notes cover what a text dump must escape: tab, newline, carriage
// return, backslash, NUL, a literal \N (not NULL), the string NULL, quotes,
// and the empty string. Backslash escapes here are SQL's, inside a Go raw
// string.
const smallTableSelect = ` (id, qty, big, price, ratio, name, note, created, day)
SELECT seq,
	IF(seq % 11 = 0, NULL, CAST(seq * 7919 % 10007 AS SIGNED) - 5000),
	IF(seq = 1, 18446744073709551615, seq * 2654435761),
	IF(seq % 13 = 0, NULL, CAST(CAST(seq * 7919 % 1000000 AS SIGNED) / 100 - 2000 AS DECIMAL(12,2))),
	IF(seq % 17 = 0, NULL, seq / 7e0),
	CONCAT(ELT(1 + seq % 6, 'plain', 'café', '日本語テキスト', 'emoji 😀🎉', 'naïve Ünïcödé', 'Ελληνικά'), ' #', seq),
	CASE seq % 12
		WHEN 0 THEN NULL
		WHEN 1 THEN 'tab\there'
		WHEN 2 THEN 'newline\nhere'
		WHEN 3 THEN 'back\\slash'
		WHEN 4 THEN '\\N'
		WHEN 5 THEN ''
		WHEN 6 THEN 'NULL'
		WHEN 7 THEN 'quotes '' and "double"'
		WHEN 8 THEN 'nul\0byte'
		WHEN 9 THEN 'cr\r\nlf'
		ELSE REPEAT('x', seq % 500)
	END,
	IF(seq % 19 = 0, NULL, TIMESTAMP'2020-01-01 00:00:00' + INTERVAL seq * 37 MINUTE + INTERVAL seq * 7 % 1000000 MICROSECOND),
	IF(seq % 23 = 0, NULL, DATE'1970-01-01' + INTERVAL seq * 3 DAY)
FROM `

const bigTableDDL = ` (
	id BIGINT NOT NULL PRIMARY KEY,
	k INT NOT NULL,
	c CHAR(64) NOT NULL,
	pad VARCHAR(300) NOT NULL,
	KEY k_k (k)
) ENGINE=InnoDB DEFAULT CHARSET=latin1`

// Hex digests: incompressible enough to make compression honest (about 2:1,
// like real data), cheap for the server to generate.
const bigTableSelect = ` (id, k, c, pad)
SELECT seq, (seq * 40503) % 1000003, SHA2(seq, 256), CONCAT(SHA2(seq * 3, 512), MD5(seq), SHA2(seq * 5, 256))
FROM `

func loadBlobs(exec func(what, q string, args ...any) error, dbq, seq0to255 string) error {
	tq := dbq + ".`blobs`"
	if err := exec("blobs", "DROP TABLE IF EXISTS "+tq); err != nil {
		return err
	}
	if err := exec("blobs", "CREATE TABLE "+tq+` (
		id INT NOT NULL PRIMARY KEY,
		name VARCHAR(64) NOT NULL,
		b LONGBLOB NULL
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`); err != nil {
		return err
	}
	if err := exec("blobs", "INSERT INTO "+tq+" SELECT seq, CONCAT('byte-', seq), CHAR(seq USING binary) FROM "+seq0to255); err != nil {
		return err
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	rows := []struct {
		id   int
		name string
		b    any
	}{
		{1000, "all-bytes", all},
		{1001, "null", nil},
		{1002, "empty", []byte{}},
		{1003, "random-1MiB", sampleRandom(1, 1<<20)},
		{1005, "random-2MiB-plus-1", sampleRandom(2, 2<<20+1)},
	}
	for _, r := range rows {
		if err := exec("blobs", "INSERT INTO "+tq+" VALUES (?, ?, ?)", r.id, r.name, r.b); err != nil {
			return err
		}
	}
	// Built by the server: no need to ship a megabyte of zeros.
	return exec("blobs", "INSERT INTO "+tq+" VALUES (1004, 'zeros-1MiB', REPEAT(CHAR(0 USING binary), 1048576))")
}

// sampleRandom returns n deterministic pseudo-random bytes.
func sampleRandom(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// quoteIdent quotes a MariaDB identifier with backticks.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

package usecasetest

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/sandbox"
)

// Conn is the connection a command makes to the sandbox server s with
// `--socket S --user root --no-defaults`.
func Conn(s *sandbox.Server) mariadb.Config {
	return mariadb.Config{Socket: s.Socket, User: "root", Protocol: "socket"}
}

// ServerOn starts a server on a restored datadir for the rest of the test.
func ServerOn(t testing.TB, datadir string) *sandbox.Server {
	t.Helper()
	s, err := sandbox.Start(context.Background(), sandbox.Options{Dir: t.TempDir(), Datadir: datadir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Checksums is CHECKSUM TABLE of every table of the server.
func Checksums(t testing.TB, s *sandbox.Server) map[string]string {
	t.Helper()
	sums, err := sandbox.ChecksumTables(context.Background(), s.DB())
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// CompareChecksums fails for every table whose checksum differs or is
// missing, and for every table got has that want has not.
func CompareChecksums(t testing.TB, got, want map[string]string) {
	t.Helper()
	for name, w := range want {
		if got[name] != w {
			t.Errorf("table %s: checksum %q, want %q", name, got[name], w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("table %s restored but not in the source", name)
		}
	}
}

// CreateBank makes the schema the transfer loads run on: bank.accounts
// with accounts rows holding initial each, bank.transfers, and
// bank.filler with fillerRows rows of pad (an expression of seq) as bulk;
// then runs the extra statements.
func CreateBank(t testing.TB, db *sql.DB, accounts, initial, fillerRows int, pad string, extra ...string) {
	t.Helper()
	for _, q := range append([]string{
		"CREATE DATABASE bank",
		"CREATE TABLE bank.accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL) ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO bank.accounts SELECT seq, %d FROM bank.seq_1_to_%d", initial, accounts),
		"CREATE TABLE bank.transfers (id BIGINT AUTO_INCREMENT PRIMARY KEY, src INT, dst INT, amount INT) ENGINE=InnoDB",
		"CREATE TABLE bank.filler (id INT PRIMARY KEY, pad VARCHAR(200)) ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO bank.filler SELECT seq, %s FROM bank.seq_1_to_%d", pad, fillerRows),
	}, extra...) {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// Transfer moves amount from row a of one table to row b of another (or
// the same) in one transaction, and logs it in bank.transfers.
func Transfer(ctx context.Context, db *sql.DB, from, to string, a, b, amount int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"UPDATE " + from + " SET balance = balance - ? WHERE id = ?", []any{amount, a}},
		{"UPDATE " + to + " SET balance = balance + ? WHERE id = ?", []any{amount, b}},
		{"INSERT INTO bank.transfers (src, dst, amount) VALUES (?, ?, ?)", []any{a, b, amount}},
	} {
		if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// GTIDSeq is the sequence number of the server's single-domain
// @@gtid_binlog_pos.
func GTIDSeq(t testing.TB, db *sql.DB) int64 {
	t.Helper()
	var pos string
	if err := db.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	return SeqOf(t, pos)
}

// SeqOf returns the sequence number of a single-domain GTID position "0-1-42".
func SeqOf(t testing.TB, gtid string) int64 {
	t.Helper()
	parts := strings.Split(gtid, "-")
	n, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	if len(parts) != 3 || err != nil {
		t.Fatalf("GTID position %q is not a single-domain position", gtid)
	}
	return n
}

// WaitCheckpoint flushes the server's dirty pages and waits (30 s at most)
// until its checkpoint is within 1 MiB of the log's end: a backup then
// copies the data files with the data, not a redo log that carries it.
func WaitCheckpoint(t *testing.T, db *sql.DB) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "SET GLOBAL innodb_max_dirty_pages_pct = 0"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var name string
		var age int64
		if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_checkpoint_age'").Scan(&name, &age); err != nil || age < 1<<20 {
			return
		}
	}
}

func CompareDescriptions(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: missing after the restore", k)
		} else if g != w {
			t.Errorf("%s differs:\n got: %s\nwant: %s", k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: restored but not in the source", k)
		}
	}
}

// Accounts is every user@host of the server, sorted.
func Accounts(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query("SELECT CONCAT(User, '@', Host) FROM mysql.user ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// QueryRows returns every row of q, its columns joined by tabs.
func QueryRows(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var line []string
		for _, v := range vals {
			line = append(line, v.String)
		}
		out = append(out, strings.Join(line, "\t"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// ExecAll runs statements on db, failing the test on the first error.
func ExecAll(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TableState is every table of database d with its CHECKSUM TABLE.
func TableState(t *testing.T, db *sql.DB, d string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, err := db.Query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME", d)
		if err != nil {
			if time.Now().After(deadline) {
				t.Fatal(err)
			}
			continue
		}
		var names []string
		for rows.Next() {
			var n string
			rows.Scan(&n)
			names = append(names, n)
		}
		rows.Close()
		var b strings.Builder
		for _, n := range names {
			var name string
			var sum sql.NullString
			if err := db.QueryRow("CHECKSUM TABLE `"+d+"`.`"+n+"` EXTENDED").Scan(&name, &sum); err != nil {
				fmt.Fprintf(&b, "%s=error(%v) ", n, err)
				continue
			}
			fmt.Fprintf(&b, "%s=%s ", n, sum.String)
		}
		return b.String()
	}
}

// AccountDetails describes the accounts of s that the test made (and any the
// replay left behind): name, password hash, grants.
func AccountDetails(t *testing.T, s *sandbox.Server) string {
	t.Helper()
	rows, err := s.DB().Query("SELECT User, Host, authentication_string FROM mysql.user WHERE User LIKE 'acct%' OR User LIKE 'role%' OR User LIKE 'backstream%' ORDER BY User, Host")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var u, h, auth string
		if err := rows.Scan(&u, &h, &auth); err != nil {
			t.Fatal(err)
		}
		out = append(out, u+"@"+h+" "+auth)
		if strings.HasPrefix(u, "acct") {
			var g string
			gr, err := s.DB().Query(fmt.Sprintf("SHOW GRANTS FOR '%s'@'%s'", u, h))
			if err != nil {
				t.Fatal(err)
			}
			for gr.Next() {
				gr.Scan(&g)
				out = append(out, "  "+g)
			}
			gr.Close()
		}
	}
	return strings.Join(out, "\n")
}

// Package serverup starts the server that runs from a restored datadir,
// the way the user runs it (systemd, or a command of theirs), waits until
// it answers, makes sure the server answering is the one just started on
// that datadir, and checks it quickly: CHECK TABLE of the system tables, and a row
// count of the biggest tables. It knows nothing of backups or flags.
package serverup

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/backstream/backstream/internal/mariadb"
)

// Systemd is the How that starts the server with systemctl.
const Systemd = "systemd"

// Options say how to start and reach the server.
type Options struct {
	How     string         // Systemd (systemctl start mariadb) or a shell command that starts it and returns
	Conn    mariadb.Config // how to reach it once started
	Datadir string         // the datadir it must run on
	Timeout time.Duration  // for the start command and the wait until it answers together
	// Biggest is how many of the biggest tables to count the rows of.
	Biggest int
	// DatadirVersion is the @@version of the server that wrote the
	// datadir (a backup's source), empty if unknown: a server of a newer
	// major.minor started on it is told to run its mariadb-upgrade
	// (Report.Upgrade).
	DatadirVersion string
	// CheckTimeout bounds the checks once the server answers (that it is
	// the one started, CHECK TABLE of the system tables, the row counts),
	// apart from Timeout; 0 means DefaultCheckTimeout. A row count it
	// cuts short is reported as not counted, not as a failure: a big table
	// takes long to count on a server that is fine.
	CheckTimeout time.Duration
}

// DefaultCheckTimeout is the CheckTimeout of Options that give none.
const DefaultCheckTimeout = 10 * time.Minute

// Report is what the check found (restore --datadir --start --json prints
// it with these keys).
type Report struct {
	Version      string       `json:"version"`
	Hostname     string       `json:"hostname"`
	SystemTables int          `json:"system_tables"`  // system tables CHECK TABLE found OK
	Counted      []TableCount `json:"biggest_tables"` // the biggest tables, biggest first
	// Upgrade, when the server is of a newer major.minor than the
	// datadir, says to run the server's mariadb-upgrade, which is the
	// DBA's step (the system tables and the datadir's record of the
	// version are brought up to date by it, as after any upgrade).
	Upgrade string `json:"upgrade,omitempty"`
}

// TableCount is the row count of one table.
type TableCount struct {
	Table   string `json:"table"` // db.table
	Rows    int64  `json:"rows"`
	Counted bool   `json:"counted"` // false: the count did not finish within CheckTimeout
	Bytes   int64  `json:"bytes"`   // data and index length as the server estimates them
}

// Start starts the server, waits until it answers on opt.Conn (both
// within opt.Timeout), and checks it (within opt.CheckTimeout). An error
// names the step that failed; the server is left running whatever happens
// (stopping it is the user's call).
func Start(ctx context.Context, opt Options) (*Report, error) {
	db, began, err := startAndWait(ctx, opt)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if opt.CheckTimeout <= 0 {
		opt.CheckTimeout = DefaultCheckTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, opt.CheckTimeout)
	defer cancel()
	var rep Report
	var datadir string
	if err := db.QueryRowContext(ctx, "SELECT @@version, @@hostname, @@datadir").Scan(&rep.Version, &rep.Hostname, &datadir); err != nil {
		return nil, fmt.Errorf("the started server: %w", err)
	}
	if !sameDir(datadir, opt.Datadir) {
		return nil, fmt.Errorf("the server answering as %s runs on %s, not on the restored datadir %s: another server answers there, or the one started uses another datadir; nothing was checked", opt.Conn, datadir, opt.Datadir)
	}
	if err := startedSince(ctx, db, began); err != nil {
		return nil, fmt.Errorf("the server answering as %s: %w", opt.Conn, err)
	}
	rep.Upgrade = upgradeNote(opt.DatadirVersion, rep.Version)
	if rep.SystemTables, err = checkSystemTables(ctx, db); err != nil {
		return nil, err
	}
	if rep.Counted, err = countBiggest(ctx, db, opt.Biggest); err != nil {
		return nil, err
	}
	return &rep, nil
}

// upgradeNote says to run mariadb-upgrade when server is of a newer
// major.minor than the datadir's writer, else nothing.
func upgradeNote(datadir, server string) string {
	dMajor, dMinor, _, err1 := mariadb.ParseVersion(datadir)
	sMajor, sMinor, _, err2 := mariadb.ParseVersion(server)
	if err1 != nil || err2 != nil || sMajor < dMajor || sMajor == dMajor && sMinor <= dMinor {
		return ""
	}
	return fmt.Sprintf("the datadir is of MariaDB %d.%d (%s), the server MariaDB %d.%d: run the server's mariadb-upgrade (%d.%d's) now, as after any upgrade, to bring the system tables up to date",
		dMajor, dMinor, datadir, sMajor, sMinor, sMajor, sMinor)
}

// MaxSocketPath is the longest path a Unix socket can have on Linux: its
// sun_path holds 108 bytes with the terminating NUL.
const MaxSocketPath = 107

// Check refuses options no server can be reached with, so that a caller
// can refuse them before it changes anything: a socket path longer than
// MaxSocketPath (connecting through it fails with "invalid argument" on
// every try, which would read as a server that never came up).
func (o Options) Check() error {
	if n := len(o.Conn.Socket); n > MaxSocketPath {
		return fmt.Errorf("the socket path %s is %d bytes, longer than the %d a Unix socket's path can have: give a shorter --socket", o.Conn.Socket, n, MaxSocketPath)
	}
	return nil
}

// startAndWait runs the start command and waits until the server answers,
// within opt.Timeout. It returns when the command began, and the
// connection.
func startAndWait(ctx context.Context, opt Options) (*sql.DB, time.Time, error) {
	if err := opt.Check(); err != nil {
		return nil, time.Now(), err
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	began := time.Now()
	var cmd *exec.Cmd
	if opt.How == Systemd {
		cmd = exec.CommandContext(ctx, "systemctl", "start", "mariadb")
	} else {
		cmd = exec.CommandContext(ctx, "/bin/sh", "-c", opt.How)
	}
	// The command's own output, not an inherited pipe a daemon it starts
	// would hold open (CombinedOutput would wait for that daemon to exit).
	cmd.WaitDelay = time.Second
	if out, err := cmd.CombinedOutput(); err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return nil, began, fmt.Errorf("starting the server (%s) failed: %v: %s", describe(opt.How), err, strings.TrimSpace(string(out)))
	}
	db, err := waitUntilUp(ctx, opt.Conn)
	if err != nil {
		return nil, began, fmt.Errorf("the server started with %s did not answer as %s within %s: %w", describe(opt.How), opt.Conn, opt.Timeout, err)
	}
	return db, began, nil
}

// startedSince makes sure the server db reaches started after began: an
// old server still answering where the new one should (one that was not
// stopped, on a datadir of the same path) must not be taken for the new
// one. Its Uptime, in whole seconds, is compared with the time since the
// start command ran: the one second of slack covers the rounding of both
// ends to whole seconds. A server's pid or its parent would not do: a
// command that starts the server in the background leaves it orphaned, and
// systemd's is no child of ours.
func startedSince(ctx context.Context, db *sql.DB, began time.Time) error {
	var name string
	var uptime int64
	if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Uptime'").Scan(&name, &uptime); err != nil {
		return fmt.Errorf("reading its uptime: %w", err)
	}
	since := time.Since(began)
	if up := time.Duration(uptime) * time.Second; up > since+time.Second {
		return fmt.Errorf("it has been up for %s, longer than the %s since the start command ran: it is not the server just started (an old one still answers there; has the new one failed to start?); nothing was checked",
			up, since.Round(time.Second))
	}
	return nil
}

// describe names how the server was started, for messages.
func describe(how string) string {
	if how == Systemd {
		return "systemctl start mariadb"
	}
	return fmt.Sprintf("the command %q", how)
}

// waitUntilUp connects until the server answers or ctx ends.
func waitUntilUp(ctx context.Context, conn mariadb.Config) (*sql.DB, error) {
	for {
		db, err := mariadb.Open(ctx, conn, "")
		if err == nil {
			return db, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// sameDir reports whether a and b name the same directory, the server's
// @@datadir ending in a slash.
func sameDir(a, b string) bool {
	clean := func(p string) string {
		p = filepath.Clean(p)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	return clean(a) == clean(b)
}

// checkSystemTables runs CHECK TABLE on every base table of the mysql
// schema and returns how many were OK; any other verdict fails, naming
// the table and the server's words.
func checkSystemTables(ctx context.Context, db *sql.DB) (int, error) {
	rows, err := db.QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'mysql' AND table_type = 'BASE TABLE' ORDER BY table_name")
	if err != nil {
		return 0, fmt.Errorf("listing the system tables: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return 0, err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(names) == 0 {
		return 0, errors.New("the started server has no system tables in the mysql schema")
	}
	for _, n := range names {
		var table, op, typ, text string
		if err := db.QueryRowContext(ctx, "CHECK TABLE "+mariadb.QuoteIdent("mysql")+"."+mariadb.QuoteIdent(n)).Scan(&table, &op, &typ, &text); err != nil {
			return 0, fmt.Errorf("CHECK TABLE mysql.%s: %w", n, err)
		}
		if !strings.EqualFold(typ, "status") || !strings.EqualFold(text, "OK") {
			return 0, fmt.Errorf("CHECK TABLE mysql.%s on the started server: %s: %s", n, typ, text)
		}
	}
	return len(names), nil
}

// countBiggest counts the rows of the n biggest user tables, biggest
// first, until ctx's deadline: the tables not counted by then are
// returned with Counted false.
func countBiggest(ctx context.Context, db *sql.DB, n int) ([]TableCount, error) {
	if n <= 0 {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT table_schema, table_name, COALESCE(data_length, 0) + COALESCE(index_length, 0) AS bytes
		FROM information_schema.tables
		WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
		ORDER BY bytes DESC, table_schema, table_name LIMIT ?`, n)
	if err != nil {
		return nil, fmt.Errorf("listing the biggest tables: %w", err)
	}
	var out []TableCount
	var names [][2]string
	for rows.Next() {
		var db, t string
		var c TableCount
		if err := rows.Scan(&db, &t, &c.Bytes); err != nil {
			rows.Close()
			return nil, err
		}
		c.Table = db + "." + t
		out = append(out, c)
		names = append(names, [2]string{db, t})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	deadline, bounded := ctx.Deadline()
	for i, nm := range names {
		q := "SELECT COUNT(*) FROM " + mariadb.QuoteIdent(nm[0]) + "." + mariadb.QuoteIdent(nm[1])
		if bounded {
			// The server stops the count itself when the time is up: a
			// cancelled context only drops the connection, and the
			// server would go on counting.
			left := time.Until(deadline) - time.Second
			if left <= 0 {
				break
			}
			q = fmt.Sprintf("SET STATEMENT max_statement_time=%.3f FOR %s", left.Seconds(), q)
		}
		err := db.QueryRowContext(ctx, q).Scan(&out[i].Rows)
		var me *mysql.MySQLError
		switch {
		case err == nil:
			out[i].Counted = true
		case errors.As(err, &me) && me.Number == erStatementTimeout, ctx.Err() != nil:
			return out, nil // the rest are not counted either
		default:
			return nil, fmt.Errorf("counting the rows of %s on the started server: %w", out[i].Table, err)
		}
	}
	return out, nil
}

// erStatementTimeout is the server's error for a statement that ran out of
// max_statement_time.
const erStatementTimeout = 1969

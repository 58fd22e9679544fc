// Package replica turns a server started on a restored backup into a replica
// of the backup's source: it reads the binary log coordinates mariabackup
// recorded in the datadir, points the server at the primary with CHANGE
// MASTER TO, starts replication and waits until it runs (or reports why it
// does not).
//
// Setup leaves the replica either replicating or stopped: when replication
// does not come up it runs STOP SLAVE, so a wrong password does not keep
// knocking at the primary.
//
// It knows a running server and the datadir's metadata files; nothing of
// repositories, streams or flags.
package replica

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
)

// Defaults for Options.
const (
	DefaultWaitTimeout  = 60 * time.Second
	DefaultConnectRetry = 10 * time.Second
)

// settleTime is how long both threads must keep running before Setup calls
// replication up: the IO thread says "Yes" once connected, and only then
// asks for the binlog, so an error such as a purged binlog comes a moment
// after the first "Yes".
const settleTime = time.Second

// pollInterval is how often the replica's status is read while waiting.
const pollInterval = 200 * time.Millisecond

// stopTimeout bounds the STOP SLAVE that cleans up after a failure, which
// runs even when the caller's context has ended.
const stopTimeout = 30 * time.Second

// ErrNoGTID is returned (wrapped) by Setup for a logical backup that
// records no GTID position (BackupPositions.RequireGTID), unless
// Options.UseFilePos asks for its binlog file and position.
var ErrNoGTID = errors.New("no GTID position")

// ErrAlreadyReplicating is returned (wrapped) by Setup when the replica's
// connection is already configured and running, and Options.Force is off.
var ErrAlreadyReplicating = errors.New("server is already a running replica")

// Options tunes Setup. The zero value reads the coordinates from the
// replica's @@datadir and replicates by GTID on the default connection.
type Options struct {
	// Datadir is where to find the backup's binlog info file (see
	// BinlogInfoNames). Empty: the server's @@datadir, which is right when
	// backstream runs on the replica's host.
	Datadir string
	// Coordinates, if set, are used as they are, instead of reading a
	// file or choosing among a backup's positions; CoordinatesFrom says
	// where they come from, for Result.From (default "options").
	Coordinates     *physical.BinlogInfo
	CoordinatesFrom string
	// Backup, if set, are the positions to choose from (e.g. those of a
	// backup's manifest, FromManifest) instead of those in Datadir.
	Backup *BackupPositions
	// PrimaryIs says which of a backup's positions suits the primary
	// (PrimaryIsSource or PrimaryIsSourcePrimary) when the backup has
	// two (it was of a replica). "" asks the primary for its server_id
	// and refuses, with an *UnsureError, when that does not tell.
	PrimaryIs string
	// UseFilePos replicates from the binlog file and position
	// (MASTER_LOG_FILE/POS) even when the backup has a GTID. Without a GTID
	// in the backup, Setup does so anyway and says so in Result.Notes.
	UseFilePos bool
	// ConnectionName is the multi-source connection; "" is the default one.
	ConnectionName string
	// ConnectRetry is MASTER_CONNECT_RETRY, the pause between the IO
	// thread's connection attempts; 0 means DefaultConnectRetry. It is kept
	// short so that a primary that is briefly unreachable still lets
	// replication start within WaitTimeout.
	ConnectRetry time.Duration
	// WaitTimeout bounds the wait for both threads to run; 0 means
	// DefaultWaitTimeout.
	WaitTimeout time.Duration
	// CatchUp also waits until the replica has applied everything the
	// primary had written when the threads came up. It connects to the
	// primary with the same account (over TCP, without TLS).
	CatchUp bool
	// CatchUpTimeout bounds the catch-up; 0 means only ctx bounds it.
	CatchUpTimeout time.Duration
	// Force replaces a configured and running replication connection.
	Force bool
	// OnStatus, if set, is called with each status read while waiting, for
	// progress output.
	OnStatus func(*Status)
}

// Result is what Setup did.
type Result struct {
	// Coordinates are the backup's binlog position that replication
	// started from, and From names where they came from (a path, or
	// "options").
	Coordinates physical.BinlogInfo
	From        string
	// UsingGTID is true when replication follows gtid_slave_pos
	// (MASTER_USE_GTID=slave_pos), false for MASTER_LOG_FILE/POS.
	UsingGTID bool
	// Replaced is true when an existing replication configuration was
	// overwritten.
	Replaced bool
	// Notes are things the user should know, e.g. a fallback to file and
	// position.
	Notes []string
	// Status is the replication state after the wait.
	Status *Status
}

// Setup makes the server behind replica replicate from p, starting at the
// backup's coordinates: STOP SLAVE; SET GLOBAL gtid_slave_pos; CHANGE
// MASTER TO ...; START SLAVE; then it waits until both replication threads
// run. gtid_slave_pos is global, shared by all multi-source connections.
// Errors never contain p.Password.
func Setup(ctx context.Context, replica *sql.DB, p Primary, opt Options) (*Result, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if err := checkConnectionName(opt.ConnectionName); err != nil {
		return nil, err
	}
	if opt.WaitTimeout <= 0 {
		opt.WaitTimeout = DefaultWaitTimeout
	}
	if opt.ConnectRetry <= 0 {
		opt.ConnectRetry = DefaultConnectRetry
	}

	// One connection throughout: the sql_mode that decides the quoting is
	// per session.
	conn, err := replica.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to replica: %w", err)
	}
	defer conn.Close()

	res := &Result{}
	if err := coordinates(ctx, conn, p, opt, res); err != nil {
		return nil, err
	}
	res.UsingGTID = !opt.UseFilePos && res.Coordinates.GTID != ""
	if !opt.UseFilePos && res.Coordinates.GTID == "" {
		res.Notes = append(res.Notes, fmt.Sprintf("the backup recorded no GTID (%s): replicating from binlog file and position %s instead", res.From, describe(res.Coordinates)))
	}
	if !res.UsingGTID {
		if res.Coordinates.File == "" {
			return nil, fmt.Errorf("%s: no binlog file name to replicate from by position", res.From)
		}
		if err := checkValue("binlog file name", res.Coordinates.File, false); err != nil {
			return nil, fmt.Errorf("%s: %w", res.From, err)
		}
	}

	name := opt.ConnectionName
	before, err := ReadStatus(ctx, conn, name)
	if err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	if before.Configured {
		running := before.IORunning || before.SQLRunning || before.IOState == "Connecting" || before.IOState == "Preparing"
		if running && !opt.Force {
			return nil, fmt.Errorf("%w: connection %q replicates from %s:%d as %s (IO thread %s, SQL thread %s); stop it first or force its replacement",
				ErrAlreadyReplicating, name, before.MasterHost, before.MasterPort, before.MasterUser, before.IOState, yesNo(before.SQLRunning))
		}
		res.Replaced = true
		if _, err := conn.ExecContext(ctx, "STOP SLAVE "+mariadb.QuoteString(name, true)); err != nil {
			return nil, fmt.Errorf("stop replication connection %q: %w", name, err)
		}
	}

	var sqlMode string
	if err := queryRow(ctx, conn, "SELECT @@session.sql_mode", &sqlMode); err != nil {
		return nil, fmt.Errorf("replica: read sql_mode: %w", err)
	}
	noBackslash := strings.Contains(strings.ToUpper(sqlMode), "NO_BACKSLASH_ESCAPES")

	if res.UsingGTID {
		if err := mariadb.SetGTIDSlavePos(ctx, conn, res.Coordinates.GTID); err != nil {
			return nil, fmt.Errorf("set gtid_slave_pos to %q from %s: %w", res.Coordinates.GTID, res.From, err)
		}
	}
	q := changeMaster(name, p, opt, res, noBackslash)
	if _, err := conn.ExecContext(ctx, q); err != nil {
		return nil, fmt.Errorf("CHANGE MASTER TO primary %s: %w", p, redactError(err, p.Password))
	}
	if _, err := conn.ExecContext(ctx, "START SLAVE "+mariadb.QuoteString(name, true)); err != nil {
		return nil, fmt.Errorf("start replication from %s: %w", p, err)
	}

	st, err := waitRunning(ctx, conn, p, opt)
	if err == nil && opt.CatchUp {
		st, err = catchUp(ctx, conn, p, opt, res.UsingGTID)
	}
	if err != nil {
		// A context that ended is no reason to leave replication retrying
		// behind the caller's back.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancel()
		if _, serr := conn.ExecContext(sctx, "STOP SLAVE "+mariadb.QuoteString(name, true)); serr != nil {
			return nil, fmt.Errorf("%w (and stopping replication failed too: %v)", err, serr)
		}
		return nil, fmt.Errorf("%w (replication stopped)", err)
	}
	res.Status = st
	return res, nil
}

// coordinates fills res.Coordinates and res.From, choosing among the
// backup's positions the one that suits primary p.
func coordinates(ctx context.Context, conn *sql.Conn, p Primary, opt Options, res *Result) error {
	if opt.Coordinates != nil {
		res.Coordinates, res.From = *opt.Coordinates, cmp.Or(opt.CoordinatesFrom, "options")
		if res.Coordinates.File == "" && res.Coordinates.GTID == "" {
			return errors.New("coordinates given in options are empty")
		}
		return nil
	}
	switch opt.PrimaryIs {
	case "", PrimaryIsSource, PrimaryIsSourcePrimary:
	default:
		return fmt.Errorf("the primary is %q: want %q or %q", opt.PrimaryIs, PrimaryIsSource, PrimaryIsSourcePrimary)
	}
	b := opt.Backup
	if b == nil {
		dir := opt.Datadir
		if dir == "" {
			if err := queryRow(ctx, conn, "SELECT @@datadir", &dir); err != nil {
				return fmt.Errorf("replica: read @@datadir to find the backup's binlog info: %w", err)
			}
		}
		var err error
		if b, err = ReadBackupPositions(dir); err != nil {
			return err
		}
	}
	bi, from, notes, err := b.choose(ctx, p, opt.PrimaryIs, identify)
	if err != nil {
		return err
	}
	if b.RequireGTID && bi.GTID == "" && !opt.UseFilePos {
		what := "the backup"
		if b.Backup != "" {
			what = "backup " + b.Backup
		}
		return fmt.Errorf("%w: %s records only binlog file and position %s: a logical backup seeds a replica from its GTID", ErrNoGTID, what, describe(bi))
	}
	res.Coordinates, res.From = bi, from
	res.Notes = append(res.Notes, notes...)
	return nil
}

// changeMaster builds the CHANGE MASTER statement. It holds the password:
// never put it in an error or a log.
func changeMaster(name string, p Primary, opt Options, res *Result, noBackslash bool) string {
	port := p.Port
	if port == 0 {
		port = mariadb.DefaultPort
	}
	retry := int((opt.ConnectRetry + time.Second - 1) / time.Second)
	var b strings.Builder
	fmt.Fprintf(&b, "CHANGE MASTER %s TO MASTER_HOST=%s, MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, MASTER_CONNECT_RETRY=%d, MASTER_SSL=%d",
		mariadb.QuoteString(name, true), mariadb.QuoteString(p.Host, noBackslash), port, mariadb.QuoteString(p.User, noBackslash),
		mariadb.QuoteString(p.Password, noBackslash), retry, boolInt(p.SSL))
	if res.UsingGTID {
		b.WriteString(", MASTER_USE_GTID=slave_pos")
	} else {
		fmt.Fprintf(&b, ", MASTER_LOG_FILE=%s, MASTER_LOG_POS=%d, MASTER_USE_GTID=no",
			mariadb.QuoteString(res.Coordinates.File, noBackslash), res.Coordinates.Position)
	}
	return b.String()
}

// fatalConnectErrors are IO thread connection errors that retrying will not
// cure, so waiting out the timeout would only delay the message: access
// denied (1045, 1044), host not allowed or blocked (1130, 1129), an
// authentication plugin the client lacks (1251, 2059), a TLS failure (2026).
var fatalConnectErrors = map[int]bool{1044: true, 1045: true, 1129: true, 1130: true, 1251: true, 2026: true, 2059: true}

// waitRunning polls until both threads have run for settleTime, a thread
// fails, or opt.WaitTimeout passes.
func waitRunning(ctx context.Context, conn *sql.Conn, p Primary, opt Options) (*Status, error) {
	deadline := time.Now().Add(opt.WaitTimeout)
	var runningSince time.Time
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		st, err := ReadStatus(ctx, conn, opt.ConnectionName)
		if err != nil {
			return nil, fmt.Errorf("replica: %w", err)
		}
		if opt.OnStatus != nil {
			opt.OnStatus(st)
		}
		if err := threadError(st, p); err != nil {
			return nil, err
		}
		now := time.Now()
		if st.IORunning && st.SQLRunning {
			if runningSince.IsZero() {
				runningSince = now
			}
			if now.Sub(runningSince) >= settleTime {
				return st, nil
			}
		} else {
			runningSince = time.Time{}
		}
		if now.After(deadline) {
			return nil, timeoutError(st, p, opt.WaitTimeout)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for replication from %s: %w", p, ctx.Err())
		case <-ticker.C:
		}
	}
}

// threadError reports a replication thread that failed or stopped, or an IO
// thread stuck on an error that retrying will not cure.
func threadError(st *Status, p Primary) error {
	if !st.Configured {
		return fmt.Errorf("replication connection %q vanished while starting", st.ConnectionName)
	}
	if st.LastIOErrno != 0 && !st.IORunning && (st.IOState == "No" || fatalConnectErrors[st.LastIOErrno]) {
		if strings.HasPrefix(st.LastIOError, "error connecting to master") || fatalConnectErrors[st.LastIOErrno] {
			return fmt.Errorf("replication cannot connect to primary %s: %s", p, st.LastIOError)
		}
		return fmt.Errorf("replication from primary %s failed in the IO thread: error %d: %s", p, st.LastIOErrno, st.LastIOError)
	}
	if st.IOState == "No" {
		return fmt.Errorf("replication from primary %s: IO thread stopped without an error (was STOP SLAVE run meanwhile?)", p)
	}
	if !st.SQLRunning {
		if st.LastSQLErrno != 0 {
			return fmt.Errorf("replication from primary %s failed applying events: error %d: %s", p, st.LastSQLErrno, st.LastSQLError)
		}
		return fmt.Errorf("replication from primary %s: SQL thread stopped without an error (was STOP SLAVE run meanwhile?)", p)
	}
	return nil
}

func timeoutError(st *Status, p Primary, timeout time.Duration) error {
	msg := fmt.Sprintf("replication from primary %s did not start within %s: IO thread %s, SQL thread %s", p, timeout, st.IOState, yesNo(st.SQLRunning))
	if st.LastIOError != "" {
		msg += ": " + st.LastIOError
	}
	if st.LastSQLError != "" {
		msg += ": " + st.LastSQLError
	}
	return errors.New(msg)
}

// CatchUp waits until the replica's connection opt.ConnectionName has
// applied everything primary p has written by now, reporting a replication
// thread that fails meanwhile. It follows the connection's own mode (GTID or
// file and position). opt.CatchUpTimeout and opt.OnStatus apply.
func CatchUp(ctx context.Context, replica *sql.DB, p Primary, opt Options) (*Status, error) {
	if err := checkConnectionName(opt.ConnectionName); err != nil {
		return nil, err
	}
	conn, err := replica.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to replica: %w", err)
	}
	defer conn.Close()
	st, err := ReadStatus(ctx, conn, opt.ConnectionName)
	if err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	if !st.Configured {
		return nil, fmt.Errorf("replica has no replication connection %q to catch up on", opt.ConnectionName)
	}
	return catchUp(ctx, conn, p, opt, st.UsingGTID != "" && st.UsingGTID != "No")
}

// catchUp waits until the replica has applied what the primary had written
// when it is asked: GTID mode waits for the primary's @@gtid_binlog_pos
// with MASTER_GTID_WAIT, file/position mode for SHOW MASTER STATUS with
// MASTER_POS_WAIT. The waits are short and repeated, so that a thread that
// fails meanwhile is reported instead of waited out.
func catchUp(ctx context.Context, conn *sql.Conn, p Primary, opt Options, useGTID bool) (*Status, error) {
	if opt.CatchUpTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opt.CatchUpTimeout)
		defer cancel()
	}
	target, err := primaryPosition(ctx, p, useGTID)
	if err != nil {
		return nil, err
	}
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		var r sql.NullInt64
		var err error
		if useGTID {
			err = queryRowArgs(ctx, conn, "SELECT MASTER_GTID_WAIT(?, 1)", []any{target.GTID}, &r)
		} else {
			err = queryRowArgs(ctx, conn, "SELECT MASTER_POS_WAIT(?, ?, 1, ?)", []any{target.File, target.Position, opt.ConnectionName}, &r)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("catching up with primary %s at %s: %w", p, describe(target), ctx.Err())
			}
			return nil, fmt.Errorf("replica: wait for primary position %s: %w", describe(target), err)
		}
		st, err := ReadStatus(ctx, conn, opt.ConnectionName)
		if err != nil {
			return nil, fmt.Errorf("replica: %w", err)
		}
		if opt.OnStatus != nil {
			opt.OnStatus(st)
		}
		// MASTER_POS_WAIT answers with a count of events; both answer -1
		// on timeout and NULL when they cannot wait (threads not running).
		if r.Valid && r.Int64 >= 0 {
			return st, nil
		}
		if err := threadError(st, p); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("catching up with primary %s at %s: %w", p, describe(target), ctx.Err())
		case <-ticker.C:
		}
	}
}

// primaryPosition reads where the primary's binary log is now.
func primaryPosition(ctx context.Context, p Primary, useGTID bool) (physical.BinlogInfo, error) {
	db, err := mariadb.Open(ctx, p.config(), "")
	if err != nil {
		return physical.BinlogInfo{}, fmt.Errorf("catch-up: read the primary's position: %w", err)
	}
	defer db.Close()
	var bi physical.BinlogInfo
	if useGTID {
		if err := queryRow(ctx, db, "SELECT @@gtid_binlog_pos", &bi.GTID); err != nil {
			return bi, fmt.Errorf("catch-up: read @@gtid_binlog_pos on primary %s: %w", p, err)
		}
		return bi, nil
	}
	row, err := mariadb.ShowRow(ctx, db, "SHOW MASTER STATUS")
	if err != nil {
		return bi, fmt.Errorf("catch-up: SHOW MASTER STATUS on primary %s (needs BINLOG MONITOR): %w", p, err)
	}
	if row == nil {
		return bi, fmt.Errorf("catch-up: SHOW MASTER STATUS on primary %s returned nothing: binary logging is off there", p)
	}
	bi.File = row["File"].String
	if pos, ok := row["Position"]; ok {
		n, err := strconv.ParseUint(pos.String, 10, 64)
		if err != nil {
			return bi, fmt.Errorf("catch-up: SHOW MASTER STATUS on primary %s: Position %q: %w", p, pos.String, err)
		}
		bi.Position = n
	}
	return bi, nil
}

func queryRowArgs(ctx context.Context, conn *sql.Conn, q string, args []any, dest ...any) error {
	return conn.QueryRowContext(ctx, q, args...).Scan(dest...)
}

func yesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

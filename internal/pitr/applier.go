package pitr

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/restoredserver"
	"github.com/backstream/backstream/internal/sandbox"
)

// relayThreads is how many workers the server's parallel applier runs:
// transactions that committed together on the source apply together.
func relayThreads() int { return min(max(4, 2*runtime.NumCPU()), 32) }

// relayArgs are the replaying server's options for a replay through the
// relay logs in dir: replication's files all there (none in the
// datadir), nothing purged or recovered, the source's events applied
// even where its server_id is this server's, and the parallel applier.
func relayArgs(dir string) []string {
	return []string{
		"--relay-log=" + filepath.Join(dir, "relay-bin"),
		"--relay-log-index=" + filepath.Join(dir, "relay-bin.index"),
		"--relay-log-info-file=" + filepath.Join(dir, "relay-log.info"),
		"--master-info-file=" + filepath.Join(dir, "master.info"),
		"--relay-log-purge=0",
		"--relay-log-recovery=0",
		"--replicate-same-server-id",
		"--log-slave-updates=0",
		"--slave-parallel-threads=" + strconv.Itoa(relayThreads()),
		"--slave-parallel-mode=optimistic",
	}
}

// applierSettings make the applier apply every event as the source
// logged it, whatever the option file says: no filter, no skipped error,
// no idempotent mode, no trigger fired twice, no GTID table of its own.
var applierSettings = []string{
	"SET GLOBAL replicate_do_db = ''",
	"SET GLOBAL replicate_ignore_db = ''",
	"SET GLOBAL replicate_do_table = ''",
	"SET GLOBAL replicate_ignore_table = ''",
	"SET GLOBAL replicate_wild_do_table = ''",
	"SET GLOBAL replicate_wild_ignore_table = ''",
	"SET GLOBAL replicate_events_marked_for_skip = 'REPLICATE'",
	"SET GLOBAL slave_exec_mode = 'STRICT'",
	"SET GLOBAL slave_ddl_exec_mode = 'STRICT'",
	"SET GLOBAL slave_run_triggers_for_rbr = 'NO'",
	"SET GLOBAL slave_type_conversions = ''",
	"SET GLOBAL slave_sql_verify_checksum = ON",
	"SET GLOBAL gtid_strict_mode = OFF",
	"SET GLOBAL gtid_pos_auto_engines = ''",
	"SET GLOBAL sql_slave_skip_counter = 0",
}

// prepareApplier checks and sets what the applier follows, before
// anything is applied: an errRelay says why the pipe must replay instead.
func prepareApplier(ctx context.Context, db *sql.DB) error {
	rows, err := mariadb.ShowRows(ctx, db, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('slave_skip_errors', 'replicate_rewrite_db')")
	if err != nil {
		return fmt.Errorf("read the applier's settings: %w", err)
	}
	vars := map[string]string{}
	for _, r := range rows {
		vars[r["Variable_name"].String] = r["Value"].String
	}
	if v := vars["slave_skip_errors"]; v != "" && v != "OFF" {
		return errRelay("the server skips replication errors (slave_skip_errors=" + v + ")")
	}
	settings := applierSettings
	if v, ok := vars["replicate_rewrite_db"]; ok && v != "" {
		settings = append(settings, "SET GLOBAL replicate_rewrite_db = ''")
	}
	for _, q := range settings {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return errRelay(fmt.Sprintf("%s: %v", q, err))
		}
	}
	return nil
}

// apply runs the server's applier over the relay logs in dir, from the
// first to the empty one named until, and checks that it stopped there
// without error having applied the plan's last transactions. The server
// is then left as the pipe leaves it: no replication configured, and
// gtid_slave_pos as before.
func (p *relayPlan) apply(ctx context.Context, db *sql.DB, dir, until string) error {
	var before string
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_slave_pos").Scan(&before); err != nil {
		return fmt.Errorf("read gtid_slave_pos: %w", err)
	}
	for _, q := range []string{
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = 'backstream.invalid', MASTER_USE_GTID = no, RELAY_LOG_FILE = '%s', RELAY_LOG_POS = 4", filepath.Base(relayName(dir, 1))),
		fmt.Sprintf("START SLAVE SQL_THREAD UNTIL RELAY_LOG_FILE = '%s', RELAY_LOG_POS = 4", until),
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("start the server's applier (%s): %w", q, err)
		}
	}
	if err := p.wait(ctx, db); err != nil {
		// Stopped so that the server shuts down; the datadir is abandoned.
		db.ExecContext(context.WithoutCancel(ctx), "STOP SLAVE")
		return err
	}
	for _, q := range []string{"RESET SLAVE ALL", "SET GLOBAL gtid_slave_pos = '" + before + "'"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("after the replay, %s: %w", q, err)
		}
	}
	return nil
}

// wait polls the applier until it stops, and checks how.
func (p *relayPlan) wait(ctx context.Context, db *sql.DB) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		rows, err := mariadb.ShowRows(ctx, db, "SHOW SLAVE STATUS")
		if err != nil {
			return fmt.Errorf("SHOW SLAVE STATUS: %w", err)
		}
		if len(rows) != 1 {
			return fmt.Errorf("SHOW SLAVE STATUS: %d rows, want the replay's", len(rows))
		}
		st := func(col string) string { return rows[0][col].String }
		if st("Slave_SQL_Running") == "No" {
			if st("Last_SQL_Errno") != "0" {
				return fmt.Errorf("the replay failed in %s, after position %s: error %s: %s", st("Relay_Master_Log_File"), st("Exec_Master_Log_Pos"), st("Last_SQL_Errno"), st("Last_SQL_Error"))
			}
			return p.checkApplied(ctx, db)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// checkApplied compares gtid_slave_pos with the plan's last transactions.
func (p *relayPlan) checkApplied(ctx context.Context, db *sql.DB) error {
	var s string
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_slave_pos").Scan(&s); err != nil {
		return fmt.Errorf("read gtid_slave_pos: %w", err)
	}
	got, err := ParsePosition(s)
	if err != nil {
		return fmt.Errorf("unreadable gtid_slave_pos %q after the replay", s)
	}
	var short []string
	for _, d := range p.last.domains() {
		if got[d] != p.last[d] {
			short = append(short, fmt.Sprintf("domain %d at %s, want %s", d, Position{d: got[d]}, Position{d: p.last[d]}))
		}
	}
	if len(short) > 0 {
		return errors.New("the replay stopped short of the archive it was given: " + strings.Join(short, "; "))
	}
	return nil
}

// route is how a replay applies the archived files: through the
// server's parallel applier (relay logs written, nil for the pipe).
type route struct {
	plan       *relayPlan
	dir, until string
}

// chooseRoute writes the relay logs of the replay of files from base's
// position to t, unless opt asks for the pipe or planRelay finds the
// stop one it cannot make exactly (opt.Log is told why).
func chooseRoute(work string, base *archive.Manifest, files []string, t Target, opt restore.Options) (*route, error) {
	if opt.SerialReplay {
		return nil, nil
	}
	var from Position
	if t.GTID != "" {
		from, _ = ParsePosition(base.Positions.GTID) // Run has read it
	}
	plan, err := planRelay(files, int64(base.Positions.BinlogPosition), from, t)
	var why errRelay
	if errors.As(err, &why) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "replaying through mariadb-binlog | mariadb, one transaction at a time: %s\n", why)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(work, "relay")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	until, err := plan.write(dir)
	if err != nil {
		return nil, err
	}
	return &route{plan: plan, dir: dir, until: until}, nil
}

// args are the replaying server's options.
func (r *route) args() []string {
	if r == nil {
		return replayArgs
	}
	return append(slices.Clone(replayArgs), relayArgs(r.dir)...)
}

// replay applies the files to srv, connected as account: through the
// applier, unless the server's settings keep it from applying as the
// source logged, then (as without relay logs) through the pipe.
func (r *route) replay(ctx context.Context, work, binlog string, srv *sandbox.Server, account *restoredserver.Account, base *archive.Manifest, files []string, t Target, log io.Writer) (workers int, err error) {
	if r != nil {
		err := prepareApplier(ctx, srv.DB())
		var why errRelay
		switch {
		case errors.As(err, &why) && log != nil:
			fmt.Fprintf(log, "replaying through mariadb-binlog | mariadb, one transaction at a time: %s\n", why)
		case errors.As(err, &why):
		case err != nil:
			return 0, err
		default:
			if err := r.plan.apply(ctx, srv.DB(), r.dir, r.until); err != nil {
				return 0, err
			}
			start, _ := ParsePosition(base.Positions.GTID)
			return relayThreads(), checkReached(t, start, r.plan.last)
		}
	}
	return 0, replayOn(ctx, work, binlog, srv, account, base, files, t, log)
}

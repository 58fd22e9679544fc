package cli

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/replica"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

const replPass = "repl-Pa55 word"

// primaryWithBank starts a primary with the bank schema and a replication
// account (which may also read the primary's position, for --catch-up
// by file and position), and writes the account's password into an
// option file, as a DBA would keep it.
func primaryWithBank(t *testing.T) (*sandbox.Server, string) {
	t.Helper()
	p := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.CreateBank(t, p.DB(), 1000, 1000, 20000, "REPEAT(MD5(seq), 6)",
		"CREATE USER repl@'%' IDENTIFIED BY '"+replPass+"'",
		"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO repl@'%'")
	cnf := filepath.Join(t.TempDir(), "primary.cnf")
	if err := os.WriteFile(cnf, []byte("[backstream-primary]\npassword=\""+replPass+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, cnf
}

// bankLoad runs transfers on db until finish.
func bankLoad(db *sql.DB) *usecasetest.Load {
	return usecasetest.StartLoad(1, func(rng *rand.Rand) error {
		return usecasetest.Transfer(context.Background(), db, "bank.accounts", "bank.accounts", rng.IntN(1000)+1, rng.IntN(1000)+1, rng.IntN(9)+1)
	})
}

// waitSameTables waits until every table of want (db.table to CHECKSUM
// TABLE) has that checksum on db; tables only db has are not compared.
func waitSameTables(t *testing.T, what string, db *sql.DB, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := sandbox.ChecksumTables(context.Background(), db)
		same := err == nil
		for k, v := range want {
			same = same && got[k] == v
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached the primary's tables: %v vs %v (%v)", what, got, want, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// replicationOf is the replica's default connection.
func replicationOf(t *testing.T, db *sql.DB) *replica.Status {
	t.Helper()
	st, err := replica.ReadStatus(context.Background(), db, "")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Issue 15 item 5, from a replica: a replica of a primary under writes
// (log_slave_updates off, so its own binary log lacks the primary's
// transactions) is sent to two receivers, which then replicate from the
// PRIMARY and reach its CHECKSUM TABLE. One receiver restores into a
// directory and `replicate` reads the datadir (binlog info, slave info,
// backstream_source.json); the other provisions itself (receive
// --replicate) from the manifest. Either must see that the primary is the
// source's primary and start at the source's position in its history,
// not at the source's own binary log coordinates: by GTID when the
// replica replicated by GTID (its own binary log holds a local write in
// another domain, which the primary never had), by the primary's file and
// position when it replicated by those (the replica's own file and
// position would point into another server's binary log). Then a server
// restored from the replica's backup and pointed at a third server is
// refused, naming both positions and --primary-is, and left as it was.
func TestSendFromReplicaThenReplicateFromPrimary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, primaryCnf := primaryWithBank(t)
	tok := usecasetest.TokenFile(t)
	for i, v := range []struct {
		name   string
		byGTID bool
	}{{"by GTID", true}, {"by file and position", false}} {
		t.Run(v.name, func(t *testing.T) {
			load := bankLoad(primary.DB())
			src := sandboxtest.Start(t, sandbox.Options{Args: []string{"--log-slave-updates=OFF"}})
			change := fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='repl', MASTER_PASSWORD='%s'", primary.Port, replPass)
			if v.byGTID {
				change += ", MASTER_USE_GTID=slave_pos"
			} else {
				change += ", MASTER_USE_GTID=no, MASTER_LOG_FILE='mariadb-bin.000001', MASTER_LOG_POS=4"
			}
			usecasetest.ExecAll(t, src.DB(), change, "START SLAVE")
			if v.byGTID {
				// A replica's own table, written in its own GTID domain:
				// its binlog info's GTID then names a domain the primary
				// never had.
				conn, err := src.DB().Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range []string{"SET SESSION gtid_domain_id = 9", "CREATE DATABASE heartbeat", "CREATE TABLE heartbeat.beat (id INT PRIMARY KEY, at DATETIME)",
					"INSERT INTO heartbeat.beat VALUES (1, NOW())"} {
					if _, err := conn.ExecContext(ctx, q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
				conn.Close()
			}
			load.More(t, 30)

			base := t.TempDir()
			sock1 := testkit.SocketPath(t, "replica1.sock")
			pidFile := filepath.Join(base, "replica1.pid")
			t.Cleanup(func() { sandboxtest.KillByPidFile(t, pidFile) })
			var to []string
			var receivers []<-chan result
			targets := []string{filepath.Join(base, "replica0"), filepath.Join(base, "replica1")}
			primaryFlags := []string{"--primary-defaults-file", primaryCnf, "--primary-host", "127.0.0.1", "--primary-port", strconv.Itoa(primary.Port), "--primary-user", "repl"}
			for j, target := range targets {
				addr := usecasetest.FreeAddr(t)
				to = append(to, "--to", addr)
				into := []string{"--target-dir", target, "--prepare"}
				if j == 1 {
					start := fmt.Sprintf("mariadbd --no-defaults --datadir=%s --socket=%s --skip-networking --user=root --server-id=%d --pid-file=%s --log-error=%s --tmpdir=%s --innodb-buffer-pool-size=64M >/dev/null 2>&1 &",
						target, sock1, 20+i, pidFile, filepath.Join(base, "replica1.err"), os.TempDir())
					into = append([]string{"--datadir", target, "--start=" + start, "--socket", sock1, "--user", "root", "--no-defaults", "--replicate", "--catch-up"}, primaryFlags...)
				}
				receivers = append(receivers, startReceive(t, append(append([]string{"receive", "--listen", addr}, into...), "--token-file", tok)...))
			}
			send := run(t, append(append([]string{"send", "--parallel", "2", "--token-file", tok}, to...), sandboxConn(src)...)...).mustSucceed(t)
			t.Logf("send printed:\n%s", send.stdout)
			for j, ch := range receivers {
				if r := waitResult(t, fmt.Sprintf("receiver %d", j), ch); r.err != nil {
					t.Fatalf("receiver %d: %v\n%s", j, r.err, r.stderr)
				}
			}
			// The backup recorded where the replica stood in the
			// primary's history, and the receiver chose that position by
			// the primary's server_id.
			wantChoice := fmt.Sprintf("the primary is the one the source replicated from (server_id %d, as 127.0.0.1:%d)", primary.Port, primary.Port)
			if !strings.Contains(send.stdout, "receiver "+to[3]+": replicating from") || !strings.Contains(send.stdout, wantChoice) {
				t.Errorf("send printed %q, want the second receiver replicating, with %q", send.stdout, wantChoice)
			}
			// The source's own coordinates are another server's: starting
			// there would repeat or skip the primary's transactions.
			pos, err := replica.ReadBackupPositions(targets[0])
			if err != nil {
				t.Fatal(err)
			}
			if own, up := pos.Own, pos.Upstream; own == nil || up == nil || len(up.Connections) != 1 ||
				(v.byGTID && own.GTID == up.GTID) || (!v.byGTID && own.File+":"+fmt.Sprint(own.Position) == up.Connections[0].BinlogFile+":"+fmt.Sprint(up.Connections[0].BinlogPosition)) {
				t.Errorf("the restored datadir offers %+v and %+v; want two different positions", own, up)
			}

			r0 := usecasetest.ServerOn(t, targets[0])
			rep := run(t, append([]string{"replicate", "--no-defaults", "--socket", r0.Socket, "--user", "root"}, primaryFlags...)...).mustSucceed(t)
			t.Logf("replicate printed:\n%s", rep.stdout)
			wantFrom := "xtrabackup_slave_info and " + physical.SourceInfoName
			if !strings.Contains(rep.stdout, wantFrom) || !strings.Contains(rep.stdout, wantChoice) {
				t.Errorf("replicate printed %q, want it to start from %s, with %q", rep.stdout, wantFrom, wantChoice)
			}
			r1, err := mariadb.Open(ctx, mariadb.Config{Socket: sock1, User: "root"}, "")
			if err != nil {
				t.Fatal(err)
			}
			defer r1.Close()
			replicas := map[string]*sql.DB{"the source replica": src.DB(), "replica 0": r0.DB(), "replica 1": r1}
			for name, db := range replicas {
				if name == "the source replica" {
					continue
				}
				st := replicationOf(t, db)
				if st.MasterPort != primary.Port || (st.UsingGTID != "No") != v.byGTID {
					t.Errorf("%s replicates from port %d, Using_Gtid %s; want the primary's %d, by GTID %v", name, st.MasterPort, st.UsingGTID, primary.Port, v.byGTID)
				}
			}

			if v.byGTID {
				// A third server is neither the backup's source nor its
				// primary: refused, and the replica is left as it was.
				other := sandboxtest.Start(t, sandbox.Options{})
				usecasetest.ExecAll(t, other.DB(), "CREATE USER repl@'%' IDENTIFIED BY '"+replPass+"'", "GRANT REPLICATION SLAVE ON *.* TO repl@'%'")
				refused := run(t, "replicate", "--no-defaults", "--socket", r0.Socket, "--user", "root", "--force", "--primary-defaults-file", primaryCnf,
					"--primary-host", "127.0.0.1", "--primary-port", strconv.Itoa(other.Port), "--primary-user", "repl")
				for _, w := range []string{"cannot tell which of the backup's positions replication from 127.0.0.1:" + strconv.Itoa(other.Port),
					fmt.Sprintf("it has server_id %d", other.Port),
					fmt.Sprintf("nor the primary the source replicated from (127.0.0.1:%d, server_id %d)", primary.Port, primary.Port),
					"the source's own binary log position is mariadb-bin.", "its position in its primary's history GTID 0-",
					"nothing was changed", "--primary-is source", "--primary-is source-primary"} {
					if refused.code != ExitFailure || !strings.Contains(fmt.Sprint(refused.err), w) {
						t.Errorf("replicate from a third server: exit %d, %v; want %q in it", refused.code, refused.err, w)
					}
				}
				if st := replicationOf(t, r0.DB()); st.MasterPort != primary.Port || !st.IORunning || !st.SQLRunning {
					t.Errorf("after the refusal, replica 0 replicates from port %d (IO %s, SQL %v); want the primary's %d, running", st.MasterPort, st.IOState, st.SQLRunning, primary.Port)
				}

				// A logical backup of the replica records the same
				// position in the primary's history, under its lock: a
				// server it seeds replicates from the primary too.
				repoDir := newRepoDir(t)
				run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--skip-users"}, sandboxConn(src)...)...).mustSucceed(t)
				id := backupListing(t, repoDir)[0].ID
				seeded := sandboxtest.Start(t, sandbox.Options{})
				run(t, append([]string{"restore", id, "--repo", repoDir, "--no-binlog"}, sandboxConn(seeded)...)...).mustSucceed(t)
				rep := run(t, append(append([]string{"replicate", "--from-backup", id, "--repo", repoDir}, sandboxConn(seeded)...), primaryFlags...)...).mustSucceed(t)
				if !strings.Contains(rep.stdout, "(from backup "+id+")") || !strings.Contains(rep.stdout, wantChoice) {
					t.Errorf("replicate --from-backup of the replica's logical backup printed %q, want %q", rep.stdout, wantChoice)
				}
				replicas["a server seeded by the replica's logical backup"] = seeded.DB()

				// An account that may not see the replication status takes
				// its backups as before, with a note, and records no
				// position in the primary's history.
				usecasetest.ExecAll(t, src.DB(), "CREATE USER bk@localhost", "GRANT RELOAD, PROCESS, LOCK TABLES, BINLOG MONITOR ON *.* TO bk@localhost")
				minimal := run(t, "backup", "--repo", repoDir, "--socket", src.Socket, "--user", "bk", "--no-defaults").mustSucceed(t)
				if !strings.Contains(minimal.stderr, "GRANT SLAVE MONITOR to the backup account") {
					t.Errorf("a backup of a replica without SLAVE MONITOR said %q, want a note naming the privilege", minimal.stderr)
				}
				entries := backupListing(t, repoDir)
				m := usecasetest.ReadManifest(t, repoDir, entries[len(entries)-1].ID)
				if m.Kind != "physical" || m.Positions.Primary != nil {
					t.Errorf("the backup without SLAVE MONITOR records %+v", m.Positions)
				}
			}

			load.More(t, 50)
			load.Finish(t)
			want, err := sandbox.ChecksumTables(ctx, primary.DB())
			if err != nil {
				t.Fatal(err)
			}
			for name, db := range replicas {
				waitSameTables(t, name, db, want)
			}
		})
	}
}

// Issue 15 item 5, a logical backup seeds a replica: a logical backup of
// a primary under writes is loaded into a fresh server, which then
// replicates from the backup's GTID (replicate --from-backup) and reaches
// the primary's CHECKSUM TABLE. A logical backup without a GTID position
// (of a server without a binary log) is refused, naming the backup.
func TestLogicalBackupSeedsReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, primaryCnf := primaryWithBank(t)
	load := bankLoad(primary.DB())
	repoDir := newRepoDir(t)
	load.More(t, 20)
	b := run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--parallel", "2", "--skip-users"}, sandboxConn(primary)...)...).mustSucceed(t)
	load.More(t, 20)
	entries := backupListing(t, repoDir)
	if len(entries) != 1 {
		t.Fatalf("list: %d backups\n%s", len(entries), b.stdout)
	}
	id := entries[0].ID

	fresh := sandboxtest.Start(t, sandbox.Options{})
	run(t, append([]string{"restore", id, "--repo", repoDir, "--no-binlog"}, sandboxConn(fresh)...)...).mustSucceed(t)
	rep := run(t, append(append([]string{"replicate", "--from-backup", id, "--repo", repoDir, "--catch-up", "--json"}, sandboxConn(fresh)...),
		"--primary-defaults-file", primaryCnf, "--primary-host", "127.0.0.1", "--primary-port", strconv.Itoa(primary.Port), "--primary-user", "repl")...).mustSucceed(t)
	var res struct {
		Primary        string `json:"primary"`
		PrimaryUser    string `json:"primary_user"`
		ConnectionName string `json:"connection_name"`
		UsingGTID      bool   `json:"using_gtid"`
		GTID           string `json:"gtid"`
		PositionFrom   string `json:"position_from"`
		CaughtUp       bool   `json:"caught_up"`
		Status         *struct {
			IORunning  bool   `json:"io_running"`
			SQLRunning bool   `json:"sql_running"`
			MasterPort int    `json:"master_port"`
			UsingGTID  string `json:"using_gtid"`
		} `json:"status"`
	}
	decodeOne(t, "replicate --json", rep.stdout, &res)
	if st := res.Status; res.Primary != "127.0.0.1:"+strconv.Itoa(primary.Port) || res.PrimaryUser != "repl" || res.ConnectionName != "" ||
		!res.UsingGTID || !strings.HasPrefix(res.GTID, "0-") || res.PositionFrom != "backup "+id || !res.CaughtUp ||
		st == nil || !st.IORunning || !st.SQLRunning || st.MasterPort != primary.Port || st.UsingGTID != "Slave_Pos" {
		t.Errorf("replicate --from-backup --catch-up --json printed %+v (status %+v), want it to start at the backup's GTID, caught up, running", res, res.Status)
	}
	load.More(t, 50)
	load.Finish(t)
	want, err := sandbox.ChecksumTables(ctx, primary.DB())
	if err != nil {
		t.Fatal(err)
	}
	waitSameTables(t, "the server seeded by a logical backup", fresh.DB(), want)

	// No binary log on the source: no GTID to start from.
	nolog := sandboxtest.Start(t, sandbox.Options{NoBinlog: true})
	usecasetest.ExecAll(t, nolog.DB(), "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)")
	repo2 := newRepoDir(t)
	run(t, append([]string{"backup", "--logical", "--repo", repo2, "--skip-users"}, sandboxConn(nolog)...)...).mustSucceed(t)
	id2 := backupListing(t, repo2)[0].ID
	other := sandboxtest.Start(t, sandbox.Options{})
	refused := run(t, append(append([]string{"replicate", "--from-backup", id2, "--repo", repo2}, sandboxConn(other)...),
		"--primary-defaults-file", primaryCnf, "--primary-host", "127.0.0.1", "--primary-port", strconv.Itoa(primary.Port), "--primary-user", "repl")...)
	if want := "backup " + id2 + " records no binary log position and no GTID of its source"; refused.code != ExitFailure || !strings.Contains(fmt.Sprint(refused.err), want) {
		t.Errorf("replicate --from-backup of a backup without a GTID: exit %d, %v; want %q", refused.code, refused.err, want)
	}
	if st := replicationOf(t, other.DB()); st.Configured {
		t.Errorf("the refused replicate configured replication: %+v", st)
	}
}

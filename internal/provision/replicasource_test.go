package provision_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/provision"
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

// notesSay reports whether one of the notes of the replication s set up
// says want.
func notesSay(s *replica.Summary, want string) bool {
	return slices.ContainsFunc(s.Notes, func(n string) bool { return strings.Contains(n, want) })
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
	named := primaryNamed(primaryCnf, primary.Port)
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

			// One receiver restores into a directory (receive --target-dir
			// --prepare), the other into place, where it starts the server
			// and has it replicate (receive --datadir --start --replicate
			// --catch-up).
			base := t.TempDir()
			sock1 := testkit.SocketPath(t, "replica1.sock")
			pidFile := filepath.Join(base, "replica1.pid")
			t.Cleanup(func() { sandboxtest.KillByPidFile(t, pidFile) })
			var to []string
			var receivers []*usecasetest.Receiving
			targets := []string{filepath.Join(base, "replica0"), filepath.Join(base, "replica1")}
			for j, target := range targets {
				req := usecasetest.ReceiveOf(tok)
				req.Restore.TargetDir, req.Restore.Options.Prepare = target, true
				if j == 1 {
					req = replicating(intoPlace(usecasetest.ReceiveOf(tok), target,
						mariadbdStart(target, sock1, 20+i, pidFile, filepath.Join(base, "replica1.err")), sock1), named)
				}
				r := usecasetest.StartReceive(t, req)
				receivers, to = append(receivers, r), append(to, r.Addr)
			}
			send := usecasetest.SendOf(t, usecasetest.Conn(src), tok, to...)
			send.Job.Parallel = 2
			sent := usecasetest.Send(t, send)
			var printed strings.Builder
			sent.WriteText(&printed)
			t.Logf("send says:\n%s", printed.String())
			for j, r := range receivers {
				if got := r.Wait(t, fmt.Sprintf("receiver %d", j)); got.Err != nil {
					t.Fatalf("receiver %d: %v", j, got.Err)
				}
			}
			// The backup recorded where the replica stood in the
			// primary's history, and the receiver chose that position by
			// the primary's server_id: what it reported to the sender.
			wantChoice := fmt.Sprintf("the primary is the one the source replicated from (server_id %d, as 127.0.0.1:%d)", primary.Port, primary.Port)
			if rs := sent.Sent.Receivers; len(rs) != 2 || rs[1].Address != to[1] || rs[1].Outcome == nil || rs[1].Outcome.Replication == nil ||
				!slices.ContainsFunc(strings.Split(rs[1].Report, "\n"), func(l string) bool { return strings.HasPrefix(l, "replicating from") }) ||
				!strings.Contains(rs[1].Report, wantChoice) {
				t.Errorf("the receivers reported %+v, want the second receiver replicating, with %q", rs, wantChoice)
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
			sum, err := replicate(ctx, replicateOf(t, usecasetest.Conn(r0), named))
			if err != nil {
				t.Fatalf("replicate: %v", err)
			}
			var said strings.Builder
			provision.DefaultMessages.WriteReplication(&said, sum)
			t.Logf("replicate says:\n%s", said.String())
			wantFrom := "xtrabackup_slave_info and " + physical.SourceInfoName
			if !strings.Contains(sum.PositionFrom, wantFrom) || !notesSay(sum, wantChoice) {
				t.Errorf("replicate started from %q with notes %q, want it to start from %s, with %q", sum.PositionFrom, sum.Notes, wantFrom, wantChoice)
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
				req := replicateOf(t, usecasetest.Conn(r0), primaryNamed(primaryCnf, other.Port))
				req.Options.Force = true
				_, err := replicate(ctx, req)
				for _, w := range []string{"cannot tell which of the backup's positions replication from 127.0.0.1:" + strconv.Itoa(other.Port),
					fmt.Sprintf("it has server_id %d", other.Port),
					fmt.Sprintf("nor the primary the source replicated from (127.0.0.1:%d, server_id %d)", primary.Port, primary.Port),
					"the source's own binary log position is mariadb-bin.", "its position in its primary's history GTID 0-",
					"nothing was changed", "--primary-is source", "--primary-is source-primary"} {
					if !usecasetest.Failed(err) || !strings.Contains(fmt.Sprint(err), w) {
						t.Errorf("replicate from a third server: %v; want a failure with %q in it", err, w)
					}
				}
				if st := replicationOf(t, r0.DB()); st.MasterPort != primary.Port || !st.IORunning || !st.SQLRunning {
					t.Errorf("after the refusal, replica 0 replicates from port %d (IO %s, SQL %v); want the primary's %d, running", st.MasterPort, st.IOState, st.SQLRunning, primary.Port)
				}

				// A logical backup of the replica records the same
				// position in the primary's history, under its lock: a
				// server it seeds replicates from the primary too.
				repo := usecasetest.NewLocalRepo(t)
				b := usecasetest.LogicalBackupOf(t, repo, src)
				b.Dump.Skip.Users = true
				id := usecasetest.Backup(t, b).Manifest.ID
				seeded := sandboxtest.Start(t, sandbox.Options{})
				seed := usecasetest.LoadOf(repo, id, seeded)
				seed.Load.NoBinlog = true
				usecasetest.Restore(t, seed)
				fromBackup := replicateOf(t, usecasetest.Conn(seeded), named)
				fromBackup.FromBackup, fromBackup.HasRepo, fromBackup.Backups = id, true, repo.Open(t)
				sum, err := replicate(ctx, fromBackup)
				if err != nil {
					t.Fatalf("replicate from the replica's logical backup: %v", err)
				}
				if sum.PositionFrom != "backup "+id || !notesSay(sum, wantChoice) {
					t.Errorf("replicate from the replica's logical backup started from %q with notes %q, want from backup %s, with %q", sum.PositionFrom, sum.Notes, id, wantChoice)
				}
				replicas["a server seeded by the replica's logical backup"] = seeded.DB()

				// An account that may not see the replication status takes
				// its backups as before, with a note, and records no
				// position in the primary's history.
				usecasetest.ExecAll(t, src.DB(), "CREATE USER bk@localhost", "GRANT RELOAD, PROCESS, LOCK TABLES, BINLOG MONITOR ON *.* TO bk@localhost")
				minimal := usecasetest.BackupOf(t, repo, src)
				minimal.Conn.User = "bk"
				var notes usecasetest.Said
				minimal.Progress = notes.Tracker("backup", 0)
				made := usecasetest.Backup(t, minimal).Manifest
				minimal.Progress.Finish(nil)
				if !strings.Contains(notes.String(), "GRANT SLAVE MONITOR to the backup account") {
					t.Errorf("a backup of a replica without SLAVE MONITOR said %q, want a note naming the privilege", notes.String())
				}
				m := usecasetest.ReadManifest(t, repo.Location, made.ID)
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
	named := primaryNamed(primaryCnf, primary.Port)
	load := bankLoad(primary.DB())
	repo := usecasetest.NewLocalRepo(t)
	load.More(t, 20)
	b := usecasetest.LogicalBackupOf(t, repo, primary)
	b.Parallel, b.Dump.Skip.Users = 2, true
	made := usecasetest.Backup(t, b).Manifest
	load.More(t, 20)
	entries := usecasetest.List(t, repo)
	if len(entries) != 1 {
		t.Fatalf("list: %d backups, want the one made, %s", len(entries), made.ID)
	}
	id := entries[0].ID

	fresh := sandboxtest.Start(t, sandbox.Options{})
	seed := usecasetest.LoadOf(repo, id, fresh)
	seed.Load.NoBinlog = true
	usecasetest.Restore(t, seed)
	req := replicateOf(t, usecasetest.Conn(fresh), named)
	req.FromBackup, req.HasRepo, req.Backups, req.Options.CatchUp = id, true, repo.Open(t), true
	res, err := replicate(ctx, req)
	if err != nil {
		t.Fatalf("replicate from backup %s: %v", id, err)
	}
	if st := res.Status; res.Primary != "127.0.0.1:"+strconv.Itoa(primary.Port) || res.PrimaryUser != "repl" || res.ConnectionName != "" ||
		!res.UsingGTID || !strings.HasPrefix(res.GTID, "0-") || res.PositionFrom != "backup "+id || !res.CaughtUp ||
		st == nil || !st.IORunning || !st.SQLRunning || st.MasterPort != primary.Port || st.UsingGTID != "Slave_Pos" {
		t.Errorf("replicate from the backup, caught up: %+v (status %+v), want it to start at the backup's GTID, caught up, running", res, res.Status)
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
	repo2 := usecasetest.NewLocalRepo(t)
	b2 := usecasetest.LogicalBackupOf(t, repo2, nolog)
	b2.Dump.Skip.Users = true
	usecasetest.Backup(t, b2)
	id2 := usecasetest.List(t, repo2)[0].ID
	other := sandboxtest.Start(t, sandbox.Options{})
	refused := replicateOf(t, usecasetest.Conn(other), named)
	refused.FromBackup, refused.HasRepo, refused.Backups = id2, true, repo2.Open(t)
	_, err = replicate(ctx, refused)
	if want := "backup " + id2 + " records no binary log position and no GTID of its source"; !usecasetest.Failed(err) || !strings.Contains(fmt.Sprint(err), want) {
		t.Errorf("replicate from a backup without a GTID: %v; want a failure saying %q", err, want)
	}
	if st := replicationOf(t, other.DB()); st.Configured {
		t.Errorf("the refused replicate configured replication: %+v", st)
	}
}

package importtable

import (
	"context"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

func TestScratchCheckpoint(t *testing.T) {
	for _, v := range []string{""} {
		t.Run("v"+v, func(t *testing.T) {
			opt := sandbox.Options{}
			if v != "" {
				opt.Basedir = sandboxtest.Basedir(t, v)
			}
			s := sandboxtest.Start(t, opt)
			db := s.DB()
			ctx := context.Background()
			st := func(name string) int64 {
				var n string
				var x int64
				if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &x); err != nil {
					t.Fatal(name, err)
				}
				return x
			}
			rows, _ := db.QueryContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb%lsn%'")
			for rows.Next() {
				var n, x string
				rows.Scan(&n, &x)
				t.Logf("%s = %s", n, x)
			}
			rows.Close()
			for _, q := range []string{"CREATE DATABASE d", "CREATE TABLE d.a (id INT PRIMARY KEY, b BLOB)", "INSERT INTO d.a SELECT seq, RANDOM_BYTES(500) FROM d.seq_1_to_20000", "CREATE TABLE d.t (id INT PRIMARY KEY)", "ALTER TABLE d.t DISCARD TABLESPACE"} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(q, err)
				}
			}
			cur := st("Innodb_lsn_current")
			t.Logf("after discard: current %d checkpoint %d", cur, st("Innodb_lsn_last_checkpoint"))
			start := time.Now()
			for time.Since(start) < 1*time.Second {
				if c := st("Innodb_lsn_last_checkpoint"); c >= cur {
					t.Logf("passive checkpoint %d after %v", c, time.Since(start))
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Logf("after wait: current %d checkpoint %d", st("Innodb_lsn_current"), st("Innodb_lsn_last_checkpoint"))
			var pct string
			db.QueryRowContext(ctx, "SELECT @@innodb_max_dirty_pages_pct").Scan(&pct)
			db.ExecContext(ctx, "INSERT INTO d.a SELECT seq+100000, RANDOM_BYTES(500) FROM d.seq_1_to_20000")
			cur = st("Innodb_lsn_current")
			db.ExecContext(ctx, "SET GLOBAL innodb_max_dirty_pages_pct = 0")
			start = time.Now()
			for time.Since(start) < 12*time.Second {
				c := st("Innodb_lsn_last_checkpoint")
				t.Logf("%v: checkpoint %d dirty %d", time.Since(start), c, st("Innodb_buffer_pool_pages_dirty"))
				if c >= cur {
					t.Logf("pct=0 checkpoint %d >= %d after %v", c, cur, time.Since(start))
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			db.ExecContext(ctx, "SET GLOBAL innodb_max_dirty_pages_pct = "+pct)
			t.Logf("end: current %d checkpoint %d (pct was %s)", st("Innodb_lsn_current"), st("Innodb_lsn_last_checkpoint"), pct)
		})
	}
}

package physical

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// The table guard against a real server. A full and an incremental
// record every table with its files, in the server's file name encoding:
// partitions, an Aria table, a view, sequences, a table with DATA
// DIRECTORY outside the datadir, one in the system tablespace, a name
// needing @-encoding. A backup whose stream lacks a table's tablespace
// (mariabackup's stream reaches the archive writer without it, as when it
// takes a live table for dropped) is refused naming the table, and
// nothing is committed.
func TestBackupHoldsEveryTable(t *testing.T) {
	ctx := context.Background()
	remote := t.TempDir()
	srv := sandboxtest.Start(t, sandbox.Options{})
	db := srv.DB()
	for _, q := range []string{
		"CREATE DATABASE `we ird-db`",
		"CREATE TABLE `we ird-db`.`a b-ç` (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO `we ird-db`.`a b-ç` VALUES (1), (2)",
		"CREATE TABLE `we ird-db`.ar (id INT PRIMARY KEY) ENGINE=Aria",
		"CREATE TABLE `we ird-db`.parts (id INT PRIMARY KEY) ENGINE=InnoDB PARTITION BY RANGE (id) SUBPARTITION BY HASH (id) SUBPARTITIONS 2 (PARTITION p0 VALUES LESS THAN (10), PARTITION `p 1` VALUES LESS THAN MAXVALUE)",
		"CREATE TABLE `we ird-db`.far (id INT PRIMARY KEY) ENGINE=InnoDB DATA DIRECTORY='" + remote + "'",
		"CREATE VIEW `we ird-db`.v AS SELECT 1 AS one",
		"CREATE SEQUENCE `we ird-db`.s",
		"CREATE SEQUENCE `we ird-db`.sa ENGINE=Aria",
		"SET GLOBAL innodb_file_per_table = 0",
		"CREATE TABLE `we ird-db`.sys (id INT PRIMARY KEY) ENGINE=InnoDB",
		"SET GLOBAL innodb_file_per_table = 1",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c, err := codec.Parse("zstd")
	if err != nil {
		t.Fatal(err)
	}
	r := repotest.New(t)
	job := BackupJob{Dest: r, Conn: mariadb.Config{Socket: srv.Socket, User: "root"}, Parallel: 2, Codec: c}
	const d = "we@0020ird@002ddb/"
	want := map[string]archive.Table{
		"we ird-db.a b-ç": {Name: "we ird-db.a b-ç", Engine: "InnoDB", Files: []string{d + "a@0020b@002d@0n.frm", d + "a@0020b@002d@0n.ibd"}},
		"we ird-db.ar":    {Name: "we ird-db.ar", Engine: "Aria", Files: []string{d + "ar.frm", d + "ar.MAD", d + "ar.MAI"}},
		"we ird-db.far":   {Name: "we ird-db.far", Engine: "InnoDB", Files: []string{d + "far.frm", d + "far.ibd"}},
		"we ird-db.parts": {Name: "we ird-db.parts", Engine: "InnoDB", Files: []string{d + "parts.frm",
			d + "parts#P#p0#SP#p0sp0.ibd", d + "parts#P#p0#SP#p0sp1.ibd", d + "parts#P#p@00201#SP#p@00201sp0.ibd", d + "parts#P#p@00201#SP#p@00201sp1.ibd"}},
		"we ird-db.v":          {Name: "we ird-db.v", Type: "view", Files: []string{d + "v.frm"}},
		"we ird-db.s":          {Name: "we ird-db.s", Type: "sequence", Engine: "InnoDB", Files: []string{d + "s.frm", d + "s.ibd"}},
		"we ird-db.sa":         {Name: "we ird-db.sa", Type: "sequence", Engine: "Aria", Files: []string{d + "sa.frm", d + "sa.MAD", d + "sa.MAI"}},
		"we ird-db.sys":        {Name: "we ird-db.sys", Engine: "InnoDB", Files: []string{d + "sys.frm"}},
		"mysql.user":           {Name: "mysql.user", Type: "view", Files: []string{"mysql/user.frm"}},
		"mysql.global_priv":    {Name: "mysql.global_priv", Engine: "Aria", Files: []string{"mysql/global_priv.frm", "mysql/global_priv.MAD", "mysql/global_priv.MAI"}},
		"mysql.general_log":    {Name: "mysql.general_log", Engine: "CSV", Files: []string{"mysql/general_log.frm", "mysql/general_log.CSV"}},
		"mysql.gtid_slave_pos": {Name: "mysql.gtid_slave_pos", Engine: "InnoDB", Files: []string{"mysql/gtid_slave_pos.frm", "mysql/gtid_slave_pos.ibd"}},
	}
	check := func(what string, m *archive.Manifest) {
		t.Helper()
		got := map[string]archive.Table{}
		for _, tb := range m.Tables {
			got[tb.Name] = tb
			if strings.HasPrefix(tb.Name, "performance_schema.") || strings.HasPrefix(tb.Name, "information_schema.") {
				t.Errorf("%s lists %s", what, tb.Name)
			}
		}
		for name, w := range want {
			g := got[name]
			slices.Sort(g.Files)
			slices.Sort(w.Files)
			if g.Name != w.Name || g.Type != w.Type || g.Engine != w.Engine || !slices.Equal(g.Files, w.Files) {
				t.Errorf("%s: table %s is listed as %+v, want %+v", what, name, g, w)
			}
		}
		if missing := MissingTableFiles(m.Tables, m.Files); len(missing) > 0 {
			t.Errorf("%s lacks files of its tables: %v", what, missing)
		}
	}
	full, err := RunBackup(ctx, job)
	if err != nil {
		t.Fatalf("full backup: %v", err)
	}
	check("the full backup", full)
	if _, err := db.ExecContext(ctx, "INSERT INTO `we ird-db`.`a b-ç` VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	incJob := job
	incJob.Parent = func(context.Context, *mariadb.Server) (*archive.Manifest, error) { return full, nil }
	inc, err := RunBackup(ctx, incJob)
	if err != nil {
		t.Fatalf("incremental backup: %v", err)
	}
	check("the incremental", inc)

	// The table's tablespace, under whichever name mariabackup streams it
	// (.ibd, .new, .ibd.delta), never reaches the archive writer.
	hiddenFromStream = func(p string) bool { return strings.HasPrefix(p, d+"a@0020b@002d@0n.") && !strings.HasSuffix(p, ".frm") }
	t.Cleanup(func() { hiddenFromStream = nil })
	for _, tc := range []struct {
		name string
		job  BackupJob
	}{{"full", job}, {"incremental", incJob}} {
		m, err := RunBackup(ctx, tc.job)
		var missing *MissingTablesError
		if !errors.As(err, &missing) || !strings.Contains(err.Error(), "we ird-db.a b-ç ("+d+"a@0020b@002d@0n.ibd)") || !strings.Contains(err.Error(), "nothing was committed") {
			t.Fatalf("%s backup without a table's tablespace: %v, %v; want it refused naming `we ird-db`.`a b-ç`", tc.name, m, err)
		}
	}
	ms, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("the repository holds %d backups, want the full and the incremental alone", len(ms))
	}
}

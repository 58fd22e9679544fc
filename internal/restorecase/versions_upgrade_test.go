package restorecase_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/toolpath"
	"github.com/backstream/backstream/internal/usecasetest"
)

// TestVersionsPhysicalUpgrade is the physical upgrade path (issue 30 item
// 5): a physical backup of MariaDB 10.11 (the host's) and one of 10.5,
// each restored into place on a host upgraded to 11.8 (the MariaDB path,
// --mariadb-path, lists 11.8's basedir first, then 10.5's; 10.11's tools
// are in PATH), is prepared with its own version's mariabackup and
// started by 11.8's mariadbd (restore --datadir --start), which names the
// upgrade step; then 11.8's mariadb-upgrade, as the guide says, after
// which every table's CHECKSUM TABLE equals the source's and the datadir
// records the upgrade.
func TestVersionsPhysicalUpgrade(t *testing.T) {
	b105, b118 := sandboxtest.Basedir(t, "10.5"), sandboxtest.Basedir(t, "11.8")
	t.Parallel()
	path := toolpath.Path{b118, b105}
	for _, c := range []struct{ version, basedir string }{{"10.11", ""}, {"10.5", b105}} {
		t.Run(c.version+" to 11.8", func(t *testing.T) {
			t.Parallel()
			physicalUpgrade(t, c.version, c.basedir, b118, path)
		})
	}
}

// physicalUpgrade is TestVersionsPhysicalUpgrade from MariaDB version,
// whose server is basedir's ("" for the host's), to 11.8's in b118, the
// backup and the restore given --mariadb-path path.
func physicalUpgrade(t *testing.T, version, basedir, b118 string, path toolpath.Path) {
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Basedir: basedir})
	usecasetest.RequireVersion(t, src, version)
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE app",
		"CREATE TABLE app.orders (id INT PRIMARY KEY, customer VARCHAR(40), total DECIMAL(10,2), doc JSON, note TEXT) ENGINE=InnoDB",
		"INSERT INTO app.orders SELECT seq, CONCAT('customer ', seq % 97), seq * 1.25, JSON_OBJECT('n', seq), REPEAT(SHA2(seq, 256), 4) FROM app.seq_1_to_20000",
		"CREATE TABLE app.log (id INT PRIMARY KEY, line VARCHAR(200)) ENGINE=Aria",
		"INSERT INTO app.log SELECT seq, SHA2(seq, 512) FROM app.seq_1_to_5000",
		"CREATE TABLE app.old (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=MyISAM",
		"INSERT INTO app.old SELECT seq, seq FROM app.seq_1_to_1000",
		"CREATE PROCEDURE app.total(OUT s DECIMAL(20,2)) SELECT SUM(total) INTO s FROM app.orders")
	want := usecasetest.Checksums(t, src)
	repo := usecasetest.NewLocalRepo(t)
	b := usecasetest.BackupOf(t, repo, src)
	b.Physical.MariadbPath = path
	usecasetest.Backup(t, b)

	// restore --datadir --start --socket --user root --no-defaults.
	datadir, start, sock := usecasetest.PlacedServer(t, b118)
	res, err := restorecase.Run(ctx, usecasetest.WithMariadbPath(usecasetest.Started(usecasetest.PlaceOf(repo, datadir), start, sock), path))
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(filepath.Dir(datadir), "error.log"))
		t.Fatalf("restore --datadir --start of a %s backup with 11.8's server: %v (did %+v)\nserver log:\n%s", version, err, res, log)
	}
	in := res.InPlace
	if in == nil || !in.Swapped || in.Target != datadir || in.Started == nil {
		t.Fatalf("restore --datadir --start of a %s backup on 11.8: %+v; want it in place in %s and the server started", version, in, datadir)
	}
	t.Logf("restore --datadir --start: backup %s in %s, server %+v", in.Backup.ID, in.Target, *in.Started)
	// The server check's note, which restore prints as it says.
	if up := in.Started.Upgrade; !strings.Contains(up, "run the server's mariadb-upgrade (11.8's) now") || !strings.Contains(up, "the datadir is of MariaDB "+version+" (") {
		t.Errorf("restore --datadir --start of a %s backup on 11.8 noted %q; want the upgrade step named", version, up)
	}
	if out, err := upgrade118(t, b118, sock).CombinedOutput(); err != nil {
		t.Fatalf("11.8's mariadb-upgrade on the restored datadir: %v\n%s", err, out)
	}
	usecasetest.CompareStarted(t, sock, "11.8", want)
	db, err := mariadb.Open(ctx, mariadb.Config{Socket: sock, User: "root"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if info, err := os.ReadFile(filepath.Join(datadir, "mariadb_upgrade_info")); err != nil || !strings.HasPrefix(string(info), "11.8.") {
		t.Errorf("mariadb_upgrade_info after mariadb-upgrade: %q, %v; want 11.8", info, err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var s, sum string
	if _, err := conn.ExecContext(ctx, "CALL app.total(@s)"); err != nil {
		t.Errorf("the %s routine on 11.8: %v", version, err)
	} else if err := conn.QueryRowContext(ctx, "SELECT @s, (SELECT SUM(total) FROM app.orders)").Scan(&s, &sum); err != nil || s != sum {
		t.Errorf("the %s routine's result on 11.8: %q, want %q (%v)", version, s, sum, err)
	}
}

// upgrade118 is 11.8's mariadb-upgrade for the server on sock. It runs the
// mariadb and mariadb-check found beside its argv[0], which for a binary
// of another root must be wrappers through that root's loader: the
// wrappers and argv[0] are made in a directory of their own.
func upgrade118(t *testing.T, b118, sock string) *exec.Cmd {
	t.Helper()
	root := filepath.Join(filepath.Dir(b118), "root")
	loader := filepath.Join(root, "usr", "lib", "x86_64-linux-gnu", "ld-linux-x86-64.so.2")
	libs := filepath.Join(root, "usr", "lib", "x86_64-linux-gnu") + ":" + filepath.Join(root, "lib", "x86_64-linux-gnu")
	dir := t.TempDir()
	for _, tool := range []string{"mariadb", "mariadb-check"} {
		script := fmt.Sprintf("#!/bin/sh\nexec %q --library-path %q %q \"$@\"\n", loader, libs, filepath.Join(root, "usr", "bin", tool))
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return exec.Command(loader, "--library-path", libs, "--argv0", filepath.Join(dir, "mariadb-upgrade"), filepath.Join(root, "usr", "bin", "mariadb-upgrade"),
		"--no-defaults", "--socket="+sock, "--user=root")
}

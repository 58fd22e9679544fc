package sst

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/physical"
)

// The arguments as MariaDB 10.11 runs its scripts with them.
func TestParseArgs(t *testing.T) {
	joiner, err := ParseArgs([]string{"--role", "joiner", "--address", "127.0.0.1:4444", "--datadir", "/var/lib/mysql/",
		"--defaults-file", "/etc/my.cnf", "--parent", "4242", "--progress", "0", "--binlog", "mariadb-bin",
		"--mysqld-args", "--no-defaults", "--wsrep-on=ON", "--role", "x"})
	if err != nil {
		t.Fatal(err)
	}
	if joiner.Role != Joiner || joiner.Datadir != "/var/lib/mysql" || joiner.Parent != 4242 || joiner.DefaultsFile != "/etc/my.cnf" ||
		joiner.Binlog != "mariadb-bin" || !slices.Equal(joiner.MysqldArgs, []string{"--no-defaults", "--wsrep-on=ON", "--role", "x"}) {
		t.Errorf("joiner: %+v", joiner)
	}
	donor, err := ParseArgs([]string{"--role", "donor", "--address", "127.0.0.1:4444/backstream/1", "--local-port", "3306",
		"--socket", "/run/mysqld/mysqld.sock", "--datadir", "/var/lib/mysql/", "--gtid", "574f0f49-ea01-11f1-a3ca-92f7c8ba9ea7:5913",
		"--gtid-domain-id", "0", "--bypass"})
	if err != nil {
		t.Fatal(err)
	}
	if donor.Role != Donor || !donor.Bypass || donor.Socket != "/run/mysqld/mysqld.sock" || donor.DomainID != "0" {
		t.Errorf("donor: %+v", donor)
	}
	for _, bad := range [][]string{
		{"--role", "observer", "--address", "a", "--datadir", "/d"},
		{"--role", "joiner", "--datadir", "/d"},
		{"--role", "donor", "--address", "a:1/backstream/1", "--datadir", "/d"},
		{"--role", "donor", "--address", "a:1/backstream/1", "--datadir", "/d", "--gtid", "nope"},
		{"--role", "joiner", "--address"},
		{"stray"},
	} {
		if _, err := ParseArgs(bad); err == nil {
			t.Errorf("%q taken", bad)
		}
	}
}

func TestAddresses(t *testing.T) {
	for in, want := range map[string]string{"10.0.0.3": "10.0.0.3:4444", "10.0.0.3:5555": "10.0.0.3:5555", "[::1]:5555": "[::1]:5555", "node3/x": "node3:4444"} {
		got, err := listenAddr(in)
		if err != nil || got != want {
			t.Errorf("listenAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
		back, err := dialAddr(readyAddress(got))
		if err != nil || back != got {
			t.Errorf("dialAddr(readyAddress(%q)) = %q, %v", got, back, err)
		}
	}
	for _, bad := range []string{"10.0.0.3:4444/xtrabackup_sst//1", "10.0.0.3:4444/backstream/9", "10.0.0.3/backstream/1"} {
		if _, err := dialAddr(bad); err == nil {
			t.Errorf("dialAddr(%q) taken", bad)
		}
	}
	if _, err := listenAddr("host:99999"); err == nil {
		t.Error("port 99999 taken")
	}
}

// A snapshot replaces the data, never the node's Galera state or logs;
// the binary logs it carries are dropped.
func TestMoveIntoPlace(t *testing.T) {
	datadir := t.TempDir()
	staging := filepath.Join(datadir, stagingName)
	for name, content := range map[string]string{"grastate.dat": "node", "galera.cache": "node", "ibdata1": "old", "old/t.ibd": "old",
		"host.err": "node", "ddl_recovery.log": "old", "mariadb-bin.000001": "old", "mariadb-bin.index": "old"} {
		write(t, filepath.Join(datadir, name), content)
	}
	for name, content := range map[string]string{"ibdata1": "new", "app/t.ibd": "new", "xtrabackup_galera_info": "574f0f49-ea01-11f1-a3ca-92f7c8ba9ea7:7 0\n",
		"mariadb-bin.000042": "donor's", "grastate.dat": "snapshot's"} {
		write(t, filepath.Join(staging, name), content)
	}
	if err := removeBinlogs(Request{Binlog: "mariadb-bin", Datadir: datadir}, staging); err != nil {
		t.Fatal(err)
	}
	pos, err := physical.ReadGaleraInfo(staging)
	if err != nil || pos.String() != "574f0f49-ea01-11f1-a3ca-92f7c8ba9ea7:7" || pos.DomainID != "0" {
		t.Fatalf("ReadGaleraInfo = %+v, %v", pos, err)
	}
	if err := moveIntoPlace(staging, datadir); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"grastate.dat": "node", "galera.cache": "node", "host.err": "node", "ibdata1": "new", "app/t.ibd": "new",
		"xtrabackup_galera_info": "574f0f49-ea01-11f1-a3ca-92f7c8ba9ea7:7 0\n"}
	got := map[string]string{}
	filepath.WalkDir(datadir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(datadir, p)
			b, _ := os.ReadFile(p)
			got[rel] = string(b)
		}
		return err
	})
	if len(got) != len(want) {
		t.Errorf("datadir holds %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
}

// A joiner whose InnoDB files live outside its datadir refuses, naming
// the option and where it is set; the datadir itself, named or relative,
// is no refusal.
func TestCheckFilesInDatadir(t *testing.T) {
	datadir := t.TempDir()
	cnf := filepath.Join(t.TempDir(), "my.cnf")
	write(t, cnf, "[mysqld]\ninnodb_data_home_dir = "+datadir+"/\ninnodb_log_group_home_dir = ./\n")
	req := Request{Datadir: datadir, DefaultsFile: cnf, MysqldArgs: []string{"--defaults-file=" + cnf, "--wsrep-on=ON"}}
	if err := checkFilesInDatadir(req); err != nil {
		t.Errorf("the datadir itself: %v", err)
	}
	req.MysqldArgs = append(req.MysqldArgs, "--innodb-undo-directory=/srv/undo")
	err := checkFilesInDatadir(req)
	if err == nil || !strings.Contains(err.Error(), "innodb_undo_directory = /srv/undo (the server's command line) is outside the datadir") {
		t.Errorf("undo elsewhere on the command line: %v", err)
	}
	write(t, cnf, "[mysqld]\ninnodb_log_group_home_dir = redo\n")
	req.MysqldArgs = nil
	if err := checkFilesInDatadir(req); err == nil || !strings.Contains(err.Error(), "innodb_log_group_home_dir = redo ("+cnf+":2)") {
		t.Errorf("redo in a subdirectory, in the option file: %v", err)
	}
}

package mariadb

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The server's file places come from its groups of the option files it
// reads, then its command line; the last value wins.
func TestReadServerFiles(t *testing.T) {
	dir := t.TempDir()
	global := filepath.Join(dir, "my.cnf")
	extra := filepath.Join(dir, "extra.cnf")
	own := filepath.Join(dir, "own.cnf")
	for name, text := range map[string]string{
		global: "[client]\ninnodb_undo_directory=/client/not/server\n[mysqld]\ninnodb_log_group_home_dir = /redo\nlog-bin=/binlog/mariadb-bin\n[mariadb]\nloose-innodb-undo-directory=/undo\n",
		extra:  "[server]\nskip-log-bin\ninnodb_data_file_path=ibdata1:12M;ibdata2:12M:autoextend\n",
		own:    "[mariadbd]\ninnodb_data_home_dir=/own\naria-log-dir-path=/aria\nrelay_log=/relay/r\nrelay-log-index=/relay/r.index\n",
	} {
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	globals := []string{filepath.Join(dir, "missing.cnf"), global}
	f, err := readServerFiles(ServerSource{}, globals)
	if err != nil {
		t.Fatal(err)
	}
	if f.LogGroupHomeDir != (Setting{"/redo", global + ":4"}) || f.UndoDirectory != (Setting{"/undo", global + ":7"}) || f.LogBin != (Setting{"/binlog/mariadb-bin", global + ":5"}) || f.DataHomeDir.Set() {
		t.Errorf("from the global files: %+v", f)
	}
	if !slices.Equal(f.DataFileNames(), []string{"ibdata1"}) {
		t.Errorf("data files by default: %v", f.DataFileNames())
	}
	f, err = readServerFiles(ServerSource{DefaultsExtraFile: extra, Args: []string{"--innodb_log_group_home_dir=/cmd", "--user=mysql", "mariadbd", "&"}, ArgsFrom: "the command"}, globals)
	if err != nil {
		t.Fatal(err)
	}
	if f.LogBin.Set() || f.LogGroupHomeDir != (Setting{"/cmd", "the command"}) || !slices.Equal(f.DataFileNames(), []string{"ibdata1", "ibdata2"}) {
		t.Errorf("with an extra file and a command line: %+v", f)
	}
	f, err = readServerFiles(ServerSource{DefaultsFile: own}, globals)
	if err != nil {
		t.Fatal(err)
	}
	if f != (ServerFiles{DataHomeDir: Setting{"/own", own + ":2"}, AriaLogDirPath: Setting{"/aria", own + ":3"}, RelayLog: Setting{"/relay/r", own + ":4"}, RelayLogIndex: Setting{"/relay/r.index", own + ":5"}}) {
		t.Errorf("with --defaults-file: %+v", f)
	}
	if f, err = readServerFiles(ServerSource{NoDefaults: true}, globals); err != nil || f != (ServerFiles{}) {
		t.Errorf("with --no-defaults: %+v, %v", f, err)
	}
	if _, err := readServerFiles(ServerSource{DefaultsFile: filepath.Join(dir, "missing.cnf")}, globals); err == nil {
		t.Error("a missing --defaults-file was accepted")
	}
}

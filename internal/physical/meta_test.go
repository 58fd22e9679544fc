package physical

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Captured from a real mariabackup 10.11.19 backup of a sandbox
// (TestBackupRestoreEndToEnd logs them).
const (
	realCheckpoints = "backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = 44894\nlast_lsn = 7604246\nrecover_binlog_info = 0\n"
	realBinlogInfo  = "mariadb-bin.000001\t5754099\t0-1-10\n"
	realInfo        = "uuid = d76e5bc6-e5e1-11f1-a900-02fc00000001\nname = \ntool_name = mariabackup\n" +
		"tool_command = --defaults-extra-file=/tmp/backstream-mariabackup-3636566500/client.cnf --backup --stream=xbstream --parallel=2 --extra-lsndir=/tmp/backstream-mariabackup-3636566500/lsndir --target-dir=/tmp/backstream-mariabackup-3636566500/target --datadir=/tmp/sandbox-1924580522/data\n" +
		"tool_version = 10.11.19-MariaDB\nibbackup_version = 10.11.19-MariaDB\nserver_version = 10.11.19-MariaDB-0+deb12u1-log\n" +
		"start_time = 2026-11-21 19:29:15\nend_time = 2026-11-21 19:29:16\nlock_time = 0\n" +
		"binlog_pos = filename 'mariadb-bin.000001', position '5754099', GTID of the last change '0-1-10'\n" +
		"innodb_from_lsn = 0\ninnodb_to_lsn = 44894\npartial = N\nincremental = N\nformat = mbstream\ncompressed = N\n"
)

func TestParseCheckpoints(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want Checkpoints
		bad  bool
	}{
		{name: "real full", in: realCheckpoints, want: Checkpoints{BackupType: "full-backuped", ToLSN: 44894, LastLSN: 7604246}},
		{
			name: "incremental, CRLF, extra key",
			in:   "backup_type = incremental\r\nfrom_lsn = 44894\r\nto_lsn = 90000\r\nlast_lsn = 90010\r\nrecover_binlog_info = 1\r\nfuture_key = x\r\n",
			want: Checkpoints{BackupType: "incremental", FromLSN: 44894, ToLSN: 90000, LastLSN: 90010, RecoverBinlogInfo: true, Extra: map[string]string{"future_key": "x"}},
		},
		{
			name: "old file without last_lsn",
			in:   "backup_type = full-prepared\nfrom_lsn = 0\nto_lsn = 5\n",
			want: Checkpoints{BackupType: "full-prepared", ToLSN: 5, LastLSN: 5},
		},
		{name: "empty", in: "", bad: true},
		{name: "no type", in: "from_lsn = 0\nto_lsn = 1\n", bad: true},
		{name: "no to_lsn", in: "backup_type = full-backuped\nfrom_lsn = 0\n", bad: true},
		{name: "bad number", in: "backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = -1\n", bad: true},
		{name: "overflow", in: "backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = 18446744073709551616\n", bad: true},
		{name: "garbage line", in: "backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = 1\nhello\n", bad: true},
		{name: "repeated key", in: "backup_type = a\nbackup_type = b\nfrom_lsn = 0\nto_lsn = 1\n", bad: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseCheckpoints([]byte(c.in))
			if c.bad {
				if err == nil {
					t.Fatalf("accepted: %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.BackupType != c.want.BackupType || got.FromLSN != c.want.FromLSN || got.ToLSN != c.want.ToLSN ||
				got.LastLSN != c.want.LastLSN || got.RecoverBinlogInfo != c.want.RecoverBinlogInfo || len(got.Extra) != len(c.want.Extra) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
			for k, v := range c.want.Extra {
				if got.Extra[k] != v {
					t.Errorf("Extra[%s] = %q, want %q", k, got.Extra[k], v)
				}
			}
		})
	}
}

func TestParseBinlogInfo(t *testing.T) {
	cases := []struct {
		in   string
		want BinlogInfo
		bad  bool
	}{
		{in: realBinlogInfo, want: BinlogInfo{File: "mariadb-bin.000001", Position: 5754099, GTID: "0-1-10"}},
		{in: "mysql-bin.000042\t4\n", want: BinlogInfo{File: "mysql-bin.000042", Position: 4}},
		{in: "mysql-bin.000042\t4\t\n", want: BinlogInfo{File: "mysql-bin.000042", Position: 4}},
		{in: "binlog.000003\t1234\t0-1-100,1-2-7", want: BinlogInfo{File: "binlog.000003", Position: 1234, GTID: "0-1-100,1-2-7"}},
		{in: "binlog.000003\t1234\t0-1-100\r\n", want: BinlogInfo{File: "binlog.000003", Position: 1234, GTID: "0-1-100"}},
		{in: "", bad: true},
		{in: "\n", bad: true},
		{in: "mysql-bin.000001", bad: true},
		{in: "mysql-bin.000001 1234", bad: true},
		{in: "mysql-bin.000001\tabc\t0-1-1", bad: true},
		{in: "\t4\t0-1-1", bad: true},
		{in: "a\t1\tb\tc", bad: true},
		{in: "a\t1\tb\nsecond\t2\tc\n", bad: true},
	}
	for _, c := range cases {
		got, err := ParseBinlogInfo([]byte(c.in))
		if c.bad {
			if err == nil {
				t.Errorf("%q: accepted as %+v", c.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
		} else if got != c.want {
			t.Errorf("%q: got %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestParseInfo(t *testing.T) {
	m, err := ParseInfo([]byte(realInfo))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"uuid":          "d76e5bc6-e5e1-11f1-a900-02fc00000001",
		"name":          "",
		"tool_name":     "mariabackup",
		"tool_version":  "10.11.19-MariaDB",
		"binlog_pos":    "filename 'mariadb-bin.000001', position '5754099', GTID of the last change '0-1-10'",
		"innodb_to_lsn": "44894",
		"format":        "mbstream",
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %q (present %v), want %q", k, got, ok, v)
		}
	}
	if !strings.HasPrefix(m["tool_command"], "--defaults-extra-file=") || !strings.HasSuffix(m["tool_command"], "--datadir=/tmp/sandbox-1924580522/data") {
		t.Errorf("tool_command = %q", m["tool_command"])
	}
	if len(m) != 17 {
		t.Errorf("%d keys, want 17: %v", len(m), m)
	}
	m, err = ParseInfo([]byte("a = b = c\n\n  k2=v2  \n"))
	if err != nil || m["a"] != "b = c" || m["k2"] != "v2" || len(m) != 2 {
		t.Errorf("separators: %v, %v", m, err)
	}
	for _, bad := range []string{"no separator\n", " = value\n", "a = 1\na = 2\n"} {
		if m, err := ParseInfo([]byte(bad)); err == nil {
			t.Errorf("%q accepted: %v", bad, m)
		}
	}
}

func TestIsMetadata(t *testing.T) {
	for _, p := range []string{"backup-my.cnf", "xtrabackup_info", "mariadb_backup_info", "xtrabackup_binlog_info",
		"mariadb_backup_binlog_info", "xtrabackup_galera_info", "mariadb_backup_checkpoints", "./xtrabackup_checkpoints",
		"xtrabackup_slave_info", "backstream_source.json"} {
		if !IsMetadata(p) {
			t.Errorf("IsMetadata(%q) = false", p)
		}
	}
	for _, p := range []string{"", "ibdata1", "db/xtrabackup_info", "xtrabackup_infox", "mysql/user.frm", "xtrabackup_logfile", "ib_logfile0"} {
		if IsMetadata(p) {
			t.Errorf("IsMetadata(%q) = true", p)
		}
	}
	names := MetadataNames()
	if len(names) != 14 || names[0] != "backup-my.cnf" {
		t.Errorf("MetadataNames() = %v", names)
	}
}

func FuzzParseCheckpoints(f *testing.F) {
	f.Add([]byte(realCheckpoints))
	f.Add([]byte("backup_type = incremental\r\nfrom_lsn = 1\r\nto_lsn = 2\r\n"))
	f.Add([]byte("backup_type=\nfrom_lsn\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCheckpoints(b)
		if err != nil {
			return
		}
		if c.BackupType == "" {
			t.Fatalf("accepted without backup_type: %q", b)
		}
		if _, ok := c.Extra["to_lsn"]; ok {
			t.Fatalf("known key in Extra: %q", b)
		}
	})
}

func FuzzParseBinlogInfo(f *testing.F) {
	f.Add([]byte(realBinlogInfo))
	f.Add([]byte("mysql-bin.000042\t4\n"))
	f.Add([]byte("a\t1\tb\nc"))
	f.Fuzz(func(t *testing.T, b []byte) {
		bi, err := ParseBinlogInfo(b)
		if err != nil {
			return
		}
		if bi.File == "" || strings.ContainsAny(bi.File, "\t\n") || strings.ContainsAny(bi.GTID, "\t\n") {
			t.Fatalf("accepted %q as %+v", b, bi)
		}
	})
}

func FuzzParseInfo(f *testing.F) {
	f.Add([]byte(realInfo))
	f.Add([]byte("a = b = c\r\n\n"))
	f.Add([]byte("=\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseInfo(b)
		if err != nil {
			return
		}
		for k, v := range m {
			if k == "" || strings.ContainsAny(k, "=\n") || strings.ContainsRune(v, '\n') {
				t.Fatalf("accepted %q with entry %q = %q", b, k, v)
			}
		}
	})
}

// Captured from a real mariabackup 10.11.19 backup of a sandbox with
// file_key_management, encrypted tables and redo log
// (TestRestoreTestEncryptedServer); the key file path is a placeholder.
const realEncryptedBackupMyCnf = `# This options file was generated by innobackupex.

# The server
[mysqld]
innodb_checksum_algorithm=crc32
innodb_data_file_path=ibdata1:12M:autoextend
innodb_log_file_size=100663296
innodb_page_size=16384
innodb_undo_directory=./
innodb_undo_tablespaces=0
innodb_compression_level=6

plugin_dir="PLUGIN_DIR"
plugin_load=file_key_management=file_key_management
file_key_management_encryption_algorithm=aes_cbc
file_key_management_filekey=
file_key_management_filename=KEY_FILE
innodb_encrypt_log=1
innodb_encrypt_tables=ON
`

// The server options are backup-my.cnf's (a chain's, base first), then the
// user's file's; a key file or plugin directory this host lacks fails,
// naming the option, the path and where it was read.
func TestServerOptions(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "keys.txt")
	if err := os.WriteFile(key, []byte("1;00\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cnf := func(keyFile string) []byte {
		return []byte(strings.NewReplacer("PLUGIN_DIR", dir, "KEY_FILE", keyFile).Replace(realEncryptedBackupMyCnf))
	}
	extra := filepath.Join(dir, "extra.cnf")
	if err := os.WriteFile(extra, []byte("[client]\nuser=x\n[mysqld]\ninnodb_encrypt_tables=FORCE\n[mariadbd]\naria_encrypt_tables\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := ServerOptions([][]byte{cnf(key), cnf(key)}, extra)
	if err != nil {
		t.Fatal(err)
	}
	if len(opts) != 2*14+2 {
		t.Fatalf("%d options, want %d: %+v", len(opts), 2*14+2, opts)
	}
	last := map[string]string{}
	for _, o := range opts {
		last[o.Key] = o.Value
	}
	for k, v := range map[string]string{
		"plugin-dir": dir, "plugin-load": "file_key_management=file_key_management", "file-key-management-filename": key,
		"innodb-page-size": "16384", "innodb-encrypt-tables": "FORCE", "aria-encrypt-tables": "", "file-key-management-filekey": "",
	} {
		if got, ok := last[k]; !ok || got != v {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, v)
		}
	}
	if _, ok := last["user"]; ok {
		t.Error("a [client] option reached the server")
	}

	gone := filepath.Join(dir, "gone.txt")
	_, err = ServerOptions([][]byte{cnf(gone), cnf(key)}, "")
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "backup-my.cnf names file-key-management-filename = "+gone+", which this host lacks") {
		t.Errorf("a base's key file missing: %v", err)
	}
	bad := filepath.Join(dir, "bad.cnf")
	if err := os.WriteFile(bad, []byte("[mysqld]\nplugin_dir=/nonexistent/plugins\nloose-file_key_management_filekey=FILE:"+gone+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ServerOptions([][]byte{cnf(key)}, bad)
	if err == nil || !strings.Contains(err.Error(), bad+" line 2: plugin-dir = /nonexistent/plugins, which this host lacks") {
		t.Errorf("a plugin dir missing: %v", err)
	}
	if err := os.WriteFile(bad, []byte("[mysqld]\nfile_key_management_filekey=FILE:"+gone+"\nfile_key_management_filename=relative/keys.txt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ServerOptions(nil, bad)
	if err == nil || !strings.Contains(err.Error(), "file-key-management-filekey = "+gone) {
		t.Errorf("a key file password file missing: %v", err)
	}
	// A password given as such is no path, and is never printed.
	if err := os.WriteFile(bad, []byte("[mysqld]\nfile_key_management_filekey=secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ServerOptions(nil, bad); err != nil {
		t.Errorf("a key file password: %v", err)
	}
	if _, err := ServerOptions([][]byte{[]byte("innodb_page_size=16384\n")}, ""); err == nil {
		t.Error("a backup-my.cnf without a group was accepted")
	}
}

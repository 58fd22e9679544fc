package mariadb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in                  string
		major, minor, patch int
		ok                  bool
	}{
		{"10.11.19-MariaDB-0+deb12u1", 10, 11, 19, true},
		{"11.4.2-MariaDB-log", 11, 4, 2, true},
		{"10.5.8-MariaDB-1:10.5.8+maria~focal", 10, 5, 8, true},
		{"5.5.5-10.6.12-MariaDB", 10, 6, 12, true},
		{"5.5.68-MariaDB", 5, 5, 68, true},
		{"8.0.36", 8, 0, 36, true},
		{"8.0.36 Source distribution", 8, 0, 36, true},
		{"", 0, 0, 0, false},
		{"10.11", 0, 0, 0, false},
		{"10.11.", 0, 0, 0, false},
		{"10..1", 0, 0, 0, false},
		{"x.1.2", 0, 0, 0, false},
		{"10.11.19a", 0, 0, 0, false},
		{"1234567.1.1", 0, 0, 0, false},
		{"-1.2.3", 0, 0, 0, false},
	}
	for _, tt := range tests {
		ma, mi, pa, err := ParseVersion(tt.in)
		if tt.ok != (err == nil) || ma != tt.major || mi != tt.minor || pa != tt.patch {
			t.Errorf("ParseVersion(%q) = %d, %d, %d, %v; want %d.%d.%d ok=%v", tt.in, ma, mi, pa, err, tt.major, tt.minor, tt.patch, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.in)) {
			t.Errorf("error %v does not quote the version", err)
		}
	}
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"10.11.19-MariaDB-0+deb12u1", "5.5.5-10.6.12-MariaDB", "8.0.36", "1.2", "a.b.c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ma, mi, pa, err := ParseVersion(v)
		if err != nil {
			return
		}
		if ma < 0 || mi < 0 || pa < 0 {
			t.Fatalf("negative component from %q", v)
		}
		// The parsed numbers must appear, in order, in the input.
		if !strings.Contains(v, fmt.Sprintf("%d.", ma)) {
			t.Fatalf("%q: major %d not in input", v, ma)
		}
	})
}

func TestParseGrant(t *testing.T) {
	tests := []struct {
		line  string
		privs string
		obj   string
		ok    bool
	}{
		{"GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` IDENTIFIED VIA unix_socket OR mysql_native_password USING 'invalid' WITH GRANT OPTION", "ALL PRIVILEGES", "*.*", true},
		{"GRANT RELOAD, PROCESS, LOCK TABLES, BINLOG MONITOR ON *.* TO `bk`@`localhost` IDENTIFIED BY PASSWORD '*ABC'", "RELOAD|PROCESS|LOCK TABLES|BINLOG MONITOR", "*.*", true},
		{"GRANT USAGE ON *.* TO `u`@`%`", "USAGE", "*.*", true},
		{"GRANT SELECT, INSERT ON `db`.* TO `u`@`%`", "SELECT|INSERT", "`db`.*", true},
		{"GRANT SELECT (`a`, `b`), UPDATE (`c`) ON `db`.`t` TO `u`@`%`", "SELECT|UPDATE", "`db`.`t`", true},
		{"GRANT EXECUTE ON PROCEDURE `db`.`p` TO `u`@`%`", "EXECUTE", "PROCEDURE `db`.`p`", true},
		{"GRANT SELECT ON `we ird ON db`.* TO `u ON x`@`%`", "SELECT", "`we ird ON db`.*", true},
		{"grant reload on *.* to `r`", "RELOAD", "*.*", true},
		{"GRANT `backup_role` TO `u`@`%`", "", "", false},
		{"SET DEFAULT ROLE `backup_role` FOR `u`@`%`", "", "", false},
		{"GRANT PROXY ON ''@'%' TO 'root'@'localhost' WITH GRANT OPTION", "PROXY", "''@'%'", true},
		{"", "", "", false},
	}
	for _, tt := range tests {
		g, ok := parseGrant(tt.line)
		if ok != tt.ok || strings.Join(g.Privileges, "|") != tt.privs || g.Object != tt.obj {
			t.Errorf("parseGrant(%q) = %q %q %v; want %q %q %v", tt.line, g.Privileges, g.Object, ok, tt.privs, tt.obj, tt.ok)
		}
	}
}

func FuzzParseGrant(f *testing.F) {
	f.Add("GRANT RELOAD, PROCESS ON *.* TO `u`@`%`")
	f.Add("GRANT SELECT (`a`,`b`) ON `d`.`t` TO `u`@`h`")
	f.Add("GRANT `r` TO `u`@`h`")
	f.Fuzz(func(t *testing.T, line string) {
		g, ok := parseGrant(line)
		if !ok {
			return
		}
		if len(g.Privileges) == 0 {
			t.Fatalf("ok with no privileges: %q", line)
		}
		for _, p := range g.Privileges {
			if p == "" || p != strings.ToUpper(p) || strings.ContainsAny(p, ",(") {
				t.Fatalf("bad privilege %q from %q", p, line)
			}
		}
	})
}

func TestMissingPrivileges(t *testing.T) {
	s1011 := &Server{Major: 10, Minor: 11, Patch: 6, Version: "10.11.6-MariaDB"}
	s104 := &Server{Major: 10, Minor: 4, Patch: 30, Version: "10.4.30-MariaDB"}
	tests := []struct {
		name string
		s    *Server
		held []string
		want string
	}{
		{"all privileges", s1011, []string{"ALL PRIVILEGES"}, ""},
		{"exact set", s1011, []string{"RELOAD", "PROCESS", "LOCK TABLES", "BINLOG MONITOR"}, ""},
		{"alias replication client", s1011, []string{"RELOAD", "PROCESS", "LOCK TABLES", "REPLICATION CLIENT"}, ""},
		{"select only", s1011, []string{"SELECT"}, "RELOAD|PROCESS|LOCK TABLES|BINLOG MONITOR"},
		{"old server names replication client", s104, []string{"RELOAD"}, "PROCESS|LOCK TABLES|REPLICATION CLIENT"},
	}
	for _, tt := range tests {
		held := map[string]bool{}
		for _, p := range tt.held {
			held[p] = true
		}
		if got := strings.Join(missingPrivileges(held, RequiredBackupPrivileges(tt.s)), "|"); got != tt.want {
			t.Errorf("%s: missing %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := quoteAccount("o'neil@x@host%"); got != `'o''neil@x'@'host%'` {
		t.Errorf("quoteAccount = %s", got)
	}
}

// TestServer runs against a throwaway server: Open over socket and TCP,
// Inspect, and CheckBackupPrivileges for root and for a SELECT-only user.
func TestServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a MariaDB server")
	}
	sb := sandboxtest.Start(t, sandbox.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	root := Config{User: "root", Socket: sb.Socket, Protocol: ProtocolSocket}
	db, err := Open(ctx, root, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	s, err := Inspect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var version, datadir string
	if err := sb.DB().QueryRowContext(ctx, "SELECT @@version, @@datadir").Scan(&version, &datadir); err != nil {
		t.Fatal(err)
	}
	if s.Version != version || s.Datadir != datadir || s.Major < 10 || s.InnodbPageSize != 16384 ||
		s.Socket != sb.Socket || s.Port != sb.Port || s.Hostname == "" {
		t.Fatalf("Inspect = %+v; server says version %q datadir %q, sandbox socket %s port %d", s, version, datadir, sb.Socket, sb.Port)
	}
	if !s.AtLeast(10, 5) || s.AtLeast(s.Major, s.Minor+1) {
		t.Fatalf("AtLeast wrong for %s", s.Version)
	}
	if err := CheckBackupPrivileges(ctx, db, s); err != nil {
		t.Fatalf("root: %v", err)
	}

	for _, q := range []string{
		"CREATE USER 'reader'@'%' IDENTIFIED BY 'p#w \"x\"'",
		"GRANT SELECT ON *.* TO 'reader'@'%'",
		"CREATE USER 'bk'@'%' IDENTIFIED BY 'bkpw'",
		"CREATE ROLE backup_role",
		"GRANT RELOAD, PROCESS, LOCK TABLES, BINLOG MONITOR ON *.* TO backup_role",
		"GRANT backup_role TO 'bk'@'%'",
		"SET DEFAULT ROLE backup_role FOR 'bk'@'%'",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	// The statements above went to the binary log.
	s2, err := Inspect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if !s2.LogBin || s2.ServerID == 0 || s2.GTIDBinlogPos == "" {
		t.Fatalf("binlog facts: log_bin %v server_id %d gtid_binlog_pos %q", s2.LogBin, s2.ServerID, s2.GTIDBinlogPos)
	}

	// ShowRow reads a SHOW statement's row by column name, nil when there
	// is none, and passes errors on.
	row, err := ShowRow(ctx, db, "SHOW MASTER STATUS")
	if err != nil || row["File"].String == "" || row["Position"].String == "" || len(row) < 4 {
		t.Fatalf("ShowRow(SHOW MASTER STATUS) = %v, %v", row, err)
	}
	row, err = ShowRow(ctx, db, "SHOW CREATE DATABASE mysql")
	if err != nil || row["Database"].String != "mysql" || !strings.HasPrefix(row["Create Database"].String, "CREATE DATABASE `mysql`") {
		t.Fatalf("ShowRow(SHOW CREATE DATABASE mysql) = %v, %v", row, err)
	}
	if row, err := ShowRow(ctx, db, "SHOW SLAVE STATUS"); row != nil || err != nil {
		t.Fatalf("ShowRow of a statement without rows = %v, %v; want nil, nil", row, err)
	}
	if row, err := ShowRow(ctx, db, "SHOW CREATE DATABASE no_such_db"); row != nil || err == nil || !strings.Contains(err.Error(), "no_such_db") {
		t.Fatalf("ShowRow of a failing statement = %v, %v; want its error", row, err)
	}

	// TCP, with a password full of option-file specials.
	reader := Config{User: "reader", Password: "p#w \"x\"", PasswordSet: true, Host: "127.0.0.1", Port: sb.Port}
	rdb, err := Open(ctx, reader, "mysql")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	err = CheckBackupPrivileges(ctx, rdb, s)
	var mpe *MissingPrivilegesError
	if !errors.As(err, &mpe) || !errors.Is(err, ErrMissingPrivileges) {
		t.Fatalf("reader: err = %v, want MissingPrivilegesError", err)
	}
	for _, want := range []string{"'reader'@'%'", "RELOAD", "PROCESS", "LOCK TABLES", "BINLOG MONITOR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "SELECT") {
		t.Errorf("error %q names a privilege the user has", err)
	}

	// TLS asked of a server that offers none is refused, never downgraded.
	withTLS := reader
	withTLS.TLS = TLS{SSL: true, SSLSet: true}
	withTLS.Sources = map[string]string{"ssl": "--ssl"}
	if _, err := Open(ctx, withTLS, ""); err == nil || !strings.Contains(err.Error(), "the server offers no TLS, which ssl (from --ssl) asks for") {
		t.Fatalf("TLS to a server without it: err = %v", err)
	}

	// Privileges through a default role count.
	bdb, err := Open(ctx, Config{User: "bk", Password: "bkpw", PasswordSet: true, Socket: sb.Socket, Protocol: ProtocolSocket}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	if err := CheckBackupPrivileges(ctx, bdb, s); err != nil {
		t.Fatalf("role-based account: %v", err)
	}

	// A wrong password fails at Open and the error names the account, not
	// the password.
	bad := reader
	bad.Password = "wrong-secret"
	bad.Sources = map[string]string{"password": "/some/.my.cnf [client]"}
	_, err = Open(ctx, bad, "")
	if err == nil || !strings.Contains(err.Error(), `"reader"`) || !strings.Contains(err.Error(), "127.0.0.1") ||
		!strings.Contains(err.Error(), "/some/.my.cnf") || strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("wrong password: err = %v", err)
	}
}

// TestOpenUnreachable checks that a dead socket fails quickly and is named.
func TestOpenUnreachable(t *testing.T) {
	sock := t.TempDir() + "/no.sock"
	_, err := Open(context.Background(), Config{User: "u", Socket: sock, Protocol: ProtocolSocket}, "")
	if err == nil || !strings.Contains(err.Error(), sock) {
		t.Fatalf("err = %v, want one naming %s", err, sock)
	}
}

func TestCheckSupported(t *testing.T) {
	for _, c := range []struct {
		version, comment, want string
	}{
		{"10.11.19-MariaDB-0+deb12u1", "Debian 12", ""},
		{"11.4.2-MariaDB-log", "mariadb.org binary distribution", ""},
		{"5.5.5-10.6.16-MariaDB", "MariaDB Server", ""},
		{"10.4.34-MariaDB", "", ""},
		{"8.0.36", "MySQL Community Server - GPL", "the server is 8.0.36 (MySQL Community Server - GPL), not MariaDB"},
		{"8.0.35-27", "Percona Server (GPL), Release 27", "not MariaDB"},
		{"10.3.39-MariaDB", "MariaDB Server", "the server is MariaDB 10.3 (10.3.39-MariaDB (MariaDB Server)), older than 10.4"},
		{"5.5.68-MariaDB", "MariaDB Server", "older than 10.4"},
	} {
		err := CheckSupported(c.version, c.comment)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.version, err)
		case c.want != "" && (err == nil || !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an ErrUnsupported saying %q", c.version, err, c.want)
		}
	}
}

package replica

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPrimaryDefaults(t *testing.T) {
	dir := t.TempDir()
	global := filepath.Join(dir, "my.cnf")
	user := filepath.Join(dir, "user.cnf")
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(global, "[client]\nuser=root\npassword=rootpw\n[backstream-primary]\nhost=db1\nport=3307\nuser=repl\npassword=filepw\n")
	write(user, "[backstream-primary]\nhost=db2\nssl\n")
	files := []string{global, filepath.Join(dir, "missing.cnf"), user}

	p, src, err := PrimaryDefaults(files, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	want := Primary{Host: "db2", Port: 3307, User: "repl", Password: "filepw", SSL: true}
	if p != want {
		t.Errorf("PrimaryDefaults = %+v, want %+v", p, want)
	}
	if src["host"] != user+" [backstream-primary]" || src["password"] != global+" [backstream-primary]" {
		t.Errorf("sources = %v", src)
	}

	env := func(k string) (string, bool) {
		if k == PasswordEnv {
			return "envpw", true
		}
		return "", false
	}
	p, src, err = PrimaryDefaults(files, env)
	if err != nil {
		t.Fatal(err)
	}
	if p.Password != "envpw" || src["password"] != PasswordEnv {
		t.Errorf("environment should override the file's password: %+v %v", p, src)
	}

	bad := filepath.Join(dir, "bad.cnf")
	write(bad, "[backstream-primary]\nport=http\n")
	if _, _, err := PrimaryDefaults([]string{bad}, nil); err == nil || !strings.Contains(err.Error(), bad+":2") {
		t.Errorf("want an error naming %s:2, got %v", bad, err)
	}
	// A boolean is read as the server's option parser reads it, and as
	// the connection's ssl is: "yes" is not one (my_getopt would turn it
	// off with a warning).
	for _, v := range []string{"maybe", "yes"} {
		write(bad, "[backstream-primary]\nssl="+v+"\n")
		if _, _, err := PrimaryDefaults([]string{bad}, nil); err == nil || !strings.Contains(err.Error(), `ssl: "`+v+`" is not a boolean (use 1, 0, on, off, true or false)`) {
			t.Errorf("ssl=%s: want a boolean error, got %v", v, err)
		}
	}
}

func TestPrimaryValidate(t *testing.T) {
	const secret = "Pa55-word"
	tests := []struct {
		p       Primary
		wantErr string
	}{
		{Primary{Host: "db", User: "repl", Password: secret}, ""},
		{Primary{Host: "db", User: "repl", Password: strings.Repeat("é", MaxPasswordLength)}, ""},
		{Primary{User: "repl"}, "host is not set"},
		{Primary{Host: "db"}, "user is not set"},
		{Primary{Host: "db", User: "repl", Port: 70000}, "out of range"},
		{Primary{Host: "db\n", User: "repl"}, "primary host"},
		{Primary{Host: "db", User: "re\tpl"}, "replication user"},
		{Primary{Host: "db", User: "repl", Password: secret + "\n"}, "line break"},
		{Primary{Host: "db", User: "repl", Password: secret + strings.Repeat("x", MaxPasswordLength)}, "at most 96"},
	}
	for _, tt := range tests {
		err := tt.p.validate()
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("validate(%+v) = %v", tt.p, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("validate(%+v) = %v, want %q", tt.p, err, tt.wantErr)
		case err != nil && strings.Contains(err.Error(), secret):
			t.Errorf("validate error shows the password: %v", err)
		}
	}
	if got := (Primary{Host: "::1", User: "repl", Password: secret}).String(); got != "[::1]:3306 as repl" {
		t.Errorf("String = %q", got)
	}
}

// backstream's own logins to the primary use TLS when the replica does
// (MASTER_SSL=1 without a CA checks no certificate, and neither do they).
func TestPrimaryConfigTLS(t *testing.T) {
	for _, ssl := range []bool{false, true} {
		cfg := Primary{Host: "db1", Port: 3307, User: "repl", Password: "pw", SSL: ssl}.config()
		if cfg.UsesSocket() || cfg.Addr() != "db1:3307" || cfg.TLS.SSL != ssl || cfg.TLS.VerifyServerCert || cfg.TLS.CA != "" {
			t.Errorf("SSL %v: config %+v", ssl, cfg)
		}
	}
}

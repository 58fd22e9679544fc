package mariadb

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var awkwardPasswords = []string{
	"",
	"simple",
	"with space",
	" leading and trailing ",
	`dq"inside`,
	`sq'inside`,
	`"fully double quoted"`,
	`'fully single quoted'`,
	"hash#mid",
	"#leading-hash",
	"semi;colon",
	`back\slash`,
	`trailing\`,
	`\\double\\`,
	`\n literal backslash-n`,
	"equals=sign==",
	"new\nline",
	"tab\tand\rcr",
	"bell\bspace",
	"ünïcödé ✓",
	`!include /etc/passwd`,
	"[client]",
	`all: "'#;=\ \s`,
}

func TestWriteDefaultsFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for i, pw := range awkwardPasswords {
		cfg := Config{User: "bk user#1", Password: pw, PasswordSet: true, Host: "db.example", Port: 3307, Socket: "/tmp/my sock"}
		p := filepath.Join(dir, "d"+string(rune('a'+i))+".cnf")
		if err := WriteDefaultsFile(p, cfg); err != nil {
			t.Fatalf("password %q: %v", pw, err)
		}
		opts, err := ReadOptionFile(p, "client")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"user=" + cfg.User, "password=" + pw, "host=db.example", "port=3307", "socket=/tmp/my sock"}
		if got := kv(opts); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("password %q: ReadOptionFile got %q, want %q", pw, got, want)
		}
		// The real client must read exactly the same values.
		wantArgs := "--user=bk user#1 --password=" + pw + " --host=db.example --port=3307 --socket=/tmp/my sock \n"
		if got := printDefaults(t, p); got != wantArgs {
			t.Errorf("password %q: mariadb --print-defaults got %q, want %q", pw, got, wantArgs)
		}
	}
}

func TestWriteDefaultsFileModeAndExclusive(t *testing.T) {
	p := filepath.Join(t.TempDir(), "creds.cnf")
	if err := WriteDefaultsFile(p, Config{User: "u", Password: "secret", PasswordSet: true}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	err = WriteDefaultsFile(p, Config{User: "other"})
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write: err = %v, want fs.ErrExist", err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "[client]\nuser=\"u\"\npassword=\"secret\"\n" {
		t.Fatalf("content changed or unexpected: %q", b)
	}
}

func TestWriteDefaultsFileOnlySetFields(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.cnf")
	// An unset password must not be written as an empty one, which would
	// override a password from the user's own option files.
	if err := WriteDefaultsFile(p, Config{User: "u"}); err != nil {
		t.Fatal(err)
	}
	opts, err := ReadOptionFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(kv(opts), "|"); got != "user=u" {
		t.Fatalf("got %q", got)
	}
}

func TestWriteDefaultsFileRefuses(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"nul", Config{Password: "a\x00b", PasswordSet: true}, "password: value contains a NUL byte"},
		{"too long", Config{User: strings.Repeat("u", 5000)}, "user: value too long"},
		{"bad port", Config{Port: 70000}, "port 70000 out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name+".cnf")
			err := WriteDefaultsFile(p, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("err = %v, want %q naming %s", err, tt.want, p)
			}
			if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("file left behind: %v", err)
			}
		})
	}
}

func FuzzWriteDefaultsFile(f *testing.F) {
	for _, pw := range awkwardPasswords {
		f.Add(pw)
	}
	f.Fuzz(func(t *testing.T, pw string) {
		p := filepath.Join(t.TempDir(), "f.cnf")
		err := WriteDefaultsFile(p, Config{User: "u", Password: pw, PasswordSet: true})
		if err != nil {
			if strings.IndexByte(pw, 0) >= 0 || len(pw) > maxOptionLine/3 {
				return
			}
			t.Fatalf("write %q: %v", pw, err)
		}
		opts, err := ReadOptionFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(opts) != 2 || opts[0].Value != "u" || opts[1].Value != pw {
			t.Fatalf("round trip of %q: got %+v", pw, opts)
		}
	})
}

// TestWriteDefaultsFileResolves checks that what Resolve produced, written
// out and resolved again, connects the same way.
func TestWriteDefaultsFileResolves(t *testing.T) {
	dir := t.TempDir()
	for i, f := range []Flags{
		{NoDefaults: true, User: "u", Port: 3307},                                // TCP to localhost
		{NoDefaults: true, User: "u", Socket: "/x.sock", Password: strp("a b#")}, // socket
		{NoDefaults: true, User: "u", Host: "db1", Password: strp("")},           // remote, empty password
	} {
		cfg, err := resolve(f, fakeEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "r"+string(rune('a'+i))+".cnf")
		if err := WriteDefaultsFile(p, cfg); err != nil {
			t.Fatal(err)
		}
		again, err := resolve(Flags{DefaultsFile: p}, fakeEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		if again.UsesSocket() != cfg.UsesSocket() || again.SocketPath() != cfg.SocketPath() || again.Addr() != cfg.Addr() ||
			again.User != cfg.User || again.Password != cfg.Password || again.PasswordSet != cfg.PasswordSet {
			t.Errorf("flags %+v:\nwrote    %+v\nread back %+v", f, cfg, again)
		}
	}
}

// WriteOptionFile writes options, bare ones too, that ParseOptionFile
// and the real server read back exactly, in a file only its owner reads.
func TestWriteOptionFileRoundTrip(t *testing.T) {
	bin, err := exec.LookPath("mariadbd")
	if err != nil {
		bin = "/usr/sbin/mariadbd"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("mariadbd not installed (scripts/deps.sh installs it): %v", err)
	}
	dir := t.TempDir()
	for i, v := range awkwardPasswords {
		opts := []Option{{Key: "file-key-management-filekey", Value: v}, {Key: "aria-encrypt-tables", Bare: true}, {Key: "plugin-load", Value: "a=b;c=d"}}
		p := filepath.Join(dir, "s"+string(rune('a'+i))+".cnf")
		if err := WriteOptionFile(p, "mysqld", opts); err != nil {
			t.Fatalf("value %q: %v", v, err)
		}
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("value %q: mode %v, %v", v, fi.Mode(), err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseOptionFile("x.cnf", data, "mysqld")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].Value != v || !got[1].Bare || got[2].Value != "a=b;c=d" || got[0].File != "x.cnf" || got[0].Line != 2 {
			t.Errorf("value %q: read back %+v", v, got)
		}
		cmd := exec.Command(bin, "--defaults-file="+p, "--print-defaults")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("mariadbd --print-defaults: %v", err)
		}
		want := "--file-key-management-filekey=" + v + " --aria-encrypt-tables --plugin-load=a=b;c=d \n"
		if _, args, _ := strings.Cut(string(out), "following arguments:\n"); args != want {
			t.Errorf("value %q: mariadbd --print-defaults got %q, want %q", v, args, want)
		}
	}
	if err := WriteOptionFile(filepath.Join(dir, "sa.cnf"), "mysqld", nil); err == nil {
		t.Error("an existing file was overwritten")
	}
}

// The TLS settings reach the child processes: with TLS on every one is
// written (the booleans as 0 or 1, the paths absolute), an explicit off is
// written as off, and TLS left at its default writes nothing, so that the
// child keeps its own default. The real client reads the same values, and
// Resolve reads back the same settings.
func TestWriteDefaultsFileTLS(t *testing.T) {
	dir := t.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		tls  TLS
		want []string
	}{
		{TLS{}, nil},
		{TLS{SSLSet: true, CA: "/ignored.pem"}, []string{"ssl=0", "ssl-verify-server-cert=0"}},
		{TLS{SSL: true, SSLSet: true}, []string{"ssl=1", "ssl-verify-server-cert=0"}},
		{TLS{SSL: true, SSLSet: true, CA: "/etc/my ca.pem", CAPath: "/etc/cas", Cert: "c.pem", Key: "/k#1.pem", VerifyServerCert: true},
			[]string{"ssl=1", "ssl-ca=/etc/my ca.pem", "ssl-capath=/etc/cas", "ssl-cert=" + filepath.Join(wd, "c.pem"), "ssl-key=/k#1.pem", "ssl-verify-server-cert=1"}},
	} {
		p := filepath.Join(dir, "t"+string(rune('a'+i))+".cnf")
		if err := WriteDefaultsFile(p, Config{User: "u", TLS: tc.tls}); err != nil {
			t.Fatal(err)
		}
		opts, err := ReadOptionFile(p, "client")
		if err != nil {
			t.Fatal(err)
		}
		want := append([]string{"user=u"}, tc.want...)
		if got := kv(opts); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%+v: wrote %q, want %q", tc.tls, got, want)
		}
		var args strings.Builder
		for _, w := range want {
			args.WriteString("--" + w + " ")
		}
		args.WriteString("\n")
		if got := printDefaults(t, p); got != args.String() {
			t.Errorf("%+v: mariadb --print-defaults got %q, want %q", tc.tls, got, args.String())
		}
		again, err := resolve(Flags{DefaultsFile: p}, fakeEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		wantTLS := tc.tls
		if !wantTLS.SSL {
			wantTLS = TLS{SSLSet: tc.tls.SSLSet}
		} else if wantTLS.Cert != "" {
			wantTLS.Cert = filepath.Join(wd, wantTLS.Cert)
		}
		if again.TLS != wantTLS {
			t.Errorf("read back %+v, want %+v", again.TLS, wantTLS)
		}
	}
}

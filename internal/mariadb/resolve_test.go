package mariadb

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeEnv is a resolveEnv with the given variables, global files and OS user.
func fakeEnv(vars map[string]string, globals ...string) resolveEnv {
	return resolveEnv{
		lookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
		globals:   globals,
		osUser:    func() string { return "osuser" },
	}
}

func strp(s string) *string { return &s }

func TestResolveDefaults(t *testing.T) {
	cfg, err := resolve(Flags{NoDefaults: true}, fakeEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "osuser" || cfg.Sources["user"] != "OS user" || cfg.Host != "localhost" ||
		cfg.Protocol != ProtocolSocket || cfg.Socket != DefaultSocket || cfg.PasswordSet || cfg.Port != 0 {
		t.Fatalf("got %+v", cfg)
	}
	if !cfg.UsesSocket() || cfg.String() != `user "osuser" at socket `+DefaultSocket {
		t.Fatalf("UsesSocket %v, String %q", cfg.UsesSocket(), cfg.String())
	}
}

func TestResolveSearchOrder(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	mysqlHome := filepath.Join(dir, "mysqlhome")
	for _, d := range []string{home, mysqlHome} {
		if err := mkdir(d); err != nil {
			t.Fatal(err)
		}
	}
	g1 := writeCnf(t, dir, "g1.cnf", "[client]\nuser=g1\nhost=g1host\nport=1111\n[mysqld]\nsocket=/server-only\n")
	g2 := writeCnf(t, dir, "g2.cnf", "[client-server]\nuser=g2\nsocket=/g2.sock\n")
	writeCnf(t, mysqlHome, "my.cnf", "[client-mariadb]\nuser=mh\npassword=mhpw\n")
	extra := writeCnf(t, dir, "extra.cnf", "[client]\nuser=extra\nhost=localhost\n")
	writeCnf(t, home, ".my.cnf", "[backstream]\nuser=home\n[client]\nloose-password=homepw\n")
	missing := filepath.Join(dir, "missing-global.cnf")

	env := fakeEnv(map[string]string{"HOME": home, "MYSQL_HOME": mysqlHome}, g1, missing, g2)
	cfg, err := resolve(Flags{DefaultsExtraFile: extra}, env)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{User: "home", Password: "homepw", PasswordSet: true, Host: "localhost", Port: 1111,
		Socket: "/g2.sock", Protocol: ProtocolSocket}
	if cfg.User != want.User || cfg.Password != want.Password || !cfg.PasswordSet || cfg.Host != want.Host ||
		cfg.Port != want.Port || cfg.Socket != want.Socket || cfg.Protocol != want.Protocol {
		t.Fatalf("got %+v\nwant %+v", cfg, want)
	}
	wantSources := map[string]string{
		"user":     filepath.Join(home, ".my.cnf") + " [backstream]",
		"password": filepath.Join(home, ".my.cnf") + " [client]",
		"host":     extra + " [client]",
		"port":     g1 + " [client]",
		"socket":   g2 + " [client-server]",
	}
	for k, v := range wantSources {
		if cfg.Sources[k] != v {
			t.Errorf("source of %s = %q, want %q", k, cfg.Sources[k], v)
		}
	}

	// The extra file is read after the globals and before ~/.my.cnf.
	cfg, err = resolve(Flags{DefaultsExtraFile: extra}, fakeEnv(map[string]string{"HOME": dir}, g1, g2))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "extra" {
		t.Fatalf("user %q, want extra (no ~/.my.cnf in %s)", cfg.User, dir)
	}

	// --defaults-file reads only that file.
	only := writeCnf(t, dir, "only.cnf", "[client]\nuser=only\n")
	cfg, err = resolve(Flags{DefaultsFile: only, DefaultsExtraFile: extra}, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "only" || cfg.PasswordSet || cfg.Port != 0 || cfg.Socket != DefaultSocket {
		t.Fatalf("--defaults-file: got %+v", cfg)
	}

	// --no-defaults reads nothing.
	cfg, err = resolve(Flags{NoDefaults: true, DefaultsFile: only}, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "osuser" {
		t.Fatalf("--no-defaults: got %+v", cfg)
	}
}

func TestResolveRequiredFilesMissing(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []Flags{
		{DefaultsFile: filepath.Join(dir, "nope.cnf")},
		{DefaultsExtraFile: filepath.Join(dir, "nope.cnf")},
	} {
		_, err := resolve(f, fakeEnv(nil))
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "nope.cnf") {
			t.Errorf("%+v: err = %v, want not-exist naming the file", f, err)
		}
	}
}

func TestResolvePasswordPrecedence(t *testing.T) {
	dir := t.TempDir()
	withPw := writeCnf(t, dir, "pw.cnf", "[client]\npassword=filepw\n")
	noPw := writeCnf(t, dir, "nopw.cnf", "[client]\nuser=u\n")
	bare := writeCnf(t, dir, "bare.cnf", "[client]\npassword\n")
	bareThenSet := writeCnf(t, dir, "bare2.cnf", "[client]\npassword\n[backstream]\npassword=later\n")
	tests := []struct {
		name       string
		flags      Flags
		env        map[string]string
		want       string
		wantSet    bool
		wantPrompt bool
		wantFrom   string
	}{
		{"file beats MYSQL_PWD", Flags{DefaultsFile: withPw}, map[string]string{"MYSQL_PWD": "envpw"}, "filepw", true, false, withPw + " [client]"},
		{"MYSQL_PWD when none in files", Flags{DefaultsFile: noPw}, map[string]string{"MYSQL_PWD": "envpw"}, "envpw", true, false, "MYSQL_PWD"},
		{"empty MYSQL_PWD is an empty password", Flags{DefaultsFile: noPw}, map[string]string{"MYSQL_PWD": ""}, "", true, false, "MYSQL_PWD"},
		{"no password at all", Flags{DefaultsFile: noPw}, nil, "", false, false, ""},
		{"flag beats file", Flags{DefaultsFile: withPw, Password: strp("flagpw")}, nil, "flagpw", true, false, "--password"},
		{"empty flag beats file", Flags{DefaultsFile: withPw, Password: strp("")}, nil, "", true, false, "--password"},
		{"bare password asks for a prompt", Flags{DefaultsFile: bare}, map[string]string{"MYSQL_PWD": "envpw"}, "", false, true, bare + " [client]"},
		{"later value cancels the prompt", Flags{DefaultsFile: bareThenSet}, nil, "later", true, false, bareThenSet + " [backstream]"},
		{"flag cancels the prompt", Flags{DefaultsFile: bare, Password: strp("f")}, nil, "f", true, false, "--password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := resolve(tt.flags, fakeEnv(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Password != tt.want || cfg.PasswordSet != tt.wantSet || cfg.PromptPassword != tt.wantPrompt || cfg.Sources["password"] != tt.wantFrom {
				t.Fatalf("got password %q set %v prompt %v from %q; want %q %v %v %q",
					cfg.Password, cfg.PasswordSet, cfg.PromptPassword, cfg.Sources["password"], tt.want, tt.wantSet, tt.wantPrompt, tt.wantFrom)
			}
		})
	}
}

func TestResolveFlagsWin(t *testing.T) {
	dir := t.TempDir()
	f := writeCnf(t, dir, "c.cnf", "[client]\nuser=fu\nhost=fh\nport=1\nsocket=/fs\n")
	cfg, err := resolve(Flags{DefaultsFile: f, User: "u", Host: "h", Port: 2, Socket: "/s"},
		fakeEnv(map[string]string{"MYSQL_HOST": "eh", "MYSQL_TCP_PORT": "3", "MYSQL_UNIX_PORT": "/es"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "u" || cfg.Host != "h" || cfg.Port != 2 || cfg.Socket != "/s" || cfg.Protocol != ProtocolTCP {
		t.Fatalf("got %+v", cfg)
	}
	for k, v := range map[string]string{"user": "--user", "host": "--host", "port": "--port", "socket": "--socket"} {
		if cfg.Sources[k] != v {
			t.Errorf("source of %s = %q, want %q", k, cfg.Sources[k], v)
		}
	}
	// The environment fills only what files and flags leave unset.
	cfg, err = resolve(Flags{NoDefaults: true}, fakeEnv(map[string]string{"MYSQL_HOST": "eh", "MYSQL_TCP_PORT": "3", "MYSQL_UNIX_PORT": "/es"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "eh" || cfg.Port != 3 || cfg.Socket != "/es" || cfg.Protocol != ProtocolTCP || cfg.Addr() != "eh:3" {
		t.Fatalf("env: got %+v", cfg)
	}
}

func TestResolveTransport(t *testing.T) {
	dir := t.TempDir()
	sock := writeCnf(t, dir, "sock.cnf", "[client]\nsocket=/file.sock\nport=4000\n")
	tcp := writeCnf(t, dir, "tcp.cnf", "[client]\nprotocol=TCP\n")
	bad := writeCnf(t, dir, "bad.cnf", "[client]\n\nprotocol=pipe\n")
	tests := []struct {
		name       string
		flags      Flags
		wantSocket string // "" means TCP
		wantAddr   string
	}{
		{"nothing: default socket", Flags{NoDefaults: true}, DefaultSocket, ""},
		{"localhost: socket", Flags{NoDefaults: true, Host: "localhost"}, DefaultSocket, ""},
		{"127.0.0.1: tcp", Flags{NoDefaults: true, Host: "127.0.0.1"}, "", "127.0.0.1:3306"},
		{"remote host: tcp", Flags{NoDefaults: true, Host: "db1", Port: 3307}, "", "db1:3307"},
		{"ipv6: tcp", Flags{NoDefaults: true, Host: "::1"}, "", "[::1]:3306"},
		{"socket from file", Flags{DefaultsFile: sock}, "/file.sock", ""},
		{"port in file keeps the socket", Flags{DefaultsFile: sock, Host: "localhost"}, "/file.sock", ""},
		{"port flag means tcp to localhost", Flags{DefaultsFile: sock, Port: 3333}, "", "localhost:3333"},
		{"port and socket flags: socket", Flags{NoDefaults: true, Port: 3333, Socket: "/f.sock"}, "/f.sock", ""},
		{"socket flag with 127.0.0.1: tcp", Flags{NoDefaults: true, Host: "127.0.0.1", Socket: "/f.sock"}, "", "127.0.0.1:3306"},
		{"protocol from file", Flags{DefaultsFile: tcp}, "", "localhost:3306"},
		{"protocol flag beats file", Flags{DefaultsFile: tcp, Protocol: "socket"}, DefaultSocket, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := resolve(tt.flags, fakeEnv(nil))
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantSocket != "" {
				if !cfg.UsesSocket() || cfg.SocketPath() != tt.wantSocket {
					t.Fatalf("got %+v (UsesSocket %v), want socket %s", cfg, cfg.UsesSocket(), tt.wantSocket)
				}
				return
			}
			if cfg.UsesSocket() || cfg.Addr() != tt.wantAddr {
				t.Fatalf("got %+v (UsesSocket %v, Addr %s), want tcp %s", cfg, cfg.UsesSocket(), cfg.Addr(), tt.wantAddr)
			}
		})
	}
	_, err := resolve(Flags{DefaultsFile: bad}, fakeEnv(nil))
	if err == nil || !strings.Contains(err.Error(), bad+":3") || !strings.Contains(err.Error(), `"pipe"`) {
		t.Fatalf("bad protocol: err = %v", err)
	}
}

func TestResolveBadPort(t *testing.T) {
	p := writeCnf(t, t.TempDir(), "c.cnf", "[client]\nport=abc\n")
	if _, err := resolve(Flags{DefaultsFile: p}, fakeEnv(nil)); err == nil || !strings.Contains(err.Error(), p+":2") {
		t.Fatalf("err = %v, want one naming %s:2", err, p)
	}
	if _, err := resolve(Flags{NoDefaults: true}, fakeEnv(map[string]string{"MYSQL_TCP_PORT": "99999"})); err == nil || !strings.Contains(err.Error(), "MYSQL_TCP_PORT") {
		t.Fatalf("err = %v, want one naming MYSQL_TCP_PORT", err)
	}
	if _, err := resolve(Flags{NoDefaults: true, Port: -1}, fakeEnv(nil)); err == nil {
		t.Fatal("negative --port accepted")
	}
}

// TestResolvePublic exercises the exported Resolve with HOME in a temp dir.
// It asserts only what the given files decide, since /etc/my.cnf and
// /etc/mysql/my.cnf belong to the machine.
func TestResolvePublic(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("MYSQL_PWD", "envpw")
	for _, v := range []string{"MYSQL_HOME", "MYSQL_HOST", "MYSQL_TCP_PORT", "MYSQL_UNIX_PORT"} {
		t.Setenv(v, "")
	}
	writeCnf(t, home, ".my.cnf", "[client]\nuser=homeuser\n")
	extra := writeCnf(t, t.TempDir(), "extra.cnf", "[client]\nuser=extrauser\nport=3399\n")

	cfg, err := Resolve(Flags{DefaultsExtraFile: extra, Host: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "homeuser" || cfg.Port != 3399 || cfg.Addr() != "127.0.0.1:3399" {
		t.Fatalf("got %+v", cfg)
	}

	df := writeCnf(t, t.TempDir(), "only.cnf", "[client]\nuser=dfuser\n")
	cfg, err = Resolve(Flags{DefaultsFile: df, Password: strp("flagpw")})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "dfuser" || cfg.Password != "flagpw" || !cfg.UsesSocket() || cfg.SocketPath() != DefaultSocket {
		t.Fatalf("got %+v", cfg)
	}
	cfg, err = Resolve(Flags{DefaultsFile: df})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Password != "envpw" || cfg.Sources["password"] != "MYSQL_PWD" {
		t.Fatalf("MYSQL_PWD not used: %+v", cfg)
	}
}

func mkdir(d string) error { return os.MkdirAll(d, 0o700) }

func boolp(b bool) *bool { return &b }

// The TLS options follow the client: keys spelled with - or _, loose-,
// skip-/disable-/enable- prefixes, every path and ssl-verify-server-cert
// implying ssl, the last setting winning, files before flags, and
// --ssl/--skip-ssl over what other flags imply.
func TestResolveTLS(t *testing.T) {
	dir := t.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		file  string // [client] lines
		flags Flags
		want  TLS
		from  string // where ssl came from, as the file is named "c.cnf"
	}{
		{name: "nothing", want: TLS{}},
		{name: "ssl bare", file: "ssl", want: TLS{SSL: true, SSLSet: true}, from: "c.cnf [client]"},
		{name: "ssl=0", file: "ssl=0", want: TLS{SSLSet: true}},
		{name: "skip-ssl", file: "ssl-ca=/ca.pem\nskip-ssl", want: TLS{SSLSet: true, CA: "/ca.pem"}},
		{name: "ssl after skip", file: "skip-ssl\nssl_ca=/ca.pem", want: TLS{SSL: true, SSLSet: true, CA: "/ca.pem"}},
		{name: "underscores and loose", file: "loose_ssl_cert=/c.pem\nssl_key=/k.pem\nssl_verify_server_cert=ON",
			want: TLS{SSL: true, SSLSet: true, Cert: "/c.pem", Key: "/k.pem", VerifyServerCert: true}},
		{name: "verify off implies nothing", file: "ssl-verify-server-cert=0", want: TLS{}},
		{name: "disable verify", file: "ssl-verify-server-cert\ndisable-ssl-verify-server-cert\nssl-capath=/cas",
			want: TLS{SSL: true, SSLSet: true, CAPath: "/cas"}},
		{name: "enable-ssl", file: "enable-ssl", want: TLS{SSL: true, SSLSet: true}},
		{name: "relative paths", file: "ssl-ca=ca.pem", flags: Flags{SSLKey: "k.pem"},
			want: TLS{SSL: true, SSLSet: true, CA: filepath.Join(wd, "ca.pem"), Key: filepath.Join(wd, "k.pem")}, from: "--ssl-key"},
		{name: "flags over the file", file: "ssl-ca=/file-ca.pem\nssl-verify-server-cert",
			flags: Flags{SSLCA: "/flag-ca.pem", SSLVerifyServerCert: boolp(false)},
			want:  TLS{SSL: true, SSLSet: true, CA: "/flag-ca.pem"}, from: "--ssl-ca"},
		{name: "skip-ssl flag wins", flags: Flags{SSLCA: "/ca.pem", SSL: boolp(false)},
			want: TLS{SSLSet: true, CA: "/ca.pem"}, from: "--skip-ssl"},
		{name: "ssl flag over a file's skip-ssl", file: "skip-ssl", flags: Flags{SSL: boolp(true)},
			want: TLS{SSL: true, SSLSet: true}, from: "--ssl"},
		{name: "verify flag", flags: Flags{SSLVerifyServerCert: boolp(true)},
			want: TLS{SSL: true, SSLSet: true, VerifyServerCert: true}, from: "--ssl-verify-server-cert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.flags
			f.DefaultsFile = writeCnf(t, dir, "c.cnf", "[client]\n"+tc.file+"\n")
			cfg, err := resolve(f, fakeEnv(nil))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.TLS != tc.want {
				t.Fatalf("TLS = %+v, want %+v", cfg.TLS, tc.want)
			}
			from := strings.Replace(tc.from, "c.cnf", f.DefaultsFile, 1)
			if tc.from != "" && cfg.Sources["ssl"] != from {
				t.Errorf("ssl from %q, want %q", cfg.Sources["ssl"], from)
			}
		})
	}
}

// Options backstream cannot apply and booleans it cannot read are refused,
// naming the file and line.
func TestResolveTLSRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ line, want string }{
		{"ssl-cipher=AES256-SHA", "c.cnf:3: ssl-cipher: backstream cannot apply this TLS option"},
		{"loose-ssl-crl=/crl.pem", "c.cnf:3: loose-ssl-crl: backstream cannot apply"},
		{"ssl_crlpath=/crls", "c.cnf:3: ssl-crlpath: backstream cannot apply"},
		{"tls_version=TLSv1.3", "c.cnf:3: tls-version: backstream cannot apply"},
		{"ssl=maybe", `c.cnf:3: ssl: "maybe" is not a boolean`},
		{"ssl-verify-server-cert=yes", `c.cnf:3: ssl-verify-server-cert: "yes" is not a boolean`},
	} {
		file := writeCnf(t, dir, "c.cnf", "[client]\nuser=u\n"+tc.line+"\n")
		_, err := resolve(Flags{DefaultsFile: file}, fakeEnv(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", tc.line, err, tc.want)
		}
	}
	// Groups backstream does not read may hold them.
	file := writeCnf(t, dir, "c.cnf", "[mariadb-client]\nssl-cipher=AES256-SHA\n[client]\nssl\n")
	if _, err := resolve(Flags{DefaultsFile: file}, fakeEnv(nil)); err != nil {
		t.Errorf("ssl-cipher in [mariadb-client]: %v", err)
	}
}

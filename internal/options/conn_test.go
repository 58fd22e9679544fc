package options

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/backstream/backstream/internal/mariadb"
)

// resolveConn resolves backup's connection options given args, reading
// no option file.
func resolveConn(t *testing.T, args ...string) (mariadb.Config, error) {
	t.Helper()
	var c Conn
	fs := pflag.NewFlagSet("backup", pflag.ContinueOnError)
	c.Register(fs)
	if err := fs.Parse(append([]string{"--no-defaults"}, args...)); err != nil {
		t.Fatal(err)
	}
	return c.Resolve()
}

// refused reports whether err is one the command reports as a usage
// error.
func refused(err error) bool {
	var r interface{ Refused() bool }
	return errors.As(err, &r) && r.Refused()
}

// --ssl and --skip-ssl decide TLS only when given, and refuse to
// contradict each other; --ssl-verify-server-cert too is read only when
// given.
func TestConnTLSOptions(t *testing.T) {
	for _, tc := range []struct {
		args                  string
		ssl, sslSet, verified bool
	}{
		{args: "", ssl: false, sslSet: false},
		{args: "--ssl", ssl: true, sslSet: true},
		{args: "--skip-ssl", ssl: false, sslSet: true},
		{args: "--ssl --skip-ssl=false", ssl: true, sslSet: true},
		{args: "--ssl=false --skip-ssl", ssl: false, sslSet: true},
		{args: "--ssl --ssl-verify-server-cert", ssl: true, sslSet: true, verified: true},
	} {
		cfg, err := resolveConn(t, strings.Fields(tc.args)...)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if cfg.TLS.SSL != tc.ssl || cfg.TLS.SSLSet != tc.sslSet || cfg.TLS.VerifyServerCert != tc.verified {
			t.Errorf("%q: ssl %v (set %v), verify %v; want %v (set %v), verify %v", tc.args,
				cfg.TLS.SSL, cfg.TLS.SSLSet, cfg.TLS.VerifyServerCert, tc.ssl, tc.sslSet, tc.verified)
		}
	}
	for _, args := range []string{"--ssl --skip-ssl", "--ssl=false --skip-ssl=false"} {
		_, err := resolveConn(t, strings.Fields(args)...)
		if err == nil || err.Error() != "--ssl and --skip-ssl contradict each other: give one" || !refused(err) {
			t.Errorf("%q: %v, want the refusal of a contradiction", args, err)
		}
	}
}

// A password given as a flag is the connection's; a bare --password
// prompts, and without a terminal is refused.
func TestConnPassword(t *testing.T) {
	cfg, err := resolveConn(t, "--password=secret", "--user", "u")
	if err != nil || cfg.Password != "secret" || !cfg.PasswordSet || cfg.User != "u" {
		t.Errorf("--password=secret --user u: %+v, %v", cfg, err)
	}
	if term.IsTerminal(int(os.Stdin.Fd())) {
		t.Skip("stdin is a terminal: a bare --password would prompt")
	}
	_, err = resolveConn(t, "--password")
	if err == nil || !strings.HasPrefix(err.Error(), "--password without a value needs a terminal") || !refused(err) {
		t.Errorf("a bare --password without a terminal: %v", err)
	}
}

// An endpoint of copy is a socket path, a host or host:port; its user
// and option file are its own, its password comes from
// $BACKSTREAM_NAME_PASSWORD or that file, and never from a prompt.
func TestEndpointResolve(t *testing.T) {
	resolve := func(args ...string) (mariadb.Config, error) {
		var from Endpoint
		fs := pflag.NewFlagSet("copy", pflag.ContinueOnError)
		from.Register(fs, "from", "source")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return from.Resolve("", "", true)
	}
	t.Setenv("MYSQL_PWD", "")
	os.Unsetenv("MYSQL_PWD") // the client's, which a bare password line would not ask for
	t.Setenv("BACKSTREAM_FROM_PASSWORD", "pw")
	cfg, err := resolve("--from", "/run/src.sock", "--from-user", "u")
	if err != nil || cfg.Socket != "/run/src.sock" || cfg.Protocol != mariadb.ProtocolSocket || cfg.User != "u" || cfg.Password != "pw" {
		t.Errorf("--from /run/src.sock --from-user u: %+v, %v", cfg, err)
	}
	cfg, err = resolve("--from", "db1:3307")
	if err != nil || cfg.Host != "db1" || cfg.Port != 3307 || cfg.Protocol != mariadb.ProtocolTCP {
		t.Errorf("--from db1:3307: %+v, %v", cfg, err)
	}
	cnf := writeCnf(t, "[client]\npassword\n")
	os.Unsetenv("BACKSTREAM_FROM_PASSWORD") // t.Setenv restores it and MYSQL_PWD
	for args, want := range map[string]string{
		"":                                       "--from is required: the source server, as host, host:port or the path of its socket",
		"--from db1:99999":                       `--from "db1:99999": the port is not a number from 1 to 65535`,
		"--from db1 --from-defaults-file " + cnf: "the source's option files ask for a password to be typed (a bare password line), which copy does not do: give it in --from-defaults-file or $BACKSTREAM_FROM_PASSWORD",
	} {
		_, err := resolve(strings.Fields(args)...)
		if err == nil || err.Error() != want || !refused(err) {
			t.Errorf("%q: %v, want the refusal %q", args, err, want)
		}
	}
}

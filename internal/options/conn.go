package options

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/refusal"
)

// Conn are the connection options, named as in the MariaDB clients.
type Conn struct {
	fs       *pflag.FlagSet // the command's, which Register bound
	f        mariadb.Flags
	password string
	// ssl, skipSSL and verifyServerCert are read only when given, so that
	// an option file decides otherwise.
	ssl, skipSSL, verifyServerCert bool
}

// Register binds the connection options to fs.
func (c *Conn) Register(fs *pflag.FlagSet) {
	c.fs = fs
	o := Bind(fs)
	o.String("host", &c.f.Host)
	o.Int("port", &c.f.Port)
	o.String("socket", &c.f.Socket)
	o.String("user", &c.f.User)
	o.String("password", &c.password)
	o.String("protocol", &c.f.Protocol)
	o.String("defaults-file", &c.f.DefaultsFile)
	o.String("defaults-extra-file", &c.f.DefaultsExtraFile)
	o.Bool("no-defaults", &c.f.NoDefaults)
	o.Bool("ssl", &c.ssl)
	o.Bool("skip-ssl", &c.skipSSL)
	o.String("ssl-ca", &c.f.SSLCA)
	o.String("ssl-capath", &c.f.SSLCAPath)
	o.String("ssl-cert", &c.f.SSLCert)
	o.String("ssl-key", &c.f.SSLKey)
	o.Bool("ssl-verify-server-cert", &c.verifyServerCert)
}

// TLSNames are the TLS options Conn registers.
var TLSNames = []string{"ssl", "skip-ssl", "ssl-ca", "ssl-capath", "ssl-cert", "ssl-key", "ssl-verify-server-cert"}

// ConnNames are the options Conn registers.
var ConnNames = append([]string{"host", "port", "socket", "user", "password", "protocol", "defaults-file", "defaults-extra-file", "no-defaults"}, TLSNames...)

// PasswordOnCommandLine is the warning for a password given as a flag.
const PasswordOnCommandLine = "backstream: warning: a password on the command line can be seen by other users until backstream hides it; an option file (--defaults-extra-file) or MYSQL_PWD is safer"

// Resolve builds the connection config: flags over the environment over
// option files ([client], [client-server], [client-mariadb], [backstream]),
// TLS settings included. A password asked for (a bare --password, or a
// bare password line) is read from the terminal.
func (c *Conn) Resolve() (mariadb.Config, error) {
	fs, f := c.fs, c.f
	prompt := false
	if fs.Changed("password") {
		if c.password == PromptValue {
			prompt = true
		} else {
			fmt.Fprintln(os.Stderr, PasswordOnCommandLine)
			p := c.password
			f.Password = &p
		}
	}
	if fs.Changed("ssl") && fs.Changed("skip-ssl") && c.ssl == c.skipSSL {
		return mariadb.Config{}, refusal.Errorf("--ssl and --skip-ssl contradict each other: give one")
	}
	switch {
	case fs.Changed("ssl"):
		on := c.ssl
		f.SSL = &on
	case fs.Changed("skip-ssl"):
		on := !c.skipSSL
		f.SSL = &on
	}
	if fs.Changed("ssl-verify-server-cert") {
		v := c.verifyServerCert
		f.SSLVerifyServerCert = &v
	}
	cfg, err := mariadb.Resolve(f)
	if err != nil || !prompt && !cfg.PromptPassword {
		return cfg, err
	}
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		return cfg, refusal.Errorf("--password without a value needs a terminal to prompt on; use an option file or MYSQL_PWD")
	}
	fmt.Fprintf(os.Stderr, "Enter password for %s: ", cfg.User)
	pw, err := term.ReadPassword(int(os.Stdin.Fd()))
	fmt.Fprintln(os.Stderr)
	if err != nil {
		return cfg, fmt.Errorf("read password: %w", err)
	}
	cfg.Password, cfg.PasswordSet, cfg.PromptPassword = string(pw), true, false
	return cfg, nil
}

// writeConnection writes the connection the options of flags make, as
// the client would make it from the same files ([client],
// [client-server], [client-mariadb] too), and where each of its settings
// comes from: config's last lines.
func writeConnection(w io.Writer, flags *pflag.FlagSet) error {
	cfg, err := mariadb.Resolve(connFlagsOf(flags))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nconnection: %s\n", cfg)
	for _, k := range []string{"host", "port", "socket", "user", "password"} {
		if from := cfg.Sources[k]; from != "" {
			fmt.Fprintf(w, "  %s from %s\n", k, from)
		}
	}
	return nil
}

// ServerLabel is the server the connection options of flags name, for
// the metrics' server label (mariadb.Flags.Label); "" for a command
// without connection options.
func ServerLabel(flags *pflag.FlagSet) string {
	if flags.Lookup("socket") == nil || flags.Lookup("defaults-extra-file") == nil {
		return ""
	}
	return connFlagsOf(flags).Label()
}

// connFlagsOf reads the connection options of flags as given, by name,
// less TLS and the password.
func connFlagsOf(flags *pflag.FlagSet) mariadb.Flags {
	var f mariadb.Flags
	f.Host, _ = flags.GetString("host")
	f.Port, _ = flags.GetInt("port")
	f.Socket, _ = flags.GetString("socket")
	f.User, _ = flags.GetString("user")
	f.Protocol, _ = flags.GetString("protocol")
	f.DefaultsFile, _ = flags.GetString("defaults-file")
	f.DefaultsExtraFile, _ = flags.GetString("defaults-extra-file")
	f.NoDefaults, _ = flags.GetBool("no-defaults")
	return f
}

// Endpoint names one of the two servers of a copy: --NAME (a host,
// host:port, or the path of a socket), --NAME-user and
// --NAME-defaults-file. Its password comes from that file (or the
// option files the global flags choose) or $BACKSTREAM_NAME_PASSWORD,
// never from a flag.
type Endpoint struct {
	name, what       string
	where, user, cnf string
}

// Register binds the endpoint's options, --NAME, --NAME-user and
// --NAME-defaults-file, to f; what names the server in messages.
func (e *Endpoint) Register(f *pflag.FlagSet, name, what string) {
	e.name, e.what = name, what
	o := Bind(f)
	o.String(name, &e.where)
	o.String(name+"-user", &e.user)
	o.String(name+"-defaults-file", &e.cnf)
}

// passwordEnv is the variable that holds the endpoint's password.
func (e *Endpoint) passwordEnv() string {
	return "BACKSTREAM_" + strings.ToUpper(e.name) + "_PASSWORD"
}

// Resolve builds the endpoint's connection: its flags over
// $BACKSTREAM_NAME_PASSWORD over its option file, or the option files the
// global --defaults-file, --defaults-extra-file and --no-defaults choose.
func (e *Endpoint) Resolve(defaultsFile, defaultsExtraFile string, noDefaults bool) (mariadb.Config, error) {
	f := mariadb.Flags{User: e.user, DefaultsFile: defaultsFile, DefaultsExtraFile: defaultsExtraFile, NoDefaults: noDefaults}
	if e.cnf != "" {
		f.DefaultsFile, f.NoDefaults = e.cnf, false
	}
	switch {
	case e.where == "":
		return mariadb.Config{}, refusal.Errorf("--%s is required: the %s server, as host, host:port or the path of its socket", e.name, e.what)
	case strings.HasPrefix(e.where, "/"):
		f.Socket, f.Protocol = e.where, mariadb.ProtocolSocket
	default:
		f.Host = e.where
		switch host, port, err := mariadb.SplitHostPort(e.where); {
		case errors.Is(err, mariadb.ErrPort):
			return mariadb.Config{}, refusal.Errorf("--%s %q: %v", e.name, e.where, err)
		case err == nil:
			f.Host, f.Port, f.Protocol = host, port, mariadb.ProtocolTCP
		}
	}
	if pw, ok := os.LookupEnv(e.passwordEnv()); ok {
		f.Password = &pw
	}
	cfg, err := mariadb.Resolve(f)
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", e.what, err)
	}
	if cfg.PromptPassword {
		return cfg, refusal.Errorf("the %s's option files ask for a password to be typed (a bare password line), which copy does not do: give it in --%s-defaults-file or $%s", e.what, e.name, e.passwordEnv())
	}
	return cfg, nil
}

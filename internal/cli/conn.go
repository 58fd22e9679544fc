package cli

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/options"
)

// connFlags are the connection options, named as in the MariaDB clients.
type connFlags struct {
	f        mariadb.Flags
	password string
	// ssl, skipSSL and verifyServerCert are read only when given, so that
	// an option file decides otherwise.
	ssl, skipSSL, verifyServerCert bool
}

func (c *connFlags) register(fs *pflag.FlagSet) {
	o := options.Bind(fs)
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

// tlsFlagNames are the TLS flags connFlags registers.
var tlsFlagNames = []string{"ssl", "skip-ssl", "ssl-ca", "ssl-capath", "ssl-cert", "ssl-key", "ssl-verify-server-cert"}

// connFlagNames are the flags connFlags registers.
var connFlagNames = append([]string{"host", "port", "socket", "user", "password", "protocol", "defaults-file", "defaults-extra-file", "no-defaults"}, tlsFlagNames...)

// passwordOnCommandLine is the warning for a password given as a flag.
const passwordOnCommandLine = "backstream: warning: a password on the command line can be seen by other users until backstream hides it; an option file (--defaults-extra-file) or MYSQL_PWD is safer"

// resolve builds the connection config: flags over the environment over
// option files ([client], [client-server], [client-mariadb], [backstream]),
// TLS settings included.
func (c *connFlags) resolve(fs *pflag.FlagSet) (mariadb.Config, error) {
	f := c.f
	prompt := false
	if fs.Changed("password") {
		if c.password == options.PromptValue {
			prompt = true
		} else {
			fmt.Fprintln(os.Stderr, passwordOnCommandLine)
			p := c.password
			f.Password = &p
		}
	}
	if fs.Changed("ssl") && fs.Changed("skip-ssl") && c.ssl == c.skipSSL {
		return mariadb.Config{}, usagef("--ssl and --skip-ssl contradict each other: give one")
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
	if err != nil {
		return cfg, err
	}
	if prompt || cfg.PromptPassword {
		if !term.IsTerminal(int(os.Stdin.Fd())) {
			return cfg, usagef("--password without a value needs a terminal to prompt on; use an option file or MYSQL_PWD")
		}
		fmt.Fprintf(os.Stderr, "Enter password for %s: ", cfg.User)
		pw, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(os.Stderr)
		if err != nil {
			return cfg, fmt.Errorf("read password: %w", err)
		}
		cfg.Password, cfg.PasswordSet, cfg.PromptPassword = string(pw), true, false
	}
	return cfg, nil
}

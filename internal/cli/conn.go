package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/procargs"
)

// connFlags are the connection options, named as in the MariaDB clients.
type connFlags struct {
	f        mariadb.Flags
	password string
	// ssl, skipSSL and verifyServerCert are read only when given, so that
	// an option file decides otherwise.
	ssl, skipSSL, verifyServerCert bool
}

// noPasswordValue is what --password without a value leaves behind: a
// request to prompt.
const noPasswordValue = "\x00prompt"

func (c *connFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&c.f.Host, "host", "H", "", "server host; localhost means the socket")
	fs.IntVarP(&c.f.Port, "port", "P", 0, "server TCP port")
	fs.StringVarP(&c.f.Socket, "socket", "S", "", "server Unix socket")
	fs.StringVarP(&c.f.User, "user", "u", "", "account name")
	fs.StringVarP(&c.password, "password", "p", "", "password; without a value, prompt for it (prefer an option file or MYSQL_PWD)")
	fs.Lookup("password").NoOptDefVal = noPasswordValue
	fs.StringVar(&c.f.Protocol, "protocol", "", "tcp or socket")
	fs.StringVar(&c.f.DefaultsFile, "defaults-file", "", "read only this option file")
	fs.StringVar(&c.f.DefaultsExtraFile, "defaults-extra-file", "", "read this option file after the global ones")
	fs.BoolVar(&c.f.NoDefaults, "no-defaults", false, "read no option files")
	fs.BoolVar(&c.ssl, "ssl", false, "connect with TLS, without checking the server's certificate unless --ssl-ca or --ssl-verify-server-cert says so")
	fs.BoolVar(&c.skipSSL, "skip-ssl", false, "connect without TLS, whatever option files say")
	fs.StringVar(&c.f.SSLCA, "ssl-ca", "", "PEM file of the CAs the server's certificate must chain to (implies --ssl)")
	fs.StringVar(&c.f.SSLCAPath, "ssl-capath", "", "directory of PEM files of such CAs (implies --ssl)")
	fs.StringVar(&c.f.SSLCert, "ssl-cert", "", "client certificate, PEM, for accounts that REQUIRE X509 (implies --ssl)")
	fs.StringVar(&c.f.SSLKey, "ssl-key", "", "private key of --ssl-cert, PEM (implies --ssl)")
	fs.BoolVar(&c.verifyServerCert, "ssl-verify-server-cert", false, "check the server's certificate chain and that it names --host (implies --ssl)")
}

// tlsFlagNames are the TLS flags connFlags registers.
var tlsFlagNames = []string{"ssl", "skip-ssl", "ssl-ca", "ssl-capath", "ssl-cert", "ssl-key", "ssl-verify-server-cert"}

// connFlagNames are the flags connFlags registers.
var connFlagNames = append([]string{"host", "port", "socket", "user", "password", "protocol", "defaults-file", "defaults-extra-file", "no-defaults"}, tlsFlagNames...)

// passwordOnCommandLine is the warning for a password given as a flag.
const passwordOnCommandLine = "backstream: warning: a password on the command line can be seen by other users until backstream hides it; an option file (--defaults-extra-file) or MYSQL_PWD is safer"

// HideSecretArgs makes root run with the process's own arguments, a
// password given on the command line as the mariadb client takes it
// (--password=VALUE, -pVALUE, also after other short flags: -vpVALUE) handed
// to the command as --password=VALUE and overwritten with x's in the
// process's command line, where ps and /proc/PID/cmdline show it. pflag
// alone would read -pVALUE as -p (prompt) followed by more short flags.
func HideSecretArgs(root *cobra.Command) {
	args := os.Args[1:]
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		cmd = root
	}
	short := func(c byte) *pflag.Flag {
		if f := cmd.Flags().ShorthandLookup(string(c)); f != nil {
			return f
		}
		return cmd.InheritedFlags().ShorthandLookup(string(c))
	}
	const long = "--password="
	var out []string
	for i, a := range args {
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if strings.HasPrefix(a, long) {
			procargs.Mask(i+1, len(long))
			out = append(out, os.Args[i+1]) // Mask's copy: a is x's now
			continue
		}
		if len(a) < 2 || a[0] != '-' || a[1] == '-' {
			out = append(out, a)
			continue
		}
		kept := a
		for j := 1; j < len(a); j++ {
			f := short(a[j])
			if f == nil || (f.Name != "password" && f.Value.Type() != "bool") {
				break // unknown, or the rest is this flag's value: pflag's to read
			}
			if f.Name == "password" {
				if value := strings.TrimPrefix(a[j+1:], "="); value != "" {
					if j > 1 {
						out = append(out, a[:j])
					}
					kept = long + strings.Clone(value)
					procargs.Mask(i+1, j+1)
				}
				break
			}
		}
		out = append(out, kept)
	}
	root.SetArgs(out)
}

// resolve builds the connection config: flags over the environment over
// option files ([client], [client-server], [client-mariadb], [backstream]),
// TLS settings included.
func (c *connFlags) resolve(fs *pflag.FlagSet) (mariadb.Config, error) {
	f := c.f
	prompt := false
	if fs.Changed("password") {
		if c.password == noPasswordValue {
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

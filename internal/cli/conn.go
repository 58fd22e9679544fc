package cli

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/backstream/backstream/internal/mariadb"
)

// connFlags are the connection options, named as in the MariaDB clients.
type connFlags struct {
	f        mariadb.Flags
	password string
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
}

// resolve builds the connection config: flags over the environment over
// option files ([client], [client-server], [client-mariadb], [backstream]).
func (c *connFlags) resolve(fs *pflag.FlagSet) (mariadb.Config, error) {
	f := c.f
	prompt := false
	if fs.Changed("password") {
		if c.password == noPasswordValue {
			prompt = true
		} else {
			p := c.password
			f.Password = &p
		}
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

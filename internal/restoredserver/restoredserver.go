// Package restoredserver starts a throwaway server on a restored datadir
// for the work of a use case (replaying binary logs, exporting
// tablespaces, checking a restore): the backup's own mariadbd
// (FindServer), with the options the backup recorded (ServerOptions) in
// a private option file, its socket only, grants off or a temporary
// account of every privilege (Account), and the encryption plugin those
// options load checked active. It knows nothing of flags, of which use
// case asks, or of the server the user runs on a datadir (package
// serverup starts that one).
package restoredserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/toolpath"
)

// Options say where and how to start the server.
type Options struct {
	Dir       string           // the server's own directory (socket, option file, error log); made if absent
	Datadir   string           // the prepared datadir it runs on
	UseMemory string           // its buffer pool, e.g. 1G; "" for the sandbox's default
	Server    *toolpath.Tool   // from FindServer; nil for the one on PATH
	Options   []mariadb.Option // from ServerOptions
	// Account, when set, turns grants on and makes the server create it
	// (with every privilege) before it accepts connections; the server is
	// then reached as it. Nil: grants off, socket only.
	Account *Account
	// Install makes the system tables in Datadir first, which then holds
	// no datadir yet (sandbox.Options.InstallDatadir).
	Install bool
	Args    []string // more server options, after the others
}

// StartError is mariadbd refusing to start on a restored datadir, as
// opposed to what kept it from being tried or what is this host's fault
// (no option file written, a key file the encryption plugin cannot read):
// a restore test counts it against the backup.
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Start starts a throwaway server in o.Dir on the prepared datadir
// o.Datadir with o.Options and then o.Args. The restored grant tables
// hold the source's accounts, whose passwords backstream does not know,
// so grants are off unless o.Account is set (account statements, as a
// replay has, need them on); replication and the binary log are off.
//
// The options go to the server in a 0600 option file in o.Dir, not on
// its argv, and a key file's password among them goes into a file of the
// private scratch directory, which the option file names: o.Dir may be
// kept for a look after a restore test.
func Start(ctx context.Context, o Options) (*sandbox.Server, error) {
	if err := os.MkdirAll(o.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("start a server: %w", err)
	}
	opts, removeKey, err := physical.FileKeyInFile(o.Options)
	if err != nil {
		return nil, err
	}
	// The plugin reads it once, as the server starts.
	defer removeKey()
	cnf := filepath.Join(o.Dir, "server.cnf")
	if err := mariadb.WriteOptionFile(cnf, "mysqld", opts); err != nil {
		return nil, err
	}
	so, err := sandboxOptions(o, cnf)
	if err != nil {
		return nil, err
	}
	srv, err := sandbox.Start(ctx, so)
	if err != nil {
		return nil, &StartError{err}
	}
	if err := checkEncryption(ctx, srv, opts); err != nil {
		srv.Close()
		return nil, err
	}
	return srv, nil
}

// sandboxOptions are the sandbox's options for o, whose option file is cnf.
func sandboxOptions(o Options, cnf string) (sandbox.Options, error) {
	so := sandbox.Options{Dir: o.Dir, Datadir: o.Datadir, NoBinlog: true, BufferPool: o.UseMemory, OptionFile: cnf, InstallDatadir: o.Install}
	switch {
	case o.Server == nil:
	case o.Server.Basedir != "":
		so.Basedir = o.Server.Basedir
	default:
		so.Mariadbd = o.Server.Path
	}
	if o.Account == nil {
		// Without grants anyone who reaches it reads the whole backup:
		// its socket only, in the 0700 directory o.Dir, never TCP.
		so.Args = append([]string{"--skip-grant-tables", "--skip-slave-start", "--skip-networking"}, o.Args...)
		return so, nil
	}
	init := filepath.Join(o.Dir, "init.sql")
	if err := os.WriteFile(init, []byte(o.Account.initSQL()), 0o600); err != nil {
		return so, fmt.Errorf("start a server: %w", err)
	}
	so.Args = append([]string{"--init-file=" + init, "--skip-slave-start"}, o.Args...)
	so.User, so.Password = o.Account.User, o.Account.Password
	return so, nil
}

// Account is a temporary account of a server started with grants on: a
// name no source has, and a random password that lives only in 0600
// files of the server's directory.
type Account struct{ User, Password string }

// NewAccount makes an account named prefix and a random suffix.
func NewAccount(prefix string) (*Account, error) {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	h := hex.EncodeToString(b[:])
	return &Account{User: prefix + h[:8], Password: h[8:]}, nil
}

// Quoted is the account as SQL names it.
func (a *Account) Quoted() string { return "'" + a.User + "'@'localhost'" }

// Config connects to srv as the account over its socket.
func (a *Account) Config(srv *sandbox.Server) mariadb.Config {
	return mariadb.Config{Socket: srv.Socket, User: a.User, Password: a.Password, PasswordSet: true, Protocol: "socket"}
}

// initSQL creates the account (one statement a line, as --init-file
// reads), with every privilege, PROXY too, and the admin option of every
// role (granting a role needs it). Roles are granted through the grant
// table: the init file takes no compound statement to loop over them.
func (a *Account) initSQL() string {
	return "CREATE USER " + a.Quoted() + " IDENTIFIED BY '" + a.Password + "';\n" +
		"GRANT ALL PRIVILEGES ON *.* TO " + a.Quoted() + " WITH GRANT OPTION;\n" +
		// Granting PROXY needs it (root has it from mariadb-install-db);
		// the init file may not grant it, having no user to grant it as.
		"INSERT INTO mysql.proxies_priv (Host, User, Proxied_host, Proxied_user, With_grant) VALUES ('localhost', '" + a.User + "', '%', '', 1);\n" +
		"INSERT INTO mysql.roles_mapping (Host, User, Role, Admin_option) SELECT 'localhost', '" + a.User +
		"', User, 'Y' FROM mysql.user WHERE is_role = 'Y' AND User <> 'PUBLIC';\n" +
		"FLUSH PRIVILEGES;\n"
}

package replica

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/backstream/backstream/internal/mariadb"
)

// Primary is the server the replica replicates from, as the replica reaches
// it (CHANGE MASTER TO MASTER_HOST, ...).
type Primary struct {
	Host string
	// Port is the primary's TCP port; 0 means mariadb.DefaultPort.
	Port int
	// User and Password are the replication account (REPLICATION SLAVE).
	User     string
	Password string
	// SSL asks the replica to connect with TLS (MASTER_SSL=1).
	SSL bool
}

// PrimaryAt is the primary at the host and port of cfg, a server the
// replica's data came from; none for a server reached on a socket, whose
// host a replica cannot use.
func PrimaryAt(cfg mariadb.Config) Primary {
	if cfg.UsesSocket() {
		return Primary{}
	}
	return Primary{Host: cfg.Host, Port: cfg.Port}
}

// PasswordEnv is the environment variable holding the replication password,
// so that it never needs to be on a command line.
const PasswordEnv = "BACKSTREAM_PRIMARY_PASSWORD"

// OptionGroup is the option file group holding the primary's settings:
// host, port, user, password and ssl, spelled as in [client].
const OptionGroup = "backstream-primary"

// Addr is "host:port" with the default port filled in.
func (p Primary) Addr() string {
	port := p.Port
	if port == 0 {
		port = mariadb.DefaultPort
	}
	return net.JoinHostPort(p.Host, strconv.Itoa(port))
}

// config is how backstream itself logs in to the primary with the
// replication account: over TCP, and with TLS when the replica uses it
// (MASTER_SSL=1 without a CA checks no certificate, and neither does this).
func (p Primary) config() mariadb.Config {
	return mariadb.Config{
		Host: p.Host, Port: p.Port, User: p.User,
		Password: p.Password, PasswordSet: true, Protocol: mariadb.ProtocolTCP,
		TLS: mariadb.TLS{SSL: p.SSL, SSLSet: p.SSL},
	}
}

// String names the primary and account for messages, never the password.
func (p Primary) String() string {
	return fmt.Sprintf("%s as %s", p.Addr(), p.User)
}

// validate refuses settings CHANGE MASTER cannot take or would mangle.
func (p Primary) validate() error {
	if p.Host == "" {
		return errors.New("primary host is not set")
	}
	if p.User == "" {
		return fmt.Errorf("primary %s: replication user is not set", p.Addr())
	}
	if p.Port < 0 || p.Port > 65535 {
		return fmt.Errorf("primary %s: port %d out of range", p.Host, p.Port)
	}
	if err := checkValue("primary host", p.Host, false); err != nil {
		return err
	}
	if err := checkValue("replication user", p.User, false); err != nil {
		return err
	}
	if err := checkValue("replication password for "+p.String(), p.Password, true); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(p.Password); n > MaxPasswordLength {
		return fmt.Errorf("replication password for %s: %d characters, MariaDB stores at most %d", p, n, MaxPasswordLength)
	}
	return nil
}

// PrimaryDefaults reads the primary's settings from the [backstream-primary]
// group of files (in order, later files win, missing files skipped, as the
// MariaDB clients do), then takes the password from PasswordEnv if lookupEnv
// finds it set. The caller lays flags over the result. Sources tells, per
// setting, where it came from, e.g. "/root/.my.cnf [backstream-primary]".
func PrimaryDefaults(files []string, lookupEnv func(string) (string, bool)) (p Primary, sources map[string]string, err error) {
	sources = map[string]string{}
	for _, file := range files {
		opts, err := mariadb.ReadOptionFile(file, OptionGroup)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Primary{}, nil, fmt.Errorf("reading primary options: %w", err)
		}
		for _, o := range opts {
			from := fmt.Sprintf("%s [%s]", o.File, o.Group)
			key := strings.TrimPrefix(o.Key, "loose-")
			switch key {
			case "host":
				p.Host = o.Value
			case "user":
				p.User = o.Value
			case "password":
				p.Password = o.Value
			case "port":
				n, err := strconv.Atoi(o.Value)
				if err != nil || n <= 0 || n > 65535 {
					return Primary{}, nil, fmt.Errorf("%s:%d: port %q is not a TCP port", o.File, o.Line, o.Value)
				}
				p.Port = n
			case "ssl":
				on, err := mariadb.ParseOptionBool(o.Value, o.Bare)
				if err != nil {
					return Primary{}, nil, fmt.Errorf("%s:%d: ssl: %w", o.File, o.Line, err)
				}
				p.SSL = on
			default:
				continue
			}
			sources[key] = from
		}
	}
	if lookupEnv != nil {
		if v, ok := lookupEnv(PasswordEnv); ok {
			p.Password = v
			sources["password"] = PasswordEnv
		}
	}
	return p, sources, nil
}

// LoadPrimary reads the [backstream-primary] group of the option files:
// the global ones, ~/.my.cnf, then extra (--primary-defaults-file) when
// given.
func LoadPrimary(extra string) (Primary, error) {
	files := append([]string(nil), mariadb.GlobalOptionFiles...)
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".my.cnf"))
	}
	if extra != "" {
		files = append(files, extra)
	}
	p, _, err := PrimaryDefaults(files, os.LookupEnv)
	return p, err
}

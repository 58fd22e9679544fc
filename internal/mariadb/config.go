// Package mariadb connects to MariaDB servers the way the MariaDB command-line
// clients do (option files, environment, flags) and reports the facts about a
// server that backups depend on: version, paths, binary log state and the
// privileges of the connected account. It knows nothing of backups.
package mariadb

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// Config is how to reach a server. Zero values mean "not set".
type Config struct {
	// Host is a host name or address for TCP. "localhost" (or an empty Host)
	// means the Unix socket, as in the mariadb client; use "127.0.0.1" to force TCP.
	Host string
	// Port is the TCP port; 0 means the default, 3306.
	Port int
	// Socket is the path of the server's Unix socket.
	Socket string
	// User is the account name.
	User string
	// Password is the account's password; meaningful only when PasswordSet.
	Password string
	// PasswordSet is true when a password was given, even an empty one, so an
	// explicit empty password can override one found in an option file.
	PasswordSet bool
	// PromptPassword is true when an option file asked for the password to be
	// typed in (a bare "password" line) and none was given otherwise; the
	// CLI should prompt and set Password.
	PromptPassword bool
	// Protocol is "tcp" or "socket" to force a transport; empty means the
	// Host decides (see UsesSocket). Resolve always sets it.
	Protocol string
	// TLS is whether and how the connection uses TLS (the client's --ssl
	// options).
	TLS TLS
	// Sources tells, per setting ("host", "port", "socket", "user",
	// "password", "ssl", "ssl-ca", ...), where its value came from, e.g. "--user",
	// "/root/.my.cnf [client]" or "MYSQL_PWD", so that messages can point the
	// user at the file to fix. It may be nil.
	Sources map[string]string
}

// DefaultPort is the port MariaDB listens on unless told otherwise.
const DefaultPort = 3306

// DefaultSocket is where Debian's and most distributions' MariaDB packages put
// the server socket, and what the Debian-built client uses when nothing else
// names a socket.
const DefaultSocket = "/run/mysqld/mysqld.sock"

// UsesSocket reports whether cfg connects through a Unix socket rather than
// TCP. Like the mariadb client, an empty host or "localhost" means the socket.
// An explicit Protocol overrides that.
func (c Config) UsesSocket() bool {
	switch c.Protocol {
	case ProtocolSocket:
		return true
	case ProtocolTCP:
		return false
	}
	return c.Host == "" || c.Host == "localhost"
}

// The transports a Config can force.
const (
	ProtocolTCP    = "tcp"
	ProtocolSocket = "socket"
)

// SocketPath is the socket cfg connects through: Socket, or DefaultSocket.
func (c Config) SocketPath() string {
	if c.Socket != "" {
		return c.Socket
	}
	return DefaultSocket
}

// Addr is the TCP address "host:port" cfg connects to.
func (c Config) Addr() string {
	host := c.Host
	if host == "" {
		host = "localhost"
	}
	port := c.Port
	if port == 0 {
		port = DefaultPort
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// String describes where and as whom cfg connects, for messages. It never
// includes the password.
func (c Config) String() string {
	where := "socket " + c.SocketPath()
	if !c.UsesSocket() {
		where = "tcp " + c.Addr()
	}
	return fmt.Sprintf("user %q at %s", c.User, where)
}

// OverTCP is c connecting to hostPort (HOST:PORT) over TCP instead, its
// host and port recorded as coming from source (a flag's name). An
// address without a port, or with one that is not a number from 1 to
// 65535, is refused.
func (c Config) OverTCP(hostPort, source string) (Config, error) {
	host, port, err := SplitHostPort(hostPort)
	switch {
	case err != nil && !errors.Is(err, ErrPort):
		return c, fmt.Errorf("want HOST:PORT (%v)", err)
	case err != nil || host == "":
		return c, errors.New("want HOST:PORT, with a port from 1 to 65535")
	}
	c.Host, c.Port, c.Protocol = host, port, ProtocolTCP
	if c.Sources != nil {
		c.Sources["host"], c.Sources["port"] = source, source
	}
	return c, nil
}

// ErrPort is a HOST:PORT whose port is not a number from 1 to 65535.
var ErrPort = errors.New("the port is not a number from 1 to 65535")

// SplitHostPort splits s, HOST:PORT, into its host and TCP port: the one
// parser of the servers a flag names that way (copy's --from and --to,
// provision --from). Without a port it returns net.SplitHostPort's
// error, with a bad one ErrPort.
func SplitHostPort(s string) (host string, port int, err error) {
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return host, 0, ErrPort
	}
	return host, port, nil
}

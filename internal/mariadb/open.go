package mariadb

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// ConnectTimeout bounds how long Open waits to dial a server. A backup tool
// that hangs silently on an unreachable host is worse than one that fails.
const ConnectTimeout = 10 * time.Second

// Open opens a connection pool for cfg (Unix socket or TCP, see
// Config.UsesSocket) on database (may be empty) and pings it, so that a
// wrong address or password surfaces here. parseTime is off: dates and
// times come back as the server writes them (a logical dump must carry
// '0000-00-00' and fractional seconds exactly, not through time.Time); client-side
// parameter interpolation is off, so values always travel as binary
// parameters. Errors name the socket or host and the user, never the
// password.
func Open(ctx context.Context, cfg Config, database string) (*sql.DB, error) {
	mc := mysql.NewConfig()
	mc.User = cfg.User
	mc.Passwd = cfg.Password
	if cfg.UsesSocket() {
		mc.Net = "unix"
		mc.Addr = cfg.SocketPath()
	} else {
		mc.Net = "tcp"
		mc.Addr = cfg.Addr()
	}
	mc.DBName = database
	mc.ParseTime = false
	mc.InterpolateParams = false
	mc.Timeout = ConnectTimeout
	// LOAD DATA LOCAL INFILE is fed from registered readers only (the
	// driver's Reader:: handler), never from arbitrary files a server asks for.
	mc.AllowAllFiles = false
	// Each pool gets its own TLS configuration through the Config rather
	// than the driver's process-wide registry of named ones.
	tc, err := cfg.tlsConfig()
	if err != nil {
		return nil, fmt.Errorf("connect to MariaDB as %s: TLS: %w", cfg, err)
	}
	mc.TLS = tc

	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("connect to MariaDB as %s: %w", cfg, err)
	}
	db := sql.OpenDB(connector)
	pingCtx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, connectError(pingCtx, cfg, mc, err)
	}
	var version, comment sql.NullString
	if err := db.QueryRowContext(pingCtx, "SELECT @@version, @@version_comment").Scan(&version, &comment); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to MariaDB as %s: reading its version: %w", cfg, err)
	}
	if err := CheckSupported(version.String, comment.String); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", cfg, err)
	}
	return db, nil
}

// MinimumVersion is the oldest MariaDB backstream works with.
const MinimumVersion = "10.4"

// ErrUnsupported marks a server backstream does not work with: not
// MariaDB, or older than MinimumVersion.
var ErrUnsupported = errors.New("unsupported server")

// CheckSupported refuses a server by its @@version and
// @@version_comment: MySQL and Percona Server (whose backups, binary logs
// and dumps differ from MariaDB's in ways backstream does not follow),
// and MariaDB older than MinimumVersion, naming what it is.
func CheckSupported(version, comment string) error {
	name := strings.TrimSpace(version + " (" + comment + ")")
	if !strings.Contains(strings.ToLower(version), "mariadb") {
		return fmt.Errorf("%w: the server is %s, not MariaDB; backstream backs up and restores MariaDB only (for MySQL and Percona Server use their own tools, e.g. xtrabackup)", ErrUnsupported, name)
	}
	major, minor, _, err := ParseVersion(version)
	if err != nil {
		return fmt.Errorf("%w: server version %q: %v", ErrUnsupported, version, err)
	}
	if major < 10 || major == 10 && minor < 4 {
		return fmt.Errorf("%w: the server is MariaDB %d.%d (%s), older than %s, the oldest backstream supports", ErrUnsupported, major, minor, name, MinimumVersion)
	}
	return nil
}

// connectError explains why connecting failed: TLS problems in the terms of
// the --ssl options, a server that wants TLS where none was asked for, and
// for a refused login where the user and password came from.
func connectError(ctx context.Context, cfg Config, mc *mysql.Config, err error) error {
	var certErr *CertificateError
	var alert tls.AlertError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.Is(err, mysql.ErrNoTLS):
		return fmt.Errorf("connect to MariaDB as %s: the server offers no TLS, which ssl%s asks for "+
			"(set ssl_cert and ssl_key on the server, or connect without TLS): %w", cfg, cfg.from("ssl"), err)
	case errors.As(err, &certErr):
		return fmt.Errorf("connect to MariaDB as %s: TLS: %w", cfg, err)
	case errors.As(err, &alert), errors.As(err, &recordErr):
		return fmt.Errorf("connect to MariaDB as %s: TLS handshake failed (the server refused it, "+
			"or what answers on that port is not MariaDB with TLS): %w", cfg, err)
	case !cfg.TLS.SSL && refusesPlaintext(ctx, mc, err):
		return fmt.Errorf("connect to MariaDB as %s: the server refuses unencrypted connections "+
			"(require_secure_transport=ON, or an account created with REQUIRE SSL): connect with --ssl, "+
			"and with --ssl-ca and --ssl-verify-server-cert to know it is the right server: %w", cfg, err)
	}
	return fmt.Errorf("connect to MariaDB as %s%s: %w", cfg, credentialHint(cfg, err), err)
}

// refusesPlaintext reports whether err, from a connection without TLS, is
// the server refusing it for want of TLS. MySQL says so (error 3159);
// MariaDB 10.11 answers "Access denied" (1045), like a wrong password, so
// then the same login is tried once more over TLS, without checking the
// certificate: it only tells the two apart, and carries nothing the
// unencrypted attempt did not.
func refusesPlaintext(ctx context.Context, mc *mysql.Config, err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	if me.Number == errSecureTransportRequired || strings.Contains(me.Message, "insecure transport") {
		return true
	}
	if me.Number != errAccessDenied {
		return false
	}
	probe := mc.Clone()
	probe.TLS = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}
	connector, cerr := mysql.NewConnector(probe)
	if cerr != nil {
		return false
	}
	conn, cerr := connector.Connect(ctx)
	if cerr != nil {
		return false
	}
	conn.Close()
	return true
}

// Server error numbers connectError tells apart.
const (
	errAccessDenied            = 1045 // ER_ACCESS_DENIED_ERROR
	errSecureTransportRequired = 3159 // MySQL's ER_SECURE_TRANSPORT_REQUIRED
)

// credentialHint tells, for an access-denied error, where the user and
// password came from, since a stale ~/.my.cnf is the usual culprit.
func credentialHint(cfg Config, err error) string {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != errAccessDenied {
		return ""
	}
	hint := ""
	if from := cfg.Sources["user"]; from != "" {
		hint += " (user from " + from
	}
	if from := cfg.Sources["password"]; from != "" && cfg.PasswordSet {
		if hint == "" {
			hint += " ("
		} else {
			hint += ", "
		}
		hint += "password from " + from
	} else if !cfg.PasswordSet {
		if hint == "" {
			hint += " ("
		} else {
			hint += ", "
		}
		hint += "no password given"
	}
	if hint != "" {
		hint += ")"
	}
	return hint
}

package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("connect to MariaDB as %s: %w", cfg, err)
	}
	db := sql.OpenDB(connector)
	pingCtx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to MariaDB as %s%s: %w", cfg, credentialHint(cfg, err), err)
	}
	return db, nil
}

// credentialHint tells, for an access-denied error, where the user and
// password came from, since a stale ~/.my.cnf is the usual culprit.
func credentialHint(cfg Config, err error) string {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1045 {
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

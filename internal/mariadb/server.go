package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Server holds the facts about a running server that backups depend on.
type Server struct {
	// Version is @@version, e.g. "10.11.19-MariaDB-0+deb12u1".
	Version string
	// Major, Minor and Patch are parsed from Version.
	Major, Minor, Patch int
	// VersionComment is @@version_comment, e.g. "Debian 12".
	VersionComment string
	// Datadir is @@datadir, with its trailing slash as the server reports it.
	Datadir  string
	Hostname string
	ServerID uint32
	// LogBin is true when the binary log is on.
	LogBin bool
	// GTIDBinlogPos is @@gtid_binlog_pos: the GTID position of the last
	// transaction written to the binary log ("" when there is none).
	GTIDBinlogPos string
	// InnodbPageSize is @@innodb_page_size in bytes.
	InnodbPageSize int
	// Socket and Port are where the server listens.
	Socket string
	Port   int
	// The InnoDB file locations; empty when the server uses the datadir.
	InnodbDataHomeDir     string
	InnodbLogGroupHomeDir string
	InnodbUndoDirectory   string
	// ReadOnly is @@read_only.
	ReadOnly bool
}

// AtLeast reports whether the server's version is major.minor or newer.
func (s *Server) AtLeast(major, minor int) bool {
	return s.Major > major || (s.Major == major && s.Minor >= minor)
}

// Inspect reads the server's facts in one query.
func Inspect(ctx context.Context, db *sql.DB) (*Server, error) {
	var (
		s                          Server
		comment, socket, gtid      sql.NullString
		dataHome, logHome, undoDir sql.NullString
		serverID, port, pageSize   sql.NullInt64
		logBin, readOnly           sql.NullInt64
		version, datadir, hostname sql.NullString
	)
	err := db.QueryRowContext(ctx, `SELECT @@version, @@version_comment, @@datadir, @@hostname,
		@@server_id, @@log_bin, @@gtid_binlog_pos, @@innodb_page_size, @@socket, @@port,
		@@innodb_data_home_dir, @@innodb_log_group_home_dir, @@innodb_undo_directory, @@read_only`).Scan(
		&version, &comment, &datadir, &hostname,
		&serverID, &logBin, &gtid, &pageSize, &socket, &port,
		&dataHome, &logHome, &undoDir, &readOnly)
	if err != nil {
		return nil, fmt.Errorf("inspect server: %w", err)
	}
	s.Version = version.String
	s.Major, s.Minor, s.Patch, err = ParseVersion(s.Version)
	if err != nil {
		return nil, fmt.Errorf("inspect server: %w", err)
	}
	s.VersionComment = comment.String
	s.Datadir = datadir.String
	s.Hostname = hostname.String
	if serverID.Int64 < 0 || serverID.Int64 > 1<<32-1 {
		return nil, fmt.Errorf("inspect server: server_id %d out of range", serverID.Int64)
	}
	s.ServerID = uint32(serverID.Int64)
	s.LogBin = logBin.Int64 != 0
	s.GTIDBinlogPos = gtid.String
	s.InnodbPageSize = int(pageSize.Int64)
	s.Socket = socket.String
	s.Port = int(port.Int64)
	s.InnodbDataHomeDir = dataHome.String
	s.InnodbLogGroupHomeDir = logHome.String
	s.InnodbUndoDirectory = undoDir.String
	s.ReadOnly = readOnly.Int64 != 0
	return &s, nil
}

// ParseVersion extracts major, minor and patch from a server version string
// such as "10.11.19-MariaDB-0+deb12u1" or "11.4.2-MariaDB-log". The
// "5.5.5-" prefix that MariaDB 10+ puts in front of its version in the
// protocol handshake (for old MySQL clients) is skipped.
func ParseVersion(v string) (major, minor, patch int, err error) {
	s := v
	if rest, ok := strings.CutPrefix(s, "5.5.5-"); ok && len(rest) > 0 && rest[0] >= '1' && rest[0] <= '9' {
		s = rest
	}
	var nums [3]int
	for i := range nums {
		n := 0
		for n < len(s) && n < 6 && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		if n == 0 || (n < len(s) && s[n] >= '0' && s[n] <= '9') {
			return 0, 0, 0, fmt.Errorf("server version %q: component %d is not a number of at most 6 digits", v, i+1)
		}
		nums[i], _ = strconv.Atoi(s[:n])
		s = s[n:]
		if i < 2 {
			if s == "" || s[0] != '.' {
				return 0, 0, 0, fmt.Errorf("server version %q: want major.minor.patch", v)
			}
			s = s[1:]
		}
	}
	if s != "" && s[0] != '-' && s[0] != '+' && s[0] != '~' && s[0] != ' ' {
		return 0, 0, 0, fmt.Errorf("server version %q: unexpected %q after major.minor.patch", v, s[:1])
	}
	return nums[0], nums[1], nums[2], nil
}

// RequiredBackupPrivileges lists the global privileges mariabackup --backup
// needs on s, in the names SHOW GRANTS uses: RELOAD (BACKUP STAGE, FLUSH),
// PROCESS (SHOW ENGINE INNODB STATUS, the process list), LOCK TABLES, and
// BINLOG MONITOR to read the binary log position, which is called
// REPLICATION CLIENT before MariaDB 10.5.2 (and is an alias of it after).
// Options backstream does not use need more (--slave-info: SLAVE MONITOR,
// --safe-slave-backup: REPLICATION SLAVE ADMIN, --kill-long-queries-timeout:
// CONNECTION ADMIN).
func RequiredBackupPrivileges(s *Server) []string {
	binlog := "BINLOG MONITOR"
	if !(s.Major > 10 || (s.Major == 10 && (s.Minor > 5 || (s.Minor == 5 && s.Patch >= 2)))) {
		binlog = "REPLICATION CLIENT"
	}
	return []string{"RELOAD", "PROCESS", "LOCK TABLES", binlog}
}

// privilegeAliases maps a privilege name to others that grant the same
// right, as SHOW GRANTS may print either.
var privilegeAliases = map[string][]string{
	"BINLOG MONITOR":     {"REPLICATION CLIENT"},
	"REPLICATION CLIENT": {"BINLOG MONITOR"},
	"SLAVE MONITOR":      {"REPLICA MONITOR"},
	"REPLICA MONITOR":    {"SLAVE MONITOR"},
}

// CheckBackupPrivileges reports whether the connected account has every
// global privilege RequiredBackupPrivileges lists for s. It reads SHOW
// GRANTS for the session, which includes the grants of the roles the
// session has enabled (a default role is enabled at login); roles granted
// but not enabled do not count, as they do not for mariabackup. Only grants
// ON *.* count: mariabackup's statements need global privileges. The error
// names the account and every missing privilege, with the GRANT statement
// that fixes it.
func CheckBackupPrivileges(ctx context.Context, db *sql.DB, s *Server) error {
	var account string
	if err := db.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&account); err != nil {
		return fmt.Errorf("check backup privileges: current user: %w", err)
	}
	rows, err := db.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		return fmt.Errorf("check backup privileges of %s: %w", account, err)
	}
	defer rows.Close()
	held := map[string]bool{}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("check backup privileges of %s: %w", account, err)
		}
		g, ok := parseGrant(line)
		if !ok || g.Object != "*.*" {
			continue
		}
		for _, p := range g.Privileges {
			held[p] = true
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check backup privileges of %s: %w", account, err)
	}
	missing := missingPrivileges(held, RequiredBackupPrivileges(s))
	if len(missing) == 0 {
		return nil
	}
	return &MissingPrivilegesError{Account: quoteAccount(account), Missing: missing, Version: s.Version}
}

// MissingPrivilegesError is the error of CheckBackupPrivileges.
type MissingPrivilegesError struct {
	// Account is the account as 'user'@'host'.
	Account string
	// Missing are the privileges it lacks, in SHOW GRANTS spelling.
	Missing []string
	// Version is the server's version.
	Version string
}

func (e *MissingPrivilegesError) Error() string {
	list := strings.Join(e.Missing, ", ")
	return fmt.Sprintf("account %s lacks %s, needed by mariabackup --backup on MariaDB %s; grant them with: GRANT %s ON *.* TO %s",
		e.Account, list, e.Version, list, e.Account)
}

// ErrMissingPrivileges matches a *MissingPrivilegesError with errors.Is.
var ErrMissingPrivileges = errors.New("missing privileges")

// Is makes errors.Is(err, ErrMissingPrivileges) true.
func (e *MissingPrivilegesError) Is(target error) bool { return target == ErrMissingPrivileges }

func missingPrivileges(held map[string]bool, required []string) []string {
	if held["ALL PRIVILEGES"] || held["ALL"] {
		return nil
	}
	var missing []string
	for _, p := range required {
		ok := held[p]
		for _, alias := range privilegeAliases[p] {
			ok = ok || held[alias]
		}
		if !ok {
			missing = append(missing, p)
		}
	}
	return missing
}

// quoteAccount turns CURRENT_USER()'s "user@host" into 'user'@'host'. The
// host never contains '@', the user may.
func quoteAccount(a string) string {
	i := strings.LastIndexByte(a, '@')
	if i < 0 {
		return "'" + strings.ReplaceAll(a, "'", "''") + "'"
	}
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	return q(a[:i]) + "@" + q(a[i+1:])
}

// grant is one parsed "GRANT privileges ON object TO ..." line.
type grant struct {
	// Privileges are upper-case names, column lists dropped
	// ("SELECT (`a`)" -> "SELECT").
	Privileges []string
	// Object is what follows ON: "*.*", "`db`.*", "`db`.`t`",
	// "PROCEDURE `db`.`p`", ...
	Object string
}

// parseGrant parses one line of SHOW GRANTS. Lines that grant no privileges
// on an object (role grants "GRANT `r` TO ...", "SET DEFAULT ROLE ...")
// return ok == false.
func parseGrant(line string) (g grant, ok bool) {
	rest, found := cutPrefixFold(strings.TrimSpace(line), "GRANT ")
	if !found {
		return grant{}, false
	}
	on := indexFoldTopLevel(rest, " ON ")
	if on < 0 {
		return grant{}, false
	}
	privPart, objPart := rest[:on], rest[on+4:]
	if to := indexFoldTopLevel(objPart, " TO "); to >= 0 {
		objPart = objPart[:to]
	}
	for _, p := range splitTopLevel(privPart) {
		if i := strings.IndexByte(p, '('); i >= 0 {
			p = p[:i]
		}
		p = strings.ToUpper(strings.Join(strings.Fields(p), " "))
		if strings.IndexFunc(p, func(r rune) bool { return (r < 'A' || r > 'Z') && r != ' ' && r != '_' }) >= 0 {
			// Privileges are keywords; anything else (a quoted name) is
			// not a privilege grant this understands.
			return grant{}, false
		}
		if p != "" {
			g.Privileges = append(g.Privileges, p)
		}
	}
	if len(g.Privileges) == 0 {
		return grant{}, false
	}
	g.Object = strings.TrimSpace(objPart)
	return g, true
}

// topLevel calls fn with the index of every byte of s outside quotes
// (backquotes, single and double) and parentheses, until fn returns true,
// and returns that index, or -1.
func topLevel(s string, fn func(i int) bool) int {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '`' || c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			if depth > 0 {
				depth--
			}
		case depth == 0 && fn(i):
			return i
		}
	}
	return -1
}

// splitTopLevel splits s at commas outside parentheses and quotes.
func splitTopLevel(s string) []string {
	var parts []string
	start := 0
	topLevel(s, func(i int) bool {
		if s[i] == ',' {
			parts = append(parts, s[start:i])
			start = i + 1
		}
		return false
	})
	return append(parts, s[start:])
}

// indexFoldTopLevel finds sep, in any case, outside quotes and parentheses.
func indexFoldTopLevel(s, sep string) int {
	return topLevel(s, func(i int) bool {
		return len(s)-i >= len(sep) && strings.EqualFold(s[i:i+len(sep)], sep)
	})
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// errUnknownSystemVariable is ER_UNKNOWN_SYSTEM_VARIABLE.
const errUnknownSystemVariable = 1193

// AdvanceCheckpoint has server s write back its dirty pages and advance
// its redo log checkpoint (SET GLOBAL innodb_log_checkpoint_now), and
// returns once the checkpoint is written. A server without the variable
// (10.5's release builds lack it; 10.11's and 11.8's have it) is named
// with its version.
func AdvanceCheckpoint(ctx context.Context, db *sql.DB, s *Server) error {
	_, err := db.ExecContext(ctx, "SET GLOBAL innodb_log_checkpoint_now = ON")
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &me) && me.Number == errUnknownSystemVariable:
		return fmt.Errorf("MariaDB %s has no innodb_log_checkpoint_now (10.5's release builds lack it; 10.11 and later have it): back up without --checkpoint", s.Version)
	default:
		return fmt.Errorf("the server did not advance its checkpoint: %w", err)
	}
}

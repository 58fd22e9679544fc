package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/backstream/backstream/internal/gtid"
	"github.com/go-sql-driver/mysql"
)

// ReplicationSource is one replication connection of a server, from SHOW
// ALL SLAVES STATUS: whom it replicates from and how far it has applied.
type ReplicationSource struct {
	// Name is the multi-source connection name; "" is the default one.
	Name string
	// Host and Port are the primary as this server reaches it.
	Host string
	Port int
	// ServerID is the primary's @@server_id (Master_Server_Id), 0 until
	// the IO thread has connected once since the server started.
	ServerID uint32
	// UsingGTID is "No", "Slave_Pos" or "Current_Pos".
	UsingGTID string
	// RelayMasterLogFile and ExecMasterLogPos are the primary's
	// coordinates of the last event the SQL thread applied.
	RelayMasterLogFile string
	ExecMasterLogPos   uint64
}

// ErrReplicationHidden is returned (wrapped) by ReplicationSources when
// the account may not read the replication status.
var ErrReplicationHidden = errors.New("the account may not read SHOW ALL SLAVES STATUS")

// erSpecificAccessDenied is "Access denied; you need (at least one of)
// the ... privilege(s) for this operation".
const erSpecificAccessDenied = 1227

// ReplicationSources lists the server's replication connections (none
// for a server that is no replica). SHOW ALL SLAVES STATUS needs SLAVE
// MONITOR (REPLICATION CLIENT before 10.5, REPLICATION SLAVE ADMIN in
// 10.5.2 to 10.5.8, or SUPER); an account without it gets an error that
// matches ErrReplicationHidden.
func ReplicationSources(ctx context.Context, db Querier) ([]ReplicationSource, error) {
	rows, err := ShowRows(ctx, db, "SHOW ALL SLAVES STATUS")
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == erSpecificAccessDenied {
			return nil, fmt.Errorf("%w (it needs SLAVE MONITOR): %w", ErrReplicationHidden, err)
		}
		return nil, fmt.Errorf("SHOW ALL SLAVES STATUS: %w", err)
	}
	var out []ReplicationSource
	for _, r := range rows {
		s, err := replicationSource(r)
		if err != nil {
			return nil, fmt.Errorf("SHOW ALL SLAVES STATUS: connection %q: %w", r["Connection_name"].String, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func replicationSource(r map[string]sql.NullString) (ReplicationSource, error) {
	s := ReplicationSource{
		Name:               r["Connection_name"].String,
		Host:               r["Master_Host"].String,
		UsingGTID:          r["Using_Gtid"].String,
		RelayMasterLogFile: r["Relay_Master_Log_File"].String,
	}
	num := func(col string, bits int) (uint64, error) {
		v := r[col]
		if !v.Valid || v.String == "" {
			return 0, nil
		}
		n, err := strconv.ParseUint(v.String, 10, bits)
		if err != nil {
			return 0, fmt.Errorf("column %s = %q: %w", col, v.String, err)
		}
		return n, nil
	}
	port, err := num("Master_Port", 16)
	if err != nil {
		return s, err
	}
	s.Port = int(port)
	id, err := num("Master_Server_Id", 32)
	if err != nil {
		return s, err
	}
	s.ServerID = uint32(id)
	if s.ExecMasterLogPos, err = num("Exec_Master_Log_Pos", 64); err != nil {
		return s, err
	}
	return s, nil
}

// GlobalStatus reads one global status variable, e.g. Slaves_running
// (which needs no privilege); "" when the server has no such variable.
func GlobalStatus(ctx context.Context, db Querier, name string) (string, error) {
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && r != '_' {
			return "", fmt.Errorf("status variable %q: not a variable name", name)
		}
	}
	rows, err := ShowRows(ctx, db, "SHOW GLOBAL STATUS LIKE '"+name+"'")
	if err != nil {
		return "", fmt.Errorf("SHOW GLOBAL STATUS LIKE '%s': %w", name, err)
	}
	if len(rows) == 0 {
		return "", nil
	}
	return rows[0]["Value"].String, nil
}

// BackupSources is ReplicationSources for a backup of the server db
// reaches (hostname names it in the note): an account that may not see
// the replication status gets none, so that its backups go on as before,
// and a note to show the user when the server does replicate
// (Slaves_running, which needs no privilege): such a backup records no
// position in the replica's primary's history.
func BackupSources(ctx context.Context, db Querier, hostname string) (sources []ReplicationSource, note string, err error) {
	sources, err = ReplicationSources(ctx, db)
	if errors.Is(err, ErrReplicationHidden) {
		running, serr := GlobalStatus(ctx, db, "Slaves_running")
		if serr == nil && running != "" && running != "0" {
			note = fmt.Sprintf("%s replicates (Slaves_running %s), but %v: the backup records no position in its primary's history, and a replica made from it can replicate only from %s itself; GRANT SLAVE MONITOR to the backup account",
				hostname, running, err, hostname)
		}
		return nil, note, nil
	}
	return sources, "", err
}

// execer runs a statement: a *sql.DB, *sql.Conn or *sql.Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// SetGTIDSlavePos sets @@global.gtid_slave_pos to pos, a GTID list
// (checked, so the literal it sends holds only digits, '-' and ','). A
// literal, not a prepared statement: MariaDB 10.5 answers that one on a
// server just started with "Prepared statement needs to be re-prepared"
// (error 1615).
func SetGTIDSlavePos(ctx context.Context, db execer, pos string) error {
	if _, err := gtid.ParseList(pos); err != nil {
		return fmt.Errorf("set gtid_slave_pos: %w", err)
	}
	_, err := db.ExecContext(ctx, "SET GLOBAL gtid_slave_pos = "+QuoteString(pos, true))
	return err
}

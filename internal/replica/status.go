package replica

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-sql-driver/mysql"

	"github.com/backstream/backstream/internal/mariadb"
)

// Querier is what ReadStatus needs: a *sql.DB, *sql.Conn or *sql.Tx.
type Querier = mariadb.Querier

// Status is one replication connection's state, from SHOW SLAVE STATUS
// (replicate --json prints it, with these keys).
type Status struct {
	// ConnectionName is the multi-source connection ("" is the default one).
	ConnectionName string `json:"connection_name"`
	// Configured is false when the server has no such replication
	// connection (SHOW SLAVE STATUS returned no row); the rest is then zero.
	Configured bool   `json:"configured"`
	MasterHost string `json:"master_host"`
	MasterPort int    `json:"master_port"`
	MasterUser string `json:"master_user"`
	// IOState is Slave_IO_Running: "Yes", "No", "Connecting" or
	// "Preparing". Only "Yes" means connected and reading.
	IOState    string `json:"io_state"`
	IORunning  bool   `json:"io_running"`
	SQLRunning bool   `json:"sql_running"`
	// UsingGTID is "No", "Slave_Pos" or "Current_Pos".
	UsingGTID string `json:"using_gtid"`
	// GTIDIOPos is the GTID of the last event the IO thread received.
	GTIDIOPos string `json:"gtid_io_pos"`
	// GTIDSlavePos is @@gtid_slave_pos: what the replica has applied, over
	// all connections.
	GTIDSlavePos     string `json:"gtid_slave_pos"`
	MasterLogFile    string `json:"master_log_file"` // binlog the IO thread reads
	ReadMasterLogPos uint64 `json:"read_master_log_pos"`
	// RelayMasterLogFile and ExecMasterLogPos are the primary's binlog
	// coordinates of what the SQL thread has applied.
	RelayMasterLogFile string `json:"relay_master_log_file"`
	ExecMasterLogPos   uint64 `json:"exec_master_log_pos"`
	// SecondsBehind is Seconds_Behind_Master; nil when the server reports
	// NULL (a thread not running).
	SecondsBehind *int64 `json:"seconds_behind_master"`
	LastIOErrno   int    `json:"last_io_errno"`
	LastIOError   string `json:"last_io_error"`
	LastSQLErrno  int    `json:"last_sql_errno"`
	LastSQLError  string `json:"last_sql_error"`
}

// erNoMasterConnection is ER_MASTER_INFO ("There is no master connection
// 'x'"), what naming an unknown multi-source connection gives.
const erNoMasterConnection = 1617

// ReadStatus reads connection's replication state from db. It uses SHOW
// SLAVE ... STATUS, which every MariaDB version accepts (SHOW REPLICA STATUS
// exists only from 10.5), and reads columns by name, since their set and
// order change between versions.
func ReadStatus(ctx context.Context, db Querier, connection string) (*Status, error) {
	if err := checkConnectionName(connection); err != nil {
		return nil, err
	}
	st := &Status{ConnectionName: connection}
	var gtidSlavePos sql.NullString
	if err := queryRow(ctx, db, "SELECT @@gtid_slave_pos", &gtidSlavePos); err != nil {
		return nil, fmt.Errorf("read @@gtid_slave_pos: %w", err)
	}
	st.GTIDSlavePos = gtidSlavePos.String

	// checkConnectionName allows no quote or backslash, so the literal is
	// the same whatever the sql_mode.
	q := "SHOW SLAVE " + mariadb.QuoteString(connection, true) + " STATUS"
	row, err := mariadb.ShowRow(ctx, db, q)
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == erNoMasterConnection {
			return st, nil
		}
		return nil, fmt.Errorf("SHOW SLAVE STATUS for connection %q: %w", connection, err)
	}
	if row == nil {
		return st, nil
	}
	if err := st.fill(row); err != nil {
		return nil, fmt.Errorf("SHOW SLAVE STATUS for connection %q: %w", connection, err)
	}
	return st, nil
}

// fill sets st from one SHOW SLAVE STATUS row keyed by column name. A
// missing column leaves its field zero; a number that does not parse is an
// error, since acting on a misread position would be worse than stopping.
func (st *Status) fill(m map[string]sql.NullString) error {
	str := func(col string) string { return m[col].String }
	num := func(col string, bits int) (uint64, error) {
		v, ok := m[col]
		if !ok || !v.Valid || v.String == "" {
			return 0, nil
		}
		n, err := strconv.ParseUint(v.String, 10, bits)
		if err != nil {
			return 0, fmt.Errorf("column %s = %q: %w", col, v.String, err)
		}
		return n, nil
	}
	st.Configured = true
	st.MasterHost = str("Master_Host")
	st.MasterUser = str("Master_User")
	st.IOState = str("Slave_IO_Running")
	st.IORunning = st.IOState == "Yes"
	st.SQLRunning = str("Slave_SQL_Running") == "Yes"
	st.UsingGTID = str("Using_Gtid")
	st.GTIDIOPos = str("Gtid_IO_Pos")
	st.MasterLogFile = str("Master_Log_File")
	st.RelayMasterLogFile = str("Relay_Master_Log_File")
	st.LastIOError = str("Last_IO_Error")
	st.LastSQLError = str("Last_SQL_Error")
	var err error
	var n uint64
	if n, err = num("Master_Port", 16); err != nil {
		return err
	}
	st.MasterPort = int(n)
	if st.ReadMasterLogPos, err = num("Read_Master_Log_Pos", 64); err != nil {
		return err
	}
	if st.ExecMasterLogPos, err = num("Exec_Master_Log_Pos", 64); err != nil {
		return err
	}
	if n, err = num("Last_IO_Errno", 32); err != nil {
		return err
	}
	st.LastIOErrno = int(n)
	if n, err = num("Last_SQL_Errno", 32); err != nil {
		return err
	}
	st.LastSQLErrno = int(n)
	if v := m["Seconds_Behind_Master"]; v.Valid && v.String != "" {
		s, err := strconv.ParseInt(v.String, 10, 64)
		if err != nil {
			return fmt.Errorf("column Seconds_Behind_Master = %q: %w", v.String, err)
		}
		st.SecondsBehind = &s
	}
	return nil
}

func queryRow(ctx context.Context, db Querier, q string, dest ...any) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}

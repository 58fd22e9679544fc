package binlog

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/backstream/backstream/internal/mariadb"
)

// readChecksum reads the server's binlog_checksum: CRC32 or NONE.
func readChecksum(ctx context.Context, db *sql.DB) (string, error) {
	var checksum string
	if err := db.QueryRowContext(ctx, "SELECT @@binlog_checksum").Scan(&checksum); err != nil {
		return "", fmt.Errorf("read the binary log settings: %w", err)
	}
	return checksum, nil
}

// The versions binary log archiving supports without a warning, as
// major*100+minor: its tests run on the MariaDB of the build host (10.11)
// and, through the version matrix, on 10.5 and 11.8 (TestVersionsBinlog,
// which also proves 11.4 to 11.8's files are the v4 format with the same
// event header, GTID and GTID list events). Older ones are archived with
// a warning (their format is the same v4); newer ones are refused until
// tested.
const (
	oldestSupported = 1005
	newestSupported = 1108
	// binlogInInnoDB is the first version that can keep the binary log
	// inside InnoDB (binlog_storage_engine=innodb, MDEV-34705): no binlog
	// files, positions are GTIDs only (docs/architecture.md says how
	// backstream would archive and replay it).
	binlogInInnoDB = 1203
)

// checkSettings refuses what cannot be archived or replayed, naming the
// setting and the fix, and returns warnings for what is untested but
// should work.
//
// What works, and needs no check: binlog_format STATEMENT and MIXED
// (mariadb-binlog replays statements as it does row events), and
// encrypt_binlog (the server decrypts what it sends to replication
// clients, so the archive holds plain events: encrypt it with --encrypt).
func checkSettings(server *mariadb.Server, checksum string) (warnings []string, err error) {
	// A server that is not MariaDB 10.4 or newer was refused on
	// connecting (mariadb.CheckSupported).
	switch {
	case !server.LogBin:
		return nil, fmt.Errorf("the server's binary log is off (log_bin is OFF): there is nothing to archive; start the server with --log-bin (log_bin = <basename> in its option file) and take a new backup")
	}
	switch strings.ToUpper(checksum) {
	case "NONE", "CRC32":
	default:
		return nil, fmt.Errorf("binlog_checksum = %s is not one backstream reads (NONE or CRC32): set binlog_checksum = CRC32", checksum)
	}
	v := server.Major*100 + server.Minor
	if v >= binlogInInnoDB {
		// Whether or not this server has binlog_storage_engine=innodb: its
		// files, if any, are of a version nothing here has tested.
		return nil, fmt.Errorf("the server is MariaDB %s, newer than MariaDB %d.%d, the newest binary log archiving is tested with (%d.%d to %d.%d); "+
			"from MariaDB %d.%d the binary log can live inside InnoDB (binlog_storage_engine, no binary log files, positions as GTIDs only), which backstream does not archive yet: "+
			"it is refused until a test proves it; take physical or logical backups meanwhile",
			server.Version, newestSupported/100, newestSupported%100, oldestSupported/100, oldestSupported%100, newestSupported/100, newestSupported%100,
			binlogInInnoDB/100, binlogInInnoDB%100)
	}
	if v > newestSupported {
		// Not available where backstream is tested: nothing proves that
		// its archive replays exactly, so it is not taken on trust.
		return nil, fmt.Errorf("the server is MariaDB %s, newer than MariaDB %d.%d, the newest binary log archiving is tested with (%d.%d to %d.%d); it is refused until a test proves its binary logs archive and replay exactly",
			server.Version, newestSupported/100, newestSupported%100, oldestSupported/100, oldestSupported%100, newestSupported/100, newestSupported%100)
	}
	if v < oldestSupported {
		warnings = append(warnings, fmt.Sprintf("the server is MariaDB %s, outside the versions binary log archiving supports (%d.%d to %d.%d); the binary log format (v4) is the same, so it goes on: test a point-in-time restore",
			server.Version, oldestSupported/100, oldestSupported%100, newestSupported/100, newestSupported%100))
	}
	return warnings, nil
}

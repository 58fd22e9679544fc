package replica

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/physical"
)

func TestReadCoordinates(t *testing.T) {
	const (
		xb = "xtrabackup_binlog_info"
		mb = "mariadb_backup_binlog_info"
	)
	tests := []struct {
		name     string
		files    map[string]string
		want     physical.BinlogInfo
		wantFrom string
		wantErr  []string // substrings of the error
	}{
		{name: "xtrabackup name, multi-domain GTID",
			files:    map[string]string{xb: "mariadb-bin.000003\t1234\t0-1-100,1-2-5\n"},
			want:     physical.BinlogInfo{File: "mariadb-bin.000003", Position: 1234, GTID: "0-1-100,1-2-5"},
			wantFrom: xb},
		{name: "11.1 name, no GTID column",
			files:    map[string]string{mb: "mariadb-bin.000001\t328\n"},
			want:     physical.BinlogInfo{File: "mariadb-bin.000001", Position: 328},
			wantFrom: mb},
		{name: "empty GTID column",
			files:    map[string]string{xb: "mariadb-bin.000001\t328\t\n"},
			want:     physical.BinlogInfo{File: "mariadb-bin.000001", Position: 328},
			wantFrom: xb},
		{name: "both names agreeing",
			files:    map[string]string{xb: "b.000002\t4\t0-1-1\n", mb: "b.000002\t4\t0-1-1\n"},
			want:     physical.BinlogInfo{File: "b.000002", Position: 4, GTID: "0-1-1"},
			wantFrom: mb},
		{name: "both names disagreeing",
			files:   map[string]string{xb: "b.000002\t4\t0-1-1\n", mb: "b.000003\t4\t0-1-9\n"},
			wantErr: []string{"disagree", mb, xb, "b.000002:4", "b.000003:4"}},
		{name: "none",
			files:   map[string]string{"xtrabackup_checkpoints": "backup_type = full-prepared\n"},
			wantErr: []string{"no binary log coordinates", mb, xb}},
		{name: "empty file",
			files:   map[string]string{xb: "\n"},
			wantErr: []string{xb, "empty", "binary logging off"}},
		{name: "garbage",
			files:   map[string]string{xb: "not a binlog info\n"},
			wantErr: []string{xb, "binlog info"}},
		{name: "huge",
			files:   map[string]string{mb: strings.Repeat("x", maxBinlogInfoSize+1)},
			wantErr: []string{mb, "larger than"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			got, from, err := ReadCoordinates(dir)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("ReadCoordinates = %+v from %s, want an error", got, from)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || from != filepath.Join(dir, tt.wantFrom) {
				t.Errorf("ReadCoordinates = %+v from %s, want %+v from %s", got, from, tt.want, tt.wantFrom)
			}
		})
	}
}

func TestReadCoordinatesUnreadable(t *testing.T) {
	dir := t.TempDir()
	// A directory in place of the file: opening works, reading fails.
	if err := os.Mkdir(filepath.Join(dir, "xtrabackup_binlog_info"), 0o750); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadCoordinates(dir); err == nil || !strings.Contains(err.Error(), "xtrabackup_binlog_info") {
		t.Errorf("want an error naming the unreadable file, got %v", err)
	}
}

func row(kv ...string) map[string]sql.NullString {
	m := map[string]sql.NullString{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = sql.NullString{String: kv[i+1], Valid: kv[i+1] != "NULL"}
	}
	return m
}

func TestStatusFill(t *testing.T) {
	var st Status
	err := st.fill(row(
		"Master_Host", "10.0.0.1", "Master_User", "repl", "Master_Port", "3307",
		"Slave_IO_Running", "Connecting", "Slave_SQL_Running", "Yes",
		"Using_Gtid", "Slave_Pos", "Gtid_IO_Pos", "0-1-7",
		"Master_Log_File", "b.000002", "Read_Master_Log_Pos", "18446744073709551615",
		"Relay_Master_Log_File", "b.000001", "Exec_Master_Log_Pos", "900",
		"Seconds_Behind_Master", "NULL",
		"Last_IO_Errno", "1045", "Last_IO_Error", "Access denied",
		"Last_SQL_Errno", "0", "Last_SQL_Error", "",
		"Some_Future_Column", "whatever",
	))
	if err != nil {
		t.Fatal(err)
	}
	want := Status{
		Configured: true, MasterHost: "10.0.0.1", MasterPort: 3307, MasterUser: "repl",
		IOState: "Connecting", IORunning: false, SQLRunning: true, UsingGTID: "Slave_Pos", GTIDIOPos: "0-1-7",
		MasterLogFile: "b.000002", ReadMasterLogPos: 18446744073709551615,
		RelayMasterLogFile: "b.000001", ExecMasterLogPos: 900,
		LastIOErrno: 1045, LastIOError: "Access denied",
	}
	if st != want {
		t.Errorf("fill =\n%+v\nwant\n%+v", st, want)
	}

	var running Status
	if err := running.fill(row("Slave_IO_Running", "Yes", "Slave_SQL_Running", "Yes", "Seconds_Behind_Master", "3")); err != nil {
		t.Fatal(err)
	}
	if !running.IORunning || !running.SQLRunning || running.SecondsBehind == nil || *running.SecondsBehind != 3 {
		t.Errorf("fill running = %+v", running)
	}

	for _, bad := range []map[string]sql.NullString{
		row("Master_Port", "70000"),
		row("Exec_Master_Log_Pos", "-1"),
		row("Last_IO_Errno", "x"),
		row("Seconds_Behind_Master", "1.5"),
	} {
		var st Status
		if err := st.fill(bad); err == nil {
			t.Errorf("fill(%v) accepted a malformed number", bad)
		}
	}
}

func FuzzStatusFill(f *testing.F) {
	f.Add("Yes", "No", "3306", "120", "0")
	f.Add("Connecting", "Yes", "x", "-1", "")
	f.Fuzz(func(t *testing.T, io, sqlRunning, port, pos, behind string) {
		var st Status
		err := st.fill(row("Slave_IO_Running", io, "Slave_SQL_Running", sqlRunning,
			"Master_Port", port, "Exec_Master_Log_Pos", pos, "Seconds_Behind_Master", behind))
		if err != nil {
			return
		}
		if st.IORunning != (io == "Yes") || st.SQLRunning != (sqlRunning == "Yes") {
			t.Fatalf("running flags wrong for %q/%q: %+v", io, sqlRunning, st)
		}
		if st.MasterPort < 0 || st.MasterPort > 65535 {
			t.Fatalf("port %d out of range from %q", st.MasterPort, port)
		}
	})
}

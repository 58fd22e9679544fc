package physical

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
)

// What mariabackup 10.11 wrote for a replica replicating by GTID (seen in
// a backup), and what it writes for one by file and position and for a
// multi-source replica (backup_mysql.cc, Show_slave_status).
const (
	realSlaveInfoGTID    = "SET GLOBAL gtid_slave_pos = '0-40955-6';\nCHANGE MASTER TO master_use_gtid = slave_pos;\n"
	realSlaveInfoFilePos = "CHANGE MASTER TO MASTER_LOG_FILE='mariadb-bin.000002', MASTER_LOG_POS=1234;\n"
	realSlaveInfoMulti   = "SET GLOBAL gtid_slave_pos = '0-1-5,1-2-7';\nCHANGE MASTER 'a' TO master_use_gtid = slave_pos;\nCHANGE MASTER 'b' TO MASTER_LOG_FILE='b-bin.000009', MASTER_LOG_POS=4;\n"
)

func TestParseSlaveInfo(t *testing.T) {
	cases := []struct {
		name, in string
		want     SlaveInfo
		err      string
	}{
		{name: "by GTID", in: realSlaveInfoGTID, want: SlaveInfo{GTID: "0-40955-6", Connections: []SlaveInfoConnection{{UseGTID: true}}}},
		{name: "by file and position", in: realSlaveInfoFilePos, want: SlaveInfo{Connections: []SlaveInfoConnection{{File: "mariadb-bin.000002", Position: 1234}}}},
		{name: "multi-source", in: realSlaveInfoMulti, want: SlaveInfo{GTID: "0-1-5,1-2-7", Connections: []SlaveInfoConnection{
			{Name: "a", UseGTID: true}, {Name: "b", File: "b-bin.000009", Position: 4}}}},
		{name: "older, without semicolons, CRLF", in: "SET GLOBAL gtid_slave_pos = '0-1-5'\r\nCHANGE MASTER TO master_use_gtid = slave_pos\r\n",
			want: SlaveInfo{GTID: "0-1-5", Connections: []SlaveInfoConnection{{UseGTID: true}}}},
		{name: "MySQL's", in: "SET GLOBAL gtid_purged='3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5';\nCHANGE MASTER TO MASTER_AUTO_POSITION=1;\n", err: "not a statement backstream knows"},
		{name: "empty", in: "\n", err: "no CHANGE MASTER statement"},
		{name: "GTID without position", in: "CHANGE MASTER TO master_use_gtid = slave_pos;\n", err: "no gtid_slave_pos is set"},
		{name: "connection twice", in: realSlaveInfoFilePos + realSlaveInfoFilePos, err: `connection "" named twice`},
		{name: "position twice", in: "SET GLOBAL gtid_slave_pos = '0-1-5';\n" + realSlaveInfoGTID, err: "gtid_slave_pos set twice"},
		{name: "bad position", in: "CHANGE MASTER TO MASTER_LOG_FILE='f', MASTER_LOG_POS=99999999999999999999999;\n", err: "position"},
		{name: "other option", in: "CHANGE MASTER TO MASTER_HOST='x';\n", err: "not a statement backstream knows"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseSlaveInfo([]byte(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %+v, %v; want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func FuzzParseSlaveInfo(f *testing.F) {
	for _, s := range []string{realSlaveInfoGTID, realSlaveInfoFilePos, realSlaveInfoMulti, "CHANGE MASTER '' TO x", "SET GLOBAL gtid_slave_pos = ''"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		si, err := ParseSlaveInfo(b)
		if err != nil {
			return
		}
		if len(si.Connections) == 0 || strings.ContainsAny(si.GTID, "' \n") {
			t.Fatalf("accepted %q as %+v", b, si)
		}
		for _, c := range si.Connections {
			if c.UseGTID == (c.File != "") || strings.ContainsAny(c.File, "'\n") {
				t.Fatalf("accepted %q with connection %+v", b, c)
			}
		}
	})
}

// The manifest's primary position joins the slave info's positions with
// the identities the server listed; the two must name the same
// connections, replicating the same way.
func TestPrimaryPositionOf(t *testing.T) {
	sources := []mariadb.ReplicationSource{
		{Name: "a", Host: "db1", Port: 3306, ServerID: 1, UsingGTID: "Slave_Pos"},
		{Name: "b", Host: "db2", Port: 3307, ServerID: 2, UsingGTID: "No"},
	}
	si, err := ParseSlaveInfo([]byte(realSlaveInfoMulti))
	if err != nil {
		t.Fatal(err)
	}
	p, err := PrimaryPositionOf(si, sources)
	if err != nil {
		t.Fatal(err)
	}
	want := &archive.PrimaryPosition{GTID: "0-1-5,1-2-7", Connections: []archive.PrimaryConnection{
		{Name: "a", Host: "db1", Port: 3306, ServerID: 1, UsingGTID: "Slave_Pos"},
		{Name: "b", Host: "db2", Port: 3307, ServerID: 2, UsingGTID: "No", BinlogFile: "b-bin.000009", BinlogPosition: 4},
	}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got %+v, want %+v", p, want)
	}
	for name, bad := range map[string][]mariadb.ReplicationSource{
		"one missing":      sources[:1],
		"another name":     {sources[0], {Name: "c", Host: "db2", Port: 3307, ServerID: 2, UsingGTID: "No"}},
		"switched to GTID": {sources[0], {Name: "b", Host: "db2", Port: 3307, ServerID: 2, UsingGTID: "Current_Pos"}},
	} {
		if _, err := PrimaryPositionOf(si, bad); err == nil || !strings.Contains(err.Error(), "the replica's replication changed during the backup") {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	if d := SameSources(sources, sources); d != "" {
		t.Errorf("SameSources of one list: %q", d)
	}
	moved := append([]mariadb.ReplicationSource(nil), sources...)
	moved[1].Host = "db3"
	if d := SameSources(sources, moved); !strings.Contains(d, `connection "b" replicated from db2:3307`) {
		t.Errorf("SameSources after CHANGE MASTER: %q", d)
	}
	if d := SameSources(sources, sources[:1]); d == "" {
		t.Error("SameSources missed a connection gone")
	}
	// A primary whose id was unknown (IO thread not yet connected) and is
	// known after is the same primary.
	unknown := append([]mariadb.ReplicationSource(nil), sources...)
	unknown[0].ServerID = 0
	if d := SameSources(unknown, sources); d != "" {
		t.Errorf("SameSources when the id became known: %q", d)
	}
}

// The manifest's primary position is cross-checked against the slave
// info kept as a meta object, as the binlog position is against the
// binlog info.
func TestCheckPositionsSlaveInfo(t *testing.T) {
	m := func() *archive.Manifest {
		return &archive.Manifest{ID: "20261121T190512Z-0001", Kind: archive.KindPhysical,
			Positions: archive.Positions{ToLSN: 44894, LastLSN: 7604246, Primary: &archive.PrimaryPosition{GTID: "0-1-5,1-2-7", Connections: []archive.PrimaryConnection{
				{Name: "a", Host: "db1", Port: 3306, ServerID: 1, UsingGTID: "Slave_Pos"},
				{Name: "b", Host: "db2", Port: 3307, ServerID: 2, UsingGTID: "No", BinlogFile: "b-bin.000009", BinlogPosition: 4},
			}}}}
	}
	meta := map[string][]byte{"meta/xtrabackup_slave_info": []byte(realSlaveInfoMulti)}
	if err := CheckPositions(m(), nil, meta); err != nil {
		t.Fatalf("refused: %v", err)
	}
	for name, c := range map[string]struct {
		change func(*archive.Manifest)
		want   string
	}{
		"gtid":       {func(m *archive.Manifest) { m.Positions.Primary.GTID = "0-1-5" }, `xtrabackup_slave_info says gtid_slave_pos "0-1-5,1-2-7", the manifest "0-1-5"`},
		"position":   {func(m *archive.Manifest) { m.Positions.Primary.Connections[1].BinlogPosition = 5 }, `says connection "b" stood at b-bin.000009:4, the manifest b-bin.000009:5`},
		"connection": {func(m *archive.Manifest) { m.Positions.Primary.Connections[0].Name = "c" }, `names replication connection "a", the manifest does not`},
		"count": {func(m *archive.Manifest) {
			m.Positions.Primary.Connections = m.Positions.Primary.Connections[:1]
		}, "names 2 replication connections, the manifest 1"},
	} {
		mm := m()
		c.change(mm)
		if err := CheckPositions(mm, nil, meta); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	// A backup that records no primary position (made before backstream
	// read the slave info) keeps an unchecked copy.
	old := m()
	old.Positions.Primary = nil
	if err := CheckPositions(old, nil, meta); err != nil {
		t.Errorf("a backup without a primary position: %v", err)
	}
}

func TestSourceInfo(t *testing.T) {
	si := SourceInfo{ServerID: 7, Hostname: "db7", Version: "10.11.19-MariaDB", Primary: &archive.PrimaryPosition{GTID: "0-1-5",
		Connections: []archive.PrimaryConnection{{Host: "db1", Port: 3306, ServerID: 1, UsingGTID: "Slave_Pos"}}}}
	b, err := MarshalSourceInfo(si)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseSourceInfo(b)
	if err != nil || !reflect.DeepEqual(got, si) {
		t.Errorf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "{}", `{"server_id": 1, "primary": {"connections": []}}`, `{"server_id": 1} {}`, "[" + strings.Repeat(" ", maxSourceInfo) + "]"} {
		if got, err := ParseSourceInfo([]byte(bad)); err == nil {
			t.Errorf("%.40q accepted as %+v", bad, got)
		}
	}
	// An increment's copy replaces the base's when it is applied.
	base, inc := t.TempDir(), t.TempDir()
	if err := CarrySourceInfo(inc, base); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(base, SourceInfoName)); !os.IsNotExist(err) {
		t.Errorf("carried a file the increment lacks: %v", err)
	}
	if err := os.WriteFile(filepath.Join(inc, SourceInfoName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CarrySourceInfo(inc, base); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(base, SourceInfoName)); err != nil || string(got) != string(b) {
		t.Errorf("carried %q, %v", got, err)
	}
}

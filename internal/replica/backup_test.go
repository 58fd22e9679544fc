package replica

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/physical"
)

// The rule that picks a backup's position for a primary: a backup of a
// primary has one; a backup of a replica has its own (for the source
// itself) and its position in its primary's history (for that primary),
// told apart by the primary's @@server_id, and never guessed.
func TestChoose(t *testing.T) {
	own := &physical.BinlogInfo{File: "replica-bin.000001", Position: 330, GTID: "0-1-6"}
	upstream := func(using string) *archive.PrimaryPosition {
		p := &archive.PrimaryPosition{Connections: []archive.PrimaryConnection{{Host: "db1", Port: 3306, ServerID: 1, UsingGTID: using}}}
		if using == "No" {
			p.Connections[0].BinlogFile, p.Connections[0].BinlogPosition = "db1-bin.000003", 777
		} else {
			p.GTID = "0-1-6"
		}
		return p
	}
	ofReplica := func(using string) *BackupPositions {
		return &BackupPositions{Own: own, OwnFrom: "binlog info", SourceServerID: 2, SourceHostname: "db2", Upstream: upstream(using), UpstreamFrom: "slave info"}
	}
	source, itsPrimary, sibling := Identity{ServerID: 2, Hostname: "db2"}, Identity{ServerID: 1, Hostname: "db1"}, Identity{ServerID: 3, Hostname: "db3"}
	cases := []struct {
		name   string
		b      *BackupPositions
		choice string
		id     Identity
		idErr  error
		want   physical.BinlogInfo
		from   string
		note   string
		err    string
	}{
		{name: "primary's backup: own, no question asked", b: &BackupPositions{Own: own, OwnFrom: "binlog info"}, idErr: errors.New("not asked"), want: *own, from: "binlog info"},
		{name: "primary's backup without a binlog", b: &BackupPositions{Backup: "B1"}, err: "backup B1 records no binary log position and no GTID of its source"},
		{name: "primary's backup, its primary asked for", b: &BackupPositions{Own: own}, choice: PrimaryIsSourcePrimary, err: "records no position in its source's primary's history"},
		{name: "replica's backup pointed at the source", b: ofReplica("Slave_Pos"), id: source, want: *own, from: "binlog info", note: "the primary is the backup's source (server_id 2"},
		{name: "replica's backup pointed at its primary, by GTID", b: ofReplica("Slave_Pos"), id: itsPrimary, want: physical.BinlogInfo{GTID: "0-1-6"}, from: "slave info",
			note: "the primary is the one the source replicated from (server_id 1, as db1:3306)"},
		{name: "replica's backup pointed at its primary, by position", b: ofReplica("No"), id: itsPrimary, want: physical.BinlogInfo{File: "db1-bin.000003", Position: 777}, from: "slave info"},
		{name: "pointed at a third server", b: ofReplica("Slave_Pos"), id: sibling,
			err: "it has server_id 3 (hostname db3), and is neither the backup's source (server_id 2, hostname db2) nor the primary the source replicated from (db1:3306, server_id 1); the source's own binary log position is replica-bin.000001:330 GTID 0-1-6 (binlog info), its position in its primary's history GTID 0-1-6 (slave info)"},
		{name: "the source's id on another host", b: ofReplica("Slave_Pos"), id: Identity{ServerID: 2, Hostname: "elsewhere"}, err: "is neither the backup's source"},
		{name: "the primary does not answer", b: ofReplica("Slave_Pos"), idErr: errors.New("access denied"), err: "asking it for its server_id failed: access denied"},
		{name: "source and primary share an id", b: func() *BackupPositions { b := ofReplica("Slave_Pos"); b.Upstream.Connections[0].ServerID = 2; return b }(), id: source,
			err: "its server_id 2 is both the source's and that of the primary"},
		{name: "datadir without the source's identity", b: func() *BackupPositions {
			b := ofReplica("Slave_Pos")
			b.SourceServerID, b.SourceHostname, b.Upstream.Connections[0].ServerID = 0, "", 0
			return b
		}(), id: itsPrimary, err: "the datadir names neither the source nor its primary"},
		{name: "chosen: source", b: ofReplica("Slave_Pos"), choice: PrimaryIsSource, idErr: errors.New("not asked"), want: *own, from: "binlog info", note: "as chosen, the primary is the backup's source"},
		{name: "chosen: source, without a binlog", b: func() *BackupPositions { b := ofReplica("Slave_Pos"); b.Own = nil; return b }(), choice: PrimaryIsSource,
			err: "as chosen, the primary is the backup's source, but the backup records no binary log position"},
		{name: "chosen: source-primary", b: ofReplica("No"), choice: PrimaryIsSourcePrimary, idErr: errors.New("not asked"), want: physical.BinlogInfo{File: "db1-bin.000003", Position: 777}, from: "slave info"},
		{name: "chosen: source-primary of two, matched", b: func() *BackupPositions {
			b := ofReplica("No")
			b.Upstream.Connections = append(b.Upstream.Connections, archive.PrimaryConnection{Name: "x", Host: "db9", Port: 1, ServerID: 9, UsingGTID: "No", BinlogFile: "db9-bin.000001", BinlogPosition: 4})
			return b
		}(), choice: PrimaryIsSourcePrimary, id: Identity{ServerID: 9}, want: physical.BinlogInfo{File: "db9-bin.000001", Position: 4}, from: "slave info"},
		{name: "chosen: source-primary of two, none matches", b: func() *BackupPositions {
			b := ofReplica("No")
			b.Upstream.Connections = append(b.Upstream.Connections, archive.PrimaryConnection{Name: "x", Host: "db9", Port: 1, ServerID: 9, UsingGTID: "No"})
			return b
		}(), choice: PrimaryIsSourcePrimary, id: sibling, err: "the source replicated from 2 primaries"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Primary{Host: "127.0.0.1", Port: 3306, User: "repl"}
			ask := func(context.Context, Primary) (Identity, error) { return c.id, c.idErr }
			got, from, notes, err := c.b.choose(context.Background(), p, c.choice, ask)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %+v from %q, %v; want an error with %q", got, from, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want || from != c.from {
				t.Errorf("got %+v from %q, want %+v from %q", got, from, c.want, c.from)
			}
			if c.note != "" && !strings.Contains(strings.Join(notes, "\n"), c.note) {
				t.Errorf("notes %q, want %q", notes, c.note)
			}
		})
	}
	// The refusal is an *UnsureError, which the CLI completes with the flag.
	_, _, _, err := ofReplica("Slave_Pos").choose(context.Background(), Primary{Host: "h", User: "u"}, "", func(context.Context, Primary) (Identity, error) { return sibling, nil })
	var unsure *UnsureError
	if !errors.As(err, &unsure) {
		t.Errorf("refusal %v is not an *UnsureError", err)
	}
}

// A restored datadir offers the binlog info, the slave info and, in a
// backup backstream took of a replica, the source's identity; the files
// must agree.
func TestReadBackupPositions(t *testing.T) {
	write := func(dir string, files map[string]string) {
		t.Helper()
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	sourceInfo := func(gtid string) string {
		b, err := physical.MarshalSourceInfo(physical.SourceInfo{ServerID: 2, Hostname: "db2", Primary: &archive.PrimaryPosition{GTID: gtid,
			Connections: []archive.PrimaryConnection{{Host: "db1", Port: 3306, ServerID: 1, UsingGTID: "Slave_Pos"}}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	slaveInfo := "SET GLOBAL gtid_slave_pos = '0-1-6';\nCHANGE MASTER TO master_use_gtid = slave_pos;\n"
	binlogInfo := "replica-bin.000001\t330\t0-1-6\n"

	dir := t.TempDir()
	write(dir, map[string]string{"xtrabackup_binlog_info": binlogInfo, "xtrabackup_slave_info": slaveInfo, physical.SourceInfoName: sourceInfo("0-1-6")})
	b, err := ReadBackupPositions(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.Own == nil || b.Own.File != "replica-bin.000001" || b.SourceServerID != 2 || b.SourceHostname != "db2" ||
		b.Upstream.GTID != "0-1-6" || b.Upstream.Connections[0].ServerID != 1 || !strings.Contains(b.UpstreamFrom, "xtrabackup_slave_info and "+physical.SourceInfoName) {
		t.Errorf("read %+v (upstream %+v)", b, b.Upstream)
	}

	// Restored by stock tools: positions without identities.
	dir = t.TempDir()
	write(dir, map[string]string{"mariadb_backup_slave_info": slaveInfo})
	if b, err = ReadBackupPositions(dir); err != nil {
		t.Fatal(err)
	}
	if b.Own != nil || b.SourceServerID != 0 || b.Upstream.GTID != "0-1-6" || b.Upstream.Connections[0].UsingGTID != "Slave_Pos" {
		t.Errorf("read %+v (upstream %+v)", b, b.Upstream)
	}

	for name, files := range map[string]map[string]string{
		"mixed":              {"xtrabackup_slave_info": slaveInfo, physical.SourceInfoName: sourceInfo("0-1-7")},
		"two slave infos":    {"xtrabackup_slave_info": slaveInfo, "mariadb_backup_slave_info": "SET GLOBAL gtid_slave_pos = '0-1-7';\nCHANGE MASTER TO master_use_gtid = slave_pos;\n"},
		"unreadable":         {"xtrabackup_slave_info": "CHANGE MASTER TO MASTER_HOST='x';\n"},
		"bad identity":       {"xtrabackup_slave_info": slaveInfo, physical.SourceInfoName: "{"},
		"neither position":   {},
		"bad binlog info":    {"xtrabackup_binlog_info": "garbage"},
		"empty binlog info":  {"xtrabackup_binlog_info": "\n", "xtrabackup_slave_info": slaveInfo},
		"bad and good infos": {"xtrabackup_binlog_info": binlogInfo, "xtrabackup_slave_info": "x"},
	} {
		dir := t.TempDir()
		write(dir, files)
		if b, err := ReadBackupPositions(dir); err == nil {
			t.Errorf("%s: accepted as %+v", name, b)
		}
	}
}

// A backup's manifest offers the same positions, with the identities,
// and a logical backup's want a GTID.
func TestFromManifest(t *testing.T) {
	m := &archive.Manifest{ID: "B1", Kind: archive.KindLogical, Server: archive.Server{Hostname: "db2", ServerID: 2},
		Positions: archive.Positions{BinlogFile: "f", BinlogPosition: 4, GTID: "0-2-9", Primary: &archive.PrimaryPosition{GTID: "0-1-6"}}}
	b := FromManifest(m)
	if b.Own == nil || *b.Own != (physical.BinlogInfo{File: "f", Position: 4, GTID: "0-2-9"}) || b.SourceServerID != 2 || b.Upstream != m.Positions.Primary || !b.RequireGTID || b.OwnFrom != "backup B1" {
		t.Errorf("FromManifest: %+v", b)
	}
	m.Positions = archive.Positions{}
	if b := FromManifest(m); b.Own != nil {
		t.Errorf("a backup without positions offers %+v", b.Own)
	}
}

// A logical backup seeds a replica from its GTID: one that recorded only a
// file and position is refused unless UseFilePos asks for them.
func TestCoordinatesRequireGTID(t *testing.T) {
	m := &archive.Manifest{ID: "B2", Kind: archive.KindLogical, Positions: archive.Positions{BinlogFile: "mariadb-bin.000001", BinlogPosition: 330}}
	p := Primary{Host: "127.0.0.1", User: "repl"}
	res := &Result{}
	err := coordinates(context.Background(), nil, p, Options{Backup: FromManifest(m)}, res)
	if !errors.Is(err, ErrNoGTID) || !strings.Contains(err.Error(), "backup B2 records only binlog file and position mariadb-bin.000001:330") {
		t.Errorf("a logical backup without a GTID: %v", err)
	}
	if err := coordinates(context.Background(), nil, p, Options{Backup: FromManifest(m), UseFilePos: true}, res); err != nil || res.Coordinates.File != "mariadb-bin.000001" {
		t.Errorf("with UseFilePos: %+v, %v", res.Coordinates, err)
	}
	m.Kind = archive.KindPhysical
	if err := coordinates(context.Background(), nil, p, Options{Backup: FromManifest(m)}, &Result{}); err != nil {
		t.Errorf("a physical backup without a GTID (replicated by position, with a note): %v", err)
	}
	if err := coordinates(context.Background(), nil, p, Options{Backup: FromManifest(m), PrimaryIs: "the other one"}, &Result{}); err == nil {
		t.Error("an unknown PrimaryIs was taken")
	}
}

// A masked backup seeds no replica: replication would bring the source's
// later changes, unmasked, onto the masked rows.
func TestFromBackupRefusesMasked(t *testing.T) {
	m := &archive.Manifest{ID: "b1", Databases: []archive.DatabaseStats{{Name: "shop", Masked: []string{"customers.email"}}}}
	_, err := FromBackup(m)
	var masked *MaskedError
	want := "backup b1 was masked when dumped (shop.customers.email): replication would bring the source's later changes, unmasked, onto the masked rows; seed a replica from an unmasked backup"
	if !errors.As(err, &masked) || err.Error() != want {
		t.Errorf("FromBackup of a masked backup: %v, want a MaskedError %q", err, want)
	}
	m.Databases[0].Masked = nil
	if b, err := FromBackup(m); err != nil || b.OwnFrom != "backup b1" {
		t.Errorf("FromBackup of an unmasked backup: %+v, %v", b, err)
	}
}

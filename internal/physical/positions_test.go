package physical

import (
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
)

// CheckPositions refuses a manifest whose positions its meta objects or
// its parent contradict, naming the backup, the object or parent, the
// field and both values; it accepts one that agrees, and checks a backup
// without position meta objects against its parent only.
func TestCheckPositions(t *testing.T) {
	full := func() *archive.Manifest {
		return &archive.Manifest{ID: "20261121T190512Z-0001", Kind: archive.KindPhysical,
			Positions: archive.Positions{ToLSN: 44894, LastLSN: 7604246, BinlogFile: "mariadb-bin.000001", BinlogPosition: 5754099, GTID: "0-1-10"}}
	}
	inc := func() *archive.Manifest {
		return &archive.Manifest{ID: "20261122T190512Z-0002", Kind: archive.KindPhysical, Parent: "20261121T190512Z-0001",
			Positions: archive.Positions{FromLSN: 44894, ToLSN: 50000, LastLSN: 50010}}
	}
	incCheckpoints := "backup_type = incremental\nfrom_lsn = 44894\nto_lsn = 50000\nlast_lsn = 50010\n"
	fullMeta := map[string][]byte{"meta/xtrabackup_checkpoints": []byte(realCheckpoints), "meta/xtrabackup_binlog_info": []byte(realBinlogInfo)}
	cases := []struct {
		name      string
		m, parent *archive.Manifest
		meta      map[string][]byte
		change    func(m *archive.Manifest)
		want      []string // empty: accepted
	}{
		{name: "full agrees", m: full(), meta: fullMeta},
		{name: "full agrees, stream names (11.1+)", m: full(), meta: map[string][]byte{"mariadb_backup_checkpoints": []byte(realCheckpoints), "mariadb_backup_binlog_info": []byte(realBinlogInfo)}},
		{name: "incremental agrees", m: inc(), parent: full(), meta: map[string][]byte{"meta/xtrabackup_checkpoints": []byte(incCheckpoints), "meta/xtrabackup_binlog_info": []byte("\n")}},
		{name: "no meta objects", m: full()},
		{name: "other meta objects are not read", m: full(), meta: map[string][]byte{"meta/xtrabackup_info": []byte("garbage")}},
		{name: "to_lsn", m: full(), meta: fullMeta, change: func(m *archive.Manifest) { m.Positions.ToLSN = 44895 },
			want: []string{"20261121T190512Z-0001", "xtrabackup_checkpoints says to_lsn 44894, the manifest 44895"}},
		{name: "from_lsn", m: full(), meta: fullMeta, change: func(m *archive.Manifest) { m.Positions.FromLSN = 456 },
			want: []string{"xtrabackup_checkpoints says from_lsn 0, the manifest 456"}},
		{name: "last_lsn", m: full(), meta: fullMeta, change: func(m *archive.Manifest) { m.Positions.LastLSN = 1 },
			want: []string{"says last_lsn 7604246, the manifest 1"}},
		{name: "full with an incremental's checkpoints", m: full(), meta: map[string][]byte{"meta/xtrabackup_checkpoints": []byte(incCheckpoints)},
			want: []string{"backup_type incremental, the manifest full-backuped"}},
		{name: "incremental with a full's checkpoints", m: inc(), parent: full(), meta: map[string][]byte{"meta/xtrabackup_checkpoints": []byte(realCheckpoints)},
			want: []string{"backup_type full-backuped, the manifest incremental"}},
		{name: "binlog position", m: full(), meta: fullMeta, change: func(m *archive.Manifest) { m.Positions.BinlogPosition = 5754098 },
			want: []string{"xtrabackup_binlog_info says binlog position 5754099, the manifest 5754098"}},
		{name: "binlog file", m: full(), meta: fullMeta, change: func(m *archive.Manifest) { m.Positions.BinlogFile = "mariadb-bin.000002" },
			want: []string{`says binlog file "mariadb-bin.000001", the manifest "mariadb-bin.000002"`}},
		{name: "gtid", m: full(), meta: fullMeta, change: func(m *archive.Manifest) { m.Positions.GTID = "0-1-11" },
			want: []string{`says GTID "0-1-10", the manifest "0-1-11"`}},
		{name: "unreadable checkpoints", m: full(), meta: map[string][]byte{"meta/xtrabackup_checkpoints": []byte("garbage")},
			want: []string{"20261121T190512Z-0001", "xtrabackup_checkpoints"}},
		{name: "not continuing its parent", m: inc(), parent: full(), change: func(m *archive.Manifest) { m.Positions.FromLSN = 44000 },
			want: []string{"20261122T190512Z-0002 starts at from_lsn 44000, but its parent 20261121T190512Z-0001 ends at last_lsn 7604246 (to_lsn 44894)"}},
		{name: "continuing its parent's last_lsn", m: inc(), parent: full(), change: func(m *archive.Manifest) { m.Positions.FromLSN = 7604246 }},
		{name: "between its parent's to_lsn and last_lsn", m: inc(), parent: full(), change: func(m *archive.Manifest) { m.Positions.FromLSN = 7604245 },
			want: []string{"starts at from_lsn 7604245, but its parent 20261121T190512Z-0001 ends at last_lsn 7604246 (to_lsn 44894)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.change != nil {
				tc.change(tc.m)
			}
			err := CheckPositions(tc.m, tc.parent, tc.meta)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want an error naming %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v: does not name %q", err, w)
				}
			}
		})
	}
}

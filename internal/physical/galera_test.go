package physical

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
)

const galeraUUID = "574f0f49-ea01-11f1-a3ca-92f7c8ba9ea7"

// The position of a Galera node's backup comes from mariabackup's galera
// info, is checked against it, and becomes the restored datadir's
// grastate.dat.
func TestGaleraPosition(t *testing.T) {
	pos, err := galeraPosition(map[string][]byte{"mariadb_backup_galera_info": []byte(galeraUUID + ":5913 0\n")})
	if err != nil || pos == nil || *pos != (archive.GaleraPosition{UUID: galeraUUID, Seqno: 5913, DomainID: "0"}) {
		t.Fatalf("galeraPosition = %+v, %v", pos, err)
	}
	if pos, err := galeraPosition(map[string][]byte{"xtrabackup_binlog_info": []byte("x")}); pos != nil || err != nil {
		t.Errorf("no galera info: %+v, %v", pos, err)
	}
	for _, bad := range []string{"nope", galeraUUID, galeraUUID + ":x", "574f0f49:12", galeraUUID + ":-2"} {
		if _, err := galeraPosition(map[string][]byte{"xtrabackup_galera_info": []byte(bad)}); err == nil {
			t.Errorf("%q taken", bad)
		}
	}
	m := &archive.Manifest{ID: "b1", Positions: archive.Positions{Galera: pos}}
	if err := CheckPositions(m, nil, map[string][]byte{"meta/xtrabackup_galera_info": []byte(galeraUUID + ":5913\n")}); err != nil {
		t.Errorf("agreeing galera info: %v", err)
	}
	if err := CheckPositions(m, nil, map[string][]byte{"meta/xtrabackup_galera_info": []byte(galeraUUID + ":5914 0\n")}); err == nil || !strings.Contains(err.Error(), "5914") {
		t.Errorf("disagreeing galera info: %v", err)
	}
	dir := t.TempDir()
	if err := WriteGrastate(dir, *pos); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, GrastateName))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"uuid:    " + galeraUUID, "seqno:   5913", "safe_to_bootstrap: 1"} {
		if !strings.Contains(string(b), line+"\n") {
			t.Errorf("grastate.dat lacks %q:\n%s", line, b)
		}
	}
}

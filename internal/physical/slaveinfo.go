package physical

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
)

// SlaveInfo is the content of xtrabackup_slave_info (mariadb_backup_slave_info
// since 11.1), which mariabackup --slave-info writes when the server it
// backs up is a replica: where that replica stood in its primaries'
// history at the backup's consistent point, as the statements that would
// point a new replica there.
type SlaveInfo struct {
	// GTID is the replica's gtid_slave_pos; mariabackup writes it only
	// when some connection replicates by GTID.
	GTID string
	// Connections are the CHANGE MASTER lines, one per connection.
	Connections []SlaveInfoConnection
}

// SlaveInfoConnection is one CHANGE MASTER line of a slave info file.
type SlaveInfoConnection struct {
	// Name is the multi-source connection; "" is the default one.
	Name string
	// UseGTID is true for "master_use_gtid = slave_pos": the position is
	// SlaveInfo.GTID. Otherwise File and Position are the primary's
	// coordinates.
	UseGTID  bool
	File     string
	Position uint64
}

// Lines of a slave info file, as mariabackup 10.2 to 11.x writes them
// (older versions leave out the trailing semicolon).
var (
	slaveInfoGTID    = regexp.MustCompile(`(?i)^SET GLOBAL gtid_slave_pos\s*=\s*'([0-9,\- ]*)'\s*;?$`)
	slaveInfoChange  = regexp.MustCompile(`(?i)^CHANGE MASTER (?:'(.*)' )?TO (.*?)\s*;?$`)
	slaveInfoUseGTID = regexp.MustCompile(`(?i)^master_use_gtid\s*=\s*slave_pos$`)
	slaveInfoFilePos = regexp.MustCompile(`(?i)^MASTER_LOG_FILE\s*=\s*'([^']+)',\s*MASTER_LOG_POS\s*=\s*([0-9]+)$`)
)

// ParseSlaveInfo parses a slave info file. It refuses what it does not
// understand (MySQL's gtid_purged and MASTER_AUTO_POSITION, a connection
// named twice), since a misread position would make a replica skip or
// repeat transactions.
func ParseSlaveInfo(b []byte) (SlaveInfo, error) {
	var si SlaveInfo
	seen := map[string]bool{}
	gtidSet := false
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" {
			continue
		}
		if m := slaveInfoGTID.FindStringSubmatch(line); m != nil {
			if gtidSet {
				return SlaveInfo{}, fmt.Errorf("slave info: line %d: gtid_slave_pos set twice", n+1)
			}
			gtidSet = true
			si.GTID = strings.ReplaceAll(m[1], " ", "")
			continue
		}
		m := slaveInfoChange.FindStringSubmatch(line)
		if m == nil {
			return SlaveInfo{}, fmt.Errorf("slave info: line %d: not a statement backstream knows: %q", n+1, truncate(line, 80))
		}
		c := SlaveInfoConnection{Name: m[1]}
		if seen[c.Name] {
			return SlaveInfo{}, fmt.Errorf("slave info: line %d: connection %q named twice", n+1, c.Name)
		}
		seen[c.Name] = true
		switch fp := slaveInfoFilePos.FindStringSubmatch(m[2]); {
		case slaveInfoUseGTID.MatchString(m[2]):
			c.UseGTID = true
		case fp != nil:
			pos, err := strconv.ParseUint(fp[2], 10, 64)
			if err != nil {
				return SlaveInfo{}, fmt.Errorf("slave info: line %d: position %q: %w", n+1, fp[2], err)
			}
			c.File, c.Position = fp[1], pos
		default:
			return SlaveInfo{}, fmt.Errorf("slave info: line %d: not a statement backstream knows: %q", n+1, truncate(line, 80))
		}
		si.Connections = append(si.Connections, c)
	}
	if len(si.Connections) == 0 {
		return SlaveInfo{}, fmt.Errorf("slave info: no CHANGE MASTER statement")
	}
	for _, c := range si.Connections {
		if c.UseGTID && si.GTID == "" {
			return SlaveInfo{}, fmt.Errorf("slave info: connection %q replicates by GTID, but no gtid_slave_pos is set", c.Name)
		}
	}
	return si, nil
}

// SlaveInfoNames are the names mariabackup gives its slave info file.
var SlaveInfoNames = metadataCandidates("slave_info")

// errPrimaryChanged starts the error of a backup of a replica whose
// replication connections changed while it ran.
const errPrimaryChanged = "the replica's replication changed during the backup"

// PrimaryPositionOf joins a slave info file with the replication
// connections SHOW ALL SLAVES STATUS listed when the backup started:
// positions from the one, identities from the other. Each must name the
// same connections.
func PrimaryPositionOf(si SlaveInfo, sources []mariadb.ReplicationSource) (*archive.PrimaryPosition, error) {
	if len(si.Connections) != len(sources) {
		return nil, fmt.Errorf("%s: the server listed %d replication connections, mariabackup's slave info %d", errPrimaryChanged, len(sources), len(si.Connections))
	}
	p := &archive.PrimaryPosition{GTID: si.GTID}
	for _, c := range si.Connections {
		i := sourceIndex(sources, c.Name)
		if i < 0 {
			return nil, fmt.Errorf("%s: mariabackup's slave info names connection %q, which the server did not list", errPrimaryChanged, c.Name)
		}
		s := sources[i]
		if byGTID := s.UsingGTID != "" && s.UsingGTID != "No"; byGTID != c.UseGTID {
			return nil, fmt.Errorf("%s: connection %q replicated with Using_Gtid %s, but mariabackup's slave info says %s", errPrimaryChanged, c.Name, s.UsingGTID, describeSlaveInfo(c))
		}
		p.Connections = append(p.Connections, archive.PrimaryConnection{
			Name: c.Name, Host: s.Host, Port: s.Port, ServerID: s.ServerID, UsingGTID: s.UsingGTID,
			BinlogFile: c.File, BinlogPosition: c.Position,
		})
	}
	return p, nil
}

// SameSources reports how before and after, two readings of a replica's
// connections, differ in whom they replicate from ("" when they do not).
func SameSources(before, after []mariadb.ReplicationSource) string {
	if len(before) != len(after) {
		return fmt.Sprintf("%d replication connections, then %d", len(before), len(after))
	}
	for _, b := range before {
		i := sourceIndex(after, b.Name)
		if i < 0 {
			return fmt.Sprintf("connection %q went away", b.Name)
		}
		a := after[i]
		if a.Host != b.Host || a.Port != b.Port || (b.ServerID != 0 && a.ServerID != b.ServerID) || a.UsingGTID != b.UsingGTID {
			return fmt.Sprintf("connection %q replicated from %s:%d (server_id %d, Using_Gtid %s), then from %s:%d (server_id %d, Using_Gtid %s)",
				b.Name, b.Host, b.Port, b.ServerID, b.UsingGTID, a.Host, a.Port, a.ServerID, a.UsingGTID)
		}
	}
	return ""
}

func sourceIndex(sources []mariadb.ReplicationSource, name string) int {
	for i, s := range sources {
		if s.Name == name {
			return i
		}
	}
	return -1
}

func describeSlaveInfo(c SlaveInfoConnection) string {
	if c.UseGTID {
		return "master_use_gtid = slave_pos"
	}
	return fmt.Sprintf("%s:%d", c.File, c.Position)
}

// checkSlaveInfo checks manifest m's primary position (not nil) against
// the slave info file name holds.
func checkSlaveInfo(m *archive.Manifest, name string, data []byte) error {
	si, err := ParseSlaveInfo(data)
	if err != nil {
		return fmt.Errorf("backup %s: %s: %w", m.ID, name, err)
	}
	p := m.Positions.Primary
	if si.GTID != p.GTID {
		return fmt.Errorf("backup %s: %s says gtid_slave_pos %q, the manifest %q", m.ID, name, si.GTID, p.GTID)
	}
	if len(si.Connections) != len(p.Connections) {
		return fmt.Errorf("backup %s: %s names %d replication connections, the manifest %d", m.ID, name, len(si.Connections), len(p.Connections))
	}
	for _, c := range si.Connections {
		mc := p.Connection(c.Name)
		switch {
		case mc == nil:
			return fmt.Errorf("backup %s: %s names replication connection %q, the manifest does not", m.ID, name, c.Name)
		case !c.UseGTID && (mc.BinlogFile != c.File || mc.BinlogPosition != c.Position):
			return fmt.Errorf("backup %s: %s says connection %q stood at %s, the manifest %s:%d", m.ID, name, c.Name, describeSlaveInfo(c), mc.BinlogFile, mc.BinlogPosition)
		}
	}
	return nil
}

// SourceInfoName is the file backstream adds to the stream of a backup of
// a replica: who the source was and whom it replicated from, so that a
// server started on the restored datadir can tell which of the backup's
// positions suits the primary it is pointed at (mariabackup's files name
// no server).
const SourceInfoName = "backstream_source.json"

// SourceInfo is the content of SourceInfoName.
type SourceInfo struct {
	ServerID uint32 `json:"server_id"`
	Hostname string `json:"hostname"`
	Version  string `json:"version"`
	// Primary is the manifest's Positions.Primary.
	Primary *archive.PrimaryPosition `json:"primary"`
}

// maxSourceInfo bounds what ParseSourceInfo takes.
const maxSourceInfo = 64 << 10

// MarshalSourceInfo encodes si as the file holds it.
func MarshalSourceInfo(si SourceInfo) ([]byte, error) {
	b, err := json.MarshalIndent(si, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseSourceInfo decodes a SourceInfoName file.
func ParseSourceInfo(b []byte) (SourceInfo, error) {
	var si SourceInfo
	if len(b) > maxSourceInfo {
		return si, fmt.Errorf("%s: larger than %d bytes", SourceInfoName, maxSourceInfo)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&si); err != nil {
		return si, fmt.Errorf("%s: %w", SourceInfoName, err)
	}
	if dec.More() {
		return si, fmt.Errorf("%s: trailing data after the JSON object", SourceInfoName)
	}
	if si.Primary == nil || len(si.Primary.Connections) == 0 {
		return si, fmt.Errorf("%s: names no replication connection of the source", SourceInfoName)
	}
	return si, nil
}

// CarrySourceInfo copies an increment's SourceInfoName, if it has one,
// into the target it was applied to, as mariabackup --prepare
// --incremental-dir copies the increment's slave info and binlog info:
// the prepared datadir then names the primary its slave info is a
// position of.
func CarrySourceInfo(incDir, target string) error {
	b, err := os.ReadFile(filepath.Join(incDir, SourceInfoName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(target, SourceInfoName), b, FileMode)
}

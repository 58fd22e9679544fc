package physical

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/backstream/backstream/internal/archive"
)

// Backup types in a checkpoints file as mariabackup --backup leaves them,
// and as --prepare leaves a backup (a merged backup is stored so).
const (
	typeFull        = "full-backuped"
	typeIncremental = "incremental"
	typeLogApplied  = "log-applied"
	typePrepared    = "full-prepared"
)

// Prepared reports whether a checkpoints file's backup_type says
// mariabackup --prepare has run on the backup.
func Prepared(c Checkpoints) bool {
	return c.BackupType == typeLogApplied || c.BackupType == typePrepared
}

// CheckpointsNames are the names mariabackup gives its checkpoints file.
var CheckpointsNames = metadataCandidates("checkpoints")

// PositionMetaNames lists the meta objects a physical backup's positions
// come from, as the manifest names them: the checkpoints and the binary
// log coordinates, under both naming schemes.
func PositionMetaNames() []string {
	var names []string
	for _, suffix := range []string{"checkpoints", "binlog_info", "slave_info", "galera_info"} {
		for _, n := range metadataCandidates(suffix) {
			names = append(names, "meta/"+n)
		}
	}
	return names
}

// CheckPositions checks that the positions of manifest m say what its
// meta objects say, and, for an incremental, that it starts where parent
// ends. meta holds the content of those of PositionMetaNames the backup
// has, by name (with or without "meta/"); a backup without them (none
// made by backstream) is checked against its parent only. The manifest is
// what restore and the next incremental trust: a writer's bug, or a
// mariabackup that did something else than asked, must not reach it. The
// error names the backup, the object or parent, the field and both values.
func CheckPositions(m, parent *archive.Manifest, meta map[string][]byte) error {
	for name, data := range meta {
		var err error
		switch base := path.Base(name); {
		case slices.Contains(CheckpointsNames, base):
			err = checkCheckpoints(m, base, data)
		case slices.Contains(metadataCandidates("binlog_info"), base) && strings.TrimSpace(string(data)) != "":
			err = checkBinlogInfo(m, base, data)
		case slices.Contains(SlaveInfoNames, base) && m.Positions.Primary != nil:
			// A backup that records no primary position was made
			// before backstream read the slave info (or asked for it
			// with --mariabackup-option): its copy is not checked.
			err = checkSlaveInfo(m, base, data)
		case slices.Contains(GaleraInfoNames, base) && m.Positions.Galera != nil:
			// Backups made before backstream recorded the position
			// (with --mariabackup-option=--galera-info) are not checked.
			err = checkGaleraInfo(m, base, data)
		}
		if err != nil {
			return err
		}
	}
	if parent != nil {
		return checkFollows(m, parent)
	}
	return nil
}

// IncrementalLSN is the LSN an incremental on parent starts from: pages
// whose LSN is above it are copied. It is the parent's last_lsn, the end of
// the redo log the parent copied, because a prepared parent holds every
// change up to there: pages changed between its checkpoint (to_lsn) and
// last_lsn are rebuilt by its own redo log. Starting from to_lsn, as
// mariabackup's --incremental-basedir does, copies those pages again, and
// on a server whose checkpoint lags (a large redo log, a quiet time) that
// is every page written since, in every incremental. A parent that
// records no last_lsn is continued from its to_lsn.
func IncrementalLSN(parent *archive.Manifest) uint64 {
	if p := parent.Positions; p.LastLSN > p.ToLSN {
		return p.LastLSN
	}
	return parent.Positions.ToLSN
}

// checkFollows checks that incremental m starts where parent ends: at its
// last_lsn (IncrementalLSN), or at its to_lsn, where incrementals made
// before backstream chose last_lsn start.
func checkFollows(m, parent *archive.Manifest) error {
	if from := m.Positions.FromLSN; from != IncrementalLSN(parent) && from != parent.Positions.ToLSN {
		return fmt.Errorf("backup %s starts at from_lsn %d, but its parent %s ends at last_lsn %d (to_lsn %d)",
			m.ID, from, parent.ID, IncrementalLSN(parent), parent.Positions.ToLSN)
	}
	return nil
}

func checkCheckpoints(m *archive.Manifest, name string, data []byte) error {
	c, err := ParseCheckpoints(data)
	if err != nil {
		return fmt.Errorf("backup %s: %s: %w", m.ID, name, err)
	}
	want := typeFull
	switch {
	case m.Parent != "":
		want = typeIncremental
	case len(m.MergedFrom) > 0:
		if !Prepared(c) {
			return fmt.Errorf("backup %s: %s says backup_type %s, but the manifest says it was merged from a chain, which is prepared", m.ID, name, c.BackupType)
		}
		want = c.BackupType
	}
	if c.BackupType != want {
		return fmt.Errorf("backup %s: %s says backup_type %s, the manifest %s (parent %q)", m.ID, name, c.BackupType, want, m.Parent)
	}
	for _, f := range []struct {
		field     string
		meta, man uint64
	}{
		{"from_lsn", c.FromLSN, m.Positions.FromLSN},
		{"to_lsn", c.ToLSN, m.Positions.ToLSN},
		{"last_lsn", c.LastLSN, m.Positions.LastLSN},
	} {
		if f.meta != f.man {
			return fmt.Errorf("backup %s: %s says %s %d, the manifest %d", m.ID, name, f.field, f.meta, f.man)
		}
	}
	return nil
}

func checkBinlogInfo(m *archive.Manifest, name string, data []byte) error {
	bi, err := ParseBinlogInfo(data)
	if err != nil {
		return fmt.Errorf("backup %s: %s: %w", m.ID, name, err)
	}
	p := m.Positions
	switch {
	case bi.File != p.BinlogFile:
		return fmt.Errorf("backup %s: %s says binlog file %q, the manifest %q", m.ID, name, bi.File, p.BinlogFile)
	case bi.Position != p.BinlogPosition:
		return fmt.Errorf("backup %s: %s says binlog position %d, the manifest %d", m.ID, name, bi.Position, p.BinlogPosition)
	case bi.GTID != p.GTID:
		return fmt.Errorf("backup %s: %s says GTID %q, the manifest %q", m.ID, name, bi.GTID, p.GTID)
	}
	return nil
}

// MetaReader reads a meta object of a complete backup, checked against
// its manifest (repo.Repo.ReadMeta).
type MetaReader func(ctx context.Context, m *archive.Manifest, name string) ([]byte, error)

// CheckStored does CheckPositions for a stored backup m, reading its
// position meta objects with read. A disagreement is damage
// (archive.IsCorrupt): the manifest or a meta object of m cannot be
// trusted.
func CheckStored(ctx context.Context, read MetaReader, m, parent *archive.Manifest) error {
	if m.Kind != archive.KindPhysical {
		return nil
	}
	meta := map[string][]byte{}
	for _, o := range m.Meta {
		if slices.Contains(PositionMetaNames(), o.Name) {
			data, err := read(ctx, m, o.Name)
			if err != nil {
				return err
			}
			meta[o.Name] = data
		}
	}
	if err := CheckPositions(m, parent, meta); err != nil {
		return archive.Corruptf("%v", err)
	}
	return nil
}

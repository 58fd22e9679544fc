package replica

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
)

// BackupPositions are the positions a backup offers a server restored
// from it. A backup of a primary has one: the source's own binary log
// coordinates. A backup of a replica has two, and they suit different
// primaries: its own binary log coordinates suit a server replicating
// from the source itself; its position in its primary's history
// (mariabackup's slave info) suits one replicating from that primary.
type BackupPositions struct {
	// Own are the source's binary log coordinates; nil when the source
	// wrote no binary log. OwnFrom says where they came from.
	Own     *physical.BinlogInfo
	OwnFrom string
	// SourceServerID and SourceHostname identify the source; a zero
	// SourceServerID means unknown (a datadir restored from a backup
	// that backstream did not take).
	SourceServerID uint32
	SourceHostname string
	// Upstream is where the source stood in its primary's history; nil
	// when the source was no replica (or the backup did not record it).
	// UpstreamFrom says where it came from.
	Upstream     *archive.PrimaryPosition
	UpstreamFrom string
	// RequireGTID refuses coordinates without a GTID unless
	// Options.UseFilePos: a logical backup seeds a replica from its GTID.
	RequireGTID bool
	// Backup names the backup in messages ("" for a datadir).
	Backup string
}

// Choices of Options.PrimaryIs: which of a backup's positions to start
// from when the backup has both.
const (
	// PrimaryIsSource: the primary is the backup's source itself, so
	// replication starts from the source's own binary log coordinates.
	PrimaryIsSource = "source"
	// PrimaryIsSourcePrimary: the primary is the source's primary (or a
	// server with its history, by GTID), so replication starts from the
	// source's position in its primary's history.
	PrimaryIsSourcePrimary = "source-primary"
)

// FromManifest returns the positions backup m records.
func FromManifest(m *archive.Manifest) *BackupPositions {
	p := m.Positions
	b := &BackupPositions{
		OwnFrom:        "backup " + m.ID,
		SourceServerID: m.Server.ServerID,
		SourceHostname: m.Server.Hostname,
		Upstream:       p.Primary,
		UpstreamFrom:   "backup " + m.ID,
		RequireGTID:    m.Kind == archive.KindLogical,
		Backup:         m.ID,
	}
	if p.BinlogFile != "" || p.GTID != "" {
		b.Own = &physical.BinlogInfo{File: p.BinlogFile, Position: p.BinlogPosition, GTID: p.GTID}
	}
	return b
}

// ReadBackupPositions reads the positions a restored datadir (or a
// backup's target directory) holds: the binlog info, the slave info, and
// backstream's SourceInfoName naming the source and its primaries. It
// fails when the datadir holds neither position.
func ReadBackupPositions(dir string) (*BackupPositions, error) {
	b := &BackupPositions{}
	bi, path, err := ReadCoordinates(dir)
	var none *noCoordinatesError
	switch {
	case err == nil:
		b.Own, b.OwnFrom = &bi, path
	case !errors.As(err, &none):
		return nil, err
	}
	si, siPath, err := readSlaveInfo(dir)
	if err != nil {
		return nil, err
	}
	if siPath == "" {
		if b.Own == nil {
			return nil, none
		}
		return b, nil
	}
	b.UpstreamFrom = siPath
	srcPath := filepath.Join(dir, physical.SourceInfoName)
	raw, err := readSmall(srcPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// mariabackup's files name no server: only positions are known.
		b.Upstream = &archive.PrimaryPosition{GTID: si.GTID}
		for _, c := range si.Connections {
			using := "No"
			if c.UseGTID {
				using = "Slave_Pos"
			}
			b.Upstream.Connections = append(b.Upstream.Connections, archive.PrimaryConnection{
				Name: c.Name, UsingGTID: using, BinlogFile: c.File, BinlogPosition: c.Position})
		}
		return b, nil
	case err != nil:
		return nil, err
	}
	src, err := physical.ParseSourceInfo(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", srcPath, err)
	}
	if diff := slaveInfoDiffers(si, src.Primary); diff != "" {
		return nil, fmt.Errorf("%s and %s disagree (%s): the datadir mixes two backups", siPath, srcPath, diff)
	}
	b.Upstream = src.Primary
	b.SourceServerID, b.SourceHostname = src.ServerID, src.Hostname
	b.UpstreamFrom = siPath + " and " + physical.SourceInfoName
	return b, nil
}

// readSlaveInfo reads the slave info of dir under either name; path is
// "" when there is none. Both names must agree.
func readSlaveInfo(dir string) (physical.SlaveInfo, string, error) {
	var (
		found     physical.SlaveInfo
		foundPath string
		foundRaw  string
	)
	for _, name := range physical.SlaveInfoNames {
		path := filepath.Join(dir, name)
		b, err := readSmall(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return physical.SlaveInfo{}, "", err
		}
		si, err := physical.ParseSlaveInfo(b)
		if err != nil {
			return physical.SlaveInfo{}, "", fmt.Errorf("%s: %w", path, err)
		}
		if foundPath != "" {
			if strings.TrimSpace(string(b)) != foundRaw {
				return physical.SlaveInfo{}, "", fmt.Errorf("%s and %s disagree: the datadir mixes two backups", foundPath, path)
			}
			continue
		}
		found, foundPath, foundRaw = si, path, strings.TrimSpace(string(b))
	}
	return found, foundPath, nil
}

// slaveInfoDiffers says how a slave info file and a recorded primary
// position differ ("" when they agree).
func slaveInfoDiffers(si physical.SlaveInfo, p *archive.PrimaryPosition) string {
	if si.GTID != p.GTID {
		return fmt.Sprintf("gtid_slave_pos %q against %q", si.GTID, p.GTID)
	}
	if len(si.Connections) != len(p.Connections) {
		return fmt.Sprintf("%d replication connections against %d", len(si.Connections), len(p.Connections))
	}
	for _, c := range si.Connections {
		pc := p.Connection(c.Name)
		if pc == nil {
			return fmt.Sprintf("connection %q named by one only", c.Name)
		}
		if !c.UseGTID && (pc.BinlogFile != c.File || pc.BinlogPosition != c.Position) {
			return fmt.Sprintf("connection %q at %s:%d against %s:%d", c.Name, c.File, c.Position, pc.BinlogFile, pc.BinlogPosition)
		}
	}
	return ""
}

// Identity is who a server says it is.
type Identity struct {
	ServerID uint32
	Hostname string
}

// identify asks primary p who it is, logging in with the replication
// account (over TCP), which needs no privilege for this.
func identify(ctx context.Context, p Primary) (Identity, error) {
	db, err := mariadb.Open(ctx, p.config(), "")
	if err != nil {
		return Identity{}, err
	}
	defer db.Close()
	var id Identity
	if err := queryRow(ctx, db, "SELECT @@server_id, @@hostname", &id.ServerID, &id.Hostname); err != nil {
		return Identity{}, fmt.Errorf("read @@server_id on primary %s: %w", p, err)
	}
	return id, nil
}

// UnsureError is returned (wrapped) by Setup when a backup offers two
// positions and nothing tells which suits the primary: neither is chosen.
type UnsureError struct {
	Primary string // the primary, as Primary.String
	Why     string // why it cannot tell
	Own     string // the source's own position and where it came from
	Other   string // the position in the source's primary's history, and where it came from
}

func (e *UnsureError) Error() string {
	return fmt.Sprintf("cannot tell which of the backup's positions replication from %s starts at: %s; the source's own binary log position is %s, its position in its primary's history %s",
		e.Primary, e.Why, e.Own, e.Other)
}

// choose picks the coordinates replication from p starts at, following
// the rule docs/guide.md states: a backup of a primary offers one
// position; of a replica, its own suits a primary that is the source
// itself, the other one that is the source's primary, told apart by
// @@server_id (and @@hostname for the source), never guessed.
func (b *BackupPositions) choose(ctx context.Context, p Primary, choice string, ask func(context.Context, Primary) (Identity, error)) (physical.BinlogInfo, string, []string, error) {
	own := func(why string) (physical.BinlogInfo, string, []string, error) {
		if b.Own == nil {
			what := "the backup"
			if b.Backup != "" {
				what = "backup " + b.Backup
			}
			if why == "" {
				return physical.BinlogInfo{}, "", nil, fmt.Errorf("%s records no binary log position and no GTID of its source (was its binary log off?): there is no position to replicate from", what)
			}
			return physical.BinlogInfo{}, "", nil, fmt.Errorf("%s, but %s records no binary log position of the source (was its binary log off?): there is nothing to replicate from there", why, what)
		}
		var notes []string
		if why != "" {
			notes = append(notes, why+": starting at the source's own binary log position")
		}
		return *b.Own, b.OwnFrom, notes, nil
	}
	if b.Upstream == nil {
		if choice == PrimaryIsSourcePrimary {
			return physical.BinlogInfo{}, "", nil, fmt.Errorf("the backup records no position in its source's primary's history (the source was no replica, or the backup did not record it): only the source's own position (%s) is known", b.describeOwn())
		}
		return own("")
	}
	if choice == PrimaryIsSource {
		return own("as chosen, the primary is the backup's source")
	}
	var id Identity
	var idErr error
	if choice == "" || len(b.Upstream.Connections) > 1 {
		id, idErr = ask(ctx, p)
	}
	upstream := func(c archive.PrimaryConnection, why string) (physical.BinlogInfo, string, []string, error) {
		bi := physical.BinlogInfo{File: c.BinlogFile, Position: c.BinlogPosition, GTID: b.Upstream.GTID}
		if bi.GTID == "" && bi.File == "" {
			return physical.BinlogInfo{}, "", nil, fmt.Errorf("%s, but the backup records no position of connection %q in its history", why, c.Name)
		}
		return bi, b.UpstreamFrom, []string{why + ": starting at the source's position in its primary's history"}, nil
	}
	if choice == PrimaryIsSourcePrimary {
		if len(b.Upstream.Connections) == 1 {
			return upstream(b.Upstream.Connections[0], "as chosen, the primary is the source's primary")
		}
		if idErr != nil {
			return physical.BinlogInfo{}, "", nil, fmt.Errorf("the source replicated from %d primaries, and asking %s which one it is failed: %w", len(b.Upstream.Connections), p, idErr)
		}
		for _, c := range b.Upstream.Connections {
			if c.ServerID != 0 && c.ServerID == id.ServerID {
				return upstream(c, fmt.Sprintf("as chosen, the primary is the source's primary (its connection %q, server_id %d)", c.Name, c.ServerID))
			}
		}
		return physical.BinlogInfo{}, "", nil, fmt.Errorf("the source replicated from %d primaries (%s), and %s (server_id %d) is none of them", len(b.Upstream.Connections), b.describePrimaries(), p, id.ServerID)
	}
	unsure := &UnsureError{Primary: p.String(), Own: b.describeOwn(), Other: b.describeUpstream()}
	if idErr != nil {
		unsure.Why = fmt.Sprintf("asking it for its server_id failed: %v", idErr)
		return physical.BinlogInfo{}, "", nil, unsure
	}
	isSource := b.SourceServerID != 0 && id.ServerID == b.SourceServerID && (b.SourceHostname == "" || id.Hostname == b.SourceHostname)
	var match *archive.PrimaryConnection
	for i, c := range b.Upstream.Connections {
		if c.ServerID != 0 && c.ServerID == id.ServerID {
			match = &b.Upstream.Connections[i]
		}
	}
	switch {
	case isSource && match != nil:
		unsure.Why = fmt.Sprintf("its server_id %d is both the source's and that of the primary the source replicated from", id.ServerID)
	case isSource:
		return own(fmt.Sprintf("the primary is the backup's source (server_id %d, hostname %s)", id.ServerID, id.Hostname))
	case match != nil:
		return upstream(*match, fmt.Sprintf("the primary is the one the source replicated from (server_id %d, as %s:%d)", match.ServerID, match.Host, match.Port))
	case b.SourceServerID == 0:
		unsure.Why = fmt.Sprintf("it has server_id %d (hostname %s), and the datadir names neither the source nor its primary (no %s: restored by other means than backstream?)", id.ServerID, id.Hostname, physical.SourceInfoName)
	default:
		unsure.Why = fmt.Sprintf("it has server_id %d (hostname %s), and is neither the backup's source (server_id %d, hostname %s) nor the primary the source replicated from (%s)",
			id.ServerID, id.Hostname, b.SourceServerID, b.SourceHostname, b.describePrimaries())
	}
	return physical.BinlogInfo{}, "", nil, unsure
}

func (b *BackupPositions) describeOwn() string {
	if b.Own == nil {
		return "none (its binary log was off)"
	}
	return fmt.Sprintf("%s (%s)", describe(*b.Own), b.OwnFrom)
}

func (b *BackupPositions) describeUpstream() string {
	u := b.Upstream
	var parts []string
	if u.GTID != "" {
		parts = append(parts, "GTID "+u.GTID)
	}
	for _, c := range u.Connections {
		if c.BinlogFile != "" {
			parts = append(parts, fmt.Sprintf("connection %q at %s:%d", c.Name, c.BinlogFile, c.BinlogPosition))
		}
	}
	return fmt.Sprintf("%s (%s)", strings.Join(parts, ", "), b.UpstreamFrom)
}

func (b *BackupPositions) describePrimaries() string {
	var parts []string
	for _, c := range b.Upstream.Connections {
		who := fmt.Sprintf("%s:%d", c.Host, c.Port)
		if c.Host == "" {
			who = "unknown host"
		}
		id := fmt.Sprintf("server_id %d", c.ServerID)
		if c.ServerID == 0 {
			id = "server_id unknown"
		}
		name := ""
		if c.Name != "" {
			name = fmt.Sprintf("connection %q: ", c.Name)
		}
		parts = append(parts, fmt.Sprintf("%s%s, %s", name, who, id))
	}
	return strings.Join(parts, "; ")
}

// MaskedError refuses to seed a replica from a masked backup: replication
// would bring the source's later changes, unmasked, onto the masked rows.
type MaskedError struct {
	ID      string
	Columns []string
}

// Refused marks the error as a refusal of what was asked.
func (e *MaskedError) Refused() bool { return true }

func (e *MaskedError) Error() string {
	return fmt.Sprintf("backup %s was masked when dumped (%s): replication would bring the source's later changes, unmasked, onto the masked rows; seed a replica from an unmasked backup", e.ID, strings.Join(e.Columns, ", "))
}

// FromBackup returns the positions backup m records, refusing a masked
// backup (MaskedError).
func FromBackup(m *archive.Manifest) (*BackupPositions, error) {
	if cols := archive.MaskedColumns(m.Databases); len(cols) > 0 {
		return nil, &MaskedError{ID: m.ID, Columns: cols}
	}
	return FromManifest(m), nil
}

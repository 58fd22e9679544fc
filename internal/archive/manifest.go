package archive

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FormatVersion is the format of the manifests this code builds, and
// sends, with their contents inline. A repository stores them as
// ContentsFormat, their contents apart (see Manifest.Contents); this code
// reads both.
const FormatVersion = 1

// ContentsFormat is the format of a manifest whose contents are stored
// apart: a backstream that reads format 1 alone refuses it, rather than
// finding a backup without files.
const ContentsFormat = 2

// Kinds of backup.
const (
	KindPhysical = "physical"
	KindLogical  = "logical"
	// KindBinlog is one archived binary log file, under binlogs/, not a backup.
	KindBinlog = "binlog"
)

// Manifest describes one complete backup. It is the commit marker: a backup
// exists only once its manifest is stored, and the manifest is written after
// every object it names is durable.
type Manifest struct {
	// Checksum covers the manifest's stored bytes (see Marshal); empty in
	// manifests written before it existed. It comes first so that a
	// reader finds it at the head of the file without decoding the rest.
	Checksum string `json:"checksum,omitempty"`
	Format   int    `json:"format"`
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Parent   string `json:"parent,omitempty"`
	// Chain is the id of the full backup a chain of incrementals starts
	// from (a full backup's own id); Depth counts the incrementals from it
	// to this backup (0 for the full).
	Chain     string    `json:"chain,omitempty"`
	Depth     int       `json:"depth,omitempty"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished"`
	Server    Server    `json:"server"`
	Tools     Tools     `json:"tools"`
	Positions Positions `json:"positions"`
	Codec     string    `json:"codec"`
	Hash      string    `json:"hash"`
	// Storage is StorageDedup when the streams are stored as blocks of a
	// deduplicating repository (each stream's Index names its recipe and
	// no stream object is stored); "" for stream objects.
	Storage string `json:"storage,omitempty"`
	// FileHash is the algorithm of the files' digests when it is not
	// Hash: HashXXH3 when the streams' content is proven otherwise (a
	// deduplicating repository's keyed block names); see FileDigests.
	FileHash string    `json:"file_hash,omitempty"`
	Streams  []Stream  `json:"streams"`
	Files    []File    `json:"files"`
	Meta     []Object  `json:"meta,omitempty"`
	Barriers []Barrier `json:"barriers,omitempty"`
	Stats    Stats     `json:"stats"`
	// Partial marks a logical backup of part of the server (a database or
	// table filter, skipped objects, masked values): no base for a
	// restore of the whole server, never "latest" while a whole-server
	// backup exists, and never what check's --max-age counts. Logical
	// backups made before it existed have it unset.
	Partial bool `json:"partial,omitempty"`
	// Databases summarises a logical backup's content for listings; the
	// full catalog is a meta object.
	Databases []DatabaseStats `json:"databases,omitempty"`
	// Binlog describes an archived binary log file (kind binlog).
	Binlog *BinlogFile `json:"binlog,omitempty"`
	// Encryption says how the backup's data objects are encrypted; nil
	// when they are not.
	Encryption *Encryption `json:"encryption,omitempty"`
	// MergedFrom, for a full backup that merge built, names the chain it
	// was built from, base first: its files are that chain's prepared
	// datadir (backup_type full-prepared), and its times are those of the
	// chain's end.
	MergedFrom []string `json:"merged_from,omitempty"`
	// Withheld names the server options whose secret values the backup
	// does not hold although its files would (physical backups:
	// file_key_management_filekey of backup-my.cnf): a prepare needs
	// them given.
	Withheld []string `json:"withheld,omitempty"`
	// Tables, in a physical backup, are the tables the server's catalog
	// listed at the backup's start and at its end that the backup holds,
	// each with the files it needs: the backup was refused had one of them
	// lacked a file, and verify checks them again. Manifests written
	// before it existed have none.
	Tables []Table `json:"tables,omitempty"`
	// Contents, set, says that Files, Tables and Barriers are stored apart
	// from the manifest, in the meta object ContentsName (which Meta lists
	// with its size and digest), and counts them. They grow with the
	// server's files and tables (35 MB at 100,000 tables) while the rest
	// stays a few kilobytes: listing backups, choosing latest or a parent
	// reads the manifest alone. Manifests written before it existed hold
	// them inline.
	Contents *ContentsCounts `json:"contents,omitempty"`
	// loaded says Files, Tables and Barriers hold the contents stored
	// apart (LoadContents), or were made in this process.
	loaded bool
}

// ContentsName is the meta object that holds a manifest's contents.
const ContentsName = "meta/contents.json"

// ContentsCounts count what a manifest's contents object holds.
type ContentsCounts struct {
	Files    int `json:"files"`
	Tables   int `json:"tables"`
	Barriers int `json:"barriers"`
}

// contents is the JSON of the contents object.
type contents struct {
	Files    []File    `json:"files"`
	Tables   []Table   `json:"tables,omitempty"`
	Barriers []Barrier `json:"barriers,omitempty"`
}

// Detached reports whether m's contents are stored apart and not loaded:
// m describes the backup for listing and choosing, never what to read
// (Read refuses it; repo.Repo.Whole loads them).
func (m *Manifest) Detached() bool { return m.Contents != nil && !m.loaded }

// FileCount is the number of files of the backup, loaded or not.
func (m *Manifest) FileCount() int {
	if m.Detached() {
		return m.Contents.Files
	}
	return len(m.Files)
}

// Detach makes m store its contents apart: it returns the contents
// object's bytes and sets Contents to their counts. m keeps them loaded;
// the caller stores the object as ContentsName and lists it in Meta
// before m is marshalled.
func (m *Manifest) Detach() ([]byte, error) {
	if m.Detached() {
		return nil, fmt.Errorf("backup %s: its contents are not loaded", m.ID)
	}
	data, err := json.Marshal(contents{Files: m.Files, Tables: m.Tables, Barriers: m.Barriers})
	if err != nil {
		return nil, err
	}
	m.Contents = &ContentsCounts{Files: len(m.Files), Tables: len(m.Tables), Barriers: len(m.Barriers)}
	m.Format, m.loaded = ContentsFormat, true
	return data, nil
}

// LoadContents returns m with its contents loaded from data, the contents
// object (its size and digest already checked against Meta): they must
// decode, agree with the counts, and pass the checks a manifest's own
// files and barriers do.
func (m *Manifest) LoadContents(data []byte) (*Manifest, error) {
	if !m.Detached() {
		return m, nil
	}
	var c contents
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", ContentsName, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: trailing data after the JSON object", ContentsName)
	}
	if got := (ContentsCounts{Files: len(c.Files), Tables: len(c.Tables), Barriers: len(c.Barriers)}); got != *m.Contents {
		return nil, fmt.Errorf("%s holds %d files, %d tables and %d barriers; the manifest counts %d, %d and %d", ContentsName,
			got.Files, got.Tables, got.Barriers, m.Contents.Files, m.Contents.Tables, m.Contents.Barriers)
	}
	w := *m
	w.Files, w.Tables, w.Barriers, w.loaded = c.Files, c.Tables, c.Barriers, true
	if err := w.validateContents(); err != nil {
		return nil, fmt.Errorf("%s: %w", ContentsName, err)
	}
	return &w, nil
}

// errDetached is what a read of a backup's data given a manifest whose
// contents are not loaded fails with: a defect of the caller.
func errDetached(m *Manifest) error {
	return fmt.Errorf("backup %s: its manifest's contents (%s) were not loaded before reading it (a defect of backstream: please report it)", m.ID, ContentsName)
}

// Table is one table (or view, or sequence) of a physical backup's
// server, and the datadir files it needs.
type Table struct {
	// Name is the table as the server names it, database.table.
	Name string `json:"name"`
	// Type is "view" or "sequence"; empty for a base table.
	Type   string `json:"type,omitempty"`
	Engine string `json:"engine,omitempty"`
	// Files are the paths, relative to the datadir and in the server's
	// file name encoding (@0020 for a space, ...), of the table's
	// definition and data files: db/t.frm, db/t.ibd (one for each
	// partition, db/t#P#p0.ibd), db/t.MAD and db/t.MAI, ...
	Files []string `json:"files"`
}

// WholeServer reports whether m is a backup of the whole server: every
// physical backup, and a logical one without a filter.
func (m *Manifest) WholeServer() bool {
	return (m.Kind == KindPhysical || m.Kind == KindLogical) && !m.Partial
}

// Encryption names the scheme and who can open a backup: age public keys
// (or "scrypt passphrase" in backups made before passphrase keys). No
// secret is stored here.
type Encryption struct {
	Scheme     string   `json:"scheme"` // "age"
	Recipients []string `json:"recipients"`
	// PassphraseKey names the repository object holding the private key of
	// one of the recipients, encrypted with a passphrase (keys/<key>.age).
	PassphraseKey string `json:"passphrase_key,omitempty"`
}

// BinlogFile is one archived binary log file: what a point-in-time
// restore needs to know without reading it.
type BinlogFile struct {
	Source    string    `json:"source"` // the server it came from, hostname-server_id
	Name      string    `json:"name"`   // as on the server, e.g. mariadb-bin.000042
	Size      int64     `json:"size"`
	Events    int       `json:"events"`
	FirstTime time.Time `json:"first_time"`
	LastTime  time.Time `json:"last_time"`
	FirstGTID string    `json:"first_gtid,omitempty"`
	LastGTID  string    `json:"last_gtid,omitempty"`
	Previous  string    `json:"previous,omitempty"` // GTID list event: the last GTIDs before this file
	Closed    bool      `json:"closed"`             // ends with a rotate or stop event
	// Headed says the archiver that wrote this record keeps the source's
	// head object (repo.BinlogHead): without one, the end of the archive
	// cannot be proven, and that is damage. Absent in older archives.
	Headed bool `json:"headed,omitempty"`
}

// DatabaseStats is one database of a logical backup.
type DatabaseStats struct {
	Name   string `json:"name"`
	Tables int    `json:"tables"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"` // data bytes as dumped, before compression
	// NoHistory names the tables versioned by transaction id whose
	// current rows only are in the backup (backup --versioned-current-only).
	NoHistory []string `json:"no_history,omitempty"`
	// Masked names the columns whose values the dump masked, as
	// table.column=function (backup --mask).
	Masked []string `json:"masked,omitempty"`
}

// MaskedColumns lists the columns whose values the dump of databases dbs
// masked, as db.table.column=function.
func MaskedColumns(dbs []DatabaseStats) []string {
	var out []string
	for _, d := range dbs {
		for _, c := range d.Masked {
			out = append(out, d.Name+"."+c)
		}
	}
	return out
}

// Barrier orders the streams around one chunk whose effect reaches files
// in several streams: a remove of a directory (DROP DATABASE, or DDL on
// non-InnoDB tables, during the backup). Every stream i first applies its
// frames before Frames[i]; then stream Stream applies its frame
// Frames[Stream], which holds that chunk alone; then all go on. Path
// repeats the chunk's path so that every stream's file list follows it.
type Barrier struct {
	Frames []int  `json:"frames"`
	Stream int    `json:"stream"`
	Path   string `json:"path"`
}

// Server identifies the source server.
type Server struct {
	Version  string `json:"version"`
	Hostname string `json:"hostname,omitempty"`
	ServerID uint32 `json:"server_id,omitempty"`
	Datadir  string `json:"datadir,omitempty"`
}

// Tools records the versions of the programs that made the backup.
type Tools struct {
	Backstream  string `json:"backstream"`
	Mariabackup string `json:"mariabackup,omitempty"`
}

// Positions are the points in the server's history the backup stands for.
type Positions struct {
	FromLSN        uint64 `json:"from_lsn,omitempty"`
	ToLSN          uint64 `json:"to_lsn,omitempty"`
	LastLSN        uint64 `json:"last_lsn,omitempty"`
	BinlogFile     string `json:"binlog_file,omitempty"`
	BinlogPosition uint64 `json:"binlog_position,omitempty"`
	GTID           string `json:"gtid,omitempty"`
	// Primary is set for a backup of a replica: where the replica stood
	// in its primary's history at the backup's consistent point. The
	// fields above are the replica's own binary log, right for a server
	// that replicates from the replica itself; these are right for one
	// that replicates from the replica's primary.
	Primary *PrimaryPosition `json:"primary,omitempty"`
	// Galera is set for a physical backup of a Galera node: the cluster
	// position the backup's data holds, as mariabackup --galera-info read
	// it while commits were blocked. A server started on the restored
	// datadir (grastate.dat) joins its cluster from there by IST, or
	// bootstraps a new one at it.
	Galera *GaleraPosition `json:"galera,omitempty"`
}

// GaleraPosition is a place in a Galera cluster's history.
type GaleraPosition struct {
	// UUID is the cluster's state UUID (wsrep_local_state_uuid) and Seqno
	// the last write set committed (wsrep_last_committed).
	UUID  string `json:"uuid"`
	Seqno int64  `json:"seqno"`
	// DomainID is the node's wsrep_gtid_domain_id, as mariabackup wrote
	// it beside the position ("" when it wrote none).
	DomainID string `json:"gtid_domain_id,omitempty"`
}

// String is the position as Galera writes it: uuid:seqno.
func (p GaleraPosition) String() string { return fmt.Sprintf("%s:%d", p.UUID, p.Seqno) }

// ParseGaleraPosition reads a Galera position "uuid:seqno", with the GTID
// domain after a blank as mariabackup's galera info file has it
// ("uuid:seqno domain").
func ParseGaleraPosition(s string) (GaleraPosition, error) {
	pos, domain, _ := strings.Cut(strings.TrimSpace(s), " ")
	uuid, seq, ok := strings.Cut(pos, ":")
	p := GaleraPosition{UUID: uuid, DomainID: strings.TrimSpace(domain)}
	var err error
	if ok {
		p.Seqno, err = strconv.ParseInt(seq, 10, 64)
	}
	if !ok || err != nil || p.validate() != nil || strings.ContainsAny(p.DomainID, " \t") {
		return p, fmt.Errorf("%q is not a Galera position uuid:seqno", s)
	}
	return p, nil
}

func (p GaleraPosition) validate() error {
	if len(p.UUID) != 36 || strings.Count(p.UUID, "-") != 4 || strings.Trim(strings.ToLower(p.UUID), "0123456789abcdef-") != "" || p.Seqno < -1 {
		return fmt.Errorf("positions: galera: %q is not a cluster position", p.String())
	}
	return nil
}

// PrimaryPosition is a replica's position in its primaries' history, as
// mariabackup --slave-info records it (xtrabackup_slave_info), or as a
// logical backup reads it under its lock, with the identity of each
// primary as SHOW ALL SLAVES STATUS named it.
type PrimaryPosition struct {
	// GTID is the replica's @@gtid_slave_pos: what it had applied, over
	// all its connections. Empty when no connection replicates by GTID
	// (mariabackup then records file and position only).
	GTID string `json:"gtid,omitempty"`
	// Connections are the replica's replication connections, in the
	// order SHOW ALL SLAVES STATUS lists them.
	Connections []PrimaryConnection `json:"connections"`
}

// PrimaryConnection is one replication connection of a replica: whom it
// replicates from, and how far it had applied.
type PrimaryConnection struct {
	// Name is the multi-source connection name; "" is the default one.
	Name string `json:"name,omitempty"`
	// Host and Port are the primary as the replica reached it
	// (Master_Host, Master_Port).
	Host string `json:"host"`
	Port int    `json:"port"`
	// ServerID is the primary's @@server_id as the replica saw it
	// (Master_Server_Id); 0 when its IO thread had not connected since
	// the replica started.
	ServerID uint32 `json:"server_id,omitempty"`
	// UsingGTID is the connection's Using_Gtid: "No", "Slave_Pos" or
	// "Current_Pos".
	UsingGTID string `json:"using_gtid,omitempty"`
	// BinlogFile and BinlogPosition are the primary's coordinates of the
	// last event applied (Relay_Master_Log_File, Exec_Master_Log_Pos).
	// mariabackup records them only for a connection that does not
	// replicate by GTID; a logical backup for every connection.
	BinlogFile     string `json:"binlog_file,omitempty"`
	BinlogPosition uint64 `json:"binlog_position,omitempty"`
}

// Connection returns the connection named name, or nil.
func (p *PrimaryPosition) Connection(name string) *PrimaryConnection {
	if p == nil {
		return nil
	}
	for i := range p.Connections {
		if p.Connections[i].Name == name {
			return &p.Connections[i]
		}
	}
	return nil
}

// Object is a stored object of the backup, named relative to the backup's
// directory in the repository.
type Object struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Digest string `json:"digest"`
}

// StorageDedup is Manifest.Storage for a backup whose streams are stored
// as blocks (package dedup).
const StorageDedup = "dedup"

// Stream is one stream object: a concatenation of frames that decodes to a
// complete xbstream.
type Stream struct {
	Object
	Frames  int    `json:"frames"`
	RawSize int64  `json:"raw_size"`
	Index   Object `json:"index,omitzero"`
	// Stored, when set, is what the stream added to the repository where
	// that is not its Size: in a deduplicating one, its new blocks, their
	// index and its recipe.
	Stored int64 `json:"stored,omitempty"`
}

// File is one file of the backup as it stands at the end of the stream.
// Digest is empty when the file was not written front to back (seeks,
// rewrites), where a running digest of its content cannot be kept.
// Frames lists the frames of its stream that hold its chunks, so that a
// partial read fetches those alone (see ReadOptions.Only); it is empty in
// backups written before it existed and for every file of a stream that
// removed or renamed a path, whose files a partial read takes whole.
type File struct {
	Path   string       `json:"path"`
	Size   int64        `json:"size"`
	Digest string       `json:"digest,omitempty"`
	Stream int          `json:"stream"`
	Frames []FrameRange `json:"frames,omitempty"`
}

// FrameRange is a run of frames of one stream, first and last included.
type FrameRange [2]int

// Stats summarise the backup's sizes and what it cost the server.
type Stats struct {
	RawBytes    int64   `json:"raw_bytes"`
	StoredBytes int64   `json:"stored_bytes"`
	Seconds     float64 `json:"seconds"`
	// DDLBlockedSeconds and CommitsBlockedSeconds are how long the backup
	// kept the server from running DDL, and from committing (and writing
	// non-transactional tables), under BACKUP STAGE BLOCK_DDL and
	// BLOCK_COMMIT, or FLUSH TABLES WITH READ LOCK: what its writers
	// waited for it at most. Absent in backups made before they were
	// recorded, and in merged ones.
	DDLBlockedSeconds     float64 `json:"ddl_blocked_seconds,omitempty"`
	CommitsBlockedSeconds float64 `json:"commits_blocked_seconds,omitempty"`
}

// Complete fills in what a writer made (streams, files, barriers and the
// sizes they add up to) and the finishing time: the last step before the
// manifest is committed.
func (m *Manifest) Complete(written Result) {
	m.Streams, m.Files, m.Barriers, m.FileHash = written.Streams, written.Files, written.Barriers, written.FileHash
	m.Stats.RawBytes, m.Stats.StoredBytes = 0, 0
	for _, s := range written.Streams {
		m.Stats.RawBytes += s.RawSize
		m.Stats.StoredBytes += cmp.Or(s.Stored, s.Size)
	}
	m.Finished = time.Now().UTC()
	m.Stats.Seconds = m.Finished.Sub(m.Started).Seconds()
}

// FileDigests is the algorithm of the files' digests.
func (m *Manifest) FileDigests() string { return cmp.Or(m.FileHash, m.Hash) }

// CompareFinished orders complete backups as they became complete: by
// their finishing time, then their start, then id. Ids alone, whose time
// is to the second, do not order backups made within one second. A
// merged backup, which takes the times of the chain it was merged from,
// comes after that chain's links: it is the newer copy of the same state
// (latest, new incrementals and retention prefer it).
func CompareFinished(a, b *Manifest) int {
	if c := a.Finished.Compare(b.Finished); c != 0 {
		return c
	}
	if c := a.Started.Compare(b.Started); c != 0 {
		return c
	}
	switch {
	case slices.Contains(a.MergedFrom, b.ID):
		return 1
	case slices.Contains(b.MergedFrom, a.ID):
		return -1
	}
	return strings.Compare(a.ID, b.ID)
}

// Marshal encodes the manifest as indented JSON, sealed with its
// checksum: the SHA-256 of these very bytes with the checksum's hex
// replaced by zeros. Hashing the bytes as stored, rather than a canonical
// re-encoding, makes any change to the file (a flipped digit of an LSN
// that still parses) damage, keeps fields a later version adds covered,
// and lets anyone check it with standard tools. m.Checksum is set to it.
func (m *Manifest) Marshal() ([]byte, error) {
	sealed := *m
	sealed.Checksum = checksumAlg + ":" + strings.Repeat("0", sha256.Size*2)
	if sealed.Contents != nil {
		sealed.Files, sealed.Tables, sealed.Barriers = nil, nil, nil
	}
	b, err := json.MarshalIndent(&sealed, "", "  ")
	if err != nil {
		return nil, err
	}
	at := checksumField.FindSubmatchIndex(b)
	if at == nil {
		return nil, fmt.Errorf("manifest %s: encoded without its checksum first", m.ID)
	}
	sum := sha256.Sum256(b)
	hex.Encode(b[at[2]:at[3]], sum[:])
	m.Checksum = checksumAlg + ":" + string(b[at[2]:at[3]])
	return b, nil
}

// checksumAlg is the only algorithm of the manifest checksum. SHA-256,
// not the backup's own hash: the manifest is small, and sha256sum is on
// every machine.
const checksumAlg = "sha256"

// checksumField finds the checksum as Marshal writes it: the first member
// of the object; the submatch is its hex.
var checksumField = regexp.MustCompile(`^\{\s*"checksum"\s*:\s*"sha256:([0-9a-f]{64})"`)

// verifyChecksum checks b, a manifest whose decoded checksum is sum,
// against its checksum. A manifest without one (written before
// checksums) is accepted unchecked.
func verifyChecksum(b []byte, sum string) error {
	if sum == "" {
		return nil
	}
	at := checksumField.FindSubmatchIndex(b)
	if at == nil || checksumAlg+":"+string(b[at[2]:at[3]]) != sum {
		return fmt.Errorf("checksum %q is not a sha256 digest in the first field", sum)
	}
	zeroed := bytes.Clone(b)
	copy(zeroed[at[2]:at[3]], strings.Repeat("0", sha256.Size*2))
	got := sha256.Sum256(zeroed)
	if hex.EncodeToString(got[:]) != string(b[at[2]:at[3]]) {
		return fmt.Errorf("checksum mismatch: the file hashes to sha256:%x, its checksum field says %s", got, sum)
	}
	return nil
}

// ParseManifest decodes and validates a manifest. Everything a reader later
// trusts (names, indexes, digests, positions) is checked here, so a damaged
// or forged manifest fails with a clear message instead of misdirecting a
// restore.
func ParseManifest(b []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("manifest: trailing data after the JSON object")
	}
	if err := verifyChecksum(b, m.Checksum); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", m.ID, err)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", m.ID, err)
	}
	return &m, nil
}

func (m *Manifest) validate() error {
	if m.Format != FormatVersion && m.Format != ContentsFormat {
		return fmt.Errorf("format version %d is not supported (this backstream reads versions %d and %d)", m.Format, FormatVersion, ContentsFormat)
	}
	if apart := m.Contents != nil; apart != (m.Format == ContentsFormat) {
		where := "inline"
		if apart {
			where = "apart"
		}
		return fmt.Errorf("format version %d with its contents %s", m.Format, where)
	}
	if m.ID == "" {
		return fmt.Errorf("no backup id")
	}
	if m.Kind != KindPhysical && m.Kind != KindLogical && m.Kind != KindBinlog {
		return fmt.Errorf("unknown kind %q", m.Kind)
	}
	if _, err := NewHash(m.Hash); err != nil {
		return err
	}
	if m.FileHash != "" && m.FileHash != HashXXH3 {
		return fmt.Errorf("unknown algorithm %q of the files' digests (known: %s)", m.FileHash, HashXXH3)
	}
	if len(m.Streams) == 0 {
		return fmt.Errorf("no streams")
	}
	for i, s := range m.Streams {
		if err := s.Object.validate(); err != nil {
			return fmt.Errorf("stream %d: %w", i, err)
		}
		// A manifest in transit (sent to a receiver) has no indexes yet:
		// they belong to the repository that stores the streams.
		if s.Index != (Object{}) {
			if err := s.Index.validate(); err != nil {
				return fmt.Errorf("stream %d index: %w", i, err)
			}
		}
		if s.Frames < 0 || s.RawSize < 0 {
			return fmt.Errorf("stream %d: negative counts", i)
		}
	}
	if m.Contents != nil {
		if len(m.Files) > 0 || len(m.Tables) > 0 || len(m.Barriers) > 0 {
			return fmt.Errorf("contents both inline and in %s", ContentsName)
		}
		if !slices.ContainsFunc(m.Meta, func(o Object) bool { return o.Name == ContentsName }) {
			return fmt.Errorf("contents stored apart, but meta lists no %s", ContentsName)
		}
	} else if err := m.validateContents(); err != nil {
		return err
	}
	for _, o := range m.Meta {
		if err := o.validate(); err != nil {
			return fmt.Errorf("meta: %w", err)
		}
	}
	if g := m.Positions.Galera; g != nil {
		if err := g.validate(); err != nil {
			return err
		}
	}
	if p := m.Positions.Primary; p != nil {
		if len(p.Connections) == 0 {
			return fmt.Errorf("positions: a primary position without replication connections")
		}
		seen := map[string]bool{}
		for _, c := range p.Connections {
			if seen[c.Name] {
				return fmt.Errorf("positions: replication connection %q listed twice", c.Name)
			}
			seen[c.Name] = true
		}
	}
	return nil
}

// validateContents checks the files and barriers against the streams.
func (m *Manifest) validateContents() error {
	for _, f := range m.Files {
		if f.Stream < 0 || f.Stream >= len(m.Streams) {
			return fmt.Errorf("file %q: stream %d out of range", f.Path, f.Stream)
		}
		if f.Digest != "" {
			alg, err := parseDigest(f.Digest, newDigestHash)
			if err != nil {
				return fmt.Errorf("file %q: %w", f.Path, err)
			}
			if alg != m.FileDigests() {
				return fmt.Errorf("file %q: a digest of %s, where the manifest's files are hashed with %s", f.Path, alg, m.FileDigests())
			}
		}
		if err := checkFrameRanges(f.Frames, m.Streams[f.Stream].Frames); err != nil {
			return fmt.Errorf("file %q: %w", f.Path, err)
		}
	}
	for i, b := range m.Barriers {
		if len(b.Frames) != len(m.Streams) || b.Stream < 0 || b.Stream >= len(m.Streams) || b.Path == "" {
			return fmt.Errorf("barrier %d: malformed", i)
		}
		for j, f := range b.Frames {
			if f < 0 || f > m.Streams[j].Frames || (j == b.Stream && f >= m.Streams[j].Frames) {
				return fmt.Errorf("barrier %d: frame %d of stream %d out of range", i, f, j)
			}
			if i > 0 && f < m.Barriers[i-1].Frames[j] {
				return fmt.Errorf("barrier %d: out of order", i)
			}
		}
	}
	return nil
}

// checkFrameRanges checks a file's frame ranges against its stream's
// frame count: each within it, in order, none touching the next (the
// writer joins adjacent runs).
func checkFrameRanges(rs []FrameRange, frames int) error {
	next := 0
	for i, r := range rs {
		if r[0] < next || r[1] < r[0] || r[1] >= frames || i > 0 && r[0] == next {
			return fmt.Errorf("frame range %d (%d-%d) is out of order or outside the stream's %d frames", i, r[0], r[1], frames)
		}
		next = r[1] + 1
	}
	return nil
}

func (o Object) validate() error {
	if o.Name == "" || path.IsAbs(o.Name) || path.Clean(o.Name) != o.Name || o.Name == ".." || len(o.Name) > 2 && o.Name[:3] == "../" {
		return fmt.Errorf("bad object name %q", o.Name)
	}
	if o.Size < 0 {
		return fmt.Errorf("object %s: negative size", o.Name)
	}
	if _, err := digestAlg(o.Digest); err != nil {
		return fmt.Errorf("object %s: %w", o.Name, err)
	}
	return nil
}

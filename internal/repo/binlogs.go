package repo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
)

// binlogsDir holds archived binary logs: binlogs/<source>/<file>/, each
// directory laid out like a backup's (stream object, index, manifest last).
const binlogsDir = "binlogs"

// BinlogDir is the directory of one archived binary log file.
func BinlogDir(source, name string) string { return binlogsDir + "/" + source + "/" + name }

// BinlogOutput is where the stream of an archived binary log file goes.
func (r *Repo) BinlogOutput(source, name, hash string) archive.Output {
	return archive.BackendOutput{Backend: r.Backend, Dir: BinlogDir(source, name), Hash: hash}
}

// BinlogInput reads the stream of the archived binary log file m.
func (r *Repo) BinlogInput(m *archive.Manifest) archive.Input {
	return archive.BackendInput{Backend: r.objects(m), Dir: BinlogDir(m.Binlog.Source, m.Binlog.Name)}
}

// CommitBinlog stores the manifest of an archived binary log file, last.
func (r *Repo) CommitBinlog(ctx context.Context, m *archive.Manifest) error {
	if m.Binlog == nil {
		return fmt.Errorf("binlog manifest %s without binlog details", m.ID)
	}
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	if _, err := archive.ParseManifest(data); err != nil {
		return fmt.Errorf("binlog %s: refusing to commit an invalid manifest: %w", m.Binlog.Name, err)
	}
	_, err = r.Backend.Put(ctx, BinlogDir(m.Binlog.Source, m.Binlog.Name)+"/"+ManifestName, bytes.NewReader(data))
	return err
}

// BinlogEntry is an archived binary log file, known by its directory:
// its manifest, or why the manifest, which is stored, cannot be trusted.
type BinlogEntry struct {
	Source, Name string
	Manifest     *archive.Manifest // nil when damaged
	// Damage, when not nil, says why the file's manifest cannot be
	// trusted (truncated, not JSON, failing its checksum, naming another
	// file); archive.IsCorrupt holds for it. It affects only this file.
	Damage error
	Size   int64 // bytes stored under its directory
}

// Binlogs lists the archived binary log files, by source and name.
// Directories without a manifest (an interrupted archiving) are left out;
// a damaged manifest marks its own entry (Damage) and nothing else; a
// manifest the backend cannot read is an error naming it.
func (r *Repo) Binlogs(ctx context.Context) ([]BinlogEntry, error) {
	objs, err := r.Backend.List(ctx, binlogsDir+"/")
	if err != nil {
		return nil, fmt.Errorf("%s: list binlogs: %w", r.Backend.Location(), err)
	}
	sizes := map[string]int64{}
	for _, o := range objs {
		if parts := strings.SplitN(o.Name, "/", 4); len(parts) == 4 {
			sizes[strings.Join(parts[:3], "/")] += o.Size
		}
	}
	var out []BinlogEntry
	for _, o := range objs {
		dir, ok := strings.CutSuffix(o.Name, "/"+ManifestName)
		if !ok || strings.Count(dir, "/") != 2 {
			continue
		}
		_, rest, _ := strings.Cut(dir, "/")
		source, name, _ := strings.Cut(rest, "/")
		e := BinlogEntry{Source: source, Name: name, Size: sizes[dir]}
		e.Manifest, err = r.readBinlogManifest(ctx, source, name)
		switch {
		case archive.IsCorrupt(err):
			e.Manifest, e.Damage = nil, err
		case err != nil:
			return nil, err
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		return a.Name < b.Name
	})
	return out, nil
}

// BinlogNames lists the archived binary log files by source and name,
// as Binlogs does, from one listing, without reading their manifests.
func (r *Repo) BinlogNames(ctx context.Context) ([]BinlogEntry, error) {
	objs, err := r.Backend.List(ctx, binlogsDir+"/")
	if err != nil {
		return nil, fmt.Errorf("%s: list binlogs: %w", r.Backend.Location(), err)
	}
	var out []BinlogEntry
	for _, o := range objs {
		dir, ok := strings.CutSuffix(o.Name, "/"+ManifestName)
		if !ok || strings.Count(dir, "/") != 2 {
			continue
		}
		_, rest, _ := strings.Cut(dir, "/")
		source, name, _ := strings.Cut(rest, "/")
		out = append(out, BinlogEntry{Source: source, Name: name})
	}
	return out, nil
}

// readBinlogManifest reads and parses the manifest of the archived binary
// log file name of source. A manifest that is stored but cannot be
// trusted is damage naming the object; a backend failure is returned as
// it is.
func (r *Repo) readBinlogManifest(ctx context.Context, source, name string) (*archive.Manifest, error) {
	object := BinlogDir(source, name) + "/" + ManifestName
	rc, err := r.Backend.Open(ctx, object, 0, -1)
	if err != nil {
		return nil, fmt.Errorf("binlog %s/%s: %w", source, name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxBinlogManifest+1))
	if err != nil {
		return nil, fmt.Errorf("binlog %s/%s: read %s: %w", source, name, object, err)
	}
	if len(data) > maxBinlogManifest {
		return nil, archive.Corruptf("binlog %s/%s: %s is damaged: larger than %d bytes", source, name, object, maxBinlogManifest)
	}
	m, err := archive.ParseManifest(data)
	if err != nil {
		return nil, archive.Corruptf("binlog %s/%s: %s is damaged: %v", source, name, object, err)
	}
	if m.Kind != archive.KindBinlog || m.Binlog == nil || m.Binlog.Source != source || m.Binlog.Name != name {
		return nil, archive.Corruptf("binlog %s/%s: %s is damaged: not the manifest of the binary log kept there", source, name, object)
	}
	return m, nil
}

// maxBinlogManifest is the largest binary log manifest read: one stream
// and one file, with the stream's frame index stored beside it.
const maxBinlogManifest = 16 << 20

// RemoveBinlog deletes an archived binary log file, its manifest first.
func (r *Repo) RemoveBinlog(ctx context.Context, source, name string) error {
	dir := BinlogDir(source, name)
	if err := r.Backend.Delete(ctx, dir+"/"+ManifestName); err != nil {
		return fmt.Errorf("binlog %s/%s: %w", source, name, err)
	}
	objs, err := r.Backend.List(ctx, dir+"/")
	if err != nil {
		return fmt.Errorf("binlog %s/%s: %w", source, name, err)
	}
	for _, o := range objs {
		if err := r.Backend.Delete(ctx, o.Name); err != nil {
			return fmt.Errorf("binlog %s/%s: %w", source, name, err)
		}
	}
	return nil
}

// CheckBinlogReadable does for an archived binary log file what
// CheckReadable does for a backup.
func (r *Repo) CheckBinlogReadable(ctx context.Context, m *archive.Manifest) error {
	if err := r.checkReadable(ctx, BinlogDir(m.Binlog.Source, m.Binlog.Name), m); err != nil {
		return fmt.Errorf("binary log %s of %s is encrypted (%s, for %s): %w", m.Binlog.Name, m.Binlog.Source,
			m.Encryption.Scheme, strings.Join(m.Encryption.Recipients, ", "), err)
	}
	return nil
}

// BinlogSegment is one stored segment object of a binary log file that was
// being written when it was stored: binlogs/<source>/<file>/segments/
// <start>-<end>.seg, bytes [Start, End) of the file, offsets in 12
// digits so that names sort by them. The object's content (a header line,
// then the bytes) is package binlog's; the name alone says which bytes it
// holds, so a restore can check they are contiguous from a listing.
type BinlogSegment struct {
	Source, Name string
	Start, End   int64
	Size         int64 // bytes stored
}

// segmentsDir holds a file's segments.
const segmentsDir = "segments"

// Object is the segment's object name.
func (s BinlogSegment) Object() string {
	return fmt.Sprintf("%s/%s/%012d-%012d.seg", BinlogDir(s.Source, s.Name), segmentsDir, s.Start, s.End)
}

// PutBinlogSegment stores a segment object, encrypted when the repository
// encrypts what it stores.
func (r *Repo) PutBinlogSegment(ctx context.Context, s BinlogSegment, content io.Reader) error {
	if _, err := r.Backend.Put(ctx, s.Object(), content); err != nil {
		return fmt.Errorf("binlog %s/%s: %w", s.Source, s.Name, err)
	}
	return nil
}

// OpenBinlogSegment reads a segment object; a missing one is damage.
func (r *Repo) OpenBinlogSegment(ctx context.Context, s BinlogSegment) (io.ReadCloser, error) {
	rc, err := r.Backend.Open(ctx, s.Object(), 0, -1)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, archive.Corruptf("binlog %s/%s: segment %s is missing: %v", s.Source, s.Name, s.Object(), err)
	}
	if err != nil {
		return nil, fmt.Errorf("binlog %s/%s: %w", s.Source, s.Name, err)
	}
	return rc, nil
}

// BinlogSegments lists the segment objects of source's files (of every
// source's when source is ""), by source, file name, then start and end.
func (r *Repo) BinlogSegments(ctx context.Context, source string) ([]BinlogSegment, error) {
	prefix := binlogsDir + "/"
	if source != "" {
		prefix += source + "/"
	}
	return r.listSegments(ctx, source, prefix)
}

// BinlogFileSegments lists the segment objects of source's file name, by
// start and end: one folder, not every object of the source.
func (r *Repo) BinlogFileSegments(ctx context.Context, source, name string) ([]BinlogSegment, error) {
	return r.listSegments(ctx, source, binlogsDir+"/"+source+"/"+name+"/"+segmentsDir+"/")
}

// listSegments lists the segments under prefix, of source ("" when the
// prefix covers every source, which the names then give).
func (r *Repo) listSegments(ctx context.Context, source, prefix string) ([]BinlogSegment, error) {
	objs, err := r.Backend.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("%s: list binlogs of %s: %w", r.Backend.Location(), source, err)
	}
	var out []BinlogSegment
	for _, o := range objs {
		// <source>/<file>/segments/<start>-<end>.seg
		parts := strings.Split(strings.TrimPrefix(o.Name, binlogsDir+"/"), "/")
		if len(parts) != 4 || parts[2] != segmentsDir || (source != "" && parts[0] != source) {
			continue
		}
		s := BinlogSegment{Source: parts[0], Name: parts[1], Size: o.Size}
		if n, err := fmt.Sscanf(parts[3], "%012d-%012d.seg", &s.Start, &s.End); err != nil || n != 2 || s.Object() != o.Name || s.End <= s.Start {
			continue // not a segment's name
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		return a.End < b.End
	})
	return out, nil
}

// RemoveBinlogSegments deletes the segments of a file, once its whole
// object and manifest are durable.
func (r *Repo) RemoveBinlogSegments(ctx context.Context, segs []BinlogSegment) error {
	for _, s := range segs {
		if err := r.Backend.Delete(ctx, s.Object()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("binlog %s/%s: %w", s.Source, s.Name, err)
		}
	}
	return nil
}

// BinlogGap is a gap marker: binary log files of a source that were never
// archived, and never will be (the server had purged them when archiving
// came back to it). binlogs/<source>/gaps/<before>.json holds it, plain
// JSON even in an encrypted repository (it holds no row data): list
// --binlogs shows it and a point-in-time restore that would cross it is
// refused naming it.
type BinlogGap struct {
	Source string `json:"source"`
	// After is the newest file archived before the gap, Before the
	// oldest the server still had; Missing names the files between.
	After   string `json:"after"`
	Before  string `json:"before"`
	Missing string `json:"missing"`
	// AfterGTID is the last GTID archived (After's last), BeforeGTID the
	// GTID list that starts Before: the transactions between are lost to
	// point-in-time restore.
	AfterGTID  string    `json:"after_gtid,omitempty"`
	BeforeGTID string    `json:"before_gtid,omitempty"`
	Detected   time.Time `json:"detected"`
	Reason     string    `json:"reason"`
	// Allowed is true once a run went on past the gap (--allow-gap).
	Allowed bool `json:"allowed"`
}

// gapsDir holds a source's gap markers.
const gapsDir = "gaps"

// Object is the gap marker's object name.
func (g BinlogGap) Object() string {
	return binlogsDir + "/" + g.Source + "/" + gapsDir + "/" + g.Before + ".json"
}

// PutBinlogGap records a gap marker (again: a later detection of the same
// gap replaces it).
func (r *Repo) PutBinlogGap(ctx context.Context, g BinlogGap) error {
	data, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	if _, err := r.Backend.Put(ctx, g.Object(), bytes.NewReader(append(data, '\n'))); err != nil {
		return fmt.Errorf("binlog %s: record gap before %s: %w", g.Source, g.Before, err)
	}
	return nil
}

// BinlogGaps lists the recorded gaps of every source, by source and
// position. A marker that is not one (unreadable JSON, naming another
// place) is damage naming it.
func (r *Repo) BinlogGaps(ctx context.Context) ([]BinlogGap, error) {
	objs, err := r.Backend.List(ctx, binlogsDir+"/")
	if err != nil {
		return nil, fmt.Errorf("%s: list binlogs: %w", r.Backend.Location(), err)
	}
	var out []BinlogGap
	for _, o := range objs {
		parts := strings.Split(o.Name, "/")
		if len(parts) != 4 || parts[2] != gapsDir || !strings.HasSuffix(parts[3], ".json") {
			continue
		}
		var g BinlogGap
		data, err := r.readSmall(ctx, o.Name)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &g); err != nil {
			return nil, archive.Corruptf("binlog gap marker %s is damaged: %v", o.Name, err)
		}
		if g.Object() != o.Name {
			return nil, archive.Corruptf("binlog gap marker %s is damaged: it names %s instead", o.Name, g.Object())
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Source != out[j].Source {
			return out[i].Source < out[j].Source
		}
		return out[i].Before < out[j].Before
	})
	return out, nil
}

// BinlogStatus is what the last run of binlog on a source saw: how far
// the archive is behind the server. binlogs/<source>/status.json holds it,
// plain JSON, replaced as the run goes on (binlog --follow: every few
// seconds); list --binlogs shows it.
type BinlogStatus struct {
	Source  string    `json:"source"`
	Updated time.Time `json:"updated"`
	// Following is true while binlog --follow writes it.
	Following bool `json:"following"`
	// ServerFile and ServerSize are the server's newest file and its size
	// when Updated; ArchivedFile and ArchivedOffset are how far the
	// repository holds the server's binary log (whole files and segments).
	ServerFile     string `json:"server_file"`
	ServerSize     int64  `json:"server_size"`
	ArchivedFile   string `json:"archived_file"`
	ArchivedOffset int64  `json:"archived_offset"`
	// LagBytes are the bytes of binary log the server had written and the
	// repository did not hold; LagSeconds is how long the archive had not
	// held all of them (0: caught up).
	LagBytes   int64   `json:"lag_bytes"`
	LagSeconds float64 `json:"lag_seconds"`
}

// statusName is a source's status object.
const statusName = "status.json"

func binlogStatusObject(source string) string {
	return binlogsDir + "/" + source + "/" + statusName
}

// PutBinlogStatus replaces the status of s.Source.
func (r *Repo) PutBinlogStatus(ctx context.Context, s BinlogStatus) error {
	return r.putSourceJSON(ctx, s.Source, "status", binlogStatusObject(s.Source), s)
}

// BinlogStatusOf reads the status of source; nil if none was stored.
func (r *Repo) BinlogStatusOf(ctx context.Context, source string) (*BinlogStatus, error) {
	var s BinlogStatus
	if found, err := r.readSourceJSON(ctx, "binlog status", binlogStatusObject(source), &s); !found || err != nil {
		return nil, err
	}
	if s.Source != source {
		return nil, archive.Corruptf("binlog status %s is damaged: it names source %q", binlogStatusObject(source), s.Source)
	}
	return &s, nil
}

// putSourceJSON replaces a source's small JSON object (what: "status",
// "head") with v.
func (r *Repo) putSourceJSON(ctx context.Context, source, what, object string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if _, err := r.Backend.Put(ctx, object, bytes.NewReader(append(data, '\n'))); err != nil {
		return fmt.Errorf("binlog %s: store %s: %w", source, what, err)
	}
	return nil
}

// readSourceJSON reads a source's small JSON object into v; found is
// false when it is not stored. An object that is not JSON is damage
// (what names it: "binlog head").
func (r *Repo) readSourceJSON(ctx context.Context, what, object string, v any) (found bool, err error) {
	data, err := r.readSmall(ctx, object)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return true, archive.Corruptf("%s %s is damaged: %v", what, object, err)
	}
	return true, nil
}

// BinlogHead is the newest thing archived of a source, rewritten after
// each whole file and each segment: binlogs/<source>/head.json, plain
// JSON. A listing shows the objects that are there; the head says what
// must be there, so a lost newest object (which no listing can miss) is
// a broken promise rather than a shorter archive.
type BinlogHead struct {
	Source string `json:"source"`
	// File and End: the archive holds the source's binary log up to byte
	// End of File (Whole: the whole file, End its size).
	File  string `json:"file"`
	End   int64  `json:"end"`
	Whole bool   `json:"whole"`
	// LastGTID and LastTime are the newest archived transaction and event.
	LastGTID string    `json:"last_gtid,omitempty"`
	LastTime time.Time `json:"last_time"`
	Updated  time.Time `json:"updated"`
	// CompleteAt is the last time binlog --follow found the archive
	// holding all the server had written (caught up): no transaction
	// committed between LastTime and CompleteAt is missing from it.
	CompleteAt time.Time `json:"complete_at,omitzero"`
}

// headName is a source's head object.
const headName = "head.json"

// BinlogHeadObject is the head object of source.
func BinlogHeadObject(source string) string {
	return binlogsDir + "/" + source + "/" + headName
}

// PutBinlogHead replaces the head of h.Source.
func (r *Repo) PutBinlogHead(ctx context.Context, h BinlogHead) error {
	return r.putSourceJSON(ctx, h.Source, "head", BinlogHeadObject(h.Source), h)
}

// BinlogHeadOf reads the head of source; nil if none is stored.
func (r *Repo) BinlogHeadOf(ctx context.Context, source string) (*BinlogHead, error) {
	var h BinlogHead
	if found, err := r.readSourceJSON(ctx, "binlog head", BinlogHeadObject(source), &h); !found || err != nil {
		return nil, err
	}
	if h.Source != source || h.File == "" {
		return nil, archive.Corruptf("binlog head %s is damaged: it names source %q, file %q", BinlogHeadObject(source), h.Source, h.File)
	}
	return &h, nil
}

// readSmall reads a small plain object whole (gap markers, status).
func (r *Repo) readSmall(ctx context.Context, object string) ([]byte, error) {
	rc, err := r.Backend.Open(ctx, object, 0, -1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", object, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", object, err)
	}
	return data, nil
}

// BinlogLink says that a source's binary log continues another's: a
// replica promoted after a failover, whose binary log (log_slave_updates)
// holds the old primary's transactions up to GTID and its own after.
// binlogs/<source>/continues.json holds it, plain JSON (no row data),
// written by the first run of binlog on the new source, before its first
// file; a point-in-time restore crosses from Continues's archive, which
// ends at GTID, into Source's, from byte Offset of File on (the first
// event after GTID's transaction). Source's files before File are not
// archived: they hold Continues's history.
type BinlogLink struct {
	Source    string    `json:"source"`
	Continues string    `json:"continues"`
	GTID      string    `json:"gtid"`
	File      string    `json:"file"`
	Offset    int64     `json:"offset"`
	Recorded  time.Time `json:"recorded"`
}

// linkName is a source's link object.
const linkName = "continues.json"

// Object is the link's object name.
func (l BinlogLink) Object() string { return binlogsDir + "/" + l.Source + "/" + linkName }

// PutBinlogLink records a link.
func (r *Repo) PutBinlogLink(ctx context.Context, l BinlogLink) error {
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	if _, err := r.Backend.Put(ctx, l.Object(), bytes.NewReader(append(data, '\n'))); err != nil {
		return fmt.Errorf("binlog %s: record that it continues %s: %w", l.Source, l.Continues, err)
	}
	return nil
}

// BinlogLinks lists the recorded links, by source. A link object that is
// not one is damage naming it.
func (r *Repo) BinlogLinks(ctx context.Context) ([]BinlogLink, error) {
	objs, err := r.Backend.List(ctx, binlogsDir+"/")
	if err != nil {
		return nil, fmt.Errorf("%s: list binlogs: %w", r.Backend.Location(), err)
	}
	var out []BinlogLink
	for _, o := range objs {
		if parts := strings.Split(o.Name, "/"); len(parts) != 3 || parts[2] != linkName {
			continue
		}
		data, err := r.readSmall(ctx, o.Name)
		if err != nil {
			return nil, err
		}
		var l BinlogLink
		err = json.Unmarshal(data, &l)
		switch {
		case err != nil:
			return nil, archive.Corruptf("binlog link %s is damaged: %v", o.Name, err)
		case l.Object() != o.Name:
			return nil, archive.Corruptf("binlog link %s is damaged: it names %s instead", o.Name, l.Object())
		case l.Continues == "":
			return nil, archive.Corruptf("binlog link %s is damaged: it names no source it continues", o.Name)
		case l.File == "":
			return nil, archive.Corruptf("binlog link %s is damaged: it names no file to continue from", o.Name)
		case l.Offset < 4:
			// A binary log file starts with its 4-byte magic.
			return nil, archive.Corruptf("binlog link %s is damaged: offset %d of %s is before the first event", o.Name, l.Offset, l.File)
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out, nil
}

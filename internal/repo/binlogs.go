package repo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

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

// BinlogInput reads the stream of an archived binary log file.
func (r *Repo) BinlogInput(source, name string) archive.Input {
	return archive.BackendInput{Backend: r.Backend, Dir: BinlogDir(source, name)}
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

// Binlogs lists the archived binary log files, by source and name.
// Directories without a manifest (an interrupted archiving) are left out.
func (r *Repo) Binlogs(ctx context.Context) ([]*archive.Manifest, error) {
	objs, err := r.Backend.List(ctx, binlogsDir+"/")
	if err != nil {
		return nil, fmt.Errorf("%s: list binlogs: %w", r.Backend.Location(), err)
	}
	var out []*archive.Manifest
	for _, o := range objs {
		dir, ok := strings.CutSuffix(o.Name, "/"+ManifestName)
		if !ok || strings.Count(dir, "/") != 2 {
			continue
		}
		rc, err := r.Backend.Open(ctx, o.Name, 0, -1)
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(io.LimitReader(rc, 16<<20))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Name, err)
		}
		m, err := archive.ParseManifest(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Name, err)
		}
		if m.Kind != archive.KindBinlog || m.Binlog == nil || BinlogDir(m.Binlog.Source, m.Binlog.Name) != dir {
			return nil, fmt.Errorf("%s: not the manifest of the binary log kept there", o.Name)
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Binlog, out[j].Binlog
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		return a.Name < b.Name
	})
	return out, nil
}

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

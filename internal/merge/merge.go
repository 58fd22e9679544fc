// Package merge builds a synthetic full backup from a chain of physical
// backups (a full and its incrementals) without touching the server they
// came from: the chain is restored and prepared into a work directory,
// and that prepared datadir is stored in the repository as a new full
// backup of the chain's end (archive.Manifest.MergedFrom names the
// chain). A restore of it reads one backup instead of the chain, and the
// chain's links become what retention may drop.
package merge

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/scratch"
)

// Job is one merge of the chain that ends at Backup.
type Job struct {
	Repo     *repo.Repo
	Backup   *archive.Manifest // the chain's newest link
	WorkDir  string            // where the chain is prepared, in a subdirectory of its own that is removed at the end; "" for the process's scratch directory
	Parallel int               // stream objects of the new backup
	Codec    codec.Codec
	Hash     string
	// Encryption of the new backup (nil for none).
	Encryption *archive.Encryption
	Version    string // backstream's, recorded in the manifest
	// Restore says how the chain is prepared (mariabackup, --use-memory,
	// the key file's password, decoders, progress). Its Prepare is set.
	Restore restore.Options
	// ServerDefaults is an option file with the key file's password,
	// read (with the environment: physical.UserFileKey) when Restore
	// lacks it.
	ServerDefaults string
}

// chunkSize is the payload of each chunk the new backup's files are cut
// into, as mariabackup's own stream does.
const chunkSize = 1 << 20

// Merge stores the chain ending at job.Backup as one full backup and
// returns its manifest. Nothing is committed unless every link was
// checked and prepared, and the checkpoints prepare left say so.
func Merge(ctx context.Context, job Job) (*archive.Manifest, error) {
	if job.Restore.FileKey == "" {
		key, err := physical.UserFileKey(job.ServerDefaults)
		if err != nil {
			return nil, err
		}
		job.Restore.FileKey = key
	}
	end := job.Backup
	links, err := chain(ctx, job)
	if err != nil {
		return nil, err
	}
	major, minor, _, err := mariadb.ParseVersion(end.Server.Version)
	if err != nil {
		return nil, fmt.Errorf("backup %s: server version %q: %w", end.ID, end.Server.Version, err)
	}
	bin, err := physical.FindBinary(ctx, job.Restore.Mariabackup, job.Restore.MariadbPath, major, minor, physical.ForBackup)
	if err != nil {
		return nil, err
	}
	if job.WorkDir == "" {
		if job.WorkDir, err = scratch.Dir(); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(job.WorkDir, "backstream-merge-"+end.ID)
	defer os.RemoveAll(dir)
	meta, checkpoints, err := prepare(ctx, job, links, dir)
	if err != nil {
		return nil, err
	}
	id := backupid.New(end.Started)
	header := &archive.Manifest{
		Format: archive.FormatVersion, ID: id, Kind: archive.KindPhysical, Chain: id,
		Started: end.Started, Server: end.Server,
		Tools: archive.Tools{Backstream: job.Version, Mariabackup: bin.Version},
		Codec: job.Codec.String(), Hash: job.Hash, Encryption: job.Encryption,
	}
	for _, l := range links {
		header.MergedFrom = append(header.MergedFrom, l.Manifest.ID)
		for _, w := range l.Manifest.Withheld {
			if !slices.Contains(header.Withheld, w) {
				header.Withheld = append(header.Withheld, w)
			}
		}
	}
	header.Streams = archive.Streams(job.Parallel, job.Codec)
	return archive.WriteTo(ctx, job.Repo, header, func() (*archive.Manifest, error) {
		return store(ctx, job, header, dir, meta, checkpoints)
	})
}

// chain is the chain that ends at job.Backup, refused (a
// *restore.RefusedError) unless it is a chain of physical backups that
// job can store as they are (encrypted, if any link is).
func chain(ctx context.Context, job Job) ([]restore.Link, error) {
	end := job.Backup
	if end.Kind != archive.KindPhysical {
		return nil, &restore.RefusedError{Err: fmt.Errorf("backup %s is a %s backup; only a chain of physical backups merges", end.ID, end.Kind)}
	}
	if end.Parent == "" {
		return nil, &restore.RefusedError{Err: fmt.Errorf("backup %s is a full backup: there is no chain to merge", end.ID)}
	}
	links, err := restore.Links(ctx, job.Repo, end)
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		if l.Manifest.Encryption != nil && job.Encryption == nil {
			return nil, &restore.RefusedError{Err: fmt.Errorf("backup %s of the chain is encrypted: merge it with --encrypt, so that the merged backup is encrypted too", l.Manifest.ID)}
		}
	}
	return links, nil
}

// prepare restores and prepares links in dir and returns the metadata
// the merged backup stores, with the checkpoints that say it is prepared.
func prepare(ctx context.Context, job Job, links []restore.Link, dir string) (map[string][]byte, physical.Checkpoints, error) {
	end := job.Backup
	opt := job.Restore
	// The tablespaces of tables created with DATA DIRECTORY keep their
	// .isl as the chain recorded them: a restore of the merged backup
	// places them as it would the chain's. The work directory is
	// scratch: the merged backup is durable once stored.
	opt.Prepare, opt.KeepLinkFiles, opt.NoGaleraState, opt.DataDirs, opt.Placed, opt.NoSync = true, true, true, nil, nil, true
	if err := restore.Datadir(ctx, restore.Job{Links: links, TargetDir: dir, Options: opt}); err != nil {
		return nil, physical.Checkpoints{}, err
	}
	// The prepared datadir's position files describe the chain's end; the
	// base's copies of what prepare does not rewrite are replaced by the
	// newest link's, which the manifest checks against.
	meta := map[string][]byte{}
	for _, o := range end.Meta {
		name := strings.TrimPrefix(o.Name, "meta/")
		if name == o.Name || strings.Contains(name, "/") || o.Name == physical.LogName || slices.Contains(physical.CheckpointsNames, name) {
			continue
		}
		data, err := job.Repo.ReadMeta(ctx, end, o.Name)
		if err != nil {
			return nil, physical.Checkpoints{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, physical.FileMode); err != nil {
			return nil, physical.Checkpoints{}, fmt.Errorf("merge: %w", err)
		}
		meta[name] = data
	}
	// Prepare leaves the checkpoints of the last increment it applied
	// (to_lsn is where that increment began); every change up to the
	// chain's end is in the pages now. The merged backup says so: an
	// incremental on it starts there (physical.IncrementalLSN).
	lsn := physical.IncrementalLSN(end)
	name, data, err := physical.SetCheckpoints(dir, map[string]uint64{"from_lsn": 0, "to_lsn": lsn, "last_lsn": lsn})
	if err != nil {
		return nil, physical.Checkpoints{}, fmt.Errorf("merge: %w", err)
	}
	checkpoints, err := physical.ParseCheckpoints(data)
	if err != nil {
		return nil, checkpoints, fmt.Errorf("merge: the prepared chain's %s: %w", name, err)
	}
	if !physical.Prepared(checkpoints) {
		return nil, checkpoints, fmt.Errorf("merge: the prepared chain's %s says backup_type %q, not prepared: not merged", name, checkpoints.BackupType)
	}
	meta[name] = data
	return meta, checkpoints, nil
}

// writeFiles writes every file of dir into header's streams.
func writeFiles(ctx context.Context, job Job, header *archive.Manifest, dir string) (archive.Result, error) {
	var counter archive.Counter
	if p := job.Restore.Progress; p != nil {
		p.SetTotal(physical.DatadirSize(dir))
		p.Stage("storing the merged backup")
		counter = p
	}
	w, err := archive.NewWriter(ctx, archive.WriterOptions{
		Output: job.Repo.Output(header.ID, job.Hash), Streams: job.Parallel, Workers: job.Restore.Workers,
		Codec: job.Codec, Hash: job.Hash, Counter: counter,
	})
	if err != nil {
		return archive.Result{}, err
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return w.AddFile(filepath.ToSlash(rel), f, chunkSize)
	})
	if err != nil {
		err = fmt.Errorf("merge: %w", err)
		w.Abort(err)
		return archive.Result{}, err
	}
	return w.Close()
}

// store writes the files of dir as header's backup and commits it.
func store(ctx context.Context, job Job, header *archive.Manifest, dir string, meta map[string][]byte, c physical.Checkpoints) (*archive.Manifest, error) {
	began := time.Now()
	written, err := writeFiles(ctx, job, header, dir)
	if err != nil {
		return nil, err
	}
	m := *header
	e := job.Backup.Positions
	m.Positions = archive.Positions{FromLSN: c.FromLSN, ToLSN: c.ToLSN, LastLSN: c.LastLSN,
		BinlogFile: e.BinlogFile, BinlogPosition: e.BinlogPosition, GTID: e.GTID, Primary: e.Primary, Galera: e.Galera}
	if err := physical.CheckPositions(&m, nil, meta); err != nil {
		return nil, err
	}
	// The chain's end held every table it lists; its prepared datadir
	// must too, or the merged backup would restore without them.
	m.Tables = job.Backup.Tables
	if missing := physical.MissingTableFiles(m.Tables, written.Files); len(missing) > 0 {
		return nil, &physical.MissingTablesError{Tables: missing}
	}
	for _, name := range slices.Sorted(maps.Keys(meta)) {
		o, err := job.Repo.PutMeta(ctx, header.ID, "meta/"+name, meta[name], job.Hash)
		if err != nil {
			return nil, err
		}
		m.Meta = append(m.Meta, o)
	}
	m.Complete(written)
	// The backup is of the chain's end: it finished when that did (a
	// point-in-time restore picks its base by that time); its seconds are
	// the merge's.
	m.Finished, m.Stats.Seconds = job.Backup.Finished, time.Since(began).Seconds()
	if err := job.Repo.Commit(ctx, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

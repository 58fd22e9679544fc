// Package backup takes a backup of a running server into a repository:
// the engine (mariabackup's physical copy, or a consistent logical dump)
// chosen from the request behind one interface, and, for an incremental,
// which backup it builds on and that its positions hold. It takes a typed
// Request and returns a typed Result; it knows nothing of flags, of how
// the result is printed, or of exit codes.
package backup

import (
	"context"
	"io"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/mask"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/refusal"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/toolpath"
)

// Request is one backup to take.
type Request struct {
	// Repo receives the backup; it is opened (and locked) by the caller.
	Repo *repo.Repo
	// Logical chooses the engine: a consistent dump of the tables instead
	// of mariabackup's copy of the datadir.
	Logical bool

	// What both engines take.
	Conn       mariadb.Config
	Parallel   int // streams; mariabackup copy threads or dump connections
	Codec      codec.Codec
	Hash       string
	MaxRate    int64               // bytes per second read from the source; 0 is no bound
	Version    string              // backstream's, for the manifest
	Encryption *archive.Encryption // recorded in the manifest when the repository encrypts
	// Memory, if set, bounds the backup data held at once (--memory).
	Memory *archive.Memory

	Physical PhysicalOptions // used when !Logical
	Dump     DumpOptions     // used when Logical

	// Progress, if set, hears the backup's progress; the caller finishes it.
	Progress *progress.Tracker
	// Given names options given explicitly, for the refusals that name
	// them (see Check).
	Given Given
}

// Given names options given explicitly (on the command line or in an
// option file), the first of each kind, for the refusals that name them;
// "" or false for none.
type Given struct {
	MaxIO  bool   // --max-io, even 0: a logical backup has no such limit
	Mask   bool   // --mask or --mask-key-file
	Dump   string // of the options only a logical backup takes
	Parent string // of --parent, --max-chain, --full-every
}

// Check refuses options that cannot be right or contradict each other:
// the engine's own options given to the other engine.
func (req *Request) Check() error {
	switch {
	case req.Parallel < 1:
		return refusal.New("--parallel must be at least 1")
	case req.Memory != nil && req.Memory.Size() < archive.MinWriterMemory(req.Parallel, 0):
		return refusal.Errorf("--memory is too small for --parallel %d: a backup's frames need at least %d MiB (one being built for each stream, and two more) and get %d MiB (into an object store, half of --memory; the uploads take the rest)",
			req.Parallel, archive.MinWriterMemory(req.Parallel, 0)>>20, req.Memory.Size()>>20)
	case req.Physical.MaxIO < 0:
		return refusal.Errorf("--max-io %d: want a number of I/O operations per second, or 0 for no limit", req.Physical.MaxIO)
	case req.Logical && req.Given.MaxIO:
		return refusal.New("--max-io is mariabackup's I/O limit, for physical backups; bound a logical backup with --max-rate")
	case req.Logical && req.Physical.Checkpoint:
		return refusal.New("--checkpoint is for physical backups: a logical backup reads no redo log")
	case !req.Logical && req.Given.Mask:
		return refusal.New("--mask needs --logical: a physical backup copies the server's files as they are and cannot mask a value (the rules may come from an option file)")
	case !req.Logical && req.Given.Dump != "":
		return refusal.Errorf("--%s needs --logical", req.Given.Dump)
	case req.Logical && req.Physical.Incremental != nil:
		return refusal.New("--incremental is for physical backups; a logical backup is always whole")
	case req.Physical.Incremental == nil && req.Given.Parent != "":
		return refusal.Errorf("--%s needs --incremental", req.Given.Parent)
	case req.Repo != nil && req.Repo.Dedup() && req.Physical.Incremental != nil:
		return refusal.New("--incremental: the repository deduplicates, so every backup is a full one that stores only the blocks it does not hold yet: leave out --incremental")
	}
	return nil
}

// PhysicalOptions are the physical engine's own options.
type PhysicalOptions struct {
	Mariabackup string        // explicit mariabackup path; "" searches MariadbPath, then PATH
	MariadbPath toolpath.Path // searched before PATH for mariabackup
	ExtraArgs   []string      // passed to mariabackup as given
	Log         io.Writer     // optional live copy of mariabackup's stderr
	MaxIO       int           // mariabackup's --throttle; 0 is none
	Checkpoint  bool          // advance the server's redo log checkpoint first
	// Incremental, if set, makes the backup an incremental (or a full
	// one, when the chain policy or the repository says so).
	Incremental *Incremental
}

// Incremental chooses the parent of an incremental backup (see Parent).
type Incremental struct {
	// Parent, if set, names the parent (an id, a prefix of one, or
	// latest); the policy is then not consulted.
	Parent string
	Policy physical.ChainPolicy
	// FullBecause, if set, hears why a full backup is taken instead.
	FullBecause func(why string)
}

// DumpOptions are the logical engine's own options.
type DumpOptions struct {
	Filter               schema.Filter
	Skip                 schema.Skip
	BlockDDL             bool
	ChunkBytes           int64
	VersionedCurrentOnly bool
	Mask                 *mask.Rules // see SetMask
}

// SetMask sets the rules of the --mask specs, keyed with keyFile's
// material when given (see mask.Load); an error is a *mask.Error.
func (o *DumpOptions) SetMask(specs []string, keyFile string) (err error) {
	o.Mask, err = mask.Load(specs, keyFile)
	return err
}

// Result is the backup made.
type Result struct {
	Manifest *archive.Manifest
	// Logical only: what the dump holds, over all its databases.
	Tables int
	Rows   int64
	// NoHistory lists the tables dumped without their history
	// (VersionedCurrentOnly), as db.table; Masked the columns masked as
	// they were dumped, as db.table.column=function.
	NoHistory []string
	Masked    []string
	// Impact is what the backup cost the server (nil when not measured:
	// a Result made of a manifest alone, ResultOf).
	Impact *Impact
}

// Engine takes one backup of a server into the request's repository and
// returns its committed manifest; on failure nothing is committed.
type Engine interface {
	Backup(ctx context.Context, req Request) (*archive.Manifest, error)
}

// EngineFor returns the engine the request asks for.
func EngineFor(req Request) Engine {
	if req.Logical {
		return logicalEngine{}
	}
	return physicalEngine{}
}

// Run takes the backup the request describes, after Check.
func Run(ctx context.Context, req Request) (*Result, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	if req.Repo != nil && req.Repo.Dedup() {
		// The archive hands the block store whole chunks, which it
		// compresses block by block itself; what the store knows of its
		// index takes its share of --memory from the frames'.
		req.Codec = codec.None{}
		if b := req.Repo.BlockIndexBudget(); req.Memory != nil && b > 0 {
			req.Memory = archive.NewMemory(req.Memory.Size() - b)
		}
	}
	probe := mariadb.StartProbe(ctx, req.Conn)
	m, err := EngineFor(req).Backup(ctx, req)
	probed := probe.Stop()
	if err != nil {
		return nil, err
	}
	res := ResultOf(m)
	res.Impact = ImpactOf(m, probed)
	return res, nil
}

// ResultOf describes backup m.
func ResultOf(m *archive.Manifest) *Result {
	r := &Result{Manifest: m}
	for _, d := range m.Databases {
		r.Tables += d.Tables
		r.Rows += d.Rows
		for _, t := range d.NoHistory {
			r.NoHistory = append(r.NoHistory, d.Name+"."+t)
		}
		for _, c := range d.Masked {
			r.Masked = append(r.Masked, d.Name+"."+c)
		}
	}
	return r
}

// PhysicalJob is the physical engine's job for the request, less its
// destination and parent: also what send streams to its receivers.
func PhysicalJob(req Request) physical.BackupJob {
	o := req.Physical
	job := physical.BackupJob{Conn: req.Conn, Mariabackup: o.Mariabackup, MariadbPath: o.MariadbPath, Parallel: req.Parallel,
		Codec: req.Codec, Hash: req.Hash, Memory: req.Memory, ExtraArgs: o.ExtraArgs, Log: o.Log, Version: req.Version, Encryption: req.Encryption,
		MaxRate: req.MaxRate, MaxIO: o.MaxIO, Checkpoint: o.Checkpoint}
	if req.Progress != nil {
		// A nil *Tracker in the interface would not read as none.
		job.Progress = req.Progress
	}
	return job
}

// physicalEngine runs mariabackup (physical.RunBackup).
type physicalEngine struct{}

func (physicalEngine) Backup(ctx context.Context, req Request) (*archive.Manifest, error) {
	job := PhysicalJob(req)
	job.Dest = req.Repo
	if inc := req.Physical.Incremental; inc != nil {
		job.Parent = Parent{Repo: req.Repo, Explicit: inc.Parent, Policy: inc.Policy, FullBecause: inc.FullBecause}.For
	}
	return physical.RunBackup(ctx, job)
}

// logicalEngine dumps the tables (logical.Dump).
type logicalEngine struct{}

func (logicalEngine) Backup(ctx context.Context, req Request) (*archive.Manifest, error) {
	o := req.Dump
	return logical.Dump(ctx, logical.DumpJob{
		DumpOptions: logical.DumpOptions{
			Conn: req.Conn, Parallel: req.Parallel, Filter: o.Filter, Skip: o.Skip,
			BlockDDL: o.BlockDDL, ChunkBytes: o.ChunkBytes, MaxRate: req.MaxRate, VersionedCurrentOnly: o.VersionedCurrentOnly,
			Mask: o.Mask, Progress: req.Progress,
		},
		Dest: req.Repo, Codec: req.Codec, Hash: req.Hash, Memory: req.Memory, Version: req.Version, Encryption: req.Encryption,
	})
}

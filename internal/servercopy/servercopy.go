// Package servercopy copies databases from one running MariaDB server into
// another with nothing staged on disk: one consistent dump of the source
// (logical.DumpSession) loaded into the target as it is made
// (logical.Loading), resumable after an interruption, with the source's
// binary log position recorded on the target, from which the target may
// then replicate (through replica). It must not know flags or exit codes;
// its Result writes its own text (WriteText) and JSON form (JSON).
package servercopy

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/mask"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/refusal"
	"github.com/backstream/backstream/internal/replica"
	"github.com/backstream/backstream/internal/restorecase"
)

// Job is one copy.
type Job struct {
	From, To mariadb.Config
	// Parallel is the number of dump connections, and of loading ones.
	Parallel int
	Filter   schema.Filter
	Skip     schema.Skip
	Rename   map[string]string // source database -> target database
	Definer  string            // rewrite DEFINER clauses to this account ("" keeps them)
	// DropExisting drops the tables the target has, and starts an
	// unfinished copy on it over; Resume continues that copy.
	DropExisting, Resume bool
	NoBinlog             bool // load with sql_log_bin=0
	// Users creates the source's accounts on the target (ReplaceUsers:
	// replacing those it has); without it no account changes.
	Users, ReplaceUsers  bool
	BlockDDL             bool
	VersionedCurrentOnly bool
	ChunkBytes, MaxRate  int64
	// Mask masks the columns its rules name as the source's rows are
	// read, so that their values never reach the target (nil: none).
	Mask *mask.Rules // see SetMask
	// Replicate, if set, is the source as the target reaches it, with a
	// replication account: once the copy is complete the target
	// replicates from it, from the position the copy stands for.
	Replicate *replica.Primary
	// OnServers hears which servers the copy reached, before anything
	// changes.
	OnServers func(source, target Server)
	Progress  *progress.Tracker
}

// SetMask sets the rules of the --mask specs, keyed with keyFile's
// material when given (see mask.Load); an error is a *mask.Error.
func (j *Job) SetMask(specs []string, keyFile string) (err error) {
	j.Mask, err = mask.Load(specs, keyFile)
	return err
}

// SetChoices sets what the copy reads and how it loads, as a logical
// restore's choices say; a refusal is a *restore.RefusedError (see
// restorecase.Choices.Parse).
func (j *Job) SetChoices(c restorecase.Choices) (err error) {
	if j.Filter, j.Rename, err = c.Parse(); err != nil {
		return err
	}
	j.Skip, j.Definer, j.DropExisting, j.Resume, j.NoBinlog = c.Skip, c.Definer, c.DropExisting, c.Resume, c.NoBinlog
	j.Users, j.ReplaceUsers = c.Users, c.ReplaceUsers
	if !c.Users {
		j.Skip.Users = true // the dump need not read what the load will not make
	}
	return nil
}

// Server names a server of the copy.
type Server struct {
	Conn     string `json:"connection"` // how backstream reached it, as mariadb.Config.String says
	Hostname string `json:"hostname"`   // @@hostname
	Port     int    `json:"port"`       // @@port
	Version  string `json:"version"`    // @@version
	ServerID uint32 `json:"server_id"`  // @@server_id
}

func (s Server) String() string {
	return fmt.Sprintf("%s (@@hostname %s, port %d, MariaDB %s)", s.Conn, s.Hostname, s.Port, s.Version)
}

// Result says what a copy did.
type Result struct {
	ID             string
	Source, Target Server
	// Resumed says the copy continued an unfinished one.
	Resumed bool
	// Position is the source's binary log position the copied data stands
	// for: its GTID position (gtid_binlog_pos) and file and offset.
	Position archive.Positions
	Load     *logical.LoadResult
	// Replication is the replication set up (Job.Replicate).
	Replication *replica.Summary
	// Masked lists the columns masked as they were read, as
	// db.table.column=function, sorted.
	Masked []string
}

// Run copies what job picks from job.From into job.To. Before anything
// changes it refuses: a target that is the source itself, a target older
// than the source, an unfinished copy on the target (unless Resume or
// DropExisting), Resume without one or from another source, tables the
// target has (unless DropExisting), and with Replicate a source without a
// binary log or a target that replicates already.
//
// The copy is resumable: each table loaded whole is recorded on the
// target, and a resumed copy takes a new snapshot and keeps such a table
// only if the source holds exactly its rows in that snapshot and the
// target still does (see logical.Loading); the rest it loads again. The target then holds the
// source's tables as of the new snapshot, whose position the copy
// records.
func Run(ctx context.Context, job Job) (*Result, error) {
	if job.Mask != nil && job.Replicate != nil {
		return nil, refusal.New("--replicate with --mask: a replica applies the source's writes as they are, so the values masked in the copy would reach the target unmasked")
	}
	if job.Parallel < 1 {
		job.Parallel = 1
	}
	if job.Progress != nil {
		job.Progress.Stage("checking the servers")
	}
	src, err := mariadb.Open(ctx, job.From, "")
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	defer src.Close()
	dst, err := mariadb.Open(ctx, job.To, "")
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	defer dst.Close()
	res := &Result{}
	srcInfo, dstInfo, err := checkServers(ctx, job, src, dst)
	if err != nil {
		return nil, err
	}
	res.Source, res.Target = describe(job.From, srcInfo), describe(job.To, dstInfo)
	if job.OnServers != nil {
		job.OnServers(res.Source, res.Target)
	}
	earlier, err := unfinished(ctx, dst)
	if err != nil {
		return nil, err
	}
	if res.ID, err = copyID(job, earlier, res.Source); err != nil {
		return nil, err
	}
	res.Resumed = job.Resume

	if job.Progress != nil {
		job.Progress.Stage("reading the schema")
	}
	dump, err := logical.OpenDump(ctx, logical.DumpOptions{
		Conn: job.From, Parallel: job.Parallel, Filter: job.Filter, Skip: job.Skip, BlockDDL: job.BlockDDL,
		VersionedCurrentOnly: job.VersionedCurrentOnly, ChunkBytes: job.ChunkBytes, MaxRate: job.MaxRate, Progress: job.Progress,
		Mask: job.Mask,
	})
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	defer dump.Close()
	ld, err := logical.OpenLoad(ctx, logical.LoadJob{
		Conn: job.To, ID: res.ID, Catalog: dump.Catalog(), Parallel: job.Parallel,
		Filter: job.Filter, Rename: job.Rename, Skip: job.Skip, Definer: job.Definer,
		DropExisting: job.DropExisting, Resume: job.Resume, NoBinlog: job.NoBinlog,
		Users: job.Users, ReplaceUsers: job.ReplaceUsers, Progress: job.Progress,
	})
	if err != nil {
		return nil, err
	}
	defer ld.Close()

	// Everything is checked: from here on the target changes.
	if err := begin(ctx, dst, res.ID, res.Source); err != nil {
		return nil, err
	}
	if err := ld.Prepare(ctx); err != nil {
		return nil, err
	}
	err = ld.LoadFrom(ctx, func(ctx context.Context, out logical.Output) error {
		var err error
		res.Position, err = dump.Run(ctx, out)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, t := range dump.Catalog().Tables {
		for _, m := range t.Masked {
			res.Masked = append(res.Masked, t.Database+"."+t.Table+"."+m.Column+"="+m.Function)
		}
	}
	// The catalog's order is the order tables finished.
	slices.Sort(res.Masked)
	dump.Close() // the snapshot is over: let the source go
	if res.Load, err = ld.Finish(ctx); err != nil {
		return nil, err
	}
	if err := finish(ctx, dst, res.ID, res.Position); err != nil {
		return nil, err
	}
	if job.Replicate != nil {
		if job.Progress != nil {
			job.Progress.Stage("starting replication")
		}
		var opt replica.Options
		startAt(&opt, res.Position, "copy "+res.ID)
		set, err := replica.Setup(ctx, dst, *job.Replicate, opt)
		if err != nil {
			return res, fmt.Errorf("copy %s is complete, but the target does not replicate: %w", res.ID, err)
		}
		res.Replication = replica.Summarize(*job.Replicate, opt, set)
	}
	return res, nil
}

func describe(c mariadb.Config, s *mariadb.Server) Server {
	return Server{Conn: c.String(), Hostname: s.Hostname, Port: s.Port, Version: s.Version, ServerID: s.ServerID}
}

// checkServers refuses what no copy can do: copying a server onto itself,
// or onto an older MariaDB; with Replicate, from a source without a binary
// log or onto a target that replicates already.
func checkServers(ctx context.Context, job Job, src, dst *sql.DB) (*mariadb.Server, *mariadb.Server, error) {
	s, err := mariadb.Inspect(ctx, src)
	if err != nil {
		return nil, nil, fmt.Errorf("source: %w", err)
	}
	d, err := mariadb.Inspect(ctx, dst)
	if err != nil {
		return nil, nil, fmt.Errorf("target: %w", err)
	}
	same, err := sameServer(ctx, src, dst, s, d)
	if err != nil {
		return nil, nil, err
	}
	if same {
		return nil, nil, fmt.Errorf("the source and the target are the same server (@@hostname %s, port %d, datadir %s): a copy onto itself would overwrite what it reads; copy into another server", s.Hostname, s.Port, s.Datadir)
	}
	if err := checkVersions(s, d); err != nil {
		return nil, nil, err
	}
	if job.Replicate == nil {
		return s, d, nil
	}
	if !s.LogBin {
		return nil, nil, fmt.Errorf("--replicate: the source writes no binary log (log_bin is off), so there is no position to replicate from; enable log_bin on the source (and a server_id), or copy without --replicate")
	}
	st, err := replica.ReadStatus(ctx, dst, "")
	if err != nil {
		return nil, nil, fmt.Errorf("target: %w", err)
	}
	if st.Configured && (st.IORunning || st.SQLRunning) {
		return nil, nil, fmt.Errorf("--replicate: the target already replicates from %s:%d (IO thread %s); stop its replication (STOP SLAVE; RESET SLAVE ALL) first, or copy without --replicate", st.MasterHost, st.MasterPort, st.IOState)
	}
	return s, d, nil
}

// checkVersions refuses a target older than the source: MariaDB supports
// no downgrade, and a logical copy into an older server may meet types,
// syntax and defaults it does not know. The same or a newer major.minor
// takes what the source's text protocol gives back exactly, as a logical
// restore across versions does.
func checkVersions(s, d *mariadb.Server) error {
	if !d.AtLeast(s.Major, s.Minor) {
		return fmt.Errorf("the target runs MariaDB %d.%d (%s), older than the source's %d.%d (%s): MariaDB does not support moving data to an older major version, whose server may not know the source's types, syntax and defaults; copy into %d.%d or newer",
			d.Major, d.Minor, d.Version, s.Major, s.Minor, s.Version, s.Major, s.Minor)
	}
	return nil
}

// sameServer tells whether src and dst reach one server: the same
// hostname, port and datadir, or a user lock taken through src that dst
// sees taken (the same server however it is reached: a socket and a TCP
// address, a proxy, a forwarded port).
func sameServer(ctx context.Context, src, dst *sql.DB, s, d *mariadb.Server) (bool, error) {
	if s.Hostname == d.Hostname && s.Port == d.Port && s.Datadir == d.Datadir {
		return true, nil
	}
	var b [8]byte
	rand.Read(b[:])
	name := "backstream-copy-" + hex.EncodeToString(b[:])
	c, err := src.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("source: %w", err)
	}
	defer c.Close()
	var got sql.NullInt64
	if err := c.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", name).Scan(&got); err != nil {
		return false, fmt.Errorf("source: %w", err)
	}
	if got.Int64 != 1 {
		return false, fmt.Errorf("source: GET_LOCK('%s', 0) returned %v: the lock that tells the source from the target could not be taken", name, got)
	}
	defer c.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(?)", name)
	var holder sql.NullInt64
	if err := dst.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", name).Scan(&holder); err != nil {
		return false, fmt.Errorf("target: %w", err)
	}
	return holder.Valid, nil
}

// copyID is the id of the copy: that of the unfinished one the target
// holds, when it is resumed or started over, else a new one. A resumed
// copy must come from the same source.
func copyID(job Job, earlier *record, source Server) (string, error) {
	switch {
	case earlier == nil && job.Resume:
		return "", errors.New("--resume: the target holds no unfinished copy")
	case earlier == nil:
		return "copy-" + backupid.New(time.Now().UTC()), nil
	case !job.Resume && !job.DropExisting:
		return "", fmt.Errorf("the target holds an unfinished copy (%s, from %s, begun %s); --resume continues it, --drop-existing starts over",
			earlier.id, earlier.source, earlier.started.Format(time.RFC3339))
	case job.Resume && earlier.source != sourceName(source):
		return "", fmt.Errorf("--resume: the unfinished copy on the target (%s) is from %s, not from %s; resume it from that source, or start over with --drop-existing",
			earlier.id, earlier.source, sourceName(source))
	}
	return earlier.id, nil
}

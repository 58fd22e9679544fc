package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
)

// skipFlags leave kinds of objects out, of a dump or of a load.
type skipFlags struct{ s schema.Skip }

func (k *skipFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&k.s.Views, "skip-views", false, "leave views out")
	f.BoolVar(&k.s.Triggers, "skip-triggers", false, "leave triggers out")
	f.BoolVar(&k.s.Routines, "skip-routines", false, "leave stored procedures, functions and packages out")
	f.BoolVar(&k.s.Events, "skip-events", false, "leave events out")
	f.BoolVar(&k.s.Users, "skip-users", false, "leave users, roles and grants out")
}

// logicalBackupFlags are backup's options for --logical.
type logicalBackupFlags struct {
	on         bool
	databases  []string
	excludeDBs []string
	tables     []string
	excludeTbl []string
	users      bool
	blockDDL   bool
	chunkSize  string
	skip       skipFlags
}

func (l *logicalBackupFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&l.on, "logical", false, "take a logical backup (a consistent parallel dump) instead of a physical one")
	f.StringSliceVar(&l.databases, "databases", nil, "--logical: only these databases (comma-separated)")
	f.StringSliceVar(&l.excludeDBs, "exclude-databases", nil, "--logical: leave these databases out")
	f.StringSliceVar(&l.tables, "tables", nil, "--logical: only these tables, as db.table (comma-separated)")
	f.StringSliceVar(&l.excludeTbl, "exclude-tables", nil, "--logical: leave these tables out, as db.table")
	f.BoolVar(&l.users, "users", false, "--logical: include users, roles and grants in a dump limited to some databases (a whole-server dump has them by default)")
	f.BoolVar(&l.blockDDL, "block-ddl", false, "--logical: block DDL on the dumped tables while the dump runs, instead of failing when it happens")
	f.StringVar(&l.chunkSize, "chunk-size", "16MiB", "--logical: size at which table data is cut into files")
	l.skip.register(f)
}

// job builds the dump job from the shared backup flags' job and these.
func (l *logicalBackupFlags) job(b physical.BackupJob) (logical.DumpJob, error) {
	chunk, err := progress.ParseBytes(l.chunkSize)
	if err != nil || chunk < 64<<10 {
		return logical.DumpJob{}, usagef("--chunk-size %q: want a size of at least 64KiB, like 16MiB", l.chunkSize)
	}
	skip := l.skip.s
	limited := len(l.databases) > 0 || len(l.tables) > 0
	if limited && !l.users {
		skip.Users = true
	}
	for _, t := range append(append([]string{}, l.tables...), l.excludeTbl...) {
		if db, name, ok := strings.Cut(t, "."); !ok || db == "" || name == "" {
			return logical.DumpJob{}, usagef("table %q: give it as database.table", t)
		}
	}
	return logical.DumpJob{
		Conn: b.Conn, Parallel: b.Parallel, Codec: b.Codec, Hash: b.Hash, Version: b.Version, Encryption: b.Encryption,
		Filter:   schema.Filter{Databases: l.databases, ExcludeDatabases: l.excludeDBs, Tables: l.tables, ExcludeTables: l.excludeTbl},
		Skip:     skip,
		BlockDDL: l.blockDDL, ChunkBytes: chunk, MaxRate: b.MaxRate,
	}, nil
}

func runDump(ctx context.Context, g *globals, r *repo.Repo, job logical.DumpJob) error {
	t := g.tracker("backup --logical", 0)
	job.Progress, job.Dest = t, r
	m, err := logical.Dump(ctx, job)
	t.Finish(err)
	if err != nil {
		return err
	}
	var tables int
	var rows int64
	for _, d := range m.Databases {
		tables += d.Tables
		rows += d.Rows
	}
	fmt.Fprintf(g.stdout, "backup %s complete: logical, %d databases, %d tables, %d rows, %d streams, %s stored\n",
		m.ID, len(m.Databases), tables, rows, len(m.Streams), humanRatio(m))
	return nil
}

// logicalRestoreFlags are restore's options for a logical backup.
type logicalRestoreFlags struct {
	conn         connFlags
	databases    []string
	excludeDBs   []string
	tables       []string
	excludeTbl   []string
	rename       []string
	definer      string
	dropExisting bool
	resume       bool
	noBinlog     bool
	skip         skipFlags
}

func (l *logicalRestoreFlags) register(f *pflag.FlagSet) {
	l.conn.register(f)
	f.StringSliceVar(&l.databases, "database", nil, "logical: load only these databases (repeatable, comma-separated)")
	f.StringSliceVar(&l.excludeDBs, "exclude-database", nil, "logical: leave these databases out")
	f.StringSliceVar(&l.tables, "table", nil, "logical: load only these tables, as db.table")
	f.StringSliceVar(&l.excludeTbl, "exclude-table", nil, "logical: leave these tables out, as db.table")
	f.StringArrayVar(&l.rename, "rename-database", nil, "logical: load database a as b, given as a:b (repeatable)")
	f.StringVar(&l.definer, "definer", "", "logical: make views, triggers, routines and events run as this account (user@host)")
	f.BoolVar(&l.dropExisting, "drop-existing", false, "logical: drop tables the target already has instead of refusing")
	f.BoolVar(&l.resume, "resume", false, "logical: continue an interrupted load of the same backup")
	f.BoolVar(&l.noBinlog, "no-binlog", false, "logical: load with sql_log_bin=0 (nothing reaches the target's replicas)")
	l.skip.register(f)
}

// onlyLogical names the flags that mean something only for a logical load.
func (l *logicalRestoreFlags) onlyLogical() []string {
	return []string{"host", "port", "socket", "user", "password", "database", "exclude-database", "table", "exclude-table",
		"rename-database", "definer", "drop-existing", "resume", "no-binlog", "skip-views", "skip-triggers",
		"skip-routines", "skip-events", "skip-users"}
}

// onlyLogical names the flags that mean something only with --logical.
func (l *logicalBackupFlags) onlyLogical() []string {
	return []string{"databases", "exclude-databases", "tables", "exclude-tables", "users", "block-ddl", "chunk-size",
		"skip-views", "skip-triggers", "skip-routines", "skip-events", "skip-users"}
}

// firstChanged returns the first of names given on the command line.
func firstChanged(f *pflag.FlagSet, names []string) string {
	for _, n := range names {
		if f.Changed(n) {
			return n
		}
	}
	return ""
}

func (l *logicalRestoreFlags) job(f *pflag.FlagSet, parallel int) (logical.LoadJob, error) {
	cfg, err := l.conn.resolve(f)
	if err != nil {
		return logical.LoadJob{}, err
	}
	rename := map[string]string{}
	for _, r := range l.rename {
		from, to, ok := strings.Cut(r, ":")
		if !ok || from == "" || to == "" {
			return logical.LoadJob{}, usagef("--rename-database %q: give it as from:to", r)
		}
		rename[from] = to
	}
	for _, t := range append(append([]string{}, l.tables...), l.excludeTbl...) {
		if db, name, ok := strings.Cut(t, "."); !ok || db == "" || name == "" {
			return logical.LoadJob{}, usagef("table %q: give it as database.table", t)
		}
	}
	if l.resume && l.dropExisting {
		return logical.LoadJob{}, usagef("--resume and --drop-existing contradict each other")
	}
	if parallel <= 0 {
		parallel = defaultParallel()
	}
	return logical.LoadJob{
		Conn: cfg, Parallel: parallel, Rename: rename, Definer: l.definer,
		Filter:       schema.Filter{Databases: l.databases, ExcludeDatabases: l.excludeDBs, Tables: l.tables, ExcludeTables: l.excludeTbl},
		Skip:         l.skip.s,
		DropExisting: l.dropExisting, Resume: l.resume, NoBinlog: l.noBinlog,
	}, nil
}

func runLoad(ctx context.Context, g *globals, r *repo.Repo, m *archive.Manifest, job logical.LoadJob) error {
	t := g.tracker("restore "+m.ID, m.Stats.StoredBytes)
	job.Progress = t
	res, err := restore.Load(ctx, r, m, job)
	t.Finish(err)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "backup %s loaded: %d tables, %d data files, %d rows", m.ID, res.Tables, res.Chunks, res.Rows)
	if res.Skipped > 0 {
		fmt.Fprintf(g.stdout, " (%d data files were loaded before)", res.Skipped)
	}
	fmt.Fprintln(g.stdout)
	for _, a := range res.KeptAccounts {
		fmt.Fprintf(g.stdout, "account %s already exists on the target: kept as it was\n", a)
	}
	return nil
}

package cli

import (
	"errors"
	"strings"

	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mask"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/restorecase"
)

// skipFlags leave kinds of objects out, of a dump or of a load.
type skipFlags struct{ s schema.Skip }

func (k *skipFlags) register(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.Bool("skip-views", &k.s.Views)
	o.Bool("skip-triggers", &k.s.Triggers)
	o.Bool("skip-routines", &k.s.Routines)
	o.Bool("skip-events", &k.s.Events)
	o.Bool("skip-users", &k.s.Users)
}

// maskFlags are --mask and --mask-key-file, of a dump and of a load.
type maskFlags struct {
	specs   []string
	keyFile string
}

func (m *maskFlags) register(f *pflag.FlagSet, when string) {
	options.Bind(f).Strings("mask", &m.specs)
	options.Bind(f).String("mask-key-file", &m.keyFile)
}

// given says mask rules were given (the rules may come from an option
// file).
func (m *maskFlags) given() bool { return len(m.specs) > 0 || m.keyFile != "" }

// rules reads the mask rules and their key; nil without --mask.
func (m *maskFlags) rules() (*mask.Rules, error) {
	if len(m.specs) == 0 {
		if m.keyFile != "" {
			return nil, usagef("--mask-key-file needs --mask")
		}
		return nil, nil
	}
	r, err := mask.Parse(m.specs)
	if err != nil {
		return nil, usageError{err}
	}
	if m.keyFile != "" {
		key, err := mask.ReadKeyFile(m.keyFile)
		if err == nil {
			err = r.SetKey(key)
		}
		if err != nil {
			return nil, usageError{err}
		}
	}
	return r, nil
}

// maskUsage makes a rule that cannot apply (a *mask.Error), and a dump's
// filter that selects nothing (a *logical.FilterError), usage errors.
func maskUsage(err error) error {
	var me *mask.Error
	var fe *logical.FilterError
	if errors.As(err, &me) || errors.As(err, &fe) {
		return usageError{err}
	}
	return err
}

// filterAliases makes the plural names of the filter flags (--databases,
// --exclude-databases, --tables, --exclude-tables) hidden aliases of the
// singular ones, so that backup, restore and copy take the same names and
// old command lines keep working.
func filterAliases(f *pflag.FlagSet) {
	f.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		switch name {
		case "databases", "exclude-databases", "tables", "exclude-tables":
			return pflag.NormalizedName(strings.TrimSuffix(name, "s"))
		}
		return pflag.NormalizedName(name)
	})
}

// logicalBackupFlags are backup's options for --logical.
type logicalBackupFlags struct {
	on          bool
	databases   []string
	excludeDBs  []string
	tables      []string
	excludeTbl  []string
	users       bool
	blockDDL    bool
	chunkSize   int64
	currentOnly bool
	skip        skipFlags
	mask        maskFlags
}

func (l *logicalBackupFlags) register(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.Bool("logical", &l.on)
	o.Strings("database", &l.databases)
	o.Strings("exclude-database", &l.excludeDBs)
	o.Strings("table", &l.tables)
	o.Strings("exclude-table", &l.excludeTbl)
	filterAliases(f)
	o.Bool("users", &l.users)
	o.Bool("block-ddl", &l.blockDDL)
	o.Size("chunk-size", &l.chunkSize, minChunk)
	o.Bool("versioned-current-only", &l.currentOnly)
	l.skip.register(f)
	l.mask.register(f, "as it is dumped, so that the repository never holds it")
}

// options checks the flags and builds the dump's own options.
func (l *logicalBackupFlags) options() (backup.DumpOptions, error) {
	skip := l.skip.s
	limited := len(l.databases) > 0 || len(l.tables) > 0
	if limited && !l.users {
		skip.Users = true
	}
	filter := schema.Filter{Databases: l.databases, ExcludeDatabases: l.excludeDBs, Tables: l.tables, ExcludeTables: l.excludeTbl}
	if err := filter.CheckNames(); err != nil {
		return backup.DumpOptions{}, usageError{err}
	}
	masks, err := l.mask.rules()
	if err != nil {
		return backup.DumpOptions{}, err
	}
	return backup.DumpOptions{
		Filter:   filter,
		Skip:     skip,
		BlockDDL: l.blockDDL, ChunkBytes: l.chunkSize, VersionedCurrentOnly: l.currentOnly, Mask: masks,
	}, nil
}

// loadChoices are what a logical load takes and how: restore's of a
// backup, copy's of a server. Each command registers the flags in its
// own words; parse checks them the same way.
type loadChoices struct {
	databases    []string
	excludeDBs   []string
	tables       []string
	excludeTbl   []string
	rename       []string
	definer      string
	dropExisting bool
	resume       bool
	noBinlog     bool
	users        bool
	replaceUsers bool
	skip         skipFlags
	mask         maskFlags
}

// choices are the choices as the use case takes them.
func (c *loadChoices) choices() restorecase.Choices {
	return restorecase.Choices{Databases: c.databases, ExcludeDatabases: c.excludeDBs, Tables: c.tables, ExcludeTables: c.excludeTbl,
		Rename: c.rename, Definer: c.definer, DropExisting: c.dropExisting, Resume: c.resume, NoBinlog: c.noBinlog,
		Users: c.users, ReplaceUsers: c.replaceUsers, Skip: c.skip.s}
}

// parse checks the choices and returns the filter and the renaming
// (source database to target database).
func (c *loadChoices) parse() (schema.Filter, map[string]string, error) {
	ch := c.choices()
	filter, rename, err := ch.Parse()
	return filter, rename, refused(err)
}

// logicalRestoreFlags are restore's options for a logical backup.
type logicalRestoreFlags struct {
	conn connFlags
	loadChoices
	asJSON bool
}

func (l *logicalRestoreFlags) register(f *pflag.FlagSet) {
	l.conn.register(f)
	o := options.Bind(f)
	o.Strings("database", &l.databases)
	o.Strings("exclude-database", &l.excludeDBs)
	o.Strings("table", &l.tables)
	o.Strings("exclude-table", &l.excludeTbl)
	filterAliases(f)
	o.Bool("users", &l.users)
	o.Bool("replace-users", &l.replaceUsers)
	o.Bool("json", &l.asJSON)
	o.Strings("rename-database", &l.rename)
	o.String("definer", &l.definer)
	o.Bool("drop-existing", &l.dropExisting)
	o.Bool("resume", &l.resume)
	o.Bool("no-binlog", &l.noBinlog)
	l.skip.register(f)
	l.mask.register(f, "as it is loaded (names as in the backup), so that the target never holds it")
}

// onlyLogical names the flags that mean something only for a logical load.
func (l *logicalRestoreFlags) onlyLogical() []string {
	return append([]string{"host", "port", "socket", "user", "password", "database", "exclude-database", "table", "exclude-table",
		"rename-database", "definer", "drop-existing", "resume", "no-binlog", "users", "replace-users", "json", "skip-views", "skip-triggers",
		"skip-routines", "skip-events", "skip-users"}, tlsFlagNames...)
}

// onlyLogical names the flags that mean something only with --logical.
func (l *logicalBackupFlags) onlyLogical() []string {
	return []string{"database", "exclude-database", "table", "exclude-table", "users", "block-ddl", "chunk-size", "versioned-current-only",
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

package cli

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/restorecase"
)

// registerSkip binds the flags that leave kinds of objects out, of a dump
// or of a load, to the fields of the use case's Skip.
func registerSkip(f *pflag.FlagSet, views, triggers, routines, events, users *bool) {
	o := options.Bind(f)
	o.Bool("skip-views", views)
	o.Bool("skip-triggers", triggers)
	o.Bool("skip-routines", routines)
	o.Bool("skip-events", events)
	o.Bool("skip-users", users)
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

// set hands the mask rules and their key to the use case's setter, which
// reads them (and refuses a key without rules); nothing without either.
func (m *maskFlags) set(setter func(specs []string, keyFile string) error) error {
	if !m.given() {
		return nil
	}
	if err := setter(m.specs, m.keyFile); err != nil {
		return usageError{err}
	}
	return nil
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
	on    bool
	users bool
	dump  backup.DumpOptions // the flags' values, as given
	mask  maskFlags
}

func (l *logicalBackupFlags) register(f *pflag.FlagSet) {
	o, d := options.Bind(f), &l.dump
	o.Bool("logical", &l.on)
	o.Strings("database", &d.Filter.Databases)
	o.Strings("exclude-database", &d.Filter.ExcludeDatabases)
	o.Strings("table", &d.Filter.Tables)
	o.Strings("exclude-table", &d.Filter.ExcludeTables)
	filterAliases(f)
	o.Bool("users", &l.users)
	o.Bool("block-ddl", &d.BlockDDL)
	o.Size("chunk-size", &d.ChunkBytes, minChunk)
	o.Bool("versioned-current-only", &d.VersionedCurrentOnly)
	registerSkip(f, &d.Skip.Views, &d.Skip.Triggers, &d.Skip.Routines, &d.Skip.Events, &d.Skip.Users)
	l.mask.register(f, "as it is dumped, so that the repository never holds it")
}

// options checks the flags and builds the dump's own options.
func (l *logicalBackupFlags) options() (backup.DumpOptions, error) {
	o := l.dump
	limited := len(o.Filter.Databases) > 0 || len(o.Filter.Tables) > 0
	if limited && !l.users {
		o.Skip.Users = true
	}
	if err := o.Filter.CheckNames(); err != nil {
		return backup.DumpOptions{}, usageError{err}
	}
	if err := l.mask.set(o.SetMask); err != nil {
		return backup.DumpOptions{}, err
	}
	return o, nil
}

// logicalRestoreFlags are restore's options for a logical backup; the
// load's choices are bound to the use case's Choices, which checks them
// (as copy's are).
type logicalRestoreFlags struct {
	conn   options.Conn
	load   restorecase.Choices
	mask   maskFlags
	asJSON bool
}

func (l *logicalRestoreFlags) register(f *pflag.FlagSet) {
	l.conn.Register(f)
	o, c := options.Bind(f), &l.load
	o.Strings("database", &c.Databases)
	o.Strings("exclude-database", &c.ExcludeDatabases)
	o.Strings("table", &c.Tables)
	o.Strings("exclude-table", &c.ExcludeTables)
	filterAliases(f)
	o.Bool("users", &c.Users)
	o.Bool("replace-users", &c.ReplaceUsers)
	o.Bool("json", &l.asJSON)
	o.Strings("rename-database", &c.Rename)
	o.String("definer", &c.Definer)
	o.Bool("drop-existing", &c.DropExisting)
	o.Bool("resume", &c.Resume)
	o.Bool("no-binlog", &c.NoBinlog)
	registerSkip(f, &c.Skip.Views, &c.Skip.Triggers, &c.Skip.Routines, &c.Skip.Events, &c.Skip.Users)
	l.mask.register(f, "as it is loaded (names as in the backup), so that the target never holds it")
}

// onlyLogical names the flags that mean something only for a logical load.
func (l *logicalRestoreFlags) onlyLogical() []string {
	return append([]string{"host", "port", "socket", "user", "password", "database", "exclude-database", "table", "exclude-table",
		"rename-database", "definer", "drop-existing", "no-binlog", "users", "replace-users", "json", "skip-views", "skip-triggers",
		"skip-routines", "skip-events", "skip-users"}, options.TLSNames...)
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

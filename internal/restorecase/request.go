package restorecase

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/mask"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/toolpath"
)

// Request is what restore is asked, as given. Run chooses the mode from
// it: a backup by name (into a directory, into place, or loaded), a point
// in time, a replay onto a running server, or tables imported into one.
// What does not go together is refused (a *restore.RefusedError) before
// anything is opened.
type Request struct {
	// Backup names the backup to restore: an id, a unique prefix of one,
	// or latest, of Kind ("" for either). Named says the user named one,
	// which a point in time refuses: it chooses its backup itself.
	Backup string
	Named  bool
	Kind   string
	// Until (a time, or end) or UntilGTID asks for a point in time, of
	// Server's backups and binary logs, from a base of kind Base.
	Until, UntilGTID, Server, Base string
	// ApplyTo restores into the running server Deferred.Conn reaches:
	// with a point in time the binary logs are replayed there, else the
	// tables of Load.Tables and Load.Databases are imported (As renames
	// the one table).
	ApplyTo bool
	As      string
	// Restore is how a physical backup is written: the new directory it
	// is restored into (TargetDir), whether it is prepared
	// (Options.Prepare), and ServerDefaults, the option file of what
	// prepares and serves it (also for a restore into place).
	Restore restore.Request
	// Datadir, set, restores a physical backup into place there: Force
	// moves what it holds aside, Start starts the server on it (see
	// serverup.Options).
	Datadir                    string
	Force                      bool
	Start                      string
	StartTimeout, CheckTimeout time.Duration
	// Load is what a logical backup loads and how, over Parallel
	// connections; Masking says mask rules were given: Mask, keyed with
	// MaskKeyFile's material when given (see mask.Load). The rules may
	// come from an option file.
	Load        Choices
	Parallel    int
	Masking     bool
	Mask        []string
	MaskKeyFile string
	// MariadbPath and Log are for a replay onto a running server: where
	// mariadb-binlog is looked for first, and where its messages go (nil
	// for nowhere).
	MariadbPath toolpath.Path
	Log         io.Writer
	// Memory is the budget of what reading a load's backup or the binary
	// logs of a replay holds at once (nil: archive.DefaultMemory); a
	// datadir's is Restore's.
	Memory *archive.Memory
	Given  Given
	// Lock is the lock taken on the repository while the restore reads it.
	Lock     repo.LockOptions
	Deferred Deferred
}

// Given names options given explicitly, the first of each kind, for the
// refusals that name them; "" for none.
type Given struct {
	// Place is the first given of the options of a restore into place
	// (--datadir, --force, --start, --start-timeout, --check-timeout).
	Place string
	// Load is the first given of the options only a logical load takes,
	// the connection's among them; LoadIsConn says it is a connection
	// option, which also reaches the server --start starts.
	Load       string
	LoadIsConn bool
	// PlaceMisuse is the refusal of the options of a restore into place
	// as given (--force without --datadir, ...), for a backup by name.
	PlaceMisuse error
}

// Deferred are what a Request reads only once its mode needs them, after
// its checks: each may read files, prompt for a password or warn.
type Deferred struct {
	Open func(context.Context) (*repo.Repo, error) // the repository, not locked
	// Conn is the server a load, an import or a replay goes into, or
	// that the server --start starts answers on.
	Conn func() (mariadb.Config, error)
	// Tracker makes the tracker of a restore's progress; nil for none.
	Tracker func(title string, total int64) *progress.Tracker
}

// mode is a way to restore: Run's choice.
type mode int

const (
	byName      mode = iota // a backup by name, through the engine of its kind
	pointInTime             // the newest backup before a target, and the binary logs up to it
	applying                // the binary logs up to a target, onto a running server
	importing               // tables of a physical backup, into a running server
)

func (req *Request) pointInTime() bool { return req.Until != "" || req.UntilGTID != "" }

// mode chooses the mode, refusing what goes with none, before anything is
// opened; each mode's run checks the rest.
func (req *Request) mode() (mode, error) {
	pit := req.pointInTime()
	if req.Kind != "" && (pit || req.ApplyTo) {
		return 0, refusedf("--kind chooses what latest names; a point-in-time restore or an import chooses its backup itself (--base with --until)")
	}
	if req.Masking && (req.ApplyTo || pit) {
		return 0, refusedf("--mask masks the load of a logical backup; --until, --until-gtid and --apply-to restore, replay or import data as it is, so they refuse it (the rules may come from an option file)")
	}
	if req.Restore.Resume && (pit || req.ApplyTo) {
		return 0, refusedf("--resume continues an interrupted restore of a backup by name (into --target-dir, or a load into a server); a point-in-time restore, a replay or an import starts over")
	}
	switch {
	case req.ApplyTo && !pit && (len(req.Load.Tables) > 0 || len(req.Load.Databases) > 0):
		return importing, nil
	case req.As != "":
		return 0, refusedf("--as goes with --table and --apply-to")
	case pit && req.Given.Place != "":
		return 0, refusedf("--%s restores a backup into place; a point-in-time restore writes a --target-dir", req.Given.Place)
	case pit && req.ApplyTo:
		return applying, nil
	case pit:
		return pointInTime, nil
	case req.Restore.ServerDefaults != "" && !req.Restore.Options.Prepare && req.Datadir == "":
		return 0, refusedf("--server-defaults-file goes with --prepare, --datadir, --until or --until-gtid: only they prepare the backup or start a server")
	case req.ApplyTo || req.Server != "" || req.Base != "":
		return 0, refusedf("--apply-to, --server and --base go with --until or --until-gtid")
	}
	return byName, req.Given.PlaceMisuse
}

// checkImport refuses what an import of tables does not take.
func (req *Request) checkImport() error {
	switch n := req.Given.Load; {
	case req.Server != "" || req.Base != "":
		return refusedf("--server and --base go with --until or --until-gtid")
	case req.Given.Place != "":
		return refusedf("--%s restores a whole backup into place; --table --apply-to imports tables into a running server", req.Given.Place)
	case req.Restore.TargetDir != "" || req.Restore.Options.Prepare:
		return refusedf("--table with --apply-to imports into the running server that --host/--socket name: it takes no --target-dir or --prepare")
	case n != "" && n != "table" && n != "database" && n != "no-binlog" && n != "json" && !req.Given.LoadIsConn:
		return refusedf("--%s does not go with --table/--database --apply-to, which imports tables of a physical backup", n)
	case req.As != "" && len(req.Load.Databases) > 0:
		return refusedf("--as names one table: it does not go with --database")
	}
	return nil
}

// checkApply refuses what a replay onto a running server does not take.
func (req *Request) checkApply() error {
	if req.Base != "" {
		return refusedf("--base chooses the backup a point-in-time restore starts from; --apply-to starts from the position of the server it replays onto")
	}
	if req.Restore.TargetDir != "" || req.Restore.Options.Prepare || req.Restore.ServerDefaults != "" {
		return refusedf("--apply-to replays onto the running server that --host/--socket name: it takes no --target-dir, --prepare or --server-defaults-file")
	}
	return nil
}

// checkKind refuses what a backup by name of kind does not take, once
// its manifest m says the kind.
func (req *Request) checkKind(m *archive.Manifest) error {
	if m.Kind == archive.KindLogical {
		if req.Restore.TargetDir != "" || req.Restore.Options.Prepare || req.Datadir != "" {
			return refusedf("backup %s is logical: it loads into a running server (--host/--socket), not a --target-dir or --datadir", m.ID)
		}
		return nil
	}
	if req.Masking {
		return refusedf("--mask masks the load of a logical backup; backup %s is physical: its files are restored as they are and cannot be masked (the rules may come from an option file)", m.ID)
	}
	if n := req.Given.Load; n != "" && n != "json" && (req.Start == "" || !req.Given.LoadIsConn) {
		return refusedf("--%s is for logical backups (or, to reach the started server, with --start); backup %s is physical", n, m.ID)
	}
	switch {
	case req.Datadir != "" && req.Restore.TargetDir != "":
		return refusedf("--datadir restores into place, --target-dir into a new directory: give one")
	case req.Datadir == "" && req.Restore.TargetDir == "":
		return refusedf("--target-dir (or --datadir) is required")
	}
	return nil
}

// CheckPlace refuses the options of a restore into place given without
// what they go with: place, the first given of --force, --start,
// --start-timeout and --check-timeout, without datadir; timeout, the first
// given of the last two, without start.
func CheckPlace(datadir, start, place, timeout string) error {
	if datadir == "" && place != "" {
		return refusedf("--%s goes with --datadir", place)
	}
	if timeout != "" && start == "" {
		return refusedf("--%s goes with --start", timeout)
	}
	return nil
}

// refused makes err a restore refused for what it was asked.
func refused(err error) error { return &restore.RefusedError{Err: err} }

func refusedf(format string, a ...any) error { return refused(fmt.Errorf(format, a...)) }

// maskRules reads the rules of Masking; nil without.
func (req *Request) maskRules() (*mask.Rules, error) {
	r, err := mask.Load(req.Mask, req.MaskKeyFile)
	if err != nil {
		return nil, refused(err)
	}
	return r, nil
}

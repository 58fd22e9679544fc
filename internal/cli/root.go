// Package cli holds backstream's commands: each file parses and checks its
// flags into a typed request, calls the one use case that does the work
// (backup, restore, verify, retention, pitr, binlog, remote, replica, ...)
// and prints the outcome. It is the only package that knows flag names,
// exit codes and how results are printed; it knows nothing of bytes,
// formats or MariaDB beyond building a connection's options.
package cli

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/profiling"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repoaccess"
)

// Exit codes, documented in docs/troubleshooting.md.
const (
	ExitOK          = 0
	ExitFailure     = 1   // the operation failed
	ExitUsage       = 2   // bad flags or arguments
	ExitCorrupt     = 3   // stored data does not match its checksums
	ExitInterrupted = 130 // SIGINT or SIGTERM
)

// usageError marks mistakes in how a command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// isUsage reports a usage mistake: cli's own, a repository location that
// cannot be right (a *repoaccess.UsageError), or a package's refusal.Error.
func isUsage(err error) bool {
	var ue usageError
	var r interface{ Refused() bool }
	return errors.As(err, &ue) || (errors.As(err, &r) && r.Refused())
}

// ExitCode maps a command's error to the process exit code.
func ExitCode(err error, interrupted bool) int {
	switch {
	case err == nil:
		return ExitOK
	case interrupted:
		return ExitInterrupted
	case isUsage(err):
		return ExitUsage
	case repoaccess.Corrupt(err):
		return ExitCorrupt
	}
	return ExitFailure
}

// globals are the flags every command shares.
type globals struct {
	// groupSuffix is --defaults-group-suffix; sources says where each
	// flag's value came from (see applyOptionFiles).
	groupSuffix string
	sources     options.Sources
	// The option files of commands without connection flags.
	defaultsFile, defaultsExtraFile string
	noDefaults                      bool

	progress     string
	cpuprofile   string
	memprofile   string
	stopProfiles func()
	// repos is how the command reaches its repository: --repo, the S3,
	// key and lock flags, and what share makes of --limit-upload,
	// --limit-download and --memory.
	repos                      repoaccess.Options
	limitUpload, limitDownload int64
	memory                     int64
	// mariadbPath is --mariadb-path: where the MariaDB tools of each
	// version are looked for before PATH.
	mariadbPath []string
	// progressInterval is how often plain lines and JSON events come.
	progressInterval time.Duration
	stdout           io.Writer
	stderr           io.Writer
	// metricsFile is --metrics-file; made is the backup made (none: no ID).
	metricsFile string
	// metricsCommand, when set, is the metrics' command label instead of
	// the command's name (restore-test for verify --restore-test, which a
	// drill's alert watches). serverless: the command reached no server.
	metricsCommand string
	serverless     bool
	made           inventory.Made
	// json is --json of a command that makes a backup (see reportMade).
	json bool
}

// checkGlobals checks the values of the flags every command has and
// starts what they ask for.
func (g *globals) checkGlobals() error {
	g.share()
	stop, err := profiling.Start(g.cpuprofile, g.memprofile, g.stderr)
	if err != nil {
		return err
	}
	g.stopProfiles = stop
	if _, err := progress.ParseMode(g.progress); err != nil {
		return usagef("--progress: %v", err)
	}
	if g.progressInterval <= 0 {
		return usagef("--progress-interval %s: want a positive duration, like 5s or 500ms", g.progressInterval)
	}
	return g.checkMetricsFile()
}

// locate adds where a flag's bad value was set to a usage error about
// it, when an option file set it (options.Sources.File).
func (g *globals) locate(err error) error {
	if err == nil || !isUsage(err) {
		return err
	}
	if where := g.sources.File(err); where != "" {
		return usageError{fmt.Errorf("%w (set in %s)", err, where)}
	}
	return err
}

func (g *globals) tracker(title string, total int64) *progress.Tracker {
	mode, _ := progress.ParseMode(g.progress) // checked in PersistentPreRunE
	return progress.Start(progress.Options{Mode: mode, Out: g.stderr, Title: title, Total: total, Interval: g.progressInterval})
}

// NewRoot builds the command tree for commands run in a test's process.
func NewRoot(version string) *cobra.Command { return newRoot(version, nil) }

// NewProcessRoot builds a process's tree: it sets repoaccess.RuntimeMemoryLimit.
func NewProcessRoot(version string) *cobra.Command { return newRoot(version, debug.SetMemoryLimit) }

func newRoot(version string, setMemoryLimit func(int64) int64) *cobra.Command {
	g := &globals{stopProfiles: func() {}}
	root := &cobra.Command{
		Use:           "backstream",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			g.stdout, g.stderr = cmd.OutOrStdout(), progress.Serialised(cmd.ErrOrStderr())
			if err := g.applyOptionFiles(cmd); err != nil {
				return err
			}
			err := g.locate(g.checkGlobals())
			if limit, ok := g.repos.ShareMemory(cmd.Name(), cmd.Flags()); ok && err == nil && setMemoryLimit != nil {
				setMemoryLimit(limit)
			}
			return err
		},
	}
	root.PersistentPostRun = func(cmd *cobra.Command, args []string) { g.stopProfiles() }
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{err} })
	g.register(root.PersistentFlags())
	root.AddCommand(
		newBackupCmd(g, version),
		newRestoreCmd(g),
		newCopyCmd(g),
		newListCmd(g),
		newBinlogCmd(g, version),
		newVerifyCmd(g),
		newCatCmd(g),
		newMergeCmd(g, version),
		newDemoCmd(g, version),
		newSendCmd(g, version),
		newProvisionCmd(g, version),
		newReceiveCmd(g),
		newTokenCmd(g),
		newReplicateCmd(g),
		newExpireCmd(g),
		newUnlockCmd(g),
		newInitCmd(g),
		newConfigCmd(g),
		newVersionCmd(g, version),
		newCheckCmd(g),
		newSSTCmd(g, version),
	)
	for _, c := range root.Commands() {
		g.wrap(c)
	}
	addTemplateFuncs.Do(func() { cobra.AddTemplateFunc("groupedFlagUsages", options.FlagUsages) })
	root.SetUsageTemplate(options.UsageTemplate)
	document(root)
	root.Args = cobra.ArbitraryArgs
	root.SuggestionsMinimumDistance = 2
	// --version is the version command's text; cobra's own would print
	// only the link-time version.
	var showVersion bool
	options.Bind(root.Flags()).Bool("version", &showVersion)
	root.RunE = g.runRoot(version, &showVersion)
	return root
}

// register binds the flags every command has.
func (g *globals) register(f *pflag.FlagSet) {
	pf := options.Bind(f)
	pf.String("repo", &g.repos.Location.Repo)
	pf.String("s3-endpoint", &g.repos.Location.S3Endpoint)
	pf.Rate("limit-upload", &g.limitUpload)
	pf.Rate("limit-download", &g.limitDownload)
	pf.Size("memory", &g.memory, repoaccess.MinMemory)
	pf.Paths("mariadb-path", &g.mariadbPath)
	pf.String("progress", &g.progress)
	pf.String("identity-file", &g.repos.Keys.IdentityFile)
	pf.String("passphrase-file", &g.repos.Keys.PassphraseFile)
	pf.String("metrics-file", &g.metricsFile)
	pf.String("cpuprofile", &g.cpuprofile)
	pf.String("memprofile", &g.memprofile)
	pf.Duration("s3-retry-window", &g.repos.Location.S3Retry)
	pf.Duration("lock-wait", &g.repos.LockWait)
	pf.Duration("progress-interval", &g.progressInterval)
	// The commands that connect to a server have these among their
	// connection flags; for the others they choose the option files that
	// set their options (see applyOptionFiles).
	pf.String("defaults-file", &g.defaultsFile)
	pf.String("defaults-extra-file", &g.defaultsExtraFile)
	pf.Bool("no-defaults", &g.noDefaults)
	pf.String("defaults-group-suffix", &g.groupSuffix)
}

// wrap makes arguments cobra refuses usage errors (exit code 2), like bad
// flags, and has c's run add the hints that name flags (the packages
// below name none) and tell the metrics file how it ended.
func (g *globals) wrap(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	if runE := c.RunE; runE != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			var err error
			if refused := options.Refused(cmd.Flags()); refused != nil { // a size, rate or span
				err = usageError{refused}
			} else {
				err = runE(cmd, args)
			}
			err = repoaccess.WithKeyHint(g.locate(err))
			g.recordMetrics(cmd, start, err)
			return err
		}
	}
}

// runRoot is what backstream does without a command: --version, help,
// or an unknown command refused with the nearest names.
func (g *globals) runRoot(version string, showVersion *bool) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if refused := options.Refused(cmd.Flags()); refused != nil { // --mariadb-path
			return usageError{refused}
		}
		if *showVersion && len(args) == 0 {
			return printVersion(cmd.Context(), g.stdout, version, g.mariadbPath, false)
		}
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return usageError{errors.New(msg)}
	}
}

// backupRef reads the optional backup argument: an id, a unique prefix of
// one, or latest (the default).
func backupRef(args []string) (string, error) {
	switch len(args) {
	case 0:
		return "latest", nil
	case 1:
		return strings.TrimSpace(args[0]), nil
	}
	return "", usagef("expected at most one backup id, got %d arguments", len(args))
}

package cli

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/restorecase"
)

// datadirFlags are the options of writing a datadir, shared by restore and
// receive, bound into the datadir's part of restore's request (Restore).
type datadirFlags struct {
	r       restorecase.Request
	verbose bool
}

func (d *datadirFlags) register(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.String("target-dir", &d.r.Restore.TargetDir)
	o.Bool("prepare", &d.r.Restore.Options.Prepare)
	o.String("use-memory", &d.r.Restore.Options.UseMemory)
	o.String("owner", &d.r.Restore.Owner)
	o.String("mariabackup", &d.r.Restore.Options.Mariabackup)
	o.Int("parallel", &d.r.Restore.Options.Workers)
	o.Bool("verbose", &d.verbose)
	o.Bool("no-sync", &d.r.Restore.Options.NoSync)
	o.Strings("map-data-directory", &d.r.Restore.DataDirs)
	o.String("server-defaults-file", &d.r.Restore.ServerDefaults)
}

// settle completes the request with what the command's other flags say:
// whether --owner was given, the tools' path, the memory budget, where
// messages go, and where the tablespaces placed are said (stderr with
// --json, whose stdout carries the one object).
func (d *datadirFlags) settle(g *globals, f *pflag.FlagSet) {
	r := &d.r.Restore
	r.OwnerGiven = f.Changed("owner")
	r.Options.MariadbPath, r.Options.Memory, r.Options.Log = g.mariadbPath, g.repos.Memory, d.log(g)
	r.PlacedTo = g.stdout
	if asJSON, _ := f.GetBool("json"); asJSON {
		r.PlacedTo = g.stderr
	}
}

// log is where mariabackup's and the tools' messages go: stderr with
// --verbose, else nowhere.
func (d *datadirFlags) log(g *globals) io.Writer {
	if d.verbose {
		return g.stderr
	}
	return nil
}

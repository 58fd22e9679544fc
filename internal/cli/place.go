package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/serverup"
)

// placeFlags are restore's options of restoring into place and starting
// the server there (restore --datadir).
type placeFlags struct {
	datadir      string
	force        bool
	start        string
	startTimeout time.Duration
}

func (p *placeFlags) register(f *pflag.FlagSet) {
	f.StringVar(&p.datadir, "datadir", "", "physical: restore and prepare beside this datadir, then rename the result into place (the datadir must be empty or absent unless --force)")
	f.BoolVar(&p.force, "force", false, "with --datadir: move what the datadir holds aside to <datadir>.replaced-<time> (never deleted) instead of refusing")
	f.StringVar(&p.start, "start", "", "with --datadir: start the server on it, with systemd (--start, or --start=systemd: systemctl start mariadb) or a command (--start='...'), wait until it answers on --socket/--host, check it")
	f.Lookup("start").NoOptDefVal = serverup.Systemd
	f.DurationVar(&p.startTimeout, "start-timeout", 5*time.Minute, "with --start: how long the start command and the wait until the server answers may take together")
}

// names are the flags that go with --datadir only.
func (p *placeFlags) names() []string { return []string{"datadir", "force", "start", "start-timeout"} }

// check refuses what goes with --datadir (or --start) without it.
func (p *placeFlags) check(f *pflag.FlagSet) error {
	if p.datadir == "" {
		if name := firstChanged(f, p.names()[1:]); name != "" {
			return usagef("--%s goes with --datadir", name)
		}
	}
	if f.Changed("start-timeout") && p.start == "" {
		return usagef("--start-timeout goes with --start")
	}
	return nil
}

// finish swaps the restored datadir into place, and starts and checks the
// server with --start.
func (p *placeFlags) finish(cmd *cobra.Command, out io.Writer, conn *connFlags, m *archive.Manifest, place *restore.Place) error {
	replaced, err := place.Swap()
	if replaced != "" {
		fmt.Fprintf(out, "what %s held was moved aside to %s\n", place.Dir, replaced)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "backup %s restored and prepared in place: %s\n", m.ID, place.Dir)
	if p.start == "" {
		return nil
	}
	cfg, err := conn.resolve(cmd.Flags())
	if err != nil {
		return err
	}
	rep, err := serverup.Start(cmd.Context(), serverup.Options{How: p.start, Conn: cfg, Datadir: place.Dir, Timeout: p.startTimeout, Biggest: 5})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "server %s (%s) runs on %s: CHECK TABLE of %d system tables OK\n", rep.Version, rep.Hostname, place.Dir, rep.SystemTables)
	if len(rep.Counted) > 0 {
		parts := make([]string, len(rep.Counted))
		for i, c := range rep.Counted {
			parts[i] = fmt.Sprintf("%s %d rows", c.Table, c.Rows)
		}
		fmt.Fprintf(out, "biggest tables: %s\n", strings.Join(parts, ", "))
	}
	return nil
}

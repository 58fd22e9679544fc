package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/options"
)

// binlogFlags are binlog's flags, most of them bound into its archiver.
type binlogFlags struct {
	a              binlog.Archiver
	conn           options.Conn
	follow, asJSON bool
}

func newBinlogCmd(g *globals, version string) *cobra.Command {
	var bf binlogFlags
	cmd := &cobra.Command{Use: "binlog"}
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		a, err := bf.archiver(cmd, g, version)
		if err != nil {
			return err
		}
		t := g.tracker("binlog", 0)
		a.Track(t)
		if bf.follow {
			err = a.Run(cmd.Context(), true)
			t.Finish(err)
			return err
		}
		res, err := a.RunOnce(cmd.Context())
		t.Finish(err)
		if err != nil || !bf.asJSON {
			return err
		}
		return printJSON(g.stdout, res)
	}
	bf.register(cmd, g)
	return cmd
}

func (bf *binlogFlags) register(cmd *cobra.Command, g *globals) {
	f := cmd.Flags()
	bf.conn.Register(f)
	o := options.Bind(f)
	o.Bool("follow", &bf.follow)
	o.Codec("compress", &bf.a.Codec)
	o.Hash("hash", &bf.a.Hash)
	o.Duration("flush-interval", &bf.a.FlushInterval)
	o.Bool("allow-gap", &bf.a.AllowGap)
	o.String("mariadb-binlog", &bf.a.Binary)
	o.Bool("json", &bf.asJSON)
	g.registerEncrypt(f)
}

// archiver checks the flags and builds the archiver they ask for, less
// its progress.
func (bf *binlogFlags) archiver(cmd *cobra.Command, g *globals, version string) (*binlog.Archiver, error) {
	if bf.a.FlushInterval <= 0 {
		return nil, usageError{fmt.Errorf("--flush-interval %s: must be positive", bf.a.FlushInterval)}
	}
	if bf.asJSON && bf.follow {
		return nil, usagef("--json prints what one run archived; binlog --follow runs until stopped: read its --progress json events, or list --binlogs --json")
	}
	a := bf.a
	a.MariadbPath, a.Version = g.mariadbPath, version
	var err error
	if a.Conn, err = bf.conn.Resolve(); err != nil {
		return nil, err
	}
	if a.Repo, err = g.repos.Open(cmd.Context()); err != nil {
		return nil, err
	}
	a.Encryption, err = g.repos.Encryption(cmd.Context(), a.Repo)
	return &a, err
}

package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/toolpath"
)

// binlogFlags are binlog's flags.
type binlogFlags struct {
	conn             options.Conn
	follow           bool
	compress, hash   string
	binary           string
	flush            time.Duration
	allowGap, asJSON bool
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
		a.Counter, a.Log = t, func(msg string) { t.Logf("%s", msg) }
		a.Lag = func(l binlog.Lag) { t.SetLag(progress.Lag{Seconds: l.Seconds, Bytes: l.Bytes}) }
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
	o.String("compress", &bf.compress)
	o.String("hash", &bf.hash)
	o.Duration("flush-interval", &bf.flush)
	o.Bool("allow-gap", &bf.allowGap)
	o.String("mariadb-binlog", &bf.binary)
	o.Bool("json", &bf.asJSON)
	g.registerEncrypt(f)
}

// archiver checks the flags and builds the archiver they ask for, less
// its progress.
func (bf *binlogFlags) archiver(cmd *cobra.Command, g *globals, version string) (*binlog.Archiver, error) {
	c, err := parseStorage(bf.compress, bf.hash)
	if err != nil {
		return nil, err
	}
	if bf.flush <= 0 {
		return nil, usageError{fmt.Errorf("--flush-interval %s: must be positive", bf.flush)}
	}
	if bf.asJSON && bf.follow {
		return nil, usagef("--json prints what one run archived; binlog --follow runs until stopped: read its --progress json events, or list --binlogs --json")
	}
	cfg, err := bf.conn.Resolve(cmd.Flags())
	if err != nil {
		return nil, err
	}
	r, err := g.repos.Open(cmd.Context())
	if err != nil {
		return nil, err
	}
	enc, err := g.repos.Encryption(cmd.Context(), r)
	if err != nil {
		return nil, err
	}
	return &binlog.Archiver{Repo: r, Conn: cfg, Codec: c, Hash: bf.hash, Binary: bf.binary, MariadbPath: toolpath.Parse(g.mariadbPath),
		Version: version, Encryption: enc, FlushInterval: bf.flush, AllowGap: bf.allowGap}, nil
}

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

// binlogHelp is the binlog command, without its RunE.
func binlogHelp() *cobra.Command {
	return &cobra.Command{
		Use:   "binlog",
		Short: "Archive the server's binary logs into the repository",
		Example: `  backstream binlog --repo /backups               # archive what the server has, once
  backstream binlog --repo /backups --follow      # and keep archiving as it writes (a service)`,
		Long: `binlog copies the server's binary log files into the repository through the
replication protocol (mariadb-binlog --read-from-remote-server --raw), so it runs on any
host that can connect, with an account that has REPLICATION SLAVE and BINLOG MONITOR.
Every closed file the repository lacks is stored compressed and checksummed under
binlogs/<host>-<server_id>/<file>/, with an index of its first and last GTID and event
time; list --binlogs shows what is covered. It resumes where the repository stops.

With --encrypt (to --recipient-file, or a passphrase from --passphrase-file or
$BACKSTREAM_PASSPHRASE) each file's stream object and index are stored encrypted with
age, as a backup's are; a point-in-time restore then needs the key.

With --follow it keeps streaming the active file, archives each file once the server
moves to the next, and reconnects when the server restarts; stop it with Ctrl-C.
Meanwhile the active file's new transactions are stored as segments at least every
--flush-interval (default 1s), cut only between transactions, so a restore loses at
most about that much; a file's segments are removed once it is archived whole.

It checks the server's settings first and refuses what cannot be archived
(log_bin OFF, a server that is not MariaDB), naming the setting. If files were
purged on the server before they were archived (or its server_id changed), the
gap is recorded in the repository (list --binlogs shows it) and binlog exits
non-zero naming the files; --allow-gap records it and archives on. A server
whose binary log holds the last archived transaction of another (a replica
promoted after a failover, with log_slave_updates) continues that archive:
its first run records the link, with no gap, and a point-in-time restore
goes on from the one into the other.

With --follow, --progress json (and plain) show its lag: lag_seconds and
lag_bytes behind the server; list --binlogs shows the last measure.`,
	}
}

// binlogFlags are binlog's flags.
type binlogFlags struct {
	conn             connFlags
	follow           bool
	compress, hash   string
	binary           string
	flush            time.Duration
	allowGap, asJSON bool
}

func newBinlogCmd(g *globals, version string) *cobra.Command {
	var bf binlogFlags
	cmd := binlogHelp()
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
	bf.conn.register(f)
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
	cfg, err := bf.conn.resolve(cmd.Flags())
	if err != nil {
		return nil, err
	}
	r, err := g.openRepo(cmd.Context(), false)
	if err != nil {
		return nil, err
	}
	enc, err := g.encryption(cmd.Context(), r)
	if err != nil {
		return nil, err
	}
	return &binlog.Archiver{Repo: r, Conn: cfg, Codec: c, Hash: bf.hash, Binary: bf.binary, MariadbPath: toolpath.Parse(g.mariadbPath),
		Version: version, Encryption: enc, FlushInterval: bf.flush, AllowGap: bf.allowGap}, nil
}

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/replica"
)

func newReplicateCmd(g *globals) *cobra.Command {
	var (
		conn        connFlags
		primary     replica.Primary
		primaryFile string
		datadir     string
		filePos     bool
		catchUp     bool
		force       bool
		wait        time.Duration
	)
	cmd := &cobra.Command{
		Use:   "replicate --primary-host HOST [--primary-user USER]",
		Short: "Make a server restored from a backup replicate from the backup's source",
		Long: `replicate runs on a server started on a restored backup (restore or receive). It reads
the backup's binlog coordinates from the datadir (xtrabackup_binlog_info or
mariadb_backup_binlog_info), sets gtid_slave_pos, points the server at the primary with
CHANGE MASTER TO ... MASTER_USE_GTID=slave_pos, starts replication and waits until both
threads run, or reports the replication error.

The primary's settings come from the [backstream-primary] group of the option files
(/etc/my.cnf, /etc/mysql/my.cnf, ~/.my.cnf, then --primary-defaults-file), then the
flags; its password from that group or BACKSTREAM_PRIMARY_PASSWORD, never a flag.
Connection flags (--host, --socket, --user, ...) reach the local replica.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			files := append([]string(nil), mariadb.GlobalOptionFiles...)
			if home, err := os.UserHomeDir(); err == nil {
				files = append(files, filepath.Join(home, ".my.cnf"))
			}
			if primaryFile != "" {
				files = append(files, primaryFile)
			}
			p, _, err := replica.PrimaryDefaults(files, os.LookupEnv)
			if err != nil {
				return err
			}
			f := cmd.Flags()
			if f.Changed("primary-host") {
				p.Host = primary.Host
			}
			if f.Changed("primary-port") {
				p.Port = primary.Port
			}
			if f.Changed("primary-user") {
				p.User = primary.User
			}
			if f.Changed("primary-ssl") {
				p.SSL = primary.SSL
			}
			if p.Host == "" || p.User == "" {
				return usagef("name the primary: --primary-host and --primary-user (or host= and user= in [backstream-primary])")
			}
			cfg, err := conn.resolve(f)
			if err != nil {
				return err
			}
			db, err := mariadb.Open(ctx, cfg, "")
			if err != nil {
				return err
			}
			defer db.Close()
			res, err := replica.Setup(ctx, db, p, replica.Options{
				Datadir: datadir, UseFilePos: filePos, CatchUp: catchUp, Force: force, WaitTimeout: wait,
			})
			if err != nil {
				return err
			}
			how := fmt.Sprintf("GTID %s", res.Coordinates.GTID)
			if !res.UsingGTID {
				how = fmt.Sprintf("%s:%d", res.Coordinates.File, res.Coordinates.Position)
			}
			fmt.Fprintf(g.stdout, "replicating from %s, starting at %s (from %s); IO and SQL threads running\n", p, how, res.From)
			if len(res.Notes) > 0 {
				fmt.Fprintf(g.stdout, "note: %s\n", strings.Join(res.Notes, "; "))
			}
			return nil
		},
	}
	f := cmd.Flags()
	conn.register(f)
	f.StringVar(&primary.Host, "primary-host", "", "the primary's host")
	f.IntVar(&primary.Port, "primary-port", 3306, "the primary's port")
	f.StringVar(&primary.User, "primary-user", "", "the replication account on the primary")
	f.BoolVar(&primary.SSL, "primary-ssl", false, "replicate over TLS (MASTER_SSL=1)")
	f.StringVar(&primaryFile, "primary-defaults-file", "", "option file with a [backstream-primary] group (host, port, user, password)")
	f.StringVar(&datadir, "datadir", "", "the restored datadir (default: the server's @@datadir)")
	f.BoolVar(&filePos, "use-file-pos", false, "replicate by binlog file and position instead of GTID")
	f.BoolVar(&catchUp, "catch-up", false, "also wait until the replica has applied what the primary had when replication started")
	f.BoolVar(&force, "force", false, "replace a replication connection that is configured and running")
	f.DurationVar(&wait, "wait", replica.DefaultWaitTimeout, "how long to wait for both replication threads to run")
	return cmd
}

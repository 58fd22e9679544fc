package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/repoaccess"
)

// backupFlags are the options of taking a physical backup, shared by
// backup and send, most of them bound into the request.
type backupFlags struct {
	r       backup.Request
	conn    options.Conn
	verbose bool
}

func (b *backupFlags) register(f *pflag.FlagSet) {
	b.conn.Register(f)
	o := options.Bind(f)
	o.Int("parallel", &b.r.Parallel)
	o.Codec("compress", &b.r.Codec)
	o.Hash("hash", &b.r.Hash)
	o.String("mariabackup", &b.r.Physical.Mariabackup)
	o.Strings("mariabackup-option", &b.r.Physical.ExtraArgs)
	o.Bool("verbose", &b.verbose)
	o.Rate("max-rate", &b.r.MaxRate)
	o.Bool("checkpoint", &b.r.Physical.Checkpoint)
	o.Int("max-io", &b.r.Physical.MaxIO)
}

// request checks req (b's flags, with what the command adds) and
// resolves its connection: the request less its repository.
func (b *backupFlags) request(g *globals, version string, req backup.Request) (backup.Request, error) {
	if err := req.Check(); err != nil {
		return req, err
	}
	var err error
	if req.Conn, err = b.conn.Resolve(); err != nil {
		return req, err
	}
	if b.verbose {
		req.Physical.Log = g.stderr
	}
	req.Version, req.Physical.MariadbPath = version, g.mariadbPath
	return req, nil
}

// backupRequest checks backup's flags and builds its request, less the
// repository and its encryption.
func backupRequest(g *globals, cmd *cobra.Command, version string, b *backupFlags, l *logicalBackupFlags, inc *incrementalFlags) (backup.Request, error) {
	req, f := b.r, cmd.Flags()
	req.Logical, req.Memory = l.on, g.repos.Memory
	req.Given = backup.Given{MaxIO: f.Changed("max-io"), Mask: l.mask.given(), Dump: firstChanged(f, l.onlyLogical()),
		Parent: firstChanged(f, []string{"parent", "max-chain", "full-every"})}
	if inc.on {
		i := inc.i
		i.FullBecause = func(why string) { fmt.Fprintf(g.stderr, "taking a full backup: %s\n", why) }
		req.Physical.Incremental = &i
	}
	req, err := b.request(g, version, req)
	if err == nil && l.on {
		req.Dump, err = l.options()
	}
	return req, err
}

// runBackup takes the backup with a progress display and prints it.
func runBackup(ctx context.Context, g *globals, req backup.Request) error {
	title := "backup"
	if req.Logical {
		title = "backup --logical"
	}
	t := g.tracker(title, 0)
	req.Progress = t
	res, err := backup.Run(ctx, req)
	t.Finish(err)
	if err != nil {
		return err
	}
	g.made = res.JSON().Made
	if g.json {
		return printJSON(g.stdout, res.JSON())
	}
	return res.WriteText(g.stdout)
}

// incrementalFlags choose the parent of an incremental backup.
type incrementalFlags struct {
	on bool
	i  backup.Incremental
}

func (i *incrementalFlags) register(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.Bool("incremental", &i.on)
	o.String("parent", &i.i.Parent)
	o.Int("max-chain", &i.i.Policy.MaxChain)
	o.Span("full-every", &i.i.Policy.FullEvery)
}

func newBackupCmd(g *globals, version string) *cobra.Command {
	var b backupFlags
	var l logicalBackupFlags
	var inc incrementalFlags
	cmd := &cobra.Command{
		Use:  "backup",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := backupRequest(g, cmd, version, &b, &l, &inc)
			if err != nil {
				return err
			}
			if req.Repo, err = g.repos.Open(cmd.Context()); err != nil {
				return err
			}
			if req.Encryption, err = g.repos.Encryption(cmd.Context(), req.Repo); err != nil {
				return err
			}
			ctx, release, err := g.repos.Acquire(cmd.Context(), req.Repo, repoaccess.OpBackup, true)
			if err != nil {
				return err
			}
			defer release()
			return runBackup(ctx, g, req)
		},
	}
	b.register(cmd.Flags())
	l.register(cmd.Flags())
	inc.register(cmd.Flags())
	g.registerEncrypt(cmd.Flags())
	g.registerJSON(cmd.Flags())
	return cmd
}

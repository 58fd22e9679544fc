package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/toolpath"
)

// backupFlags are the options of taking a physical backup, shared by
// backup and send.
type backupFlags struct {
	conn        options.Conn
	parallel    int
	compress    string
	hash        string
	mariabackup string
	extra       []string
	verbose     bool
	maxRate     int64
	maxIO       int
	checkpoint  bool
}

func (b *backupFlags) register(f *pflag.FlagSet) {
	b.conn.Register(f)
	o := options.Bind(f)
	o.Int("parallel", &b.parallel)
	o.String("compress", &b.compress)
	o.String("hash", &b.hash)
	o.String("mariabackup", &b.mariabackup)
	o.Strings("mariabackup-option", &b.extra)
	o.Bool("verbose", &b.verbose)
	o.Rate("max-rate", &b.maxRate)
	o.Bool("checkpoint", &b.checkpoint)
	o.Int("max-io", &b.maxIO)
}

// request checks the flags and builds the request's shared and physical
// options, less its repository.
func (b *backupFlags) request(g *globals, cmd *cobra.Command, version string) (backup.Request, error) {
	if b.parallel < 1 {
		return backup.Request{}, usagef("--parallel must be at least 1")
	}
	c, err := parseStorage(b.compress, b.hash)
	if err != nil {
		return backup.Request{}, err
	}
	if b.maxIO < 0 {
		return backup.Request{}, usagef("--max-io %d: want a number of I/O operations per second, or 0 for no limit", b.maxIO)
	}
	cfg, err := b.conn.Resolve(cmd.Flags())
	if err != nil {
		return backup.Request{}, err
	}
	var log io.Writer
	if b.verbose {
		log = g.stderr
	}
	return backup.Request{Conn: cfg, Parallel: b.parallel, Codec: c, Hash: b.hash, MaxRate: b.maxRate, Version: version,
		Physical: backup.PhysicalOptions{Mariabackup: b.mariabackup, MariadbPath: toolpath.Parse(g.mariadbPath),
			ExtraArgs: b.extra, Log: log, MaxIO: b.maxIO, Checkpoint: b.checkpoint}}, nil
}

// job checks the flags and builds the physical job, less its destination
// (send's).
func (b *backupFlags) job(g *globals, cmd *cobra.Command, version string) (physical.BackupJob, error) {
	req, err := b.request(g, cmd, version)
	return backup.PhysicalJob(req), err
}

// parseStorage reads --compress and checks --hash, which every command
// that stores a backup or binary log takes.
func parseStorage(compress, hash string) (codec.Codec, error) {
	c, err := codec.Parse(compress)
	if err != nil {
		return c, usagef("--compress: %v", err)
	}
	if _, err := archive.NewHash(hash); err != nil {
		return c, usagef("--hash: %v", err)
	}
	return c, nil
}

// backupRequest checks backup's flags and builds its request, less the
// repository and its encryption.
func backupRequest(g *globals, cmd *cobra.Command, version string, b *backupFlags, l *logicalBackupFlags, inc *incrementalFlags) (backup.Request, error) {
	req, err := b.request(g, cmd, version)
	if err != nil {
		return req, err
	}
	if l.on && cmd.Flags().Changed("max-io") {
		return req, usagef("--max-io is mariabackup's I/O limit, for physical backups; bound a logical backup with --max-rate")
	}
	if l.on && b.checkpoint {
		return req, usagef("--checkpoint is for physical backups: a logical backup reads no redo log")
	}
	if l.on {
		req.Logical = true
		if req.Dump, err = l.options(); err != nil {
			return req, err
		}
	} else if len(l.mask.specs) > 0 || l.mask.keyFile != "" {
		return req, usagef("--mask needs --logical: a physical backup copies the server's files as they are and cannot mask a value (the rules may come from an option file)")
	} else if f := firstChanged(cmd.Flags(), l.onlyLogical()); f != "" {
		return req, usagef("--%s needs --logical", f)
	}
	if l.on && inc.on {
		return req, usagef("--incremental is for physical backups; a logical backup is always whole")
	}
	if !inc.on {
		if f := firstChanged(cmd.Flags(), []string{"parent", "max-chain", "full-every"}); f != "" {
			return req, usagef("--%s needs --incremental", f)
		}
	}
	policy := inc.policy()
	if inc.on {
		req.Physical.Incremental = &backup.Incremental{Parent: inc.parent, Policy: policy,
			FullBecause: func(why string) { fmt.Fprintf(g.stderr, "taking a full backup: %s\n", why) }}
	}
	return req, nil
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
	g.made = res.JSON()
	if g.json {
		return printJSON(g.stdout, res.JSON())
	}
	return res.WriteText(g.stdout)
}

// incrementalFlags choose the parent of an incremental backup.
type incrementalFlags struct {
	on        bool
	parent    string
	maxChain  int
	fullEvery time.Duration
}

func (i *incrementalFlags) register(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.Bool("incremental", &i.on)
	o.String("parent", &i.parent)
	o.Int("max-chain", &i.maxChain)
	o.Span("full-every", &i.fullEvery)
}

// policy is the chain policy: --max-chain and --full-every.
func (i *incrementalFlags) policy() physical.ChainPolicy {
	return physical.ChainPolicy{MaxChain: i.maxChain, FullEvery: i.fullEvery}
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

// defaultParallel is options.DefaultParallel, for the commands whose
// flags are not bound from the options table yet.
func defaultParallel() int {
	return options.DefaultParallel()
}

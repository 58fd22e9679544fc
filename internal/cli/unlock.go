package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/repo"
)

// lockOptions describe the lock op takes, waiting up to --lock-wait, with
// what the lock has to say reported on stderr.
func (g *globals) lockOptions(op string, exclusive bool) repo.LockOptions {
	return repo.LockOptions{Operation: op, Exclusive: exclusive, Wait: g.lockWait,
		Report: func(msg string) { fmt.Fprintf(g.stderr, "%s: %s\n", op, msg) }}
}

// openLocked opens the existing repository and takes the lock op needs;
// it returns the repository, the context to run under and the release.
func (g *globals) openLocked(ctx context.Context, op string, exclusive bool) (*repo.Repo, context.Context, func(), error) {
	r, err := g.openRepo(ctx, false)
	if err != nil {
		return nil, nil, nil, err
	}
	lctx, release, err := g.lockRepo(ctx, r, op, exclusive)
	if err != nil {
		return nil, nil, nil, err
	}
	return r, lctx, release, nil
}

// lockRepo takes the repository lock an operation needs (see repo.Acquire).
func (g *globals) lockRepo(ctx context.Context, r *repo.Repo, op string, exclusive bool) (context.Context, func(), error) {
	return r.Acquire(ctx, g.lockOptions(op, exclusive))
}

func newUnlockCmd(g *globals) *cobra.Command {
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:  "unlock",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := g.openRepo(cmd.Context(), false)
			if err != nil {
				return err
			}
			removed, err := r.Unlock(cmd.Context(), all, repo.DefaultStaleAfter)
			res := r.Unlocked(removed, err)
			if !asJSON {
				res.WriteText(g.stdout)
			} else if perr := printJSON(g.stdout, res); perr != nil {
				return perr
			}
			return err
		},
	}
	o := options.Bind(cmd.Flags())
	o.Bool("all", &all)
	o.Bool("json", &asJSON)
	return cmd
}

// resolveLocked opens the repository and resolves the optional backup
// argument under a shared lock (see repo.ResolveLocked); latest names the
// latest backup of kind ("" for any, see repo.Latest).
func (g *globals) resolveLocked(ctx context.Context, args []string, kind, op string) (*repo.Repo, *archive.Manifest, context.Context, func(), error) {
	ref, err := backupRef(args)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	r, err := g.openRepo(ctx, false)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	m, lctx, release, err := r.ResolveLocked(ctx, ref, kind, g.lockOptions(op, false))
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return r, m, lctx, release, nil
}

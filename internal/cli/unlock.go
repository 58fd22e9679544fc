package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/repo"
)

// lockRepo takes the repository lock an operation needs, waiting up to
// --lock-wait, and returns the context the operation must run under (it ends
// if the lock is lost) and the function that releases the lock.
func (g *globals) lockRepo(ctx context.Context, r *repo.Repo, op string, exclusive bool) (context.Context, func(), error) {
	l, lctx, err := r.Lock(ctx, repo.LockOptions{Operation: op, Exclusive: exclusive, Wait: g.lockWait,
		Report: func(msg string) { fmt.Fprintf(g.stderr, "%s: %s\n", op, msg) }})
	var locked *repo.LockedError
	if err != nil && !exclusive && !errors.As(err, &locked) && ctx.Err() == nil {
		// Reading must work with read-only access (a restore from a
		// bucket with read-only credentials): a shared lock only protects
		// against a concurrent expire.
		fmt.Fprintf(g.stderr, "%s: cannot take a shared lock (%v); going on without one: a concurrent expire could remove this backup meanwhile\n", op, err)
		return ctx, func() {}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	release := func() {
		cleanup, stop := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer stop()
		if err := l.Release(cleanup); err != nil {
			fmt.Fprintf(g.stderr, "%s: %v (backstream unlock removes it once it is stale)\n", op, err)
		}
	}
	return lctx, release, nil
}

func newUnlockCmd(g *globals) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "unlock",
		Short: "Remove stale repository locks (or all of them with --all)",
		Long: `Every operation on a repository holds a lock object under locks/, refreshed while it runs:
backup, receive --repo and expire an exclusive one, restore, verify and cat a shared one.
A lock not refreshed for 5 minutes, or taken on this host by a process that is gone, is
stale: others ignore it and unlock removes it.
--all also removes live locks; use it only when you know their processes are gone
(their holders stop at their next refresh).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := g.openRepo(cmd.Context(), false)
			if err != nil {
				return err
			}
			removed, err := r.Unlock(cmd.Context(), all, repo.DefaultStaleAfter)
			for _, l := range removed {
				fmt.Fprintf(g.stdout, "removed lock %s: %s\n", l.Name, l.Describe())
			}
			if err != nil {
				return err
			}
			if len(removed) == 0 {
				fmt.Fprintln(g.stdout, "no locks removed")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "remove every lock, not only stale ones (for holders known to be dead)")
	return cmd
}

// resolveLocked is resolveBackup under a shared lock: the backup is looked
// up again once the lock is held, so that an expire that ran in between
// cannot leave us reading a deleted backup.
func (g *globals) resolveLocked(ctx context.Context, args []string, op string) (*repo.Repo, *archive.Manifest, context.Context, func(), error) {
	r, m, err := g.resolveBackup(ctx, args)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	lctx, release, err := g.lockRepo(ctx, r, op, false)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if m, err = r.Resolve(lctx, m.ID); err != nil {
		release()
		return nil, nil, nil, nil, err
	}
	return r, m, lctx, release, nil
}

// serveLocked serves one transfer; into a repository the receiver takes
// the exclusive lock once a sender has announced its backup, and holds it
// for that transfer only.
func (g *globals) serveLocked(ctx context.Context, rv *remote.Receiver) (*archive.Manifest, error) {
	if rv.Repo != nil {
		rv.LockRepo = func(ctx context.Context) (context.Context, func(), error) {
			return g.lockRepo(ctx, rv.Repo, repo.OpReceive, true)
		}
	}
	return rv.Serve(ctx)
}

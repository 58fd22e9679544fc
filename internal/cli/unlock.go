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

// unlockResult is what unlock --json prints: the locks removed, and why
// it stopped if removing one failed.
type unlockResult struct {
	Repository string        `json:"repository"`
	Removed    []removedLock `json:"removed"`
	Error      string        `json:"error,omitempty"`
}

// removedLock is one lock unlock removed: its object, what its holder
// said of itself (zero for an object that could not be read, which
// --all removes too) and that said as a sentence.
type removedLock struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	repo.LockInfo
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
			if asJSON {
				res := unlockResult{Repository: r.Backend.Location(), Removed: []removedLock{}}
				for _, l := range removed {
					res.Removed = append(res.Removed, removedLock{Name: l.Name, Description: l.Describe(), LockInfo: l.LockInfo})
				}
				if err != nil {
					res.Error = err.Error()
				}
				if perr := printJSON(g.stdout, res); perr != nil {
					return perr
				}
				return err
			}
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

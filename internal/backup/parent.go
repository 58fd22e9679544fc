package backup

// What a backup decides about the repository it goes into before
// mariabackup runs: which backup an incremental builds on, and that its
// positions hold. It knows backups through the repository's API and the
// chain policy.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/storage/crypt"
)

// Parent chooses what an incremental backup of a server builds on.
type Parent struct {
	Repo *repo.Repo
	// Explicit, if set, names the parent (an id, a prefix of one, or
	// latest); the policy is then not consulted.
	Explicit string
	Policy   physical.ChainPolicy
	// FullBecause, if set, hears why a full backup is taken instead.
	FullBecause func(why string)
}

// For returns the parent of an incremental backup of server, or nil when
// the backup should be a full one (physical.BackupJob's Parent).
// The parent's positions are checked against its meta objects first: the
// incremental starts at its to_lsn, and a wrong one would make an
// incremental that cannot be applied; it is refused as damage instead. An
// encrypted parent's meta objects need a key that a backup, which only
// encrypts, is seldom given: then the check is left to restore.
func (p Parent) For(ctx context.Context, server *mariadb.Server) (*archive.Manifest, error) {
	parent, err := p.choose(ctx, server)
	if err != nil || parent == nil {
		return nil, err
	}
	err = physical.CheckStored(ctx, p.Repo.ReadMeta, parent, nil)
	if err != nil && !errors.Is(err, crypt.ErrNoIdentity) {
		return nil, fmt.Errorf("%w; no incremental is taken on it", err)
	}
	return parent, nil
}

func (p Parent) choose(ctx context.Context, server *mariadb.Server) (*archive.Manifest, error) {
	if p.Explicit != "" {
		return p.Repo.FindKind(ctx, p.Explicit, "")
	}
	ms, err := p.Repo.List(ctx)
	if err != nil {
		return nil, err
	}
	ms = wholeChains(ms)
	parent, why := physical.ChooseParent(ms, server, p.Policy, time.Now())
	if parent == nil && p.FullBecause != nil {
		p.FullBecause(why)
	}
	return parent, nil
}

// wholeChains leaves out of ms, complete backups oldest first, those
// whose chain is not whole: an incremental whose parent is not among them
// (damaged, or gone), and so on down its chain. An incremental built on
// one of those could not be restored.
func wholeChains(ms []*archive.Manifest) []*archive.Manifest {
	whole := map[string]bool{}
	var out []*archive.Manifest
	for _, m := range ms {
		if m.Parent == "" || whole[m.Parent] {
			whole[m.ID] = true
			out = append(out, m)
		}
	}
	return out
}

package provision

import (
	"context"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/refusal"
	"github.com/backstream/backstream/internal/replica"
	"github.com/backstream/backstream/internal/servercopy"
)

// Backups finds a backup by its ID (or a name such as latest): a
// repository.
type Backups interface {
	Resolve(ctx context.Context, id string) (*archive.Manifest, error)
}

// ReplicaRequest points the server Conn reaches at Primary (backstream
// replicate), from the positions Options names or, with FromCopy, those
// of the newest finished copy into that server, or with FromBackup those
// of that backup of Backups.
type ReplicaRequest struct {
	Conn       mariadb.Config
	Primary    replica.Primary
	Options    replica.Options
	FromCopy   bool
	FromBackup string
	Backups    Backups // with FromBackup
	HasRepo    bool    // a repository is named, to hold FromBackup
}

// Check refuses positions asked for from two places, and a backup
// without a repository.
func (req *ReplicaRequest) Check() error {
	switch {
	case req.FromCopy && (req.Options.Datadir != "" || req.FromBackup != ""):
		return refusal.Errorf("--from-copy takes the position the server recorded of a copy into it: it goes without --datadir and --from-backup")
	case req.FromBackup != "" && req.Options.Datadir != "":
		return refusal.Errorf("--from-backup takes the positions from the backup's manifest: it goes without --datadir")
	case req.FromBackup != "" && !req.HasRepo:
		return refusal.Errorf("--from-backup needs the repository holding the backup: --repo R")
	}
	return nil
}

// SetupReplica finds the positions req asks for and sets up replication
// there. A masked backup is refused with a *replica.MaskedError.
func SetupReplica(ctx context.Context, req ReplicaRequest) (*replica.Summary, error) {
	opt := req.Options
	if req.FromCopy {
		c, err := servercopy.LastCopy(ctx, req.Conn)
		if err != nil {
			return nil, err
		}
		c.StartAt(&opt)
	}
	if req.FromBackup != "" {
		m, err := req.Backups.Resolve(ctx, req.FromBackup)
		if err != nil {
			return nil, err
		}
		if opt.Backup, err = replica.FromBackup(m); err != nil {
			return nil, err
		}
	}
	return replica.SetupOn(ctx, req.Conn, req.Primary, opt)
}

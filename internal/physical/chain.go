package physical

import (
	"fmt"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
)

// ChainPolicy says when an incremental backup should start a new chain
// with a full backup instead.
type ChainPolicy struct {
	// MaxChain is the most incrementals after a full; 0 means no limit.
	MaxChain int
	// FullEvery starts a new full once the chain's full is this old; 0
	// means never.
	FullEvery time.Duration
}

// ChooseParent picks the parent of an incremental backup of server among
// a repository's complete backups (oldest first): the newest physical
// backup of the same server, unless policy calls for a new full. It
// returns nil and the reason when the backup should be a full.
func ChooseParent(ms []*archive.Manifest, server *mariadb.Server, policy ChainPolicy, now time.Time) (*archive.Manifest, string) {
	var parent *archive.Manifest
	for i := len(ms) - 1; i >= 0; i-- {
		if m := ms[i]; m.Kind == archive.KindPhysical && sameServer(m.Server, server) {
			parent = m
			break
		}
	}
	switch {
	case parent == nil:
		return nil, "no earlier physical backup of this server in the repository"
	case policy.MaxChain > 0 && parent.Depth+1 > policy.MaxChain:
		return nil, fmt.Sprintf("the chain of %s already has %d incrementals (--max-chain %d)", parent.ID, parent.Depth, policy.MaxChain)
	}
	if policy.FullEvery > 0 {
		full := parent
		for _, m := range ms {
			if m.ID == parent.Chain {
				full = m
			}
		}
		if age := now.Sub(full.Started); age >= policy.FullEvery {
			return nil, fmt.Sprintf("the chain's full backup %s is %s old (--full-every %s)", full.ID, age.Round(time.Minute), policy.FullEvery)
		}
	}
	return parent, ""
}

// sameServer reports whether a backup was taken of server: the same
// hostname and server_id.
func sameServer(s archive.Server, server *mariadb.Server) bool {
	return s.Hostname == server.Hostname && s.ServerID == server.ServerID
}

// CheckParent refuses a parent an incremental of server cannot build on.
func CheckParent(parent *archive.Manifest, server *mariadb.Server) error {
	switch {
	case parent.Kind != archive.KindPhysical:
		return fmt.Errorf("backup %s is %s: an incremental builds only on a physical backup", parent.ID, parent.Kind)
	case !sameServer(parent.Server, server):
		return fmt.Errorf("backup %s is of server %s (server_id %d), not of this one, %s (server_id %d): take a full backup (without --incremental)",
			parent.ID, parent.Server.Hostname, parent.Server.ServerID, server.Hostname, server.ServerID)
	case parent.Positions.ToLSN == 0:
		return fmt.Errorf("backup %s records no LSN to continue from", parent.ID)
	}
	major, minor, _, err := mariadb.ParseVersion(parent.Server.Version)
	if err != nil {
		return fmt.Errorf("backup %s: server version %q: %w", parent.ID, parent.Server.Version, err)
	}
	if major != server.Major || minor != server.Minor {
		return fmt.Errorf("backup %s is of MariaDB %d.%d and the server now runs %d.%d: an incremental cannot span versions; take a full backup (without --incremental)",
			parent.ID, major, minor, server.Major, server.Minor)
	}
	return nil
}

// CheckChain checks that links, base first, form one chain: a full
// backup, then incrementals each naming the one before as parent and
// starting at its end LSN, all of one server.
func CheckChain(links []*archive.Manifest) error {
	if len(links) == 0 {
		return fmt.Errorf("empty chain")
	}
	if base := links[0]; base.Parent != "" {
		return fmt.Errorf("backup %s: chain does not start with a full backup (its parent is %s)", base.ID, base.Parent)
	}
	for i := 1; i < len(links); i++ {
		prev, m := links[i-1], links[i]
		switch {
		case m.Parent != prev.ID:
			return fmt.Errorf("backup %s: parent %s, but the chain has %s before it", m.ID, m.Parent, prev.ID)
		case m.Server.Hostname != prev.Server.Hostname || m.Server.ServerID != prev.Server.ServerID:
			return fmt.Errorf("backup %s is of server %s (server_id %d), its parent %s of %s (server_id %d)",
				m.ID, m.Server.Hostname, m.Server.ServerID, prev.ID, prev.Server.Hostname, prev.Server.ServerID)
		}
		if err := checkFollows(m, prev); err != nil {
			return err
		}
	}
	return nil
}

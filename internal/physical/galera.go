package physical

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
)

// GaleraInfoNames are the names mariabackup --galera-info writes the
// cluster position under (up to 11.0, and from 11.1).
var GaleraInfoNames = metadataCandidates("galera_info")

// GaleraArg is the mariabackup option a backup of a Galera node runs
// with: it records the node's cluster position while commits are
// blocked.
const GaleraArg = "--galera-info"

// ParseGaleraInfo reads a galera info file: "uuid:seqno domain" on its
// first line.
func ParseGaleraInfo(data []byte) (archive.GaleraPosition, error) {
	line, _, _ := strings.Cut(string(data), "\n")
	return archive.ParseGaleraPosition(line)
}

// galeraPosition is the position in the galera info among meta (the
// stream's small files by name); nil when there is none.
func galeraPosition(meta map[string][]byte) (*archive.GaleraPosition, error) {
	for _, name := range GaleraInfoNames {
		b, ok := meta[name]
		if !ok || strings.TrimSpace(string(b)) == "" {
			continue
		}
		p, err := ParseGaleraInfo(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &p, nil
	}
	return nil, nil
}

// ReadGaleraInfo reads the cluster position of a restored (and prepared)
// datadir from its galera info file.
func ReadGaleraInfo(dir string) (archive.GaleraPosition, error) {
	for _, name := range GaleraInfoNames {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) || err == nil && strings.TrimSpace(string(b)) == "" {
			continue
		}
		if err != nil {
			return archive.GaleraPosition{}, err
		}
		p, err := ParseGaleraInfo(b)
		if err != nil {
			return p, fmt.Errorf("%s: %w", name, err)
		}
		return p, nil
	}
	return archive.GaleraPosition{}, errors.New("it holds no galera info (was it taken with mariabackup --galera-info on a Galera node?)")
}

func checkGaleraInfo(m *archive.Manifest, name string, data []byte) error {
	p, err := ParseGaleraInfo(data)
	if err != nil {
		return fmt.Errorf("backup %s: %s: %w", m.ID, name, err)
	}
	if g := m.Positions.Galera; p.UUID != g.UUID || p.Seqno != g.Seqno {
		return fmt.Errorf("backup %s: %s says Galera position %s, the manifest %s", m.ID, name, p, g)
	}
	return nil
}

// GrastateName is the file a Galera node keeps its cluster position in,
// in its datadir.
const GrastateName = "grastate.dat"

// WriteGrastate writes grastate.dat into the restored datadir dir: the
// position p its data holds, so that a node started on it asks its
// cluster for the write sets after p (IST) instead of a whole snapshot,
// or bootstraps a new cluster at p (safe_to_bootstrap: a restored
// backup is the only state its new cluster has).
func WriteGrastate(dir string, p archive.GaleraPosition) error {
	content := fmt.Sprintf("# GALERA saved state\nversion: 2.1\nuuid:    %s\nseqno:   %d\nsafe_to_bootstrap: 1\n", p.UUID, p.Seqno)
	if err := os.WriteFile(filepath.Join(dir, GrastateName), []byte(content), FileMode); err != nil {
		return fmt.Errorf("write %s: %w", GrastateName, err)
	}
	return nil
}

// resyncTimeout bounds turning wsrep_desync off again, which runs also
// when the backup's context has ended.
const resyncTimeout = 30 * time.Second

// desync takes Galera node g out of flow control for the backup: while
// mariabackup blocks commits the node applies no write sets, and the
// queue they leave would otherwise have flow control pause the writes of
// every node in the cluster. It returns what turns wsrep_desync off
// again, to be called however the backup ends. A node already desynced
// is left as it is: one whose wsrep_desync is ON (set by hand, or left by
// a backup that was killed before it could turn it off: the user is told),
// or one the server desynced itself as the donor of a state transfer.
func desync(ctx context.Context, conn mariadb.Config, g mariadb.Galera, p Progress) (resync func() error, err error) {
	none := func() error { return nil }
	switch {
	case g.Desync:
		if p != nil {
			p.Logf("note: wsrep_desync is already ON on this Galera node (set by hand, or left by a backup that was killed): the backup leaves it ON; once nothing needs it, SET GLOBAL wsrep_desync=OFF")
		}
		return none, nil
	case strings.HasPrefix(g.State, "Donor"):
		return none, nil
	}
	if err := setDesync(ctx, conn, "ON"); err != nil {
		return nil, fmt.Errorf("this Galera node could not be desynced for the backup (SET GLOBAL wsrep_desync=ON), which keeps the cluster's writes flowing while it blocks commits: %w", err)
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resyncTimeout)
		defer cancel()
		if err := setDesync(ctx, conn, "OFF"); err != nil {
			return fmt.Errorf("this Galera node is still desynced after the backup: SET GLOBAL wsrep_desync=OFF failed: %w; run it on the node", err)
		}
		return nil
	}, nil
}

func setDesync(ctx context.Context, conn mariadb.Config, value string) error {
	db, err := mariadb.Open(ctx, conn, "")
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, "SET GLOBAL wsrep_desync = "+value)
	return err
}

package galera

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// TestGaleraSSTOn118 is the Galera part of the version matrix (issue 30
// item 3): a cluster of MariaDB 11.8 nodes (scripts/versions.sh's basedir,
// with the galera-4 provider of the same Debian root, loaded by 11.8's
// server through that root's loader) whose second node joins by
// backstream's state snapshot transfer, with 11.8's mariabackup named in
// [sst]; a third joins the same way while the first takes writes. Every
// node is 11.8, each joiner's error log tells of backstream's snapshot,
// and the third holds the first's rows (CHECKSUM TABLE).
func TestGaleraSSTOn118(t *testing.T) {
	b118 := sandboxtest.Basedir(t, "11.8")
	provider := filepath.Join(filepath.Dir(b118), "root", "usr", "lib", "galera", "libgalera_smm.so")
	if _, err := os.Stat(provider); err != nil {
		t.Fatalf("MariaDB 11.8's root has no galera-4 provider (%v): run scripts/versions.sh install 11.8 again", err)
	}
	dir := t.TempDir()
	opt, _, _ := installSST(t, dir, "mariabackup="+filepath.Join(b118, "bin", "mariabackup")+"\n")
	opt.Basedir = b118
	opt.Galera.Provider = provider
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	c, third := joinUnderLoad(t, ctx, opt, dir)
	first := c.Nodes[0]
	for i, n := range c.Nodes {
		v, err := n.Version(ctx)
		if err != nil || !strings.HasPrefix(v, "11.8.") {
			t.Errorf("node %d is MariaDB %q (%v), want 11.8", i+1, v, err)
		}
		log := readFile(t, n.ErrorLog)
		if !strings.Contains(log, "wsrep_load(): loading provider library '"+provider+"'") {
			t.Errorf("node %d's error log does not name %s as the provider it loaded", i+1, provider)
		}
		if i > 0 && !strings.Contains(log, "backstream: snapshot") {
			t.Errorf("node %d's error log does not tell of backstream's snapshot", i+1)
		}
	}
	sameTables(t, ctx, first, third)
	if size, _ := first.WsrepStatus(ctx, "cluster_size"); size != "3" {
		t.Errorf("cluster size %s, want 3", size)
	}
}

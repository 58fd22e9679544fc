package restoredserver

import (
	"context"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/toolpath"
)

// The server started on a restored datadir is the backup's version or
// none.
func TestFindServer(t *testing.T) {
	ctx := context.Background()
	b118 := sandboxtest.Basedir(t, "11.8")
	with118 := toolpath.Path{b118}

	srv, err := FindServer(ctx, with118, "11.8.9-MariaDB-deb13")
	if err != nil || srv == nil || srv.Basedir != b118 {
		t.Errorf("server 11.8 on %s: %+v, %v", b118, srv, err)
	}
	srv, err = FindServer(ctx, nil, "11.8.9-MariaDB-deb13")
	if err == nil || !strings.Contains(err.Error(), "the backup is MariaDB 11.8, but the servers found are /usr/sbin/mariadbd (MariaDB 10.11.") ||
		!strings.Contains(err.Error(), "--mariadb-path DIR") {
		t.Errorf("server 11.8 with the host's only: %+v, %v", srv, err)
	}
}

package usecasetest

import (
	"context"
	"testing"

	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/toolpath"
)

// StartOrders starts a server of version (major.minor) from basedir
// holding app.orders (InnoDB, with JSON and TEXT) and app.log (Aria), for
// the binary log tests of the version matrix.
func StartOrders(t *testing.T, version, basedir string) *sandbox.Server {
	t.Helper()
	src := sandboxtest.Start(t, sandbox.Options{Basedir: basedir})
	RequireVersion(t, src, version)
	ExecSession(t, src,
		"CREATE DATABASE app",
		"CREATE TABLE app.orders (id INT PRIMARY KEY, customer VARCHAR(40), total DECIMAL(10,2), doc JSON, note TEXT) ENGINE=InnoDB",
		"INSERT INTO app.orders SELECT seq, CONCAT('customer ', seq % 97), seq * 1.25, JSON_OBJECT('n', seq), REPEAT(SHA2(seq, 256), 4) FROM app.seq_1_to_5000",
		"CREATE TABLE app.log (id INT PRIMARY KEY, line VARCHAR(200)) ENGINE=Aria",
		"INSERT INTO app.log SELECT seq, SHA2(seq, 512) FROM app.seq_1_to_1000",
	)
	return src
}

// ExecSession runs each statement on one connection of s, in order,
// failing the test on the first error: a session variable one sets
// (binlog_format, gtid_domain_id) holds for those after it.
func ExecSession(t *testing.T, s *sandbox.Server, queries ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := s.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range queries {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// WithMariadbPath is req as `restore --mariadb-path p` makes it: the
// tools of the restore (mariabackup, the server a point in time is
// replayed into, mariadb-binlog) and of a replay onto a running server
// looked for on p before PATH.
func WithMariadbPath(req restorecase.Request, p toolpath.Path) restorecase.Request {
	req.MariadbPath, req.Restore.Options.MariadbPath = p, p
	return req
}

// ArchiveBinlogsWith is ArchiveBinlogs as `binlog --mariadb-path p` does
// it: mariadb-binlog of the server's version looked for on p before PATH.
func ArchiveBinlogsWith(t testing.TB, r Repo, src *sandbox.Server, p toolpath.Path) *binlog.Summary {
	t.Helper()
	a := ArchiverOf(t, r, src)
	a.MariadbPath = p
	s, err := a.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("binlog: %v", err)
	}
	t.Logf("binlog: %d files archived", s.Files)
	return s
}

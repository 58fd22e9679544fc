package usecasetest

import (
	"testing"

	"github.com/backstream/backstream/internal/pitr"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/restoretest"
	"github.com/backstream/backstream/internal/sandbox"
)

// PointInTimeOf is the request `restore --target-dir target` makes of r
// (RestoreOf, no backup named); the test sets the point in time (Until or
// UntilGTID) and what else it asks for (Server, Base).
func PointInTimeOf(r Repo, target string) restorecase.Request {
	req := RestoreOf(r, "")
	req.Restore.TargetDir = target
	return req
}

// ApplyOf is the request `restore --apply-to` makes of r with the
// connection flags of the sandbox server dst (see Conn): the archived
// binary logs replayed onto dst. The test sets up to where (Until or
// UntilGTID), which the request needs.
func ApplyOf(r Repo, dst *sandbox.Server) restorecase.Request {
	req := LoadOf(r, "", dst)
	req.ApplyTo = true
	return req
}

// RestoreTestTo is the restore test `verify --restore-test --until ...`
// runs of the point-in-time restore of r to until (RestoreTestWith): it
// returns the report and the error the command exits with.
func RestoreTestTo(t testing.TB, r Repo, until pitr.Target) (*restoretest.Report, error) {
	t.Helper()
	return RestoreTestWith(t, r, "", func(req *restoretest.Request) { req.Until = &until })
}

// Package usecasetest holds what the end-to-end tests of the use-case
// packages (backup, restorecase, provision, ...) share: a test binary's
// set-up, an empty repository on every backend, the connection to a
// sandbox server, a backup taken as a user takes it with the defaults,
// CHECKSUM TABLE of a server and its comparison, a server started on a
// restored datadir, file trees and their digests, and a write load to run
// under a backup. Those tests drive each use case's typed entry point, as
// the CLI does, and assert on its typed result.
//
// It is imported only by _test.go files, never by the binary
// (TestNotInBinary in internal/testkit checks it).
package usecasetest

import (
	"fmt"
	"os"
	"testing"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/scratch"
	"github.com/backstream/backstream/internal/storage/crypt"
	"github.com/backstream/backstream/internal/storage/s3/s3test"
)

// shared is the MinIO that the s3 repositories of a test binary live in,
// one bucket each (see Main).
var shared *s3test.Server

// Main runs a test binary's tests: the AWS environment points at one
// MinIO for the whole run (started on its first bucket), so tests need no
// t.Setenv and run in parallel; passphrase keys are cheap (what the tests
// check does not depend on age's work factor, which costs a second per
// key, and many more under -race); and what the in-process runs left in
// the scratch directory is removed, as main does for the binary. cleanup,
// if set, runs after the tests.
func Main(m *testing.M, cleanup func()) {
	crypt.SetScryptWorkFactor(12)
	shared = s3test.Main()
	code := m.Run()
	scratch.Cleanup()
	shared.Stop()
	if cleanup != nil {
		cleanup()
	}
	os.Exit(code)
}

// optionDefault is the default of command's option name, as the command
// gets it when the option is not given; an option the table does not
// have, or whose default is not a T, panics: a test would otherwise run
// with a zero value no user gets.
func optionDefault[T any](command, name string) T {
	o, ok := options.Of(command, name)
	d, isT := o.Default.(T)
	if !ok || !isT {
		panic(fmt.Sprintf("usecasetest: %s --%s has no default of type %T", command, name, d))
	}
	return d
}

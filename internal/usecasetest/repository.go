package usecasetest

import (
	"context"
	"io"
	"testing"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/restoretest"
	"github.com/backstream/backstream/internal/retention"
	"github.com/backstream/backstream/internal/verify"
)

// EncryptedServerArgs are the options of a sandbox server with
// data-at-rest encryption (InnoDB tables and redo log, Aria tables,
// temporary files) whose keys are in keyFile, for the file_key_management
// plugin.
func EncryptedServerArgs(keyFile string) []string {
	return []string{"--plugin-load-add=file_key_management", "--file-key-management-filename=" + keyFile,
		"--innodb-encrypt-tables=ON", "--innodb-encrypt-log=ON", "--aria-encrypt-tables=ON", "--encrypt-tmp-files=ON"}
}

// Encrypted is req (BackupOf, LogicalBackupOf, ...) as `backup --encrypt`
// with the key files keys makes it: r opened with them (a passphrase
// from $BACKSTREAM_PASSPHRASE when they name no passphrase file), and the
// backup stored encrypted to what they give.
func Encrypted(t testing.TB, r Repo, req backup.Request, keys repoaccess.KeyFiles) backup.Request {
	t.Helper()
	o := r.AccessWith(keys)
	o.Encrypt = true
	var err error
	if req.Repo, err = o.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if req.Encryption, err = o.Encryption(context.Background(), req.Repo); err != nil {
		t.Fatal(err)
	}
	return req
}

// VerifyWith is Verify of the repository o reaches (r.AccessWith: its key
// files): it checks backup ref and its chain as `verify ref` does, and
// returns the error.
func VerifyWith(t testing.TB, o repoaccess.Options, ref string) error {
	t.Helper()
	_, err := VerifySubset(t, o, ref, verify.Subset{})
	return err
}

// VerifySubset is verify --read-data-subset of the backup ref names.
func VerifySubset(t testing.TB, o repoaccess.Options, ref string, sub verify.Subset) (*verify.Result, error) {
	t.Helper()
	rp, err := o.Open(context.Background())
	if err != nil {
		return nil, err
	}
	m, err := rp.Resolve(context.Background(), ref)
	if err != nil {
		return nil, err
	}
	return verify.Run(context.Background(), verify.Request{Repo: rp, Backup: m, Subset: sub})
}

// RestoreTestWith is RestoreTest with what set adds to the request, as
// verify --restore-test's flags would (Job.ServerDefaults, Job.FileKey,
// Job.WorkDir, Until with ref "", ...): it returns the report and the
// error the command exits with.
func RestoreTestWith(t testing.TB, r Repo, ref string, set func(*restoretest.Request)) (*restoretest.Report, error) {
	t.Helper()
	req := restoretest.Request{
		Progress: func() *progress.Tracker {
			return progress.Start(progress.Options{Mode: progress.ModeQuiet, Out: io.Discard, Title: "restore test " + ref})
		},
		NotRecorded: func(err error) { t.Logf("the restore test's verdict is not recorded: %v", err) },
	}
	req.Job.Workers = options.DefaultParallel()
	if set != nil {
		set(&req)
	}
	var err error
	var ctx context.Context
	var release func()
	req.Repo, req.Backup, ctx, release, err = r.Access().ResolveLocked(context.Background(), ref, "", repoaccess.OpRestore)
	if err != nil {
		return nil, err
	}
	defer release()
	rep, err := restoretest.Prove(ctx, req)
	if err != nil {
		return nil, err
	}
	t.Logf("restore test of %s: passed %v, chain %v, until %q, problems %q", rep.Backup, rep.Passed, rep.Chain, rep.Until, rep.Problems)
	return rep, rep.Failure()
}

// Expire does to r what `expire` does with req (its rules, --confirm,
// --prune-incomplete) at the time now: it checks req, takes the
// repository's exclusive lock, and plans and, with Confirm, deletes. It
// returns the plan with what was deleted marked (what `expire --json`
// prints) and the error the command exits with.
func Expire(t testing.TB, r Repo, req retention.Request) (retention.Result, error) {
	t.Helper()
	return ExpireWith(t, r.Access(), req)
}

package usecasetest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/fidelitytest"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/storage/local"
)

// NewEncryptedRepo makes a repository in a new directory as `init
// --encrypt` with the key files keys (--recipient-file,
// --passphrase-file) does: every backup into it is encrypted to them,
// though the backup is given no key (see RepoEncrypted).
func NewEncryptedRepo(t *testing.T, keys repoaccess.KeyFiles) Repo {
	return newEncryptedRepo(t, keys, false)
}

// NewEncryptedDedupRepo is NewEncryptedRepo of a deduplicating repository
// (`init --dedup --encrypt`).
func NewEncryptedDedupRepo(t *testing.T, keys repoaccess.KeyFiles) Repo {
	return newEncryptedRepo(t, keys, true)
}

func newEncryptedRepo(t *testing.T, keys repoaccess.KeyFiles, dedup bool) Repo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	o := repoaccess.Options{Location: repoaccess.Location{Repo: dir}, Keys: keys, Encrypt: true, Dedup: dedup}
	if _, err := o.Create(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return Repo{Location: dir, Backend: b}
}

// RepoEncrypted is req (BackupOf, LogicalBackupOf, ...) with the
// encryption its repository asks for by itself, as `backup` without
// --encrypt stores a backup in a repository made by `init --encrypt`
// (NewEncryptedRepo): encrypted to the repository's own keys. In a
// repository without encryption of its own it is req unchanged.
func RepoEncrypted(t testing.TB, r Repo, req backup.Request) backup.Request {
	t.Helper()
	var err error
	if req.Encryption, err = r.Access().Encryption(context.Background(), req.Repo); err != nil {
		t.Fatal(err)
	}
	return req
}

// CorpusDump is the request `backup --logical --database DBS` makes of
// src into r (LogicalBackupOf), DBS the fixtures' databases
// (DatabasesOf): the accounts are left out, as --database without
// --users leaves them.
func CorpusDump(t testing.TB, r Repo, src *sandbox.Server, fixtures []*fidelitytest.Fixture) backup.Request {
	t.Helper()
	req := LogicalBackupOf(t, r, src)
	req.Dump.Filter.Databases, req.Dump.Skip.Users = strings.Split(DatabasesOf(fixtures), ","), true
	return req
}

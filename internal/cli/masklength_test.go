package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// A masked value's stand-in does not depend on its column's length: with
// one key, email and hash on a VARCHAR(32) and on a VARCHAR(255) give the
// same stand-ins, so a join between the two columns finds on the target
// the rows it finds on the source; the dump warns that the rules' columns
// differ in length. A column too short for the stand-in is refused, named,
// and nothing is committed.
func TestMaskStandInsMatchAcrossColumnLengths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	for _, q := range []string{
		"CREATE DATABASE shop",
		"CREATE TABLE shop.narrow (id INT PRIMARY KEY, email VARCHAR(32), code VARCHAR(16))",
		"CREATE TABLE shop.wide (id INT PRIMARY KEY, email VARCHAR(255), code VARCHAR(255))",
		"INSERT INTO shop.narrow SELECT seq, CONCAT('user', seq, '@example.com'), CONCAT('c', seq) FROM shop.seq_1_to_50",
		"INSERT INTO shop.wide SELECT seq, CONCAT('user', seq * 2, '@example.com'), CONCAT('c', seq * 3) FROM shop.seq_1_to_50",
		"CREATE DATABASE crm",
		"CREATE TABLE crm.contacts (id INT PRIMARY KEY, email VARCHAR(30))",
		"INSERT INTO crm.contacts VALUES (1, 'a@example.com')",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	joins := map[string]string{
		"email": "SELECT COUNT(*) FROM shop.narrow n JOIN shop.wide w ON n.email = w.email",
		"code":  "SELECT COUNT(*) FROM shop.narrow n JOIN shop.wide w ON n.code = w.code",
	}
	want := map[string]int{}
	for k, q := range joins {
		var n int
		if err := src.DB().QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatalf("%s: the source's join finds nothing; the test needs rows to match", k)
		}
		want[k] = n
	}
	keyFile := writeMaskKey(t)
	rules := []string{"--mask", "shop.*.email=email", "--mask", "shop.*.code=hash", "--mask-key-file", keyFile}

	repoDir := newRepoDir(t)
	r := run(t, append(append([]string{"backup", "--logical", "--repo", repoDir, "--database", "shop", "--progress", "plain"}, rules...), sandboxConn(src)...)...).mustSucceed(t)
	for _, w := range []string{"mask rule shop.*.email=email masks columns of different types or lengths", "shop.narrow.email (varchar(32))", "shop.wide.email (varchar(255))", "mask rule shop.*.code=hash"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("the dump's output does not warn %q:\n%s", w, r.stderr)
		}
	}
	dst := sandboxtest.Start(t, sandbox.Options{})
	run(t, append([]string{"restore", "--repo", repoDir}, sandboxConn(dst)...)...).mustSucceed(t)
	for k, q := range joins {
		var n int
		if err := dst.DB().QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want[k] {
			t.Errorf("join on the masked %s: %d rows on the target, %d on the source", k, n, want[k])
		}
	}
	var masked int
	if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM shop.narrow WHERE email LIKE '%@example.com'").Scan(&masked); err != nil || masked != 0 {
		t.Errorf("unmasked e-mails on the target: %d, %v", masked, err)
	}

	short := newRepoDir(t)
	r = run(t, append([]string{"backup", "--logical", "--repo", short, "--database", "crm", "--mask", "crm.contacts.email=email", "--mask-key-file", keyFile}, sandboxConn(src)...)...)
	if r.code != ExitUsage || r.err == nil || !strings.Contains(r.err.Error(), "column crm.contacts.email (varchar(30)") || strings.Contains(r.err.Error(), "a@example.com") {
		t.Errorf("a column too short for the stand-in: exit %d, %v; want exit %d naming crm.contacts.email, never the value", r.code, r.err, ExitUsage)
	}
	if entries := backupListing(t, short); len(entries) != 0 {
		t.Errorf("list shows %+v after a refused backup", entries)
	}
}

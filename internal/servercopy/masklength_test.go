package servercopy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
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
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE shop",
		"CREATE TABLE shop.narrow (id INT PRIMARY KEY, email VARCHAR(32), code VARCHAR(16))",
		"CREATE TABLE shop.wide (id INT PRIMARY KEY, email VARCHAR(255), code VARCHAR(255))",
		"INSERT INTO shop.narrow SELECT seq, CONCAT('user', seq, '@example.com'), CONCAT('c', seq) FROM shop.seq_1_to_50",
		"INSERT INTO shop.wide SELECT seq, CONCAT('user', seq * 2, '@example.com'), CONCAT('c', seq * 3) FROM shop.seq_1_to_50",
		"CREATE DATABASE crm",
		"CREATE TABLE crm.contacts (id INT PRIMARY KEY, email VARCHAR(30))",
		"INSERT INTO crm.contacts VALUES (1, 'a@example.com')")
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
	rules := []string{"shop.*.email=email", "shop.*.code=hash"}

	r := usecasetest.NewLocalRepo(t)
	req, err := maskedDumpOf(t, r, src, schema.Filter{Databases: []string{"shop"}}, rules, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	_, _, stderr, err := backupSaying(t, req)
	if err != nil {
		t.Fatalf("backup: %v\n%s", err, stderr)
	}
	for _, w := range []string{"mask rule shop.*.email=email masks columns of different types or lengths", "shop.narrow.email (varchar(32))", "shop.wide.email (varchar(255))", "mask rule shop.*.code=hash"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("the dump's output does not warn %q:\n%s", w, stderr)
		}
	}
	dst := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.Restore(t, usecasetest.LoadOf(r, "", dst))
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

	short := usecasetest.NewLocalRepo(t)
	req, err = maskedDumpOf(t, short, src, schema.Filter{Databases: []string{"crm"}}, []string{"crm.contacts.email=email"}, keyFile)
	if err == nil {
		_, err = backup.Run(ctx, req)
	}
	if !usecasetest.Refused(err) || !strings.Contains(err.Error(), "column crm.contacts.email (varchar(30)") || strings.Contains(err.Error(), "a@example.com") {
		t.Errorf("a column too short for the stand-in: %v; want a refusal naming crm.contacts.email, never the value", err)
	}
	if entries := usecasetest.List(t, short); len(entries) != 0 {
		t.Errorf("list shows %+v after a refused backup", entries)
	}
}

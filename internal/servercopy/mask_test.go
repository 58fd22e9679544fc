package servercopy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mask"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// maskRows is the number of customers (and newsletter rows) of the
// masking tests.
const maskRows = 2000

// maskIDBase makes the customer ids recognisable wherever they are
// stored: as decimal text they start with its first digits, as a BIGINT
// (8 bytes, little-endian) they end with its high four bytes.
const maskIDBase = 0x12345678_00000000

// maskShop makes shop.customers and shop.newsletter on db: the newsletter
// names its customer by id (a foreign key) and by e-mail (the same
// address in lower case: the tables join on both under the
// case-insensitive default collation), and the phone number in another
// layout. The primary key of the newsletter is the e-mail, so a dump cuts
// it into ranges by boundary e-mails. ref and topic are left unmasked:
// they pair rows of the source and the target, and show that a search of
// the files would find a value stored there.
func maskShop(t *testing.T, db *sql.DB) {
	t.Helper()
	pad := strings.Repeat("x", 120)
	for _, q := range []string{
		"CREATE DATABASE shop",
		`CREATE TABLE shop.customers (id BIGINT PRIMARY KEY, email VARCHAR(64) NOT NULL UNIQUE, phone VARCHAR(20) NULL,
			name VARCHAR(40) NOT NULL, note TEXT NULL, ref VARCHAR(200) NOT NULL) ENGINE=InnoDB`,
		fmt.Sprintf(`INSERT INTO shop.customers SELECT %d + seq * 7919, CONCAT('Person.', LPAD(seq, 4, '0'), '@Corp-Mail.example'),
			CONCAT('+1 (555) ', LPAD(seq %% 100, 2, '0'), '-', LPAD(seq, 4, '0')), CONCAT('Secret Name ', seq),
			IF(seq %% 3 = 0, NULL, CONCAT('private note ', seq)), CONCAT('ref-', LPAD(seq, 4, '0'), ' %s') FROM shop.seq_1_to_%d`, int64(maskIDBase), pad, maskRows),
		`CREATE TABLE shop.newsletter (email VARCHAR(64) PRIMARY KEY, customer_id BIGINT NOT NULL, phone VARCHAR(20),
			topic VARCHAR(200) NOT NULL, FOREIGN KEY (customer_id) REFERENCES shop.customers (id)) ENGINE=InnoDB`,
		fmt.Sprintf(`INSERT INTO shop.newsletter SELECT LOWER(email), id, CONCAT('1-555-', SUBSTRING(phone, 10, 2), '-', RIGHT(phone, 4)),
			CONCAT('topic-', SUBSTRING(ref, 5, 4), ' %s') FROM shop.customers`, pad),
		"ANALYZE TABLE shop.customers, shop.newsletter",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// maskRules are the rules of the masking tests.
var maskRules = []string{
	"shop.customers.id=hash", "shop.newsletter.customer_id=hash",
	"shop.customers.email=email", "shop.newsletter.email=email",
	"*.*.phone=phone",
	"shop.customers.name=fixed:anonymous",
	"shop.customers.note=null",
}

// maskRow is one customer with its newsletter row, by number.
type maskRow struct {
	id, customerID                 int64
	email, nlEmail, phone, nlPhone string
	name                           string
	note                           sql.NullString
	joined                         bool // the newsletter row joins its customer on e-mail and id
}

// maskTables reads the customers and newsletter rows of s by number (of
// ref and topic, which no rule masks).
func maskTables(t *testing.T, s *sandbox.Server) map[int]*maskRow {
	t.Helper()
	out := map[int]*maskRow{}
	rows, err := s.DB().Query("SELECT id, email, phone, name, note, CAST(SUBSTRING(ref, 5, 4) AS UNSIGNED) FROM shop.customers")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		r := &maskRow{}
		var n int
		var phone sql.NullString
		if err := rows.Scan(&r.id, &r.email, &phone, &r.name, &r.note, &n); err != nil {
			t.Fatal(err)
		}
		r.phone = phone.String
		out[n] = r
	}
	rows.Close()
	rows, err = s.DB().Query(`SELECT n.email, n.customer_id, n.phone, CAST(SUBSTRING(n.topic, 7, 4) AS UNSIGNED), c.id IS NOT NULL
		FROM shop.newsletter n LEFT JOIN shop.customers c ON c.email = n.email AND c.id = n.customer_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var email, phone string
		var id int64
		var n int
		var joined bool
		if err := rows.Scan(&email, &id, &phone, &n, &joined); err != nil {
			t.Fatal(err)
		}
		r := out[n]
		if r == nil {
			t.Fatalf("newsletter row %d has no customer row of that number", n)
		}
		r.nlEmail, r.customerID, r.nlPhone, r.joined = email, id, phone, joined
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) != maskRows {
		t.Fatalf("%d customers, want %d", len(out), maskRows)
	}
	return out
}

var digitsOnly = regexp.MustCompile(`[^0-9]`)

// checkMasked compares a masked target's rows with the source's: every
// masked value differs from its source's, keeps its form, and the tables
// still join on e-mail and id, and on the phone's digits.
func checkMasked(t *testing.T, src, dst map[int]*maskRow) {
	t.Helper()
	layout := regexp.MustCompile(`[0-9]`)
	emailForm := regexp.MustCompile(`^[a-z2-7]{16}@example\.invalid$`)
	ids := map[int64]bool{}
	for n, s := range src {
		d := dst[n]
		switch {
		case d == nil:
			t.Fatalf("row %d is missing on the target", n)
		case !s.joined || !d.joined:
			t.Errorf("row %d: the newsletter row does not join its customer (source %v, target %v)", n, s.joined, d.joined)
		case d.id == s.id || d.customerID != d.id || ids[d.id]:
			t.Errorf("row %d: id %d (source %d), newsletter's customer_id %d: not masked, not the same in both tables, or not unique", n, d.id, s.id, d.customerID)
		case d.id <= 0:
			t.Errorf("row %d: id %d: the sign of a positive id changed", n, d.id)
		case d.email == s.email || !emailForm.MatchString(d.email) || d.nlEmail != d.email:
			t.Errorf("row %d: e-mail %q / %q (source %q / %q)", n, d.email, d.nlEmail, s.email, s.nlEmail)
		case d.phone == s.phone || layout.ReplaceAllString(d.phone, "9") != layout.ReplaceAllString(s.phone, "9"):
			t.Errorf("row %d: phone %q (source %q): not masked, or not in the source's layout", n, d.phone, s.phone)
		case d.nlPhone == s.nlPhone || digitsOnly.ReplaceAllString(d.nlPhone, "") != digitsOnly.ReplaceAllString(d.phone, ""):
			t.Errorf("row %d: newsletter phone %q (customer's %q, source %q): not masked, or not the customer's digits", n, d.nlPhone, d.phone, s.nlPhone)
		case d.name != "anonymous" || d.note.Valid:
			t.Errorf("row %d: name %q, note %v: want anonymous and NULL", n, d.name, d.note)
		}
		ids[d.id] = true
	}
}

// maskSecrets finds the source's values of the masked columns in bytes.
type maskSecrets struct {
	exact map[string]bool // ids as decimal text, phone numbers
}

func newMaskSecrets(src map[int]*maskRow) *maskSecrets {
	s := &maskSecrets{exact: map[string]bool{}}
	for _, r := range src {
		s.exact[strconv.FormatInt(r.id, 10)] = true
		s.exact[r.phone], s.exact[r.nlPhone] = true, true
	}
	return s
}

var (
	phoneLayouts = regexp.MustCompile(`\+[0-9] \([0-9]{3}\) [0-9]{2}-[0-9]{4}|[0-9]-[0-9]{3}-[0-9]{2}-[0-9]{4}`)
	idText       = regexp.MustCompile(strconv.FormatInt(maskIDBase, 10)[:10] + `[0-9]{9}`)
)

// find returns the source values data holds: e-mail addresses (in either
// case), names and notes (by their prefixes), ids as text and as BIGINTs,
// and phone numbers. Without all (a big file) only the first three kinds.
func (s *maskSecrets) find(data []byte, all bool) []string {
	var found []string
	for _, prefix := range []string{"@Corp-Mail.example", "@corp-mail.example", "Secret Name ", "private note "} {
		if i := bytes.Index(data, []byte(prefix)); i >= 0 {
			found = append(found, string(data[max(0, i-12):min(len(data), i+len(prefix)+4)]))
		}
	}
	if !all {
		return found
	}
	for _, m := range phoneLayouts.FindAll(data, -1) {
		if s.exact[string(m)] {
			found = append(found, string(m))
		}
	}
	for _, m := range idText.FindAll(data, -1) {
		if s.exact[string(m)] {
			found = append(found, string(m))
		}
	}
	high := binary.LittleEndian.AppendUint32(nil, uint32(uint64(maskIDBase)>>32))
	for rest, off := data, 0; ; {
		i := bytes.Index(rest, high)
		if i < 0 {
			break
		}
		if at := off + i; at >= 4 {
			v := int64(binary.LittleEndian.Uint64(data[at-4 : at+4]))
			if s.exact[strconv.FormatInt(v, 10)] {
				found = append(found, fmt.Sprintf("BIGINT %d", v))
			}
		}
		rest, off = rest[i+1:], off+i+1
	}
	return found
}

// scanTree looks for the source's values in every file under dir.
func (s *maskSecrets) scanTree(t *testing.T, what, dir string, all bool) (files int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if found := s.find(data, all); len(found) > 0 {
			t.Errorf("%s: %s holds unmasked values: %q", what, p, found[:min(len(found), 5)])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// scanTarget looks for the source's values in a masked target: its
// tables, its binary logs (raw and as mariadb-binlog --verbose shows their
// row events) and, for the e-mails, names and notes, every file of its
// datadir (tablespaces, redo log, undo). A masked value and an unmasked
// column must show in the binary log, or the search proves nothing.
func (s *maskSecrets) scanTarget(t *testing.T, dst *sandbox.Server, masked map[int]*maskRow) {
	t.Helper()
	for _, table := range []string{"customers", "newsletter"} {
		rows, err := dst.DB().Query("SELECT * FROM shop." + table)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		var text []byte
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				text = append(append(text, v...), '\t')
			}
			text = append(text, '\n')
		}
		rows.Close()
		if found := s.find(text, true); len(found) > 0 {
			t.Errorf("target table shop.%s holds unmasked values: %q", table, found[:min(len(found), 5)])
		}
	}
	binlogs, err := filepath.Glob(filepath.Join(dst.Datadir, "mariadb-bin.[0-9]*"))
	if err != nil || len(binlogs) == 0 {
		t.Fatalf("the target's binary logs: %v, %v", binlogs, err)
	}
	var raw []byte
	for _, f := range binlogs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, data...)
	}
	out, err := exec.Command("mariadb-binlog", append([]string{"--verbose"}, binlogs...)...).Output()
	if err != nil {
		t.Fatalf("mariadb-binlog --verbose: %v", err)
	}
	some := masked[42]
	for what, data := range map[string][]byte{"binary log": raw, "mariadb-binlog --verbose": out} {
		if found := s.find(data, true); len(found) > 0 {
			t.Errorf("target's %s holds unmasked values: %q", what, found[:min(len(found), 5)])
		}
		if !bytes.Contains(data, []byte(some.email)) || !bytes.Contains(data, []byte("ref-0042")) {
			t.Errorf("target's %s does not hold the loaded rows (masked e-mail %s, ref-0042): the search proves nothing", what, some.email)
		}
	}
	if !bytes.Contains(out, []byte("### INSERT INTO `shop`.`customers`")) || !bytes.Contains(out, []byte("@1="+strconv.FormatInt(some.id, 10))) {
		t.Errorf("mariadb-binlog --verbose shows no row events of the load (masked id %d)", some.id)
	}
	s.scanTree(t, "target datadir", dst.Datadir, false)
}

// writeMaskKey writes a key file of 32 random bytes.
func writeMaskKey(t *testing.T) string {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	p := filepath.Join(t.TempDir(), "mask.key")
	if err := os.WriteFile(p, key, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// maskedDumpOf is the request `backup --logical` makes of src into r
// with the filter f and `--mask rules... --mask-key-file keyFile`: the
// accounts left out when f picks databases or tables (there is no
// --users), and the rules read as the flags are; the error is the
// refusal of the rules themselves, before anything is opened.
func maskedDumpOf(t *testing.T, r usecasetest.Repo, src *sandbox.Server, f schema.Filter, rules []string, keyFile string) (backup.Request, error) {
	t.Helper()
	req := usecasetest.LogicalBackupOf(t, r, src)
	req.Dump.Filter = f
	req.Dump.Skip.Users = len(f.Databases) > 0 || len(f.Tables) > 0
	req.Given.Mask = len(rules) > 0 || keyFile != ""
	if err := f.CheckNames(); err != nil {
		t.Fatal(err)
	}
	return req, req.Dump.SetMask(rules, keyFile)
}

// backupSaying takes the backup req asks for (backup.Run) and returns,
// with its result and error, what `backup --progress plain` prints of it:
// on stdout the result's text, on stderr the tracker's lines and
// warnings.
func backupSaying(t *testing.T, req backup.Request) (res *backup.Result, stdout, stderr string, err error) {
	t.Helper()
	var said usecasetest.Said
	req.Progress = progress.Start(progress.Options{Mode: progress.ModePlain, Out: &said, Title: "backup --logical"})
	res, err = backup.Run(context.Background(), req)
	req.Progress.Finish(err)
	var text strings.Builder
	if err == nil {
		if werr := res.WriteText(&text); werr != nil {
			t.Fatal(werr)
		}
	}
	return res, text.String(), said.String(), err
}

// printJSON prints v as restore --json does.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Issue #18 item 5. A logical backup masked as it is dumped (keyed by a
// key file) and restored into a fresh server with a binary log: every
// masked column differs from the source on every row, keeps its form, and
// the tables still join on the masked e-mail and id; no unmasked value is
// in any file of the repository (stored uncompressed, so that a search
// would see one), what the backup prints, the target's tables, its binary
// log (raw and mariadb-binlog --verbose) or its datadir; the restore test
// of the masked backup passes. The same rules at load time on an unmasked
// backup, with the same key file, give the very same target rows. Rules
// that cannot apply are refused before anything is written. (That backup
// refuses --mask-key-file without --mask, a check of its flags,
// internal/cli's TestMaskLogicalBackupAndRestore checks.)
func TestMaskLogicalBackupAndRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	maskShop(t, src.DB())
	source := maskTables(t, src)
	secrets := newMaskSecrets(source)
	for n := range source {
		if !source[n].joined {
			t.Fatalf("source row %d does not join", n)
		}
	}
	keyFile := writeMaskKey(t)

	// Rules that cannot apply: refused, and nothing written.
	r := usecasetest.NewLocalRepo(t)
	for _, c := range []struct {
		filter schema.Filter
		rule   string
		want   string
	}{
		{schema.Filter{}, "shop.customers.emial=hash", "mask rule shop.customers.emial=hash: table shop.customers has no column emial"},
		{schema.Filter{}, "shop.customer.email=hash", "there is no table shop.customer among the tables selected"},
		{schema.Filter{}, "shop.customers.email=null", "column shop.customers.email (varchar(64) not null): mask rule shop.customers.email=null: the column is NOT NULL"},
		{schema.Filter{}, "shop.customers.id=email", "email masks string columns only"},
		{schema.Filter{}, "shop.customers.email=md5", `unknown function "md5"`},
		{schema.Filter{Databases: []string{"shop"}, ExcludeTables: []string{"shop.newsletter"}}, "shop.newsletter.email=email", "there is no table shop.newsletter among the tables selected"},
	} {
		req, err := maskedDumpOf(t, r, src, c.filter, []string{c.rule}, "")
		if err == nil {
			_, err = backup.Run(ctx, req)
		}
		if !usecasetest.Refused(err) || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("backup of %+v masking %s: %v; want a refusal saying %q", c.filter, c.rule, err, c.want)
		}
	}
	physical := usecasetest.BackupOf(t, r, src)
	physical.Given.Mask = true // --mask without --logical
	if _, err := backup.Run(ctx, physical); !usecasetest.Refused(err) || !strings.Contains(fmt.Sprint(err), "--mask needs --logical") {
		t.Errorf("a physical backup with rules: %v; want a refusal saying --mask needs --logical", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(r.Location, "backups")); len(entries) > 0 {
		t.Fatalf("refused backups left %d entries in the repository", len(entries))
	}

	// The masked backup, stored uncompressed.
	req, err := maskedDumpOf(t, r, src, schema.Filter{Databases: []string{"shop"}}, maskRules, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if req.Codec, err = codec.Parse("none"); err != nil {
		t.Fatal(err)
	}
	req.Parallel, req.Dump.ChunkBytes = 2, 64<<10
	res, stdout, stderr, err := backupSaying(t, req)
	if err != nil {
		t.Fatalf("backup: %v\n%s", err, stderr)
	}
	if masked := strings.Join(res.Masked, ", "); !strings.Contains(masked, "shop.customers.id=hash, shop.customers.email=email, shop.customers.phone=phone, shop.customers.name=fixed:anonymous, shop.customers.note=null") {
		t.Errorf("the backup says it masked %q", masked)
	}
	entries := usecasetest.List(t, r)
	if len(entries) != 1 {
		t.Fatalf("%d backups", len(entries))
	}
	id := entries[0].ID
	var masked []string
	for _, d := range entries[0].Databases {
		masked = append(masked, d.Masked...)
	}
	if len(masked) != 8 || !slices.Contains(masked, "newsletter.customer_id=hash") {
		t.Errorf("list: masked %q, want the 8 masked columns", masked)
	}
	contents, err := os.ReadFile(filepath.Join(r.Location, "backups", id, filepath.FromSlash(archive.ContentsName)))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(contents), `"shop/newsletter.`); n < 3 {
		t.Errorf("the newsletter (keyed by e-mail) is in %d data files: want it cut into ranges by boundary e-mails", n)
	}
	for what, text := range map[string]string{"backup's stdout": stdout, "backup's stderr": stderr} {
		if found := secrets.find([]byte(text), true); len(found) > 0 {
			t.Errorf("%s holds unmasked values: %q", what, found)
		}
	}
	if n := secrets.scanTree(t, "repository", r.Location, true); n < 5 {
		t.Fatalf("the repository has %d files", n)
	}
	var stored []byte
	filepath.WalkDir(filepath.Join(r.Location, "backups"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			stored = append(stored, data...)
		}
		return nil
	})
	if !bytes.Contains(stored, []byte("ref-0042 ")) || !bytes.Contains(stored, []byte("anonymous")) {
		t.Fatal("the repository's files do not show the unmasked column's values: the search proves nothing")
	}

	// Restored into a fresh server with a binary log.
	dst := sandboxtest.Start(t, sandbox.Options{})
	load := usecasetest.Restore(t, usecasetest.LoadOf(r, id, dst)).Load
	if load == nil || !slices.Contains(archive.MaskedColumns(load.Backup.Databases), "shop.customers.id=hash") {
		t.Errorf("the restore does not say the backup is masked: %+v", load)
	}
	restored := maskTables(t, dst)
	checkMasked(t, source, restored)
	secrets.scanTarget(t, dst, restored)
	var joined int
	if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM shop.customers c JOIN shop.newsletter n ON n.email = c.email AND n.customer_id = c.id").Scan(&joined); err != nil || joined != maskRows {
		t.Errorf("the join on the masked e-mail and id returns %d rows (%v), the source's %d", joined, err, maskRows)
	}

	// The restore test loads the masked rows and finds the row sums the
	// dump recorded: those of what it wrote.
	rep, err := usecasetest.RestoreTest(t, r, id)
	if err != nil || !rep.Passed {
		t.Fatalf("restore test of the masked backup: %v, %+v", err, rep)
	}
	for _, name := range []string{"shop.customers", "shop.newsletter"} {
		if tb := usecasetest.TableOf(t, rep, name); tb.RowSum == "" || tb.RowSum != tb.ExpectedRowSum || *tb.Rows != maskRows {
			t.Errorf("restore test of %s: %+v", name, tb)
		}
	}

	// Masking at load time, from an unmasked backup, with the same key.
	plain := usecasetest.NewLocalRepo(t)
	req = usecasetest.LogicalBackupOf(t, plain, src)
	req.Dump.Filter.Databases, req.Dump.Skip.Users, req.Dump.ChunkBytes = []string{"shop"}, true, 64<<10
	usecasetest.Backup(t, req)
	dst2 := sandboxtest.Start(t, sandbox.Options{})
	for _, c := range []struct {
		rule, keyFile, until, targetDir string
		want                            string
	}{
		{rule: "shop.nosuch.email=email", want: "there is no table shop.nosuch among the tables selected"},
		{rule: "shop.customers.email=email", keyFile: filepath.Join(t.TempDir(), "none"), want: "mask key file: open "},
		{rule: "shop.customers.email=email", until: "end", targetDir: t.TempDir(), want: "--until, --until-gtid and --apply-to restore, replay or import data as it is"},
	} {
		req := usecasetest.LoadOf(plain, "", dst2)
		req.Masking, req.Mask, req.MaskKeyFile = true, []string{c.rule}, c.keyFile
		req.Until, req.Restore.TargetDir = c.until, c.targetDir
		if _, err := restorecase.Run(ctx, req); !usecasetest.Refused(err) || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("restore masking %s (key file %q, until %q): %v; want a refusal saying %q", c.rule, c.keyFile, c.until, err, c.want)
		}
	}
	var dbs int
	if err := dst2.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN ('shop', 'backstream_load')").Scan(&dbs); err != nil || dbs != 0 {
		t.Fatalf("refused restores changed the target: %d databases (%v)", dbs, err)
	}
	lreq := usecasetest.LoadOf(plain, "", dst2)
	lreq.Masking, lreq.Mask, lreq.MaskKeyFile = true, maskRules, keyFile
	var said usecasetest.Said
	lreq.Deferred.Tracker = said.Tracker
	lres := usecasetest.Restore(t, lreq)
	if lres.Load == nil || !slices.Contains(lres.Load.Masked, "shop.newsletter.customer_id=hash") {
		t.Errorf("the restore does not list what it masked: %+v", lres.Load)
	}
	// What restore --json prints of it, and its progress.
	if err := lres.Print(&said, &said, true, printJSON, nil); err != nil {
		t.Fatal(err)
	}
	if found := secrets.find([]byte(said.String()), true); len(found) > 0 {
		t.Errorf("the restore's output holds unmasked values: %q", found)
	}
	atLoad := maskTables(t, dst2)
	checkMasked(t, source, atLoad)
	secrets.scanTarget(t, dst2, atLoad)
	for n, a := range atLoad {
		if b := restored[n]; *a != *b {
			t.Fatalf("row %d masked at load time: %+v; masked at dump time with the same key: %+v", n, *a, *b)
		}
	}

	// A load resumes only with the rules it began with, and never after a
	// random key: the journal of an interrupted load, made by hand.
	plainID := usecasetest.List(t, plain)[0].ID
	withKey, err := mask.Parse(maskRules)
	if err != nil {
		t.Fatal(err)
	}
	key, err := mask.ReadKeyFile(keyFile)
	if err != nil || withKey.SetKey(key) != nil {
		t.Fatal(err)
	}
	random, _ := mask.Parse(maskRules)
	usecasetest.ExecAll(t, dst2.DB(),
		"CREATE DATABASE backstream_load",
		"CREATE TABLE backstream_load.journal (backup VARCHAR(64) NOT NULL, chunk INT NOT NULL, loaded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (backup, chunk))",
		"CREATE TABLE backstream_load.masks (backup VARCHAR(64) NOT NULL, rules TEXT NOT NULL, PRIMARY KEY (backup))",
		"INSERT INTO backstream_load.journal (backup, chunk) VALUES ('"+plainID+"', 0)")
	for _, c := range []struct {
		began string // the rules the interrupted load began with
		masks bool   // the resumed one masks with the key file
		want  string
	}{
		{random.Describe(), true, "masked with a random key, which cannot be given again"},
		{withKey.Describe(), false, "masked by *.*.phone=phone, shop.customers.email=email, shop.customers.id=hash, "},
		{"", true, "masked nothing, this one by *.*.phone=phone, shop.customers.email=email"},
	} {
		if _, err := dst2.DB().ExecContext(ctx, "REPLACE INTO backstream_load.masks VALUES (?, ?)", plainID, c.began); err != nil {
			t.Fatal(err)
		}
		if c.began == "" {
			dst2.DB().ExecContext(ctx, "DELETE FROM backstream_load.masks")
		}
		req := usecasetest.LoadOf(plain, plainID, dst2)
		// --resume continues an interrupted restore of either kind.
		req.Load.Resume, req.Restore.Resume = true, true
		if c.masks {
			req.Masking, req.Mask, req.MaskKeyFile = true, maskRules, keyFile
		}
		if _, err := restorecase.Run(ctx, req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("resume (masks %v) of a load that began with %q: %v, want it to say %q", c.masks, c.began, err, c.want)
		}
	}
}

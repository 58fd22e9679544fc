package mask

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// rulesWith parses specs keyed with key (nil: a random key).
func rulesWith(t testing.TB, key []byte, specs ...string) *Rules {
	t.Helper()
	r, err := Parse(specs)
	if err != nil {
		t.Fatal(err)
	}
	if key != nil {
		if err := r.SetKey(key); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// funcOf is the Func the rules give column c of db.t.
func funcOf(t testing.TB, r *Rules, db, table string, c Column) Func {
	t.Helper()
	tm, err := r.Plan().Table(db, table, []Column{c})
	if err != nil {
		t.Fatal(err)
	}
	if tm.Func(0) == nil {
		t.Fatalf("no rule masks %s.%s.%s", db, table, c.Name)
	}
	return tm.Func(0)
}

// apply masks one non-NULL value.
func apply(t testing.TB, f Func, v string) string {
	t.Helper()
	out, null, err := f(nil, []byte(v), false)
	if err != nil || null {
		t.Fatalf("mask %q: %q, null %v, %v", v, out, null, err)
	}
	return string(out)
}

var (
	varchar64 = Column{Name: "email", DataType: "varchar", Length: 64, Nullable: true, Charset: "utf8mb4"}
	intCol    = Column{Name: "id", DataType: "int"}
)

func TestParseRule(t *testing.T) {
	for _, c := range []struct {
		spec string
		want Rule
	}{
		{"shop.customers.email=email", Rule{Database: "shop", Table: "customers", Column: "email", Function: FuncEmail}},
		{" shop.customers.id = HASH ", Rule{Database: "shop", Table: "customers", Column: "id", Function: FuncHash}},
		{"*.*.phone=phone", Rule{Column: "phone", Function: FuncPhone}},
		{"shop.*.note=null", Rule{Database: "shop", Column: "note", Function: FuncNull}},
		{"shop.t.c=fixed:a=b, c:d", Rule{Database: "shop", Table: "t", Column: "c", Function: FuncFixed, Value: "a=b, c:d"}},
		{"shop.t.c=Fixed:", Rule{Database: "shop", Table: "t", Column: "c", Function: FuncFixed}},
		{"`my.db`.`t``x`.`a b`=hash", Rule{Database: "my.db", Table: "t`x", Column: "a b", Function: FuncHash}},
		{"`*`.t.c=hash", Rule{Database: "*", Table: "t", Column: "c", Function: FuncHash}},
		{"données.clients.télé=phone", Rule{Database: "données", Table: "clients", Column: "télé", Function: FuncPhone}},
	} {
		got, err := ParseRule(c.spec)
		if err != nil || got != c.want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", c.spec, got, err, c.want)
			continue
		}
		again, err := ParseRule(got.String())
		if err != nil || again != got {
			t.Errorf("ParseRule(%q).String() = %q reads back as %+v, %v", c.spec, got.String(), again, err)
		}
	}
	for _, c := range []struct{ spec, want string }{
		{"shop.customers.email", "no =function after the column"},
		{"shop.customers=hash", "not three names separated by dots"},
		{"shop.customers.email.x=hash", "no =function after the column"},
		{"shop..email=hash", "an empty name"},
		{"shop.t.*=null", "the column must be named"},
		{"shop.t.c=md5", `unknown function "md5"`},
		{"shop.t.c=fixed", "fixed needs its value after a colon"},
		{"shop.t.c=", `unknown function ""`},
		{"`shop.t.c=hash", "a backtick is not closed"},
		{"``.t.c=hash", "an empty name"},
		{"sh*p.t.c=hash", "quote a name holding * or `"},
		{"my db.t.c=hash", "not three names separated by dots"},
		{"", "an empty name"},
	} {
		_, err := ParseRule(c.spec)
		var me *Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &me) {
			t.Errorf("ParseRule(%q): %v, want an *Error saying %q", c.spec, err, c.want)
		}
	}
}

// Whatever the input, ParseRule does not panic, and a rule it reads is
// written back (String) as text it reads as the same rule.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"shop.customers.email=email", "*.*.phone=phone", "`a``b`.`.`.c=fixed:x=y", "a.b.c=null", "a.b.c = Hash", "a.*.c=fixed:", "`a", "a.b.`c`=hash", "a.b.c=fixed:\x00\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		r, err := ParseRule(spec)
		if err != nil {
			return
		}
		if r.Column == "" {
			t.Fatalf("%q: a rule without a column: %+v", spec, r)
		}
		again, err := ParseRule(r.String())
		if err != nil || again != r {
			t.Fatalf("%q reads as %+v, written %q, which reads as %+v, %v", spec, r, r.String(), again, err)
		}
	})
}

// The same key gives the same outputs in every Rules, every table and
// every run; another key, or the random key of another Rules, others.
func TestDeterminism(t *testing.T) {
	specs := []string{"*.*.email=hash", "*.*.id=hash"}
	a, b := rulesWith(t, testKey, specs...), rulesWith(t, testKey, specs...)
	other := rulesWith(t, []byte("another key, long enough......."), specs...)
	random1, random2 := rulesWith(t, nil, specs...), rulesWith(t, nil, specs...)
	if a.Key() != b.Key() || !strings.HasPrefix(a.Key(), "file ") || a.Key() == other.Key() || random1.Key() != "random" {
		t.Errorf("keys: %q %q %q %q", a.Key(), b.Key(), other.Key(), random1.Key())
	}
	if strings.Contains(a.Key(), string(testKey)) {
		t.Errorf("the key's description %q holds the key", a.Key())
	}
	for _, c := range []Column{varchar64, intCol} {
		in := map[Column]string{varchar64: "alice@example.com", intCol: "4711"}[c]
		x := apply(t, funcOf(t, a, "shop", "customers", c), in)
		for _, where := range [][2]string{{"shop", "orders"}, {"crm", "contacts"}} {
			if y := apply(t, funcOf(t, b, where[0], where[1], c), in); y != x {
				t.Errorf("%s: %q in %s.%s gives %q, in shop.customers %q", c.Name, in, where[0], where[1], y, x)
			}
		}
		if y := apply(t, funcOf(t, other, "shop", "customers", c), in); y == x {
			t.Errorf("%s: another key gives the same %q", c.Name, y)
		}
		r1, r2 := apply(t, funcOf(t, random1, "shop", "customers", c), in), apply(t, funcOf(t, random2, "shop", "customers", c), in)
		if r1 == r2 || r1 == x {
			t.Errorf("%s: random keys give %q and %q (the key file %q)", c.Name, r1, r2, x)
		}
		if x == in {
			t.Errorf("%s: %q is not masked", c.Name, in)
		}
	}
}

func TestStringHash(t *testing.T) {
	r := rulesWith(t, testKey, "*.*.c=hash")
	lower := regexp.MustCompile(`^[a-z2-7]+$`)
	for _, c := range []struct {
		col  Column
		want int
	}{
		{Column{Name: "c", DataType: "varchar", Length: 64, Charset: "utf8mb4"}, 16},
		{Column{Name: "c", DataType: "char", Length: 16, Charset: "latin1"}, 16},
		{Column{Name: "c", DataType: "varbinary", Length: 16}, 16},
		{Column{Name: "c", DataType: "text", Charset: "utf8mb4"}, 16},
		{Column{Name: "c", DataType: "tinyblob"}, 16},
	} {
		f := funcOf(t, r, "d", "t", c.col)
		seen := map[string]bool{}
		for i := range 200 {
			out := apply(t, f, fmt.Sprintf("value %d", i))
			if len(out) != c.want || !lower.MatchString(out) {
				t.Errorf("%s(%d): %q, want %d lower-case base32 digits", c.col.DataType, c.col.Length, out, c.want)
			}
			seen[out] = true
		}
		if c.want >= 8 && len(seen) != 200 {
			t.Errorf("%s(%d): %d distinct outputs of 200 inputs", c.col.DataType, c.col.Length, len(seen))
		}
		if out, null, err := f(nil, nil, true); !null || err != nil || len(out) != 0 {
			t.Errorf("NULL: %q, %v, %v", out, null, err)
		}
		if out := apply(t, f, ""); out != "" {
			t.Errorf("the empty string: %q", out)
		}
	}
}

// An integer maps to an integer of the same type and sign, zero to zero,
// distinct values to distinct values: exhaustively for the 8- and 16-bit
// types, on samples (the extremes included) for the wider ones.
func TestIntegerHash(t *testing.T) {
	r := rulesWith(t, testKey, "*.*.n=hash")
	for _, typ := range []string{"tinyint", "smallint", "mediumint", "int", "bigint"} {
		for _, unsigned := range []bool{false, true} {
			width := intBits(typ)
			lo, hi := -(int64(1) << (width - 1)), int64(1)<<(width-1)-1
			var uhi uint64 = math.MaxUint64 >> (64 - width)
			if unsigned {
				lo = 0
			}
			f := funcOf(t, r, "d", "t", Column{Name: "n", DataType: typ, Unsigned: unsigned})
			var inputs []string
			if width <= 16 {
				for v := lo; ; v++ {
					if unsigned && uint64(v) > uhi || !unsigned && v > hi {
						break
					}
					inputs = append(inputs, strconv.FormatInt(v, 10))
				}
			} else {
				rng := rand.New(rand.NewPCG(1, uint64(width)))
				inputs = append(inputs, "0", "1", "2", strconv.FormatInt(lo, 10), strconv.FormatInt(lo+1, 10), "-1")
				if unsigned {
					inputs = append(inputs, strconv.FormatUint(uhi, 10), strconv.FormatUint(uhi-1, 10))
				} else {
					inputs = append(inputs, strconv.FormatInt(hi, 10), strconv.FormatInt(hi-1, 10))
				}
				for range 20000 {
					if unsigned {
						inputs = append(inputs, strconv.FormatUint(rng.Uint64()&uhi, 10))
					} else {
						inputs = append(inputs, strconv.FormatInt(int64(rng.Uint64()&uhi)+lo, 10))
					}
				}
			}
			seen := map[string]string{}
			changed := 0
			for _, in := range inputs {
				if unsigned && strings.HasPrefix(in, "-") {
					continue
				}
				out := apply(t, f, in)
				if prev, ok := seen[out]; ok && prev != in {
					t.Fatalf("%s unsigned=%v: %s and %s both give %s", typ, unsigned, prev, in, out)
				}
				seen[out] = in
				if out != in {
					changed++
				}
				if unsigned {
					v, err := strconv.ParseUint(out, 10, int(width))
					if err != nil || (v == 0) != (in == "0") {
						t.Fatalf("%s unsigned: %s gives %s (%v)", typ, in, out, err)
					}
					continue
				}
				v, err := strconv.ParseInt(out, 10, int(width))
				iv, _ := strconv.ParseInt(in, 10, 64)
				if err != nil || v < lo || v > hi || (v < 0) != (iv < 0) || (v == 0) != (iv == 0) {
					t.Fatalf("%s: %s gives %s (%v): not of the type's range and the input's sign", typ, in, out, err)
				}
			}
			if changed < len(seen)*9/10 {
				t.Errorf("%s unsigned=%v: only %d of %d values changed", typ, unsigned, changed, len(seen))
			}
		}
	}
	f := funcOf(t, r, "d", "t", Column{Name: "n", DataType: "tinyint"})
	if _, _, err := f(nil, []byte("200"), false); err == nil || strings.Contains(err.Error(), "200") {
		t.Errorf("an out-of-range value: %v (an error that does not show it wanted)", err)
	}
}

func TestEmail(t *testing.T) {
	r := rulesWith(t, testKey, "*.*.email=email")
	f := funcOf(t, r, "d", "t", varchar64)
	a := apply(t, f, "Alice.Smith@Example.COM")
	if !regexp.MustCompile(`^[a-z2-7]{16}@example\.invalid$`).MatchString(a) {
		t.Errorf("%q is not 16 base32 digits @example.invalid", a)
	}
	if b := apply(t, f, " alice.smith@example.com"); b != a {
		t.Errorf("the same address in other case: %q, %q", b, a)
	}
	if b := apply(t, f, "bob@example.com"); b == a {
		t.Errorf("two addresses give %q", a)
	}
	// The stand-in does not depend on the column's length: the narrowest
	// column that holds it gives the one the widest gives.
	narrow := funcOf(t, r, "d", "t", Column{Name: "email", DataType: "varchar", Length: 32, Charset: "utf8mb4"})
	if s := apply(t, narrow, "alice.smith@example.com"); s != a {
		t.Errorf("in a varchar(32): %q, in a varchar(64): %q", s, a)
	}
	_, err := r.Plan().Table("d", "t", []Column{{Name: "email", DataType: "varchar", Length: 30, Charset: "utf8mb4"}})
	if err == nil || !strings.Contains(err.Error(), "column d.t.email (varchar(30)") || !strings.Contains(err.Error(), "holds at most 30 characters; an e-mail stand-in is 32") {
		t.Errorf("varchar(30): %v", err)
	}
}

func TestPhone(t *testing.T) {
	r := rulesWith(t, testKey, "*.*.phone=phone")
	f := funcOf(t, r, "d", "t", Column{Name: "phone", DataType: "varchar", Length: 32, Charset: "utf8mb4"})
	layout := func(s string) string { return regexp.MustCompile(`[0-9]`).ReplaceAllString(s, "9") }
	digits := func(s string) string { return regexp.MustCompile(`[^0-9]`).ReplaceAllString(s, "") }
	a := apply(t, f, "+1 (555) 010-0199 ext. 7")
	if layout(a) != "+9 (999) 999-9999 ext. 9" || digits(a) == "155501001997" {
		t.Errorf("%q: not the layout of the input, or the same digits", a)
	}
	if b := apply(t, f, "15550100199-7"); digits(b) != digits(a) || layout(b) != "99999999999-9" {
		t.Errorf("the same number in another layout: %q, %q", b, a)
	}
	if b := apply(t, f, "unknown"); b != "unknown" {
		t.Errorf("no digits: %q", b)
	}
	// Each digit is uniform over 0-9: over many numbers no digit is rare.
	counts := map[rune]int{}
	for i := range 2000 {
		for _, d := range apply(t, f, fmt.Sprintf("%010d", i)) {
			counts[d]++
		}
	}
	for d := '0'; d <= '9'; d++ {
		if counts[d] < 1600 || counts[d] > 2400 {
			t.Errorf("digit %c: %d of 20000", d, counts[d])
		}
	}
}

func TestFixedAndNull(t *testing.T) {
	r := rulesWith(t, testKey, "*.*.c=fixed:n/a", "*.*.n=null", "*.*.i=fixed:-5")
	tm, err := r.Plan().Table("d", "t", []Column{
		{Name: "c", DataType: "varchar", Length: 3, Nullable: true, Charset: "utf8mb4"},
		{Name: "n", DataType: "date", Nullable: true},
		{Name: "i", DataType: "int"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		in      string
		null    bool
		want    string
		wantNul bool
	}{
		{"secret", false, "n/a", false}, {"", true, "", true},
		{"2020-01-01", false, "", true}, {"", true, "", true},
		{"42", false, "-5", false}, {"", true, "", true},
	} {
		out, null, err := tm.Func(i/2)([]byte("prefix:"), []byte(c.in), c.null)
		if err != nil || string(out) != "prefix:"+c.want || null != c.wantNul {
			t.Errorf("column %d, %q (null %v): %q, null %v, %v", i/2, c.in, c.null, out, null, err)
		}
	}
	want := []Applied{{"c", "fixed:n/a"}, {"n", "null"}, {"i", "fixed:-5"}}
	if got := tm.Applied(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Applied: %v, want %v", got, want)
	}
}

// A rule the column cannot take is refused, naming the column and why.
func TestRefused(t *testing.T) {
	for _, c := range []struct {
		spec string
		col  Column
		want string
	}{
		{"d.t.c=null", Column{Name: "c", DataType: "varchar", Length: 10}, "is NOT NULL, so null cannot mask it"},
		{"d.t.c=hash", Column{Name: "c", DataType: "date", Nullable: true}, "hash masks integer and string columns only"},
		{"d.t.c=hash", Column{Name: "c", DataType: "decimal", Length: 10}, "hash masks integer and string columns only"},
		{"d.t.c=hash", Column{Name: "c", DataType: "longtext", JSON: true, Charset: "utf8mb4"}, "hash masks integer and string columns only"},
		{"d.t.c=email", Column{Name: "c", DataType: "int"}, "email masks string columns only"},
		{"d.t.c=phone", Column{Name: "c", DataType: "bigint"}, "phone masks string columns only"},
		{"d.t.c=hash", Column{Name: "c", DataType: "varbinary", Length: 15}, "holds at most 15 characters; a hash stand-in is 16"},
		{"d.t.c=hash", Column{Name: "c", DataType: "varchar", Length: 10, Charset: "utf16"}, "character set utf16 stores characters in several bytes"},
		{"d.t.c=fixed:300", Column{Name: "c", DataType: "tinyint", Unsigned: true}, `the value "300" is not an integer the column holds`},
		{"d.t.c=fixed:-1", Column{Name: "c", DataType: "int", Unsigned: true}, "is not an integer the column holds"},
		{"d.t.c=fixed:abcd", Column{Name: "c", DataType: "char", Length: 3, Charset: "utf8mb4"}, "the value is 4 long; the column holds at most 3"},
		{"d.t.c=fixed:é", Column{Name: "c", DataType: "varchar", Length: 3, Charset: "latin1"}, "give an ASCII value"},
		{"d.t.c=fixed:{", Column{Name: "c", DataType: "longtext", JSON: true, Charset: "utf8mb4"}, "is not valid JSON"},
		{"d.t.c=fixed:x", Column{Name: "c", DataType: "double"}, `the value "x" is not a number`},
		{"d.t.c=fixed:a", Column{Name: "c", DataType: "enum"}, "fixed cannot mask enum columns"},
	} {
		r := rulesWith(t, testKey, c.spec)
		_, err := r.Plan().Table("d", "t", []Column{c.col})
		var me *Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "column d.t.c (") || !errors.As(err, &me) {
			t.Errorf("%s on %+v: %v, want an *Error naming d.t.c and saying %q", c.spec, c.col, err, c.want)
		}
	}
	for _, c := range []struct {
		spec string
		col  Column
	}{
		{"d.t.c=fixed:é€", Column{Name: "c", DataType: "char", Length: 2, Charset: "utf8mb4"}},
		{"d.t.c=fixed:{\"a\": 1}", Column{Name: "c", DataType: "longtext", JSON: true}},
		{"d.t.c=fixed:2020-01-01", Column{Name: "c", DataType: "date"}},
		{"d.t.c=fixed:18446744073709551615", Column{Name: "c", DataType: "bigint", Unsigned: true}},
		{"d.t.c=null", Column{Name: "c", DataType: "utf16text", Charset: "utf16", Nullable: true}},
		{"d.t.c=hash", Column{Name: "c", DataType: "varbinary", Length: 16}},
	} {
		r := rulesWith(t, testKey, c.spec)
		if _, err := r.Plan().Table("d", "t", []Column{c.col}); err != nil {
			t.Errorf("%s on %+v: %v", c.spec, c.col, err)
		}
	}
}

func TestPlan(t *testing.T) {
	cols := []Column{{Name: "id", DataType: "int"}, {Name: "Email", DataType: "varchar", Length: 64, Nullable: true}, {Name: "note", DataType: "text", Nullable: true}}
	r := rulesWith(t, testKey, "*.*.email=hash", "shop.customers.EMAIL=email", "shop.*.note=null")
	p := r.Plan()
	tm, err := p.Table("shop", "customers", cols)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tm.Applied()); got != "[{Email email} {note null}]" {
		t.Errorf("the most exact rule should win: %s", got)
	}
	tm, err = p.Table("crm", "leads", cols)
	if err != nil || fmt.Sprint(tm.Applied()) != "[{Email hash}]" {
		t.Errorf("crm.leads: %v, %v", tm.Applied(), err)
	}
	if tm, err := p.Table("crm", "other", cols[:1]); tm != nil || err != nil || tm.Func(0) != nil || tm.Applied() != nil {
		t.Errorf("a table no rule names: %v, %v", tm, err)
	}
	if err := p.Check(); err != nil {
		t.Errorf("every rule matched: %v", err)
	}

	r = rulesWith(t, testKey, "*.t.c=hash", "d.*.c=null")
	if _, err := r.Plan().Table("d", "t", []Column{{Name: "c", DataType: "int", Nullable: true}}); err == nil || !strings.Contains(err.Error(), "both name it") {
		t.Errorf("two rules as exact: %v", err)
	}
	r = rulesWith(t, testKey, "*.t.c=hash", "d.*.c=hash")
	if tm, err := r.Plan().Table("d", "t", []Column{{Name: "c", DataType: "int", Nullable: true}}); err != nil || tm.Func(0) == nil {
		t.Errorf("two rules as exact, with one function: %v", err)
	}

	r = rulesWith(t, testKey, "shop.customers.emial=hash", "shop.custmers.email=hash", "*.*.phone=phone", "shop.customers.id=hash")
	p = r.Plan()
	if _, err := p.Table("shop", "customers", cols); err != nil {
		t.Fatal(err)
	}
	err = p.Check()
	for _, want := range []string{
		"mask rule shop.customers.emial=hash: table shop.customers has no column emial",
		"mask rule shop.custmers.email=hash: there is no table shop.custmers among the tables selected",
		"mask rule *.*.phone=phone: no column of the tables selected matches it",
		"nothing was written",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v, want it to say %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "customers.id") {
		t.Errorf("Check names a rule that matched: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	a := rulesWith(t, testKey, "b.t.c=hash", "a.t.c=null", "b.t.c=hash")
	b := rulesWith(t, testKey, "a.t.c=null", "b.t.c=hash")
	if a.Describe() != b.Describe() || !strings.HasPrefix(a.Describe(), "a.t.c=null\nb.t.c=hash\nkey file ") {
		t.Errorf("the same rules describe as %q and %q", a.Describe(), b.Describe())
	}
	if c := rulesWith(t, nil, "a.t.c=null", "b.t.c=hash"); c.Describe() == a.Describe() || !strings.HasSuffix(c.Describe(), "\nkey random") {
		t.Errorf("a random key: %q", c.Describe())
	}
	var none *Rules
	if none.Describe() != "" {
		t.Error("nil rules describe as something")
	}
}

func TestReadKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, err := ReadKeyFile(write("a", append(bytes.Clone(testKey), '\n')))
	if err != nil || !bytes.Equal(a, testKey) {
		t.Errorf("a key with a newline: %q, %v", a, err)
	}
	b, err := ReadKeyFile(write("b", append(bytes.Clone(testKey), '\r', '\n')))
	if err != nil || !bytes.Equal(b, testKey) {
		t.Errorf("a key with CR LF: %q, %v", b, err)
	}
	if _, err := ReadKeyFile(write("short", []byte("secret\n"))); err == nil || !strings.Contains(err.Error(), "holds 6 bytes; a key needs at least 16") || strings.Contains(err.Error(), "secret") {
		t.Errorf("a short key: %v", err)
	}
	if _, err := ReadKeyFile(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing file: no error")
	}
	r := rulesWith(t, nil, "a.b.c=hash")
	if err := r.SetKey([]byte("short")); err == nil {
		t.Error("SetKey of 5 bytes: no error")
	}
}

func TestAppendBase32(t *testing.T) {
	// RFC 4648's test vector, lower case.
	if got := string(appendBase32(nil, []byte("foobar"), 8)); got != "mzxw6ytb" {
		t.Errorf("appendBase32(foobar) = %q, want mzxw6ytb", got)
	}
	if got := string(appendBase32([]byte("x"), []byte("foobar"), 3)); got != "xmzx" {
		t.Errorf("appendBase32(foobar, 3) = %q", got)
	}
}

func BenchmarkIntegerHash(b *testing.B) {
	f := funcOf(b, rulesWith(b, testKey, "*.*.id=hash"), "d", "t", intCol)
	var dst []byte
	for i := 0; b.Loop(); i++ {
		dst, _, _ = f(dst[:0], strconv.AppendInt(nil, int64(i), 10), false)
	}
}

func BenchmarkStringHash(b *testing.B) {
	f := funcOf(b, rulesWith(b, testKey, "*.*.email=hash"), "d", "t", varchar64)
	var dst []byte
	v := []byte("someone.somewhere@example.com")
	for b.Loop() {
		dst, _, _ = f(dst[:0], v, false)
	}
}

func TestUnmaskable(t *testing.T) {
	r := rulesWith(t, testKey, "d.t.g=null")
	_, err := r.Plan().Table("d", "t", []Column{{Name: "g", DataType: "int", Nullable: true, Unmaskable: "it is generated"}})
	if err == nil || !strings.Contains(err.Error(), "column d.t.g: mask rule d.t.g=null: it is generated") {
		t.Errorf("an unmaskable column: %v", err)
	}
}

// One rule on columns of different lengths gives a value one stand-in in
// both, and the plan warns that the rule's columns differ.
func TestStandInsDoNotDependOnLength(t *testing.T) {
	for _, spec := range []string{"*.*.c=hash", "*.*.c=email"} {
		r := rulesWith(t, testKey, spec)
		p := r.Plan()
		var outs []string
		for _, n := range []int64{32, 255} {
			mt, err := p.Table("d", fmt.Sprintf("t%d", n), []Column{{Name: "c", DataType: "varchar", Length: n, Charset: "utf8mb4"}})
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, apply(t, mt.Func(0), "Alice@example.com"))
		}
		if outs[0] != outs[1] {
			t.Errorf("%s: varchar(32) gives %q, varchar(255) %q", spec, outs[0], outs[1])
		}
		w := p.Warnings()
		if len(w) != 1 || !strings.Contains(w[0], "d.t32.c (varchar(32))") || !strings.Contains(w[0], "d.t255.c (varchar(255))") {
			t.Errorf("%s: warnings %q, want one naming both columns and their types", spec, w)
		}
	}
	r := rulesWith(t, testKey, "*.*.c=hash")
	p := r.Plan()
	for _, tb := range []string{"a", "b"} {
		if _, err := p.Table("d", tb, []Column{{Name: "c", DataType: "varchar", Length: 40, Charset: "utf8mb4"}}); err != nil {
			t.Fatal(err)
		}
	}
	if w := p.Warnings(); len(w) != 0 {
		t.Errorf("columns of one type: warnings %q", w)
	}
}

// A key file without rules is refused: the user meant to mask something.
func TestLoadRefusesAKeyWithoutRules(t *testing.T) {
	r, err := Load(nil, "/any/key/file")
	var me *Error
	if r != nil || !errors.As(err, &me) || !strings.Contains(err.Error(), "--mask-key-file needs --mask") {
		t.Errorf("Load(nil, key) = %v, %v; want refused", r, err)
	}
	if r, err := Load(nil, ""); r != nil || err != nil {
		t.Errorf("Load(nil, \"\") = %v, %v; want nothing", r, err)
	}
}

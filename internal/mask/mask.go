package mask

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Rules are the masking rules of one dump or load, with their key.
type Rules struct {
	rules []Rule
	keys  *keys
}

// Parse reads rules (see ParseRule). They are keyed with a random key
// made for them, never kept, until SetKey gives another.
func Parse(specs []string) (*Rules, error) {
	r := &Rules{keys: randomKeys()}
	for _, s := range specs {
		rule, err := ParseRule(s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(r.rules, rule) {
			r.rules = append(r.rules, rule)
		}
	}
	return r, nil
}

// Load parses rules (see Parse) and, with a key file, keys them with its
// material (see ReadKeyFile, SetKey); nil without rules, and refused for
// a key file without rules (the user meant to mask something). Every
// error is an *Error.
func Load(specs []string, keyFile string) (*Rules, error) {
	if len(specs) == 0 {
		if keyFile != "" {
			return nil, errorf("--mask-key-file needs --mask")
		}
		return nil, nil
	}
	r, err := Parse(specs)
	if err != nil || keyFile == "" {
		return r, err
	}
	key, err := ReadKeyFile(keyFile)
	if err == nil {
		err = r.SetKey(key)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// SetKey keys the rules with key material, a key file's content (see
// ReadKeyFile): the same material gives the same outputs in every run.
func (r *Rules) SetKey(material []byte) error {
	if len(material) < MinKeyBytes {
		return errorf("a mask key needs at least %d bytes, got %d", MinKeyBytes, len(material))
	}
	r.keys = newKeys(material, true)
	return nil
}

// List returns the rules, in the order given, duplicates left out.
func (r *Rules) List() []Rule { return slices.Clone(r.rules) }

// Key says which key the rules use, never the key itself: "random" (made
// for this run and forgotten: its outputs cannot be made again), or
// "file" and a fingerprint of the key file's key (the same in every run
// with that key, so their outputs match).
func (r *Rules) Key() string { return r.keys.fingerprint() }

// Describe is the rules, sorted, and their Key, one a line: two Rules
// whose descriptions are equal and whose key is not random mask alike.
// Nil rules describe as "".
func (r *Rules) Describe() string {
	if r == nil {
		return ""
	}
	var lines []string
	for _, rule := range r.rules {
		lines = append(lines, rule.String())
	}
	slices.Sort(lines)
	return strings.Join(append(lines, "key "+r.Key()), "\n")
}

// Column is what a rule needs to know of a column to fit its outputs to
// it.
type Column struct {
	Name string
	// DataType is information_schema's DATA_TYPE, lower case: int,
	// varchar, longtext, ...
	DataType string
	// Length is the declared length: characters of CHAR and VARCHAR,
	// bytes of BINARY and VARBINARY; 0 when there is none.
	Length   int64
	Unsigned bool
	Nullable bool
	// Charset is a textual column's character set, lower case; "" when
	// not known.
	Charset string
	// JSON: a JSON column (a LONGTEXT with CHECK (json_valid(...))).
	JSON bool
	// Unmaskable says why no rule may mask the column ("" when one may):
	// a column whose values the data files do not hold, or that the
	// server sets itself.
	Unmaskable string
}

// Func masks one value. v is the value as a data file holds it, unescaped
// (an integer's decimal digits, a string's bytes in its column's
// character set), null says it is NULL. It appends the masked value to
// dst and says whether that is NULL. Errors never hold the value. A Func
// may be called from many goroutines at once.
type Func func(dst, v []byte, null bool) (out []byte, isNull bool, err error)

// Table is how one table's columns are masked.
type Table struct {
	funcs   []Func
	applied []Applied
}

// Applied names a masked column and the function that masks it (as a rule
// writes it: hash, fixed:VALUE, ...).
type Applied struct {
	Column   string `json:"column"`
	Function string `json:"function"`
}

// Func returns how column i (in the order given to Plan.Table) is masked;
// nil when it is not.
func (t *Table) Func(i int) Func {
	if t == nil || i >= len(t.funcs) {
		return nil
	}
	return t.funcs[i]
}

// Applied lists the masked columns, in the table's order.
func (t *Table) Applied() []Applied {
	if t == nil {
		return nil
	}
	return slices.Clone(t.applied)
}

// Plan matches the rules against the tables of one dump or load, one
// table at a time, and then checks that every rule matched a column. It
// is used from one goroutine; the Tables it returns from any number.
type Plan struct {
	r      *Rules
	used   []bool
	tables map[string]bool // db "\x00" table, of every table seen
	// masked lists, per rule, the columns it masks with their types, as
	// db.table.column (type).
	masked [][]string
	types  []map[string]bool
}

// Plan starts matching the rules against tables.
func (r *Rules) Plan() *Plan {
	p := &Plan{r: r, used: make([]bool, len(r.rules)), tables: map[string]bool{}, masked: make([][]string, len(r.rules))}
	for range r.rules {
		p.types = append(p.types, map[string]bool{})
	}
	return p
}

// Table returns how the columns of table db.table, in the order given,
// are masked: nil when no rule names any of them. A rule whose function
// the column cannot hold (a NOT NULL column for null, a DATE for hash, a
// column too short for an e-mail stand-in, a fixed value out of its
// range) is an error naming the column. Where several rules name a
// column the one that names its database and table most exactly wins;
// two as exact that differ are an error.
func (p *Plan) Table(db, table string, cols []Column) (*Table, error) {
	p.tables[db+"\x00"+table] = true
	var t *Table
	for i, c := range cols {
		best, bestScore := -1, 0
		for j, rule := range p.r.rules {
			score := rule.matches(db, table, c.Name)
			if score == 0 {
				continue
			}
			p.used[j] = true
			switch {
			case score > bestScore:
				best, bestScore = j, score
			case score == bestScore && rule.FunctionString() != p.r.rules[best].FunctionString():
				return nil, errorf("column %s.%s.%s: mask rules %s and %s both name it; keep one", db, table, c.Name, p.r.rules[best], rule)
			}
		}
		if best < 0 {
			continue
		}
		rule := p.r.rules[best]
		if c.Unmaskable != "" {
			return nil, errorf("column %s.%s.%s: mask rule %s: %s", db, table, c.Name, rule, c.Unmaskable)
		}
		f, err := p.r.keys.function(rule, c)
		if err != nil {
			return nil, errorf("column %s.%s.%s (%s): mask rule %s: %s", db, table, c.Name, describe(c), rule, err.Error())
		}
		if t == nil {
			t = &Table{funcs: make([]Func, len(cols))}
		}
		t.funcs[i] = f
		t.applied = append(t.applied, Applied{Column: c.Name, Function: rule.FunctionString()})
		p.masked[best] = append(p.masked[best], db+"."+table+"."+c.Name+" ("+describeType(c)+")")
		p.types[best][describeType(c)] = true
	}
	return t, nil
}

// Check reports the rules that matched no column of the tables given to
// Table: a name misspelt, or a table the filters leave out.
func (p *Plan) Check() error {
	var problems []string
	for j, rule := range p.r.rules {
		switch {
		case p.used[j]:
		case rule.Database != "" && rule.Table != "" && !p.tables[rule.Database+"\x00"+rule.Table]:
			problems = append(problems, "mask rule "+rule.String()+": there is no table "+quote(rule.Database)+"."+quote(rule.Table)+" among the tables selected")
		case rule.Database != "" && rule.Table != "":
			problems = append(problems, "mask rule "+rule.String()+": table "+quote(rule.Database)+"."+quote(rule.Table)+" has no column "+quote(rule.Column))
		default:
			problems = append(problems, "mask rule "+rule.String()+": no column of the tables selected matches it")
		}
	}
	if len(problems) > 0 {
		return errorf("%s (check the names, and the database and table filters; nothing was written)", strings.Join(problems, "; "))
	}
	return nil
}

// Warnings are what the rules bound so far do that a user may not mean:
// a rule whose columns differ in type or length. Their stand-ins match
// only where the types do: hash gives integers of different widths
// different stand-ins, and a value one column holds another may not.
func (p *Plan) Warnings() []string {
	var out []string
	for j, rule := range p.r.rules {
		if len(p.types[j]) > 1 {
			out = append(out, "mask rule "+rule.String()+" masks columns of different types or lengths: "+strings.Join(p.masked[j], ", ")+
				"; a value gets the same stand-in in each only where the types hold the same values (hash gives integers of different widths different ones), so a join between them may find less than on the source")
		}
	}
	return out
}

// describeType names a column's type, without its nullability.
func describeType(c Column) string {
	c.Nullable = true
	return describe(c)
}

// describe names a column's type for a message.
func describe(c Column) string {
	s := c.DataType
	if c.Length > 0 {
		s += "(" + strconv.FormatInt(c.Length, 10) + ")"
	}
	if c.Unsigned {
		s += " unsigned"
	}
	if c.JSON {
		s = "json"
	}
	if !c.Nullable {
		s += " not null"
	}
	return s
}

// intBits is the width of an integer type, 0 for other types.
func intBits(dataType string) uint {
	switch dataType {
	case "tinyint":
		return 8
	case "smallint":
		return 16
	case "mediumint":
		return 24
	case "int", "integer":
		return 32
	case "bigint":
		return 64
	}
	return 0
}

// stringType says whether a type holds strings, the most bytes or
// characters it takes (length in characters when chars), and whether it
// is binary (no character set).
func stringType(c Column) (limit int64, chars, binary, ok bool) {
	switch c.DataType {
	case "char", "varchar":
		return c.Length, true, false, true
	case "binary", "varbinary":
		return c.Length, false, true, true
	case "tinytext", "tinyblob":
		return 255, false, c.DataType == "tinyblob", true
	case "text", "blob":
		return 65535, false, c.DataType == "blob", true
	case "mediumtext", "mediumblob":
		return 16777215, false, c.DataType == "mediumblob", true
	case "longtext", "longblob":
		return math.MaxUint32, false, c.DataType == "longblob", !c.JSON
	}
	return 0, false, false, false
}

// wideCharset reports a character set whose characters are not ASCII
// bytes: the stand-ins (ASCII) would be read as other characters.
func wideCharset(cs string) bool {
	switch cs {
	case "ucs2", "utf16", "utf16le", "utf32":
		return true
	}
	return false
}

func utf8Charset(cs string) bool {
	return cs == "utf8mb4" || cs == "utf8mb3" || cs == "utf8"
}

// Lengths of the stand-ins, fixed whatever the column's declared length,
// so that one value masks alike in every column a rule names (a join
// between a VARCHAR(32) and a VARCHAR(255) still finds its rows): a hash
// is hashChars base32 digits (80 bits); an e-mail is emailLocal of them
// (80 bits) @ emailDomain. A column too short for them is refused, never
// given a shortened stand-in.
const (
	hashChars   = 16
	emailLocal  = 16
	emailDomain = "example.invalid"
	emailChars  = emailLocal + 1 + len(emailDomain)
)

// function makes the Func of rule for column c, or says why c cannot hold
// what it makes.
func (k *keys) function(rule Rule, c Column) (Func, error) {
	limit, _, binary, isString := stringType(c)
	if isString && !binary && wideCharset(c.Charset) && rule.Function != FuncNull {
		return nil, errorf("its character set %s stores characters in several bytes each, which the stand-ins would not be; only null masks it", c.Charset)
	}
	switch rule.Function {
	case FuncNull:
		if !c.Nullable {
			return nil, errorf("the column is NOT NULL, so null cannot mask it; use fixed:VALUE or hash")
		}
		return func(dst, _ []byte, _ bool) ([]byte, bool, error) { return dst, true, nil }, nil
	case FuncFixed:
		if err := checkFixed(rule.Value, c); err != nil {
			return nil, err
		}
		value := []byte(rule.Value)
		return func(dst, _ []byte, null bool) ([]byte, bool, error) {
			if null {
				return dst, true, nil
			}
			return append(dst, value...), false, nil
		}, nil
	case FuncHash:
		if n := intBits(c.DataType); n > 0 {
			return k.intHash(n, c.Unsigned), nil
		}
		if !isString {
			return nil, errorf("hash masks integer and string columns only; use fixed:VALUE or null")
		}
		if limit < hashChars {
			return nil, errorf("the column holds at most %d characters; a hash stand-in is %d (use fixed:VALUE or null, or widen the column)", limit, hashChars)
		}
		return k.stringHash(hashChars), nil
	case FuncEmail:
		if !isString {
			return nil, errorf("email masks string columns only")
		}
		if limit < int64(emailChars) {
			return nil, errorf("the column holds at most %d characters; an e-mail stand-in is %d (use hash, fixed:VALUE or null, or widen the column)", limit, emailChars)
		}
		return k.email(emailLocal), nil
	case FuncPhone:
		if !isString {
			return nil, errorf("phone masks string columns only")
		}
		return k.phone(), nil
	}
	return nil, errorf("unknown function %q", rule.Function)
}

// checkFixed says why column c cannot hold value, or nil.
func checkFixed(value string, c Column) error {
	limit, chars, binary, isString := stringType(c)
	if n := intBits(c.DataType); n > 0 {
		var err error
		if c.Unsigned {
			_, err = strconv.ParseUint(value, 10, int(n))
		} else {
			_, err = strconv.ParseInt(value, 10, int(n))
		}
		if err != nil {
			return errorf("the value %q is not an integer the column holds", value)
		}
		return nil
	}
	switch {
	case c.JSON:
		if !json.Valid([]byte(value)) {
			return errorf("the value %q is not valid JSON", value)
		}
		return nil
	case isString:
		if !binary && !utf8Charset(c.Charset) && !isASCII(value) {
			return errorf("the column's character set (%s) is not utf8mb4: give an ASCII value", charsetName(c.Charset))
		}
		if !utf8.ValidString(value) && !binary {
			return errorf("the value is not valid UTF-8")
		}
		n := int64(len(value))
		if chars {
			n = int64(utf8.RuneCountInString(value))
		}
		if n > limit {
			return errorf("the value is %d long; the column holds at most %d", n, limit)
		}
		return nil
	}
	switch c.DataType {
	case "float", "double", "decimal":
		if _, err := strconv.ParseFloat(value, 64); err != nil {
			return errorf("the value %q is not a number", value)
		}
	case "bit", "enum", "set", "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
		return errorf("fixed cannot mask %s columns (their values travel as numbers or binary shapes); use null", c.DataType)
	}
	// Dates, times, UUIDs, addresses: the server converts the text.
	return nil
}

func charsetName(cs string) string {
	if cs == "" {
		return "not known"
	}
	return cs
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Tags that keep the functions' hashes apart.
const (
	tagHash  = "hash\x00"
	tagEmail = "email\x00"
	tagPhone = "phone\x00"
)

// stringHash replaces a string with the first n base32 digits of its
// keyed hash; the empty string stays empty.
func (k *keys) stringHash(n int) Func {
	return func(dst, v []byte, null bool) ([]byte, bool, error) {
		if null || len(v) == 0 {
			return dst, null, nil
		}
		var buf [32]byte
		return appendBase32(dst, k.sum(buf[:0], tagHash, v), n), false, nil
	}
}

// email replaces a string with n base32 digits of the keyed hash of its
// lower-case form @example.invalid: addresses that differ only in the
// case of ASCII letters (as a case-insensitive collation compares them)
// get the same one. The empty string stays empty.
func (k *keys) email(n int) Func {
	return func(dst, v []byte, null bool) ([]byte, bool, error) {
		if null || len(v) == 0 {
			return dst, null, nil
		}
		lower := make([]byte, 0, 64)
		for _, b := range trimSpace(v) {
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			lower = append(lower, b)
		}
		var buf [32]byte
		dst = appendBase32(dst, k.sum(buf[:0], tagEmail, lower), n)
		dst = append(dst, '@')
		return append(dst, emailDomain...), false, nil
	}
}

func trimSpace(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}

// phone replaces every ASCII digit with one drawn from the keyed hash of
// all the digits, in order: the same number written in different ways
// (+1 555-0100, (555) 0100) gets the same digits, each in its own layout.
// Other characters stay where they are.
func (k *keys) phone() Func {
	return func(dst, v []byte, null bool) ([]byte, bool, error) {
		if null {
			return dst, true, nil
		}
		digits := make([]byte, 0, 20)
		for _, b := range v {
			if '0' <= b && b <= '9' {
				digits = append(digits, b)
			}
		}
		if len(digits) == 0 {
			return append(dst, v...), false, nil
		}
		d := k.stream(tagPhone, digits)
		var buf [32]byte
		next := func() byte {
			for {
				d.Read(buf[:1])
				if buf[0] < 250 { // uniform over 0-9
					return '0' + buf[0]%10
				}
			}
		}
		for _, b := range v {
			if '0' <= b && b <= '9' {
				b = next()
			}
			dst = append(dst, b)
		}
		return dst, false, nil
	}
}

// intHash replaces an integer of a column of width bits with another of
// the same sign: a keyed permutation of the positive values of the type,
// and another of the negative ones; zero stays zero. Distinct values stay
// distinct, so a key stays unique and a foreign key of the same type
// still finds its row.
func (k *keys) intHash(width uint, unsigned bool) Func {
	return func(dst, v []byte, null bool) ([]byte, bool, error) {
		if null {
			return dst, true, nil
		}
		if unsigned {
			x, err := strconv.ParseUint(string(v), 10, int(width))
			if err != nil {
				return dst, false, errorf("a value is not an unsigned integer of %d bits", width)
			}
			if x == 0 {
				return append(dst, '0'), false, nil
			}
			top := uint64(math.MaxUint64) >> (64 - width) // the largest value, and the count of positive ones
			return strconv.AppendUint(dst, k.permute(x-1, top, 'u')+1, 10), false, nil
		}
		x, err := strconv.ParseInt(string(v), 10, int(width))
		if err != nil {
			return dst, false, errorf("a value is not an integer of %d bits", width)
		}
		switch {
		case x > 0:
			top := uint64(1)<<(width-1) - 1
			return strconv.AppendInt(dst, int64(k.permute(uint64(x-1), top, '+')+1), 10), false, nil
		case x < 0:
			count := uint64(1) << (width - 1)
			return strconv.AppendInt(dst, -int64(k.permute(uint64(-(x+1)), count, '-'))-1, 10), false, nil
		}
		return append(dst, '0'), false, nil
	}
}

const base32Digits = "abcdefghijklmnopqrstuvwxyz234567"

// appendBase32 appends the first n base32 digits (RFC 4648, lower case)
// of src: lower case, so that a case-insensitive collation tells every
// two apart.
func appendBase32(dst, src []byte, n int) []byte {
	var acc uint32
	var have uint
	for _, b := range src {
		acc = acc<<8 | uint32(b)
		have += 8
		for have >= 5 {
			if n == 0 {
				return dst
			}
			have -= 5
			dst = append(dst, base32Digits[acc>>have&31])
			n--
		}
	}
	return dst
}

package logical

import (
	"bytes"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"

	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mask"
	"github.com/backstream/backstream/internal/progress"
)

// Masking (see package mask) happens where rows become data-file lines in
// a dump (appendRow), and where a data file's lines go to LOAD DATA in a
// load (loadFile, after the file was checked against its digest): the
// unmasked values never reach the repository in the first case, nor the
// target (its tables, its binary log) in either.

// tableMasks masks a table's data-file columns, names: funcs in file
// order, nil for a column left as it is.
type tableMasks struct {
	names   []string
	funcs   []mask.Func
	applied []mask.Applied
}

// planMasks matches plan's rules against table t of database db, whose
// data files hold the columns names, in that order; nil when no rule
// names one of its columns.
func planMasks(plan *mask.Plan, db string, t *schema.Table, names []string) (*tableMasks, error) {
	defs, err := schema.ColumnDefs(t.Create)
	if err != nil {
		return nil, fmt.Errorf("table %s.%s: %w", db, t.Name, err)
	}
	index := func(name string) int {
		for i, n := range names {
			if strings.EqualFold(n, name) {
				return i
			}
		}
		return -1
	}
	cols := make([]mask.Column, len(t.Columns))
	for i, c := range t.Columns {
		mc := mask.Column{Name: c.Name, DataType: c.DataType, Nullable: true}
		for _, d := range defs {
			if strings.EqualFold(d.Name, c.Name) {
				mc.Length, mc.Unsigned, mc.Nullable, mc.Charset, mc.JSON = d.Length, d.Unsigned, !d.NotNull, d.Charset, d.JSON
			}
		}
		switch {
		case c.Generated:
			mc.Unmaskable = "it is generated: not in the data files, the target computes it from the columns it is made of (mask those)"
		case c.RowStart || c.RowEnd:
			mc.Unmaskable = "it is a system-versioning period column, which the server sets"
		case index(c.Name) < 0:
			mc.Unmaskable = "it is not in the data files"
		}
		cols[i] = mc
	}
	mt, err := plan.Table(db, t.Name, cols)
	if err != nil || mt == nil {
		return nil, err
	}
	m := &tableMasks{names: names, funcs: make([]mask.Func, len(names)), applied: mt.Applied()}
	for i, c := range t.Columns {
		if f := mt.Func(i); f != nil {
			m.funcs[index(c.Name)] = f
		}
	}
	return m, nil
}

// warnMasks says, when the rules are bound to the schema, what the plan
// warns of (a rule whose columns differ in type or length).
func warnMasks(plan *mask.Plan, t *progress.Tracker) {
	if t == nil {
		return
	}
	for _, w := range plan.Warnings() {
		t.Logf("warning: %s", w)
	}
}

// fn is how column i of the data files is masked; nil when it is not.
func (m *tableMasks) fn(i int) mask.Func {
	if m == nil {
		return nil
	}
	return m.funcs[i]
}

// masked reports whether the column name is masked.
func (m *tableMasks) masked(name string) bool {
	if m == nil {
		return false
	}
	for i, n := range m.names {
		if strings.EqualFold(n, name) && m.fn(i) != nil {
			return true
		}
	}
	return false
}

// appendMasked writes one value, as the driver gives it, masked by f.
func appendMasked(dst []byte, v driver.Value, f mask.Func) ([]byte, error) {
	var raw []byte
	switch x := v.(type) {
	case nil:
	case []byte:
		raw = x
	case string:
		raw = []byte(x)
	case int64:
		raw = strconv.AppendInt(nil, x, 10)
	case uint64:
		raw = strconv.AppendUint(nil, x, 10)
	case float32:
		raw = strconv.AppendFloat(nil, float64(x), 'g', -1, 32)
	case float64:
		raw = strconv.AppendFloat(nil, x, 'g', -1, 64)
	default:
		return dst, fmt.Errorf("unexpected value of type %T from the driver", v)
	}
	out, null, err := f(nil, raw, v == nil)
	if err != nil {
		return dst, err
	}
	return appendField(dst, out, null), nil
}

// maskData masks the lines of a data file.
func maskData(data []byte, m *tableMasks) ([]byte, error) {
	out := make([]byte, 0, len(data)+len(data)/4)
	for n := 1; len(data) > 0; n++ {
		end := bytes.IndexByte(data, '\n')
		if end < 0 {
			return nil, fmt.Errorf("line %d does not end with a newline", n)
		}
		var err error
		if out, err = m.appendLine(out, data[:end]); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, '\n')
		data = data[end+1:]
	}
	return out, nil
}

// appendLine masks one line of a data file (without its newline). The
// fields of a line are split at every tab: a tab inside a value is
// escaped (\t).
func (m *tableMasks) appendLine(dst, line []byte) ([]byte, error) {
	for i := 0; ; i++ {
		if i >= len(m.funcs) {
			return nil, fmt.Errorf("more than the %d fields of the table's data files", len(m.funcs))
		}
		if i > 0 {
			dst = append(dst, '\t')
		}
		end := bytes.IndexByte(line, '\t')
		field := line
		if end >= 0 {
			field = line[:end]
		}
		if f := m.funcs[i]; f == nil {
			dst = append(dst, field...)
		} else {
			values, nulls, err := parseLine(field)
			if err != nil {
				return nil, fmt.Errorf("field %d: %w", i+1, err)
			}
			out, null, err := f(nil, values[0], nulls[0])
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", m.names[i], err)
			}
			dst = appendField(dst, out, null)
		}
		if end < 0 {
			if i+1 != len(m.funcs) {
				return nil, fmt.Errorf("%d fields where the table's data files have %d", i+1, len(m.funcs))
			}
			return dst, nil
		}
		line = line[end+1:]
	}
}

// maskedColumns lists what a table's masks did, as db.table.column=function.
func maskedColumns(db, table string, m *tableMasks) []string {
	if m == nil {
		return nil
	}
	var out []string
	for _, a := range m.applied {
		out = append(out, db+"."+table+"."+a.Column+"="+a.Function)
	}
	return out
}

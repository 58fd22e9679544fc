package sandboxtest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// DescribeObjects returns the definition of every object of the given
// databases as the server shows it: SHOW CREATE of the database, its
// tables, sequences (and their current row), views, triggers, routines,
// packages and events, keyed by "kind db.name". Two servers holding the
// same schema give equal maps; tests compare a source with a restore.
func DescribeObjects(ctx context.Context, db *sql.DB, databases ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, d := range databases {
		if err := describeDatabase(ctx, db, d, out); err != nil {
			return nil, fmt.Errorf("describe %s: %w", d, err)
		}
	}
	return out, nil
}

func describeDatabase(ctx context.Context, db *sql.DB, d string, out map[string]string) error {
	q := quoteIdent(d)
	if err := showInto(ctx, db, out, "database "+d, "SHOW CREATE DATABASE "+q); err != nil {
		return err
	}
	type object struct{ kind, name string }
	var objs []object
	lists := []struct{ kind, query string }{
		{"table", "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE <> 'VIEW'"},
		{"view", "SELECT TABLE_NAME, '' FROM information_schema.VIEWS WHERE TABLE_SCHEMA = ?"},
		{"trigger", "SELECT TRIGGER_NAME, '' FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?"},
		{"routine", "SELECT ROUTINE_NAME, ROUTINE_TYPE FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ?"},
		{"event", "SELECT EVENT_NAME, '' FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ?"},
	}
	for _, l := range lists {
		rows, err := db.QueryContext(ctx, l.query, d)
		if err != nil {
			return err
		}
		for rows.Next() {
			var name, typ string
			if err := rows.Scan(&name, &typ); err != nil {
				rows.Close()
				return err
			}
			kind := l.kind
			switch {
			case typ == "SEQUENCE":
				kind = "sequence"
			case l.kind == "routine":
				kind = strings.ToLower(typ)
			}
			objs = append(objs, object{kind, name})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for _, o := range objs {
		qn := q + "." + quoteIdent(o.name)
		key := o.kind + " " + d + "." + o.name
		show := "SHOW CREATE " + strings.ToUpper(o.kind) + " " + qn
		if o.kind == "sequence" {
			if err := showInto(ctx, db, out, "sequence row "+d+"."+o.name, "SELECT * FROM "+qn); err != nil {
				return err
			}
		}
		if err := showInto(ctx, db, out, key, show); err != nil {
			return err
		}
	}
	return nil
}

// DescribeAccounts returns SHOW CREATE USER (for users) and SHOW GRANTS of
// each account, given as 'user'@'host' or a role name.
func DescribeAccounts(ctx context.Context, db *sql.DB, accounts ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range accounts {
		if strings.Contains(a, "@") {
			if err := showInto(ctx, db, out, "user "+a, "SHOW CREATE USER "+a); err != nil {
				return nil, err
			}
		}
		if err := showInto(ctx, db, out, "grants "+a, "SHOW GRANTS FOR "+a); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// showInto runs a SHOW (or SELECT) and stores all its rows' columns, but
// for creation times, which a restore cannot keep.
func showInto(ctx context.Context, db *sql.DB, out map[string]string, key, query string) error {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("%s: %w", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var b strings.Builder
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			if strings.EqualFold(cols[i], "Created") {
				continue
			}
			fmt.Fprintf(&b, "%s=%v:%s\n", cols[i], v.Valid, v.String)
		}
	}
	out[key] = b.String()
	return rows.Err()
}

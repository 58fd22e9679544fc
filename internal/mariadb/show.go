package mariadb

import (
	"context"
	"database/sql"
)

// Querier runs a query: a *sql.DB, *sql.Conn or *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// ShowRow runs query, a SHOW statement of one row, and returns that row by
// column name, or nil when the statement returned no row. Columns are read
// by name because their set and order change between server versions.
func ShowRow(ctx context.Context, db Querier, query string) (map[string]sql.NullString, error) {
	rows, err := ShowRows(ctx, db, query)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return rows[0], nil
}

// ShowRows runs query, a SHOW statement, and returns its rows by column
// name, as ShowRow does.
func ShowRows(ctx context.Context, db Querier, query string) ([]map[string]sql.NullString, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []map[string]sql.NullString
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		dest := make([]any, len(cols))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		row := make(map[string]sql.NullString, len(cols))
		for i, c := range cols {
			row[c] = vals[i]
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, rows.Close()
}

// Package logical takes and loads logical backups: a consistent, chunked,
// parallel dump of a MariaDB server's tables into the same stream objects
// as physical backups, and a parallel load of them through LOAD DATA.
// Backup ids, destinations and inputs are passed in: it knows nothing of
// the repository's layout or of flags.
package logical

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mask"
)

// CatalogName is the meta object that holds a logical backup's catalog.
const CatalogName = "meta/catalog.json"

// Catalog is what a logical backup holds besides its data files: every
// object's definition, and which data files belong to which table.
type Catalog struct {
	Schema *schema.Catalog `json:"schema"`
	// DataFormat says how the data files encode values: DataFormatText
	// (0, absent) in backups made before it existed, DataFormatNumeric
	// since.
	DataFormat int         `json:"data_format,omitempty"`
	Tables     []TableData `json:"tables"`
	// Whole says the dump took the whole server: no database or table
	// filter, no kind of object skipped, so accounts too. Only such a
	// dump is a base for a point-in-time restore, whose binary logs touch
	// anything on the server. False in backups made before it existed.
	Whole bool `json:"whole,omitempty"`
	// MaskKey says which key masked the columns TableData.Masked lists
	// (mask.Rules.Key: "random", or "file" and the key's fingerprint;
	// never the key); "" when none is masked.
	MaskKey string `json:"mask_key,omitempty"`
}

// Data file formats (Catalog.DataFormat). They differ only in ENUM and SET
// columns.
const (
	// DataFormatText writes ENUM and SET values as their text. The text
	// cannot tell an ENUM's error value (index 0, which a permissive
	// server stores for an invalid value) from a '' member, nor a SET
	// holding only its '' member from the empty set: both load as the
	// member.
	DataFormatText = 0
	// DataFormatNumeric writes them as their numbers: an ENUM's index (0
	// for the error value), a SET's bitmask, which load back exactly.
	DataFormatNumeric = 1
	// dataFormat is the format dumps write.
	dataFormat = DataFormatNumeric
)

// TableData lists the data files of one table, in the order they were
// cut. Columns are the dumped columns in file order.
type TableData struct {
	Database string   `json:"database"`
	Table    string   `json:"table"`
	Columns  []string `json:"columns"`
	Chunks   []Chunk  `json:"chunks"`
	// Masked lists the columns whose values the dump masked, and how.
	Masked []mask.Applied `json:"masked,omitempty"`
}

// Chunk is one data file. ID is unique in the backup: the load journal
// records it.
type Chunk struct {
	ID    int    `json:"id"`
	Path  string `json:"path"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
	Sum   RowSum `json:"row_sum,omitzero"`
}

// ParseCatalog decodes and checks a catalog.
func ParseCatalog(data []byte) (*Catalog, error) {
	var c Catalog
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if c.Schema == nil {
		return nil, fmt.Errorf("catalog: no schema")
	}
	// Backups made before 2026-11-27 stored the source's sql_mode twice,
	// also as "sql_mode" beside the schema, read a moment apart.
	var legacy struct {
		SQLMode *string `json:"sql_mode"`
	}
	if err := json.Unmarshal(data, &legacy); err == nil && legacy.SQLMode != nil && c.Schema.SQLMode == "" {
		c.Schema.SQLMode = *legacy.SQLMode
	}
	if c.DataFormat < 0 || c.DataFormat > dataFormat {
		return nil, fmt.Errorf("catalog: data file format %d is not supported (this backstream reads formats up to %d; a newer one made the backup)", c.DataFormat, dataFormat)
	}
	ids, paths := map[int]bool{}, map[string]bool{}
	for _, t := range c.Tables {
		if t.Database == "" || t.Table == "" {
			return nil, fmt.Errorf("catalog: a table without a name")
		}
		for _, ch := range t.Chunks {
			if ids[ch.ID] || paths[ch.Path] {
				return nil, fmt.Errorf("catalog: table %s.%s: chunk %d (%s) listed twice", t.Database, t.Table, ch.ID, ch.Path)
			}
			if ch.Path == "" || path.Clean(ch.Path) != ch.Path || strings.HasPrefix(ch.Path, "/") || strings.HasPrefix(ch.Path, "..") {
				return nil, fmt.Errorf("catalog: table %s.%s: bad chunk path %q", t.Database, t.Table, ch.Path)
			}
			if ch.Rows < 0 || ch.Bytes < 0 {
				return nil, fmt.Errorf("catalog: table %s.%s: chunk %s: negative size", t.Database, t.Table, ch.Path)
			}
			ids[ch.ID], paths[ch.Path] = true, true
		}
	}
	return &c, nil
}

// Check compares the catalog with the manifest of its backup: every data
// file it lists is a file of the backup, of the size it says.
func (c *Catalog) Check(m *archive.Manifest) error {
	sizes := make(map[string]int64, len(m.Files))
	for _, f := range m.Files {
		sizes[f.Path] = f.Size
	}
	for _, t := range c.Tables {
		for _, ch := range t.Chunks {
			size, ok := sizes[ch.Path]
			switch {
			case !ok:
				return fmt.Errorf("catalog: table %s.%s: data file %s is not in the backup", t.Database, t.Table, ch.Path)
			case size != ch.Bytes:
				return fmt.Errorf("catalog: table %s.%s: data file %s has %d bytes, the catalog says %d", t.Database, t.Table, ch.Path, size, ch.Bytes)
			}
		}
	}
	return nil
}

// chunkPath names data file n of a table: <db>/<table>.<n>.tsv, flat
// inside the database's directory so that stock mbstream, which creates
// only the last directory of a path, extracts it.
func chunkPath(db, table string, n int) string {
	return fmt.Sprintf("%s/%s.%06d.tsv", pathName(db), pathName(table), n)
}

// tableOfPath groups a table's data files: "<db>/<table>" for
// "<db>/<table>.<n>.tsv" (encoded names hold no dot). Any other file is a
// group of its own, so that the first data file, not the small schema
// file, picks the table's stream.
func tableOfPath(p string) string {
	if strings.HasSuffix(p, ".tsv") {
		if i := strings.IndexByte(p, '.'); i >= 0 {
			return p[:i]
		}
	}
	return p
}

// schemaPath names the CREATE TABLE file of a table in the streams, for
// people reading a backup with stock tools; loading uses the catalog.
func schemaPath(db, table string) string {
	return fmt.Sprintf("%s/%s.sql", pathName(db), pathName(table))
}

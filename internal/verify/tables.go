package verify

import (
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/physical"
)

// Tables checks that the files of physical backup m hold every table its
// manifest lists (archive.Manifest.Tables, recorded by the backup's table
// guard). An incremental is checked on its own files: mariabackup puts
// every tablespace in it (an unchanged one as a delta of no pages) and
// every other table file whole, and its prepare takes a tablespace that
// the incremental lacks for dropped, so no link below can stand in for a
// file it lacks. A manifest without a table list (written before it
// existed) has nothing to check.
func Tables(m *archive.Manifest) error {
	missing := physical.MissingTableFiles(m.Tables, m.Files)
	if len(missing) == 0 {
		return nil
	}
	return archive.Corruptf("backup %s lacks tables its manifest lists: %s", m.ID, strings.Join(missing, ", "))
}

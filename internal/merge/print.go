package merge

import (
	"fmt"
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/inventory"
)

// Text is the line merge prints of the backup it made, merged; with
// --json it prints inventory.MadeOf(merged).
func Text(merged *archive.Manifest) string {
	return fmt.Sprintf("backup %s complete: full, merged from %s, %d streams, %d files, %s stored",
		merged.ID, strings.Join(merged.MergedFrom, " + "), len(merged.Streams), len(merged.Files), inventory.Stored(merged))
}

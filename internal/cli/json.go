package cli

import (
	"encoding/json"
	"io"
)

// printJSON prints v as one indented JSON object: what --json prints.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

package cli

import (
	"encoding/json"
	"io"
)

// printJSON prints v as one indented JSON object: what --json prints.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // read by scripts and people, never put in HTML
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printJSONLine prints v as JSON on one line: one object of a stream of
// them (JSON Lines), as receive --keep-listening --json prints.
func printJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

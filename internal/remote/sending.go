package remote

import (
	"fmt"
	"io"
	"strings"

	"github.com/backstream/backstream/internal/inventory"
)

// WriteText writes s for people: what was sent where, then what each
// receiver reported. The receivers that failed are for WriteFailed.
func (s *Sending) WriteText(w io.Writer) {
	m := s.Manifest
	fmt.Fprintf(w, "backup %s sent to %s: %d streams, %d files, %s on the wire in %s\n", m.ID,
		strings.Join(s.Sent.Addresses(true), ", "), len(m.Streams), len(m.Files), inventory.Stored(m), s.Elapsed.Round(1e7))
	s.Sent.WriteReports(w)
}

// SendingJSON is what send --json and provision --json print: the backup
// sent, as backup --json has it, and what became of it on each receiver.
type SendingJSON struct {
	inventory.Made
	*Sent
}

// JSON is s as send --json prints it.
func (s *Sending) JSON() SendingJSON {
	return SendingJSON{Made: inventory.MadeOf(s.Manifest), Sent: s.Sent}
}

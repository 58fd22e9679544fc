// Package remote moves a backup between hosts: a Sender is a backup
// Destination that streams to one or more receivers (Sent: what each
// reported), and a Receiver takes one transfer into a datadir (restoring
// as it arrives) or into a repository; Store is receive's use case of the
// latter two: listen, and take one transfer or one after another; Send
// is send's: dial the receivers, stream a backup job to them and check
// what they made of it. Connections come from internal/transport (TLS, token).
//
// Protocol, version 3 (transport.ProtocolVersion). One control connection and one connection per
// stream, from sender to receiver:
//
//	control "control":
//	  sender   H  the manifest's header (JSON): id, kind, codec, hash, server, stream names
//	  receiver A  accepted: the target is claimed, send the streams
//	              (a refusal is a transport abort carrying the reason)
//	  sender   M  a metadata object: u16 name length, name, content (any number)
//	  sender   C  the complete manifest (JSON), after every stream ended
//	  receiver R  the transfer arrived, verified, and its outcome (JSON, Outcome):
//	              prepared, committed, or put into place, started, replicating;
//	              or the step that failed after the arrival, and why
//	stream "stream <i> <id>":
//	  sender   F  a frame's record: stored size, raw size, CRC-32C (u32 little endian each)
//	  sender   D  the frame's stored bytes
//	  sender   T  the stream's record (JSON: name, size, digest, frames, raw size), then end of stream
//
// The receiver checks every frame as it arrives exactly as a restore from a
// repository does, and compares each stream with the manifest that comes last.
package remote

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/backstream/backstream/internal/archive"
)

const (
	msgHeader  byte = 'H'
	msgAccept  byte = 'A'
	msgMeta    byte = 'M'
	msgCommit  byte = 'C'
	msgOutcome byte = 'R'
	msgFrame   byte = 'F'
	msgData    byte = 'D'
	msgTrailer byte = 'T'
)

const controlPurpose = "control"

func streamPurpose(i int, id string) string { return fmt.Sprintf("stream %d %s", i, id) }

// parseStreamPurpose reads "stream <i> <id>".
func parseStreamPurpose(p string) (int, string, bool) {
	f := strings.Fields(p)
	if len(f) != 3 || f[0] != "stream" {
		return 0, "", false
	}
	i, err := strconv.Atoi(f[1])
	if err != nil || i < 0 {
		return 0, "", false
	}
	return i, f[2], true
}

const frameRecordLen = 12

func frameRecord(f archive.Frame) []byte {
	b := make([]byte, 0, frameRecordLen)
	b = binary.LittleEndian.AppendUint32(b, f.Stored)
	b = binary.LittleEndian.AppendUint32(b, f.Raw)
	return binary.LittleEndian.AppendUint32(b, f.CRC)
}

// maxFrame bounds the sizes a frame record may claim (as in frame indexes).
const maxFrame = 256 << 20

func parseFrameRecord(b []byte) (archive.Frame, error) {
	if len(b) != frameRecordLen {
		return archive.Frame{}, fmt.Errorf("frame record of %d bytes, want %d", len(b), frameRecordLen)
	}
	f := archive.Frame{
		Stored: binary.LittleEndian.Uint32(b),
		Raw:    binary.LittleEndian.Uint32(b[4:]),
		CRC:    binary.LittleEndian.Uint32(b[8:]),
	}
	if f.Stored == 0 || f.Stored > maxFrame || f.Raw == 0 || f.Raw > maxFrame {
		return archive.Frame{}, fmt.Errorf("frame record with implausible sizes (stored %d, raw %d)", f.Stored, f.Raw)
	}
	return f, nil
}

func metaMessage(name string, data []byte) []byte {
	b := make([]byte, 0, 2+len(name)+len(data))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
	b = append(b, name...)
	return append(b, data...)
}

func parseMeta(b []byte) (string, []byte, error) {
	if len(b) < 2 {
		return "", nil, fmt.Errorf("metadata message of %d bytes", len(b))
	}
	n := int(binary.LittleEndian.Uint16(b))
	if len(b) < 2+n || n == 0 {
		return "", nil, fmt.Errorf("metadata message with a bad name length %d", n)
	}
	return string(b[2 : 2+n]), b[2+n:], nil
}

// checkHeader validates a header from a sender before anything is claimed.
func checkHeader(b []byte) (*archive.Manifest, error) {
	var h archive.Manifest
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("backup header: %w", err)
	}
	if h.Format != archive.FormatVersion {
		return nil, fmt.Errorf("backup header: format %d, this backstream reads %d", h.Format, archive.FormatVersion)
	}
	if h.ID == "" || strings.ContainsAny(h.ID, " /\\") {
		return nil, fmt.Errorf("backup header: bad backup id %q", h.ID)
	}
	if h.Kind != archive.KindPhysical {
		return nil, fmt.Errorf("backup %s: kind %q cannot be received", h.ID, h.Kind)
	}
	if _, err := archive.NewHash(h.Hash); err != nil {
		return nil, fmt.Errorf("backup %s: %w", h.ID, err)
	}
	if len(h.Streams) < 1 || len(h.Streams) > 1024 {
		return nil, fmt.Errorf("backup %s: %d streams", h.ID, len(h.Streams))
	}
	return &h, nil
}

// checkFinal compares the committed manifest with the header it follows.
func checkFinal(h *archive.Manifest, b []byte) (*archive.Manifest, error) {
	m, err := archive.ParseManifest(b)
	if err != nil {
		return nil, err
	}
	if m.ID != h.ID || m.Parent != h.Parent || m.Codec != h.Codec || m.Hash != h.Hash || len(m.Streams) != len(h.Streams) {
		return nil, fmt.Errorf("backup %s: the manifest does not match the header it follows", h.ID)
	}
	return m, nil
}

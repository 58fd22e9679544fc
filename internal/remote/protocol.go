// Package remote moves a backup between hosts: a Sender is a backup
// Destination that streams to one or more receivers (Sent: what each
// reported), and a Receiver takes one transfer into a datadir (restoring
// as it arrives) or into a repository; Store is receive's use case of the
// latter two: listen, and take one transfer or one after another; Send
// is send's: dial the receivers, stream a backup job to them and check
// what they made of it. Connections come from internal/transport (TLS, token).
//
// Protocol, version 4 (transport.ProtocolVersion). One control connection and one connection per
// stream asked for, from sender to receiver:
//
//	control "control":
//	  sender   H  a backup being taken: the manifest's header (JSON): id, kind, codec, hash, server, stream names
//	           S  or a stored backup: its complete manifest (JSON)
//	  receiver A  accepted: the target is claimed; what to send of each stream (JSON, see wirePlan;
//	              empty: every stream whole): every stream whole, or, of a stored backup, some streams skipped
//	              and others in chosen frames (a resumed receive)
//	              (a refusal is a transport abort carrying the reason)
//	  sender   M  a metadata object: u16 name length, name, content (any number)
//	  sender   C  the complete manifest (JSON), after every stream ended
//	  receiver R  the transfer arrived, verified, and its outcome (JSON, Outcome):
//	              prepared, committed, or put into place, started, replicating;
//	              or the step that failed after the arrival, and why
//	stream "stream <i> <id>", for each stream not skipped:
//	  sender   F  a frame's record: stored size, raw size, CRC-32C (u32 little endian each), offset in the stream (u64)
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
	"math"
	"strconv"
	"strings"

	"github.com/backstream/backstream/internal/archive"
)

const (
	msgHeader  byte = 'H'
	msgStored  byte = 'S'
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

const frameRecordLen = 20

func frameRecord(f archive.Frame) []byte {
	b := make([]byte, 0, frameRecordLen)
	b = binary.LittleEndian.AppendUint32(b, f.Stored)
	b = binary.LittleEndian.AppendUint32(b, f.Raw)
	b = binary.LittleEndian.AppendUint32(b, f.CRC)
	return binary.LittleEndian.AppendUint64(b, uint64(f.Offset))
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
		Offset: int64(binary.LittleEndian.Uint64(b[12:])),
	}
	if f.Stored == 0 || f.Stored > maxFrame || f.Raw == 0 || f.Raw > maxFrame {
		return archive.Frame{}, fmt.Errorf("frame record with implausible sizes (stored %d, raw %d)", f.Stored, f.Raw)
	}
	if f.Offset < 0 || f.Offset > math.MaxInt64-maxFrame {
		return archive.Frame{}, fmt.Errorf("frame record with an implausible offset %d", uint64(f.Offset))
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

// checkHeader validates the header of a backup being taken (H) before
// anything is claimed.
func checkHeader(b []byte) (*archive.Manifest, error) {
	var h archive.Manifest
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("backup header: %w", err)
	}
	return checkHead(&h)
}

// checkStoredManifest validates the manifest of a stored backup (S) before
// anything is claimed: it is complete, and is read as a repository's is.
func checkStoredManifest(b []byte) (*archive.Manifest, error) {
	m, err := archive.ParseManifest(b)
	if err != nil {
		return nil, fmt.Errorf("stored backup's manifest: %w", err)
	}
	if m.Detached() {
		return nil, fmt.Errorf("backup %s: the manifest sent keeps its contents apart (%s): a sender sends them in it", m.ID, archive.ContentsName)
	}
	return checkHead(m)
}

// checkHead checks what a receiver needs of either: a physical backup of
// this format, with a usable id, digest and streams.
func checkHead(h *archive.Manifest) (*archive.Manifest, error) {
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
	return h, nil
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

// wirePlan is the receiver's acceptance (A): what to send of each stream.
type wirePlan struct {
	Streams []wireStream `json:"streams"`
}

// wireStream is what to send of one stream: nothing (Skip), the frames of
// Runs (first and last frame number of each run, ascending), or, with
// neither, the whole stream.
type wireStream struct {
	Skip bool     `json:"skip,omitempty"`
	Runs [][2]int `json:"runs,omitempty"`
}

// encodePlan is the acceptance asking for what plans read.
func encodePlan(plans []archive.StreamPlan) ([]byte, error) {
	w := wirePlan{Streams: make([]wireStream, len(plans))}
	for i, p := range plans {
		switch {
		case p.Skip:
			w.Streams[i].Skip = true
		case p.Frames != nil:
			for _, n := range p.Frames {
				if r := w.Streams[i].Runs; len(r) > 0 && r[len(r)-1][1] == n-1 {
					r[len(r)-1][1] = n
					continue
				}
				w.Streams[i].Runs = append(w.Streams[i].Runs, [2]int{n, n})
			}
		}
	}
	return json.Marshal(w)
}

// streamWant is what a receiver asked of one stream: Skip, or the frames
// Frames (ascending), or with neither the whole stream.
type streamWant struct {
	Skip   bool
	Frames []int
}

// whole reports whether the stream is sent whole.
func (w streamWant) whole() bool { return !w.Skip && w.Frames == nil }

// parsePlan reads a receiver's acceptance of the backup m; an empty one
// asks for every stream whole. Frames are asked for only of a stored
// backup (stored), within each stream's frame count; a backup being taken
// is sent whole.
func parsePlan(b []byte, m *archive.Manifest, stored bool) ([]streamWant, error) {
	if len(b) == 0 {
		return make([]streamWant, len(m.Streams)), nil
	}
	var w wirePlan
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("acceptance: %w", err)
	}
	if len(w.Streams) != len(m.Streams) {
		return nil, fmt.Errorf("acceptance for %d streams, the backup has %d", len(w.Streams), len(m.Streams))
	}
	wants := make([]streamWant, len(w.Streams))
	for i, s := range w.Streams {
		switch {
		case s.Skip && len(s.Runs) > 0:
			return nil, fmt.Errorf("acceptance: stream %d both skipped and asked for frames", i)
		case (s.Skip || len(s.Runs) > 0) && !stored:
			return nil, fmt.Errorf("acceptance: part of stream %d asked for, of a backup being taken (only a stored backup is sent in part)", i)
		case s.Skip:
			wants[i].Skip = true
			continue
		case len(s.Runs) == 0:
			continue
		}
		n, next := m.Streams[i].Frames, 0
		wants[i].Frames = []int{}
		for _, r := range s.Runs {
			if r[0] < next || r[1] < r[0] || r[1] >= n {
				return nil, fmt.Errorf("acceptance: stream %d: frames %d to %d are not ascending runs within its %d frames", i, r[0], r[1], n)
			}
			for f := r[0]; f <= r[1]; f++ {
				wants[i].Frames = append(wants[i].Frames, f)
			}
			next = r[1] + 1
		}
	}
	return wants, nil
}

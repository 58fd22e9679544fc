// Package archive is backstream's storage format between xbstream and
// storage: frames (independently compressed blocks of whole xbstream
// chunks), stream objects (their concatenation, a plain compressed
// xbstream), frame indexes, the manifest that commits a backup, the
// fan-out Writer that spreads one xbstream over N stream objects in
// parallel, and the parallel Reader that checks every frame, chunk, file
// and object on the way back (or, for cat, writes them out as one
// xbstream: WriteStream). It also defines what corruption is
// (IsCorrupt), so that damage anywhere maps to one exit code.
//
// It knows nothing of MariaDB (what a file in the stream means), nothing
// of which backend, repository layout or network carries its objects
// (Input and Output are interfaces its callers implement), and nothing of
// flags or progress display. docs/format.md is its specification.
package archive

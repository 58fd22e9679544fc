package servercopy

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/replica"
	"github.com/backstream/backstream/internal/restorecase"
)

// WriteText writes what copy prints of res: the copy, where it stands in
// the source's binary log, the columns masked, then what the load did
// (users says whether accounts were asked for). The replication set up,
// which provision words, comes after them.
func (res *Result) WriteText(w io.Writer, users bool) {
	l := res.Load
	fmt.Fprintf(w, "copy %s complete: %d tables, %d data files, %d rows", res.ID, l.Tables, l.Chunks, l.Rows)
	if res.Resumed {
		fmt.Fprintf(w, " (resumed: %d tables kept from the earlier run)", len(l.Kept))
	}
	fmt.Fprintln(w)
	if p := res.Position; p.BinlogFile != "" {
		fmt.Fprintf(w, "source position: GTID %s, binary log %s at %d (recorded on the target in %s.copies)\n", p.GTID, p.BinlogFile, p.BinlogPosition, logical.JournalDatabase)
	} else {
		fmt.Fprintln(w, "source position: none (the source writes no binary log)")
	}
	if len(res.Masked) > 0 {
		fmt.Fprintf(w, "masked as copied: %s\n", strings.Join(res.Masked, ", "))
	}
	restorecase.WriteLoaded(w, l, users, "copy", "copies")
}

// JSON is what copy --json prints.
type JSON struct {
	Copy      string `json:"copy"`
	Source    Server `json:"source"`
	Target    Server `json:"target"`
	Resumed   bool   `json:"resumed"`
	Tables    int    `json:"tables"`
	DataFiles int    `json:"data_files"`
	Rows      int64  `json:"rows"`
	// The source's position the copy stands for.
	GTIDPosition   string   `json:"gtid_position"`
	BinlogFile     string   `json:"binlog_file"`
	BinlogPosition uint64   `json:"binlog_position"`
	KeptTables     []string `json:"kept_tables"`
	DroppedTables  []string `json:"dropped_tables"`
	restorecase.LoadDetails
	Replication *replica.Summary `json:"replication,omitempty"`
	Seconds     float64          `json:"seconds"`
	Error       string           `json:"error,omitempty"`
}

// JSON is res as copy --json prints it: the copy took elapsed, and failed
// with err (nil: it did not) after its load.
func (res *Result) JSON(elapsed time.Duration, err error) JSON {
	j := JSON{
		Copy: res.ID, Source: res.Source, Target: res.Target, Resumed: res.Resumed,
		Tables: res.Load.Tables, DataFiles: res.Load.Chunks, Rows: res.Load.Rows,
		GTIDPosition: res.Position.GTID, BinlogFile: res.Position.BinlogFile, BinlogPosition: res.Position.BinlogPosition,
		KeptTables: orEmpty(res.Load.Kept), DroppedTables: orEmpty(res.Load.Dropped), LoadDetails: restorecase.DetailsOf(res.Load),
		Replication: res.Replication, Seconds: elapsed.Seconds(),
	}
	j.Masked = orEmpty(res.Masked)
	if err != nil {
		j.Error = err.Error()
	}
	return j
}

// orEmpty is s, or an empty list for nil: JSON readers get [] rather than
// null.
func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

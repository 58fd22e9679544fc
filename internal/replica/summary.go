package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/backstream/backstream/internal/mariadb"
)

// Summary is what Setup set up, as replicate --json and receive --json
// print it: the primary, where replication started, and its status once
// both threads ran (and, with CatchUp, once the replica caught up).
type Summary struct {
	Primary        string `json:"primary"` // host:port
	PrimaryUser    string `json:"primary_user"`
	ConnectionName string `json:"connection_name"` // "" is the default connection
	// The backup's position replication started from: by GTID (its
	// gtid_slave_pos) when using_gtid, else by binlog file and position.
	UsingGTID      bool   `json:"using_gtid"`
	GTID           string `json:"gtid"`
	BinlogFile     string `json:"binlog_file"`
	BinlogPosition uint64 `json:"binlog_position"`
	// PositionFrom is where that position was read: a file of the
	// datadir, or "backup ID" for a backup's manifest.
	PositionFrom string   `json:"position_from"`
	Replaced     bool     `json:"replaced"`  // a configured connection was replaced (Force)
	CaughtUp     bool     `json:"caught_up"` // CatchUp waited until the replica caught up
	Notes        []string `json:"notes,omitempty"`
	Status       *Status  `json:"status"`
}

// Summarize is what res says Setup set up for p with opt.
func Summarize(p Primary, opt Options, res *Result) *Summary {
	c := res.Coordinates
	return &Summary{Primary: p.Addr(), PrimaryUser: p.User, ConnectionName: opt.ConnectionName, UsingGTID: res.UsingGTID,
		GTID: c.GTID, BinlogFile: c.File, BinlogPosition: c.Position, PositionFrom: res.From, Replaced: res.Replaced,
		CaughtUp: opt.CatchUp, Notes: res.Notes, Status: res.Status}
}

// SetupOn runs Setup on the server cfg reaches and says what it set up.
// An error that a choice of the user's resolves says which (the replicate
// and receive commands take them as --primary-is and --use-file-pos).
func SetupOn(ctx context.Context, cfg mariadb.Config, p Primary, opt Options) (*Summary, error) {
	db, err := mariadb.Open(ctx, cfg, "")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	res, err := Setup(ctx, db, p, opt)
	var unsure *UnsureError
	if errors.As(err, &unsure) {
		return nil, fmt.Errorf("%w; nothing was changed: if the primary is the backup's source, give --primary-is %s; if it is the source's primary (or, replicating by GTID, a server with its history), --primary-is %s",
			err, PrimaryIsSource, PrimaryIsSourcePrimary)
	}
	if errors.Is(err, ErrNoGTID) {
		return nil, fmt.Errorf("%w; --use-file-pos replicates from that file and position instead", err)
	}
	if err != nil {
		return nil, err
	}
	return Summarize(p, opt, res), nil
}

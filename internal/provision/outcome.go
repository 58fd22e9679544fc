package provision

import (
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/remote"
)

// outcome is what the sender is told of res (the receiver fills in the
// status, the backup and the error): the server started, its replication,
// the step that failed, and the text in req's words.
func outcome(req Request, res *Result) remote.Outcome {
	o := remote.Outcome{Into: remote.IntoDatadir, Step: res.Step}
	var checkTimeout time.Duration
	if req.Start != nil {
		checkTimeout = req.Start.CheckTimeout
	}
	if rep := res.Started; rep != nil {
		o.Server = &remote.Server{Address: address(req.Start.Conn), Datadir: res.Datadir, Version: rep.Version, Hostname: rep.Hostname}
	}
	if s := res.Replication; s != nil {
		o.Replication = &remote.Replication{Primary: s.Primary, UsingGTID: s.UsingGTID, GTID: s.GTID,
			BinlogFile: s.BinlogFile, BinlogPosition: s.BinlogPosition, CaughtUp: s.CaughtUp}
	}
	o.Text = req.messages().Text(res, checkTimeout)
	return o
}

// messages are req's Messages, or DefaultMessages.
func (req Request) messages() Messages {
	if req.Messages != nil {
		return *req.Messages
	}
	return DefaultMessages
}

// address is where cfg reaches the server: its socket or host:port.
func address(cfg mariadb.Config) string {
	if cfg.UsesSocket() {
		return cfg.SocketPath()
	}
	return cfg.Addr()
}

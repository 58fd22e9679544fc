package remote

import (
	"errors"
	"strings"
	"testing"
)

// provision decides from the fields of each receiver's outcome: whatever
// a receiver's text says (here: that it replicates, when its fields say it
// does not, and nothing, when they say it does), the replica passes, the
// started server without replication and the repository fail provision
// --replicate, and only the repository fails --replicate=false.
func TestProvisionDecidesFromOutcomeFields(t *testing.T) {
	server := &Server{Address: "/run/m.sock", Datadir: "/var/lib/mysql"}
	reports := []Report{
		{Addr: "replica:4444", Outcome: &Outcome{Status: StatusOK, Into: IntoDatadir, Server: server,
			Replication: &Replication{Primary: "db1:3306", UsingGTID: true, GTID: "0-1-9"}, Text: "«nothing to see»"}},
		{Addr: "started:4444", Outcome: &Outcome{Status: StatusOK, Into: IntoDatadir, Server: server,
			Text: "replicating from db1:3306 as repl; IO and SQL threads running"}},
		{Addr: "store:4444", Outcome: &Outcome{Status: StatusOK, Into: IntoRepository, Text: "server x runs on /y"}},
		{Addr: "failed:4444", Err: errors.New("from failed:4444: peer says: no"),
			Outcome: &Outcome{Status: StatusFailed, Into: IntoDatadir, Step: StepStart, Error: "no", Text: "replicating from"}},
	}
	res := SentOf("20261128T1000Z-abcd", reports)
	for i, want := range []struct{ ok, running, replicating bool }{{true, true, true}, {true, true, false}, {true, false, false}, {false, false, false}} {
		r := res.Receivers[i]
		if r.OK != want.ok || r.Running != want.running || r.Replicating != want.replicating || r.Outcome != reports[i].Outcome {
			t.Errorf("receiver %s: %+v, want %+v", r.Address, r, want)
		}
	}
	msg := res.Check(WantReplicating).Error()
	for _, want := range []string{"did not reach receiver failed:4444 (see above); it reached replica:4444, started:4444, store:4444",
		"receiver started:4444, store:4444 took the backup but reports no replication"} {
		if !strings.Contains(msg, want) {
			t.Errorf("provision --replicate: %q, want %q", msg, want)
		}
	}
	if msg := res.Check(WantRunning).Error(); !strings.Contains(msg, "receiver store:4444 took the backup but reports no server started on it") || strings.Contains(msg, "started:4444 took") {
		t.Errorf("provision --replicate=false: %q", msg)
	}
	if msg := res.Check(WantTaken).Error(); strings.Contains(msg, "took the backup but") {
		t.Errorf("send: %q, want only the failed receiver named", msg)
	}
}

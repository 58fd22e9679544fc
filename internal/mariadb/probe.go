package mariadb

import (
	"context"
	"database/sql"
	"slices"
	"sync"
	"time"
)

// ProbeStats are the answers to the probe query (SELECT 1, on a
// connection of its own, every probeEvery) while the probe ran (a backup,
// to report its impact on the server): how many,
// their median and slowest round trip. A probe that fails (the server
// busy past its timeout, a connection lost) counts as slow as the wait
// was; none at all when the connection could not be made.
type ProbeStats struct {
	Probes             int     `json:"probes"`
	ProbeMedianSeconds float64 `json:"probe_median_seconds,omitempty"`
	ProbeMaxSeconds    float64 `json:"probe_max_seconds,omitempty"`
}

// probeEvery is how often the probe asks: often enough that a backup of a
// few seconds has a median, rarely enough to cost the server nothing.
const probeEvery = 250 * time.Millisecond

// probeTimeout bounds one probe: a server that does not answer SELECT 1
// within it is reported as that slow.
const probeTimeout = 10 * time.Second

// Probe asks the server SELECT 1 every probeEvery until stopped.
type Probe struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	rtts   []time.Duration
}

// StartProbe starts probing the server conn reaches. The probe is a
// measurement, never a reason to fail: a server it cannot reach gets no
// probes, and the backup reports none.
func StartProbe(ctx context.Context, conn Config) *Probe {
	ctx, cancel := context.WithCancel(ctx)
	p := &Probe{cancel: cancel, done: make(chan struct{})}
	go p.run(ctx, conn)
	return p
}

func (p *Probe) run(ctx context.Context, conn Config) {
	defer close(p.done)
	db, err := Open(ctx, conn, "")
	if err != nil {
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		p.once(ctx, db)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// once asks once and records the round trip, unless the probe was
// stopped meanwhile.
func (p *Probe) once(ctx context.Context, db *sql.DB) {
	qctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	start := time.Now()
	var one int
	_ = db.QueryRowContext(qctx, "SELECT 1").Scan(&one)
	rtt := time.Since(start)
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	p.rtts = append(p.rtts, rtt)
	p.mu.Unlock()
}

// Stop ends the probe and returns what it measured.
func (p *Probe) Stop() ProbeStats {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.rtts) == 0 {
		return ProbeStats{}
	}
	s := slices.Clone(p.rtts)
	slices.Sort(s)
	return ProbeStats{Probes: len(s), ProbeMedianSeconds: s[len(s)/2].Seconds(), ProbeMaxSeconds: s[len(s)-1].Seconds()}
}

package backup

import (
	"context"
	"database/sql"
	"slices"
	"sync"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
)

// Impact is what a backup cost the server it copied: the bytes it read,
// how long its locks held DDL and commits off (what a writer waited at
// most), and how fast the server answered a trivial query meanwhile.
type Impact struct {
	ReadBytes             int64   `json:"read_bytes"`
	DDLBlockedSeconds     float64 `json:"ddl_blocked_seconds"`
	CommitsBlockedSeconds float64 `json:"commits_blocked_seconds"`
	ProbeStats
}

// ProbeStats are the answers to the probe query (SELECT 1, on a
// connection of its own, every probeEvery) while the backup ran: how many,
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

// ImpactOf is the impact of backup m, with the probe's answers.
func ImpactOf(m *archive.Manifest, probe ProbeStats) *Impact {
	return &Impact{ReadBytes: m.Stats.RawBytes, DDLBlockedSeconds: m.Stats.DDLBlockedSeconds,
		CommitsBlockedSeconds: m.Stats.CommitsBlockedSeconds, ProbeStats: probe}
}

// prober asks the server SELECT 1 every probeEvery until stopped.
type prober struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	rtts   []time.Duration
}

// startProbe starts probing the server conn reaches. The probe is a
// measurement, never a reason to fail: a server it cannot reach gets no
// probes, and the backup reports none.
func startProbe(ctx context.Context, conn mariadb.Config) *prober {
	ctx, cancel := context.WithCancel(ctx)
	p := &prober{cancel: cancel, done: make(chan struct{})}
	go p.run(ctx, conn)
	return p
}

func (p *prober) run(ctx context.Context, conn mariadb.Config) {
	defer close(p.done)
	db, err := mariadb.Open(ctx, conn, "")
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
func (p *prober) once(ctx context.Context, db *sql.DB) {
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

// stop ends the probe and returns what it measured.
func (p *prober) stop() ProbeStats {
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

package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Limits on connections that have not proved the token yet. Anyone who can
// reach the port can open such connections, so they are what a hostile
// peer would use to exhaust a listener; an authenticated connection is
// bounded by the protocol instead (a sender opens one control connection
// and one per stream, one after the other).
//
// A sender has at most one connection in its handshake at a time, and a
// handshake takes a few round trips, so the limits are far above what any
// honest use needs while keeping a flood cheap: each unauthenticated
// connection costs a file descriptor, a goroutine and TLS state (tens of
// KiB), so 64 of them cost a few MiB. When a new connection would exceed a
// limit, the listener drops the connection that has been silent longest
// (least recently received a byte), never the new one: refusing new
// connections would let whoever fills the budget first keep everyone else
// out, whereas dropping the idlest lets an honest sender, which is never
// silent for more than a round trip during its handshake, get through a
// flood. When the global budget is full, the connection dropped is the
// idlest of the address holding the most, so a flood from a few addresses
// only ever displaces itself.
const (
	// DefaultPreAuthTimeout bounds how long a connection may take from
	// TCP accept to a verified token proof (TLS handshake included) when
	// Options.PreAuthTimeout is zero: a handshake needs about two round
	// trips, so 5 s is ample across continents, and a silent or trickling
	// client is gone three times sooner than under the 15 s handshake
	// timeout a dialer allows itself.
	DefaultPreAuthTimeout = 5 * time.Second
	// maxPreAuth bounds unauthenticated connections on one listener.
	maxPreAuth = 64
	// maxPreAuthPerAddr bounds them per source address (an IPv4 address,
	// or an IPv6 /64, the block one host or one customer usually holds):
	// a single host can hold at most an eighth of the budget.
	maxPreAuthPerAddr = 8
)

// ErrDropped is the cause of a handshake ended to make room for a newer
// connection under the limits on unauthenticated connections.
var ErrDropped = errors.New("dropped before authenticating")

// pending is one connection in the pre-authentication table.
type pending struct {
	key    string       // source address, as the per-address limit counts it
	last   atomic.Int64 // when a byte last arrived (Unix nanoseconds)
	cancel context.CancelCauseFunc
	table  *preAuthTable
}

// touch records that a byte arrived from the peer.
func (p *pending) touch() { p.last.Store(time.Now().UnixNano()) }

// authenticated takes p out of the table: it no longer counts against the
// limits and can no longer be dropped. False means it was dropped already.
func (p *pending) authenticated() bool { return p.table.remove(p) }

// preAuthTable holds the connections not yet authenticated, by address.
type preAuthTable struct {
	mu      sync.Mutex
	total   int
	byAddr  map[string][]*pending
	global  int
	perAddr int
}

func newPreAuthTable(global, perAddr int) *preAuthTable {
	return &preAuthTable{byAddr: map[string][]*pending{}, global: global, perAddr: perAddr}
}

// addrKey is the source address the per-address limit counts: the IP of
// an IPv4 peer, the /64 prefix of an IPv6 one.
func addrKey(a net.Addr) string {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return a.String()
	}
	ip := ap.Addr().Unmap()
	if ip.Is4() {
		return ip.String()
	}
	pfx, _ := ip.Prefix(64)
	return pfx.String()
}

// add registers a new connection from remote, dropping the idlest
// connection that stands in the way of a limit. cancel ends the new
// connection's handshake when it is dropped in turn.
func (t *preAuthTable) add(remote net.Addr, cancel context.CancelCauseFunc) *pending {
	p := &pending{key: addrKey(remote), cancel: cancel, table: t}
	p.touch()
	var victim *pending
	var why error
	t.mu.Lock()
	switch {
	case len(t.byAddr[p.key]) >= t.perAddr:
		victim = idlest(t.byAddr[p.key])
		why = fmt.Errorf("%w: %d unauthenticated connections from %s, the limit per address; the one silent longest makes room",
			ErrDropped, len(t.byAddr[p.key]), p.key)
	case t.total >= t.global:
		victim = t.busiestIdlest()
		why = fmt.Errorf("%w: %d unauthenticated connections, the limit; the one silent longest of the busiest address makes room",
			ErrDropped, t.total)
	}
	if victim != nil {
		t.removeLocked(victim)
	}
	t.byAddr[p.key] = append(t.byAddr[p.key], p)
	t.total++
	t.mu.Unlock()
	if victim != nil {
		victim.cancel(why)
	}
	return p
}

// busiestIdlest is the idlest connection of the address holding the most;
// between addresses holding as many, the one whose idlest is idler.
func (t *preAuthTable) busiestIdlest() *pending {
	var best *pending
	most := 0
	for _, ps := range t.byAddr {
		c := idlest(ps)
		if len(ps) > most || len(ps) == most && c.last.Load() < best.last.Load() {
			best, most = c, len(ps)
		}
	}
	return best
}

func idlest(ps []*pending) *pending {
	var best *pending
	for _, p := range ps {
		if best == nil || p.last.Load() < best.last.Load() {
			best = p
		}
	}
	return best
}

// remove takes p out of the table and reports whether it was there.
func (t *preAuthTable) remove(p *pending) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.removeLocked(p)
}

func (t *preAuthTable) removeLocked(p *pending) bool {
	ps := t.byAddr[p.key]
	for i, q := range ps {
		if q == p {
			ps = append(ps[:i], ps[i+1:]...)
			if len(ps) == 0 {
				delete(t.byAddr, p.key)
			} else {
				t.byAddr[p.key] = ps
			}
			t.total--
			return true
		}
	}
	return false
}

package transport

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// preAuthOptions keep connections in the table for the whole test unless
// they are dropped: the timeouts are far longer than the test.
func preAuthOptions() Options {
	opt := testOptions()
	opt.HandshakeTimeout = time.Minute
	opt.PreAuthTimeout = time.Minute
	return opt
}

// dialFrom opens a raw TCP connection to l from source address ip (any
// 127.0.0.0/8 address works on Linux loopback) and waits until the
// listener has registered it, so connections enter the table in the order
// they are dialed.
func dialFrom(t *testing.T, l *Listener, ip string) net.Conn {
	t.Helper()
	// The listener registers the connection after the SYN arrived, so
	// with a time taken before dialing.
	before := time.Now().UnixNano()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for deadline := time.Now().Add(10 * time.Second); !registeredSince(l, ip, before); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("connection from %s never reached the listener's table", c.LocalAddr())
		}
	}
	return c
}

// registeredSince reports whether a connection from ip was registered (or
// spoke) at or after the time since.
func registeredSince(l *Listener, ip string, since int64) bool {
	l.pre.mu.Lock()
	defer l.pre.mu.Unlock()
	for _, p := range l.pre.byAddr[ip] {
		if p.last.Load() >= since {
			return true
		}
	}
	return false
}

func preAuthTotal(l *Listener) int {
	l.pre.mu.Lock()
	defer l.pre.mu.Unlock()
	return l.pre.total
}

// mustBeDropped waits for the listener to close c, which only dropping
// does within the test's timeouts.
func mustBeDropped(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s was not dropped", what)
	}
	if err == nil {
		t.Fatalf("%s: read data, want the connection closed", what)
	}
}

func addrCount(l *Listener, ip string) int {
	l.pre.mu.Lock()
	defer l.pre.mu.Unlock()
	return len(l.pre.byAddr[ip])
}

// TestPreAuthPerAddress: a ninth unauthenticated connection from one
// address drops the one of that address silent longest, which is the
// oldest unless an older one has sent bytes since.
func TestPreAuthPerAddress(t *testing.T) {
	l := listen(t, preAuthOptions())
	var conns []net.Conn
	for range maxPreAuthPerAddr {
		conns = append(conns, dialFrom(t, l, "127.0.0.2"))
	}
	if n := addrCount(l, "127.0.0.2"); n != maxPreAuthPerAddr {
		t.Fatalf("%d connections in the table, want %d", n, maxPreAuthPerAddr)
	}
	// The oldest sends the first byte of a TLS record: it is no longer
	// the one silent longest.
	if _, err := conns[0].Write([]byte{0x16}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		l.pre.mu.Lock()
		ps := l.pre.byAddr["127.0.0.2"]
		moved := ps[0].last.Load() > ps[len(ps)-1].last.Load()
		l.pre.mu.Unlock()
		if moved {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the byte sent never reached the listener")
		}
	}
	// Each new connection drops exactly one: the second oldest, then the
	// third; the oldest, which spoke, stays.
	dialFrom(t, l, "127.0.0.2")
	mustBeDropped(t, conns[1], "the connection silent longest")
	dialFrom(t, l, "127.0.0.2")
	mustBeDropped(t, conns[2], "the next connection silent longest")
	if n := addrCount(l, "127.0.0.2"); n != maxPreAuthPerAddr {
		t.Errorf("%d connections from 127.0.0.2 in the table, want %d", n, maxPreAuthPerAddr)
	}
	// Another address is not limited by this one's.
	dialFrom(t, l, "127.0.0.3")
	if n := preAuthTotal(l); n != maxPreAuthPerAddr+1 {
		t.Errorf("%d connections in the table, want %d", n, maxPreAuthPerAddr+1)
	}
}

// TestPreAuthGlobal: with the global budget full, a new connection drops
// the idlest connection of the address holding the most, even when
// another address holds older ones; and an honest client still gets in,
// while the dropped connections are reported as dropped.
func TestPreAuthGlobal(t *testing.T) {
	l := listen(t, preAuthOptions())
	others := []string{"127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9", "127.0.0.10"}
	for _, ip := range others {
		for range maxPreAuthPerAddr - 1 {
			dialFrom(t, l, ip)
		}
	}
	var busiest []net.Conn
	for range maxPreAuthPerAddr {
		busiest = append(busiest, dialFrom(t, l, "127.0.0.2"))
	}
	if n := preAuthTotal(l); n != maxPreAuth {
		t.Fatalf("%d connections in the table, want the budget of %d", n, maxPreAuth)
	}
	dialFrom(t, l, "127.0.0.20")
	mustBeDropped(t, busiest[0], "the oldest connection of the busiest address")
	if n := preAuthTotal(l); n != maxPreAuth {
		t.Errorf("%d connections in the table, want %d", n, maxPreAuth)
	}
	// Each new connection drops exactly one, and it was not the globally
	// oldest (of 127.0.0.3, which holds fewer).

	// An honest client gets in through the full budget.
	ctx := testContext(t)
	client, err := Dial(ctx, l.Addr().String(), "control", testOptions())
	if err != nil {
		t.Fatalf("an honest client while the budget is full: %v", err)
	}
	defer client.Close()
	// Its connection and the two drops (for the newcomer from 127.0.0.20
	// and for the honest client) come out of Accept in any order.
	dropped, got := 0, false
	for dropped < 2 || !got {
		c, err := l.Accept(ctx)
		var he *HandshakeError
		if errors.As(err, &he) {
			if !errors.Is(err, ErrDropped) {
				t.Errorf("refused %v, want only connections dropped", err)
			}
			dropped++
			continue
		}
		if err != nil {
			t.Fatalf("after %d drops reported, connection accepted %v: %v", dropped, got, err)
		}
		if c.Purpose() != "control" {
			t.Errorf("accepted %q", c.Purpose())
		}
		c.Close()
		got = true
	}
}

// TestPreAuthTimeout: a silent client gets the short pre-authentication
// deadline, not the handshake timeout.
func TestPreAuthTimeout(t *testing.T) {
	opt := testOptions()
	opt.HandshakeTimeout = time.Minute
	opt.PreAuthTimeout = 300 * time.Millisecond
	l := listen(t, opt)
	silent, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	_, err = l.Accept(testContext(t))
	mustContain(t, err, "handshake timed out after 300ms")
	_ = silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(silent); err != nil {
		t.Errorf("the silent client's connection was not closed: %v", err)
	}
	if d := (&Options{}).preAuthTimeout(); d != DefaultPreAuthTimeout || d > 5*time.Second {
		t.Errorf("default pre-authentication timeout %s", d)
	}
}

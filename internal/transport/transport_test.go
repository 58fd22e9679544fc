package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/testkit"
	"golang.org/x/sync/errgroup"
)

var testToken = []byte("test-token-0123456789abcdef")

func testOptions() Options {
	return Options{Token: testToken, HandshakeTimeout: 5 * time.Second, StallTimeout: 5 * time.Second}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func listen(t *testing.T, opt Options) *Listener {
	t.Helper()
	l, err := Listen(testContext(t), "127.0.0.1:0", opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("closing the listener: %v", err)
		}
	})
	return l
}

// accept runs Accept in the background and hands back its result.
func accept(ctx context.Context, l *Listener) <-chan acceptResult {
	ch := make(chan acceptResult, 1)
	go func() {
		c, err := l.Accept(ctx)
		ch <- acceptResult{c, err}
	}()
	return ch
}

// pair returns the two ends of one authenticated connection.
func pair(t *testing.T, l *Listener, purpose string, opt Options) (client, server *Conn) {
	t.Helper()
	ctx := testContext(t)
	ch := accept(ctx, l)
	client, err := Dial(ctx, l.Addr().String(), purpose, opt)
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		client.Close()
		t.Fatal(r.err)
	}
	t.Cleanup(func() { client.Close(); r.c.Close() })
	return client, r.c
}

func mustContain(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

type testMsg struct {
	typ     byte
	payload []byte
}

func messages(seed uint64) []testMsg {
	var key [32]byte
	key[0] = byte(seed)
	big := make([]byte, 10<<20)
	_, _ = rand.NewChaCha8(key).Read(big)
	return []testMsg{
		{1, nil},
		{2, []byte("hello, receiver")},
		{3, big},
		{4, big[:recordPayload-headerLen]}, // header and payload fill one record exactly
		{5, big[:recordPayload-headerLen+1]},
		{6, nil},
		{FirstReservedType - 1, big[:100_000]},
	}
}

func sendAll(c *Conn, msgs []testMsg) error {
	for _, m := range msgs {
		if err := c.WriteMessage(m.typ, m.payload); err != nil {
			return err
		}
	}
	return c.CloseWrite()
}

func receiveAll(c *Conn, want []testMsg) error {
	var buf []byte
	for i, m := range want {
		typ, p, err := c.ReadMessage(buf)
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		if typ != m.typ || !bytes.Equal(p, m.payload) {
			return fmt.Errorf("message %d: got type %d with %d bytes, want type %d with %d bytes", i, typ, len(p), m.typ, len(m.payload))
		}
		buf = p
	}
	if _, _, err := c.ReadMessage(buf); err != io.EOF {
		return fmt.Errorf("after the last message: got %v, want io.EOF", err)
	}
	return nil
}

// TestRoundTrip sends messages both ways at once on several connections.
func TestRoundTrip(t *testing.T) {
	l := listen(t, testOptions())
	const conns = 3
	var g errgroup.Group
	for i := range conns {
		purpose := fmt.Sprintf("stream %d", i)
		client, server := pair(t, l, purpose, testOptions())
		if server.Purpose() != purpose || client.Purpose() != listenerPurpose {
			t.Fatalf("purposes: server sees %q, client sees %q", server.Purpose(), client.Purpose())
		}
		up, down := messages(uint64(2*i)), messages(uint64(2*i+1))
		g.Go(func() error { return sendAll(client, up) })
		g.Go(func() error { return receiveAll(server, up) })
		g.Go(func() error { return sendAll(server, down) })
		g.Go(func() error { return receiveAll(client, down) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentWriters checks that messages written from several
// goroutines on one connection arrive whole.
func TestConcurrentWriters(t *testing.T) {
	l := listen(t, testOptions())
	client, server := pair(t, l, "control", testOptions())
	const writers, each = 4, 50
	var g errgroup.Group
	for w := range writers {
		g.Go(func() error {
			p := bytes.Repeat([]byte{byte(w)}, 20_000+w)
			for range each {
				if err := client.WriteMessage(byte(w), p); err != nil {
					return err
				}
			}
			return nil
		})
	}
	counts := make([]int, writers)
	for range writers * each {
		typ, p, err := server.ReadMessage(nil)
		if err != nil {
			t.Fatal(err)
		}
		if int(typ) >= writers || len(p) != 20_000+int(typ) || bytes.Count(p, []byte{typ}) != len(p) {
			t.Fatalf("interleaved message: type %d, %d bytes", typ, len(p))
		}
		counts[typ]++
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for w, n := range counts {
		if n != each {
			t.Errorf("writer %d: %d messages arrived, want %d", w, n, each)
		}
	}
}

func TestTLSParameters(t *testing.T) {
	l := listen(t, testOptions())
	client, _ := pair(t, l, "control", testOptions())
	cs := client.tls.ConnectionState()
	if cs.Version != tls.VersionTLS13 {
		t.Errorf("TLS version 0x%04x, want TLS 1.3", cs.Version)
	}
	t.Logf("cipher suite %s, key exchange %s", tls.CipherSuiteName(cs.CipherSuite), cs.CurveID)
	// With AES in hardware on both ends Go prefers AES-GCM, several times
	// faster than ChaCha20 there.
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil && bytes.Contains(info, []byte(" aes ")) {
		if cs.CipherSuite != tls.TLS_AES_128_GCM_SHA256 && cs.CipherSuite != tls.TLS_AES_256_GCM_SHA384 {
			t.Errorf("CPU has AES instructions but the cipher suite is %s", tls.CipherSuiteName(cs.CipherSuite))
		}
	}
}

func TestWrongToken(t *testing.T) {
	l := listen(t, testOptions())
	ctx := testContext(t)
	ch := accept(ctx, l)
	bad := testOptions()
	bad.Token = []byte("another-token-of-enough-length")
	c, err := Dial(ctx, l.Addr().String(), "control", bad)
	if c != nil {
		t.Fatal("Dial with a wrong token returned a connection")
	}
	if !errors.Is(err, ErrWrongToken) {
		t.Errorf("client: %v, want ErrWrongToken", err)
	}
	mustContain(t, err, "authentication failed: wrong token")
	r := <-ch
	var he *HandshakeError
	if r.c != nil || !errors.As(r.err, &he) || !errors.Is(r.err, ErrWrongToken) {
		t.Fatalf("server: conn %v, err %v; want a HandshakeError with ErrWrongToken", r.c, r.err)
	}
	mustContain(t, r.err, "wrong token", "connection from 127.0.0.1:")

	// The listener goes on serving.
	client, server := pair(t, l, "control", testOptions())
	if err := client.WriteMessage(1, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if _, p, err := server.ReadMessage(nil); err != nil || string(p) != "after" {
		t.Fatalf("after a rejected client: %q, %v", p, err)
	}
}

func TestOptionsValidation(t *testing.T) {
	ctx := testContext(t)
	short := Options{Token: []byte("short")}
	if _, err := Listen(ctx, "127.0.0.1:0", short); err == nil {
		t.Error("Listen accepted a 5-byte token")
	}
	if _, err := Dial(ctx, "127.0.0.1:1", "control", short); err == nil {
		t.Error("Dial accepted a 5-byte token")
	}
	halfPKI := testOptions()
	halfPKI.CertFile = "cert.pem"
	_, err := Listen(ctx, "127.0.0.1:0", halfPKI)
	mustContain(t, err, "together")
	l := listen(t, testOptions())
	_, err = Dial(ctx, l.Addr().String(), strings.Repeat("x", maxPurpose+1), testOptions())
	mustContain(t, err, "purpose")
}

func TestWriteMessageLimits(t *testing.T) {
	l := listen(t, testOptions())
	client, server := pair(t, l, "control", testOptions())
	mustContain(t, client.WriteMessage(typeHello, nil), "reserved")
	mustContain(t, client.WriteMessage(1, make([]byte, MaxPayload+1)), "exceeds the limit")
	// Neither refused message reached the peer.
	if err := client.WriteMessage(1, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if typ, p, err := server.ReadMessage(nil); err != nil || typ != 1 || string(p) != "ok" {
		t.Fatalf("got type %d %q, %v; want the one valid message", typ, p, err)
	}
}

// TestOversizedMessage has a peer claim a message beyond MaxPayload.
func TestOversizedMessage(t *testing.T) {
	l := listen(t, testOptions())
	client, server := pair(t, l, "control", testOptions())
	var hdr [headerLen]byte
	putHeader(hdr[:], 1, MaxPayload+1)
	if _, err := client.tls.Write(hdr[:]); err != nil {
		t.Fatal(err)
	}
	_, _, err := server.ReadMessage(nil)
	mustContain(t, err, "more than the limit")
}

func TestVersionMismatch(t *testing.T) {
	l := listen(t, testOptions())
	ctx := testContext(t)
	ch := accept(ctx, l)
	newer := testOptions()
	newer.version = ProtocolVersion + 1
	_, err := Dial(ctx, l.Addr().String(), "control", newer)
	if !errors.Is(err, ErrProtocolVersion) {
		t.Errorf("client: %v, want ErrProtocolVersion", err)
	}
	mustContain(t, err, fmt.Sprintf("peer speaks protocol %d, this backstream speaks %d: upgrade the peer's backstream", ProtocolVersion, ProtocolVersion+1))
	r := <-ch
	if !errors.Is(r.err, ErrProtocolVersion) {
		t.Errorf("server: %v, want ErrProtocolVersion", r.err)
	}
	mustContain(t, r.err, fmt.Sprintf("peer speaks protocol %d, this backstream speaks %d: upgrade this backstream", ProtocolVersion+1, ProtocolVersion))
}

func TestPlainTextClient(t *testing.T) {
	l := listen(t, testOptions())
	tests := []struct {
		name string
		send []byte
	}{
		{"http", []byte("GET / HTTP/1.0\r\n\r\n")},
		{"garbage", []byte{0x00, 0xff, 0x13, 0x37, 0x42, 0x99, 0x01}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			ch := accept(ctx, l)
			raw, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Write(tt.send); err != nil {
				t.Fatal(err)
			}
			r := <-ch
			var he *HandshakeError
			if !errors.As(r.err, &he) {
				t.Fatalf("got %v, want a HandshakeError", r.err)
			}
			mustContain(t, r.err, "not a TLS client")
			// The plain-text client is told what it reached.
			_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
			reply, _ := io.ReadAll(raw)
			if string(reply) != plainTextReply {
				t.Errorf("plain-text client read %q, want %q", reply, plainTextReply)
			}
		})
	}
}

// TestSilentClient shows that a client that says nothing times out on its
// own without holding up an honest client that arrives after it.
func TestSilentClient(t *testing.T) {
	opt := testOptions()
	opt.HandshakeTimeout = time.Second
	l := listen(t, opt)
	silent, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	ctx := testContext(t)
	client, err := Dial(ctx, l.Addr().String(), "control", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := l.Accept(ctx)
	if err != nil {
		t.Fatalf("the honest client was not accepted first: %v", err)
	}
	c.Close()
	start := time.Now()
	_, err = l.Accept(ctx)
	var he *HandshakeError
	if !errors.As(err, &he) {
		t.Fatalf("got %v, want a HandshakeError", err)
	}
	mustContain(t, err, "handshake timed out after 1s")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("timeout reported after %s", d)
	}
}

func TestPlainTextServer(t *testing.T) {
	ctx := testContext(t)
	addr := testkit.ServeTCP(t, func(c net.Conn) {
		_, _ = c.Write([]byte("220 smtp.example.com ESMTP ready\r\n"))
		_, _ = io.Copy(io.Discard, c)
	})
	_, err := Dial(ctx, addr, "control", testOptions())
	mustContain(t, err, "not a TLS server", `"220 s"`)

	opt := testOptions()
	opt.HandshakeTimeout = 300 * time.Millisecond
	addr = testkit.ServeTCP(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	_, err = Dial(ctx, addr, "control", opt)
	mustContain(t, err, "handshake timed out after 300ms")
}

// TestStallMidMessage has a peer send half a message and stop.
func TestStallMidMessage(t *testing.T) {
	opt := testOptions()
	opt.StallTimeout = 400 * time.Millisecond
	l := listen(t, opt)
	client, server := pair(t, l, "stream 0", testOptions())
	var hdr [headerLen]byte
	putHeader(hdr[:], 1, 1000)
	if _, err := client.tls.Write(append(hdr[:], "only ten b"...)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err := server.ReadMessage(nil)
	mustContain(t, err, "peer stalled", "no data for 400ms", "got 10 of 1000 bytes")
	if d := time.Since(start); d < 300*time.Millisecond || d > 3*time.Second {
		t.Errorf("stall reported after %s, want about 400ms", d)
	}
}

// TestIdleIsNotStall checks that waiting between messages is not a stall,
// and that IdleTimeout bounds it when asked.
func TestIdleIsNotStall(t *testing.T) {
	opt := testOptions()
	opt.StallTimeout = 200 * time.Millisecond
	l := listen(t, opt)
	client, server := pair(t, l, "stream 0", opt)
	go func() {
		time.Sleep(700 * time.Millisecond)
		_ = client.WriteMessage(1, []byte("late but alive"))
	}()
	if _, p, err := server.ReadMessage(nil); err != nil || string(p) != "late but alive" {
		t.Fatalf("after an idle wait longer than the stall timeout: %q, %v", p, err)
	}

	opt.IdleTimeout = 300 * time.Millisecond
	l2 := listen(t, opt)
	_, server2 := pair(t, l2, "stream 0", opt)
	_, _, err := server2.ReadMessage(nil)
	mustContain(t, err, "no message for 300ms (idle timeout)")
}

// A peer with nothing to say for longer than the idle timeout stays
// connected by its heartbeats; one that stops sending them (a stopped
// process) is given up after the idle timeout, naming it.
func TestHeartbeatsTellSilenceFromAStop(t *testing.T) {
	opt := testOptions()
	opt.IdleTimeout = 400 * time.Millisecond
	opt.Heartbeat = 100 * time.Millisecond
	l := listen(t, opt)
	client, server := pair(t, l, "stream 0", opt)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		_ = client.WriteMessage(1, []byte("after a long think"))
	}()
	if _, p, err := server.ReadMessage(nil); err != nil || string(p) != "after a long think" {
		t.Fatalf("a silent peer that sends heartbeats: %q, %v", p, err)
	}
	// Both ways: the server's heartbeats keep the client's wait alive too.
	go func() {
		time.Sleep(1500 * time.Millisecond)
		_ = server.WriteMessage(2, []byte("done"))
	}()
	if _, p, err := client.ReadMessage(nil); err != nil || string(p) != "done" {
		t.Fatalf("waiting on a silent server: %q, %v", p, err)
	}

	stopped := opt
	stopped.Heartbeat = -1
	_, server2 := pair(t, l, "stream 1", stopped)
	start := time.Now()
	_, _, err := server2.ReadMessage(nil)
	mustContain(t, err, "no message for 400ms (idle timeout)")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a stopped peer noticed after %s, want about 400ms", d)
	}
}

// TestWriteStall has a peer that never reads: the writer must give up.
func TestWriteStall(t *testing.T) {
	l := listen(t, testOptions())
	opt := testOptions()
	opt.StallTimeout = 300 * time.Millisecond
	client, _ := pair(t, l, "stream 0", opt)
	big := make([]byte, 32<<20)
	start := time.Now()
	var err error
	for range 8 {
		if err = client.WriteMessage(1, big); err != nil {
			break
		}
	}
	mustContain(t, err, "no progress for 300ms", "stopped reading")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("write stall reported after %s", d)
	}
}

// TestCloseBreaksBlockedWrite checks that Close interrupts a writer
// blocked on a peer that does not read, well before the stall timeout.
func TestCloseBreaksBlockedWrite(t *testing.T) {
	l := listen(t, testOptions())
	opt := testOptions()
	opt.StallTimeout = time.Minute
	client, _ := pair(t, l, "stream 0", opt)
	errc := make(chan error, 1)
	go func() {
		big := make([]byte, 32<<20)
		for {
			if err := client.WriteMessage(1, big); err != nil {
				errc <- err
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	if err := client.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the blocked write succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not break the blocked write")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %s to break the write", d)
	}
}

// TestEndings tells a clean end from a cut connection and a cut message.
func TestEndings(t *testing.T) {
	l := listen(t, testOptions())
	t.Run("close write", func(t *testing.T) {
		client, server := pair(t, l, "s", testOptions())
		if err := client.WriteMessage(1, []byte("last")); err != nil {
			t.Fatal(err)
		}
		if err := client.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if _, p, err := server.ReadMessage(nil); err != nil || string(p) != "last" {
			t.Fatalf("%q, %v", p, err)
		}
		if _, _, err := server.ReadMessage(nil); err != io.EOF {
			t.Fatalf("after CloseWrite: %v, want io.EOF", err)
		}
		// The other direction still works.
		if err := server.WriteMessage(2, []byte("ack")); err != nil {
			t.Fatal(err)
		}
		if _, p, err := client.ReadMessage(nil); err != nil || string(p) != "ack" {
			t.Fatalf("reply after CloseWrite: %q, %v", p, err)
		}
	})
	t.Run("cut between messages", func(t *testing.T) {
		client, server := pair(t, l, "s", testOptions())
		client.raw.Conn.Close() // no close_notify: the process died
		_, _, err := server.ReadMessage(nil)
		if err == io.EOF {
			t.Fatal("a cut connection read as a clean end")
		}
		mustContain(t, err, "without an end of stream")
	})
	t.Run("close without close write", func(t *testing.T) {
		client, server := pair(t, l, "s", testOptions())
		if err := client.WriteMessage(1, []byte("partial work")); err != nil {
			t.Fatal(err)
		}
		client.Close()
		if _, _, err := server.ReadMessage(nil); err != nil {
			t.Fatal(err)
		}
		_, _, err := server.ReadMessage(nil)
		if err == io.EOF {
			t.Fatal("Close without CloseWrite read as a clean end")
		}
		mustContain(t, err, "without an end of stream")
	})
	t.Run("cut in a message", func(t *testing.T) {
		client, server := pair(t, l, "s", testOptions())
		var hdr [headerLen]byte
		putHeader(hdr[:], 1, 100)
		if _, err := client.tls.Write(append(hdr[:], "abc"...)); err != nil {
			t.Fatal(err)
		}
		client.Close() // even a clean close inside a message is truncation
		_, _, err := server.ReadMessage(nil)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("got %v, want io.ErrUnexpectedEOF", err)
		}
		mustContain(t, err, "connection closed in the middle of a message", "got 3 of 100 bytes")
	})
	t.Run("cut in a message, no close_notify", func(t *testing.T) {
		client, server := pair(t, l, "s", testOptions())
		var hdr [headerLen]byte
		putHeader(hdr[:], 1, 100)
		if _, err := client.tls.Write(append(hdr[:], "abc"...)); err != nil {
			t.Fatal(err)
		}
		client.raw.Conn.Close() // the process died
		_, _, err := server.ReadMessage(nil)
		mustContain(t, err, "connection closed in the middle of a message", "got 3 of 100 bytes")
	})
}

func TestAbort(t *testing.T) {
	l := listen(t, testOptions())
	client, server := pair(t, l, "control", testOptions())
	if err := server.Abort("target directory is not empty"); err != nil {
		t.Fatal(err)
	}
	_, _, err := client.ReadMessage(nil)
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Reason != "target directory is not empty" {
		t.Fatalf("got %v, want the peer's reason", err)
	}
}

func TestListenerClose(t *testing.T) {
	l, err := Listen(testContext(t), "127.0.0.1:0", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	// A silent client in the middle of its handshake must not hold up Close.
	silent, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	time.Sleep(50 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- l.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Close waited for a pending handshake")
	}
	if _, err := l.Accept(testContext(t)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
}

func TestDialCancel(t *testing.T) {
	addr := testkit.ServeTCP(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := Dial(ctx, addr, "control", testOptions())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancel took %s", d)
	}
}

func BenchmarkThroughput(b *testing.B) {
	l, err := Listen(context.Background(), "127.0.0.1:0", testOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ch := accept(context.Background(), l)
	client, err := Dial(context.Background(), l.Addr().String(), "stream 0", testOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	r := <-ch
	if r.err != nil {
		b.Fatal(r.err)
	}
	server := r.c
	defer server.Close()
	payload := make([]byte, 4<<20)
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, len(payload))
		for {
			_, p, err := server.ReadMessage(buf)
			if err == io.EOF {
				done <- nil
				return
			}
			if err != nil {
				done <- err
				return
			}
			buf = p
		}
	}()
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	for range b.N {
		if err := client.WriteMessage(1, payload); err != nil {
			b.Fatal(err)
		}
	}
	if err := client.CloseWrite(); err != nil {
		b.Fatal(err)
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// A sender of protocol 3, from before a stored backup could be sent in
// part (its frame records had no offset), is refused at the hello, told
// to upgrade itself.
func TestVersion3SenderRefused(t *testing.T) {
	if ProtocolVersion != 4 {
		t.Fatalf("ProtocolVersion %d: this test is of the step from 3 to 4", ProtocolVersion)
	}
	l := listen(t, testOptions())
	ctx := testContext(t)
	ch := accept(ctx, l)
	older := testOptions()
	older.version = 3
	_, err := Dial(ctx, l.Addr().String(), "control", older)
	if !errors.Is(err, ErrProtocolVersion) {
		t.Errorf("client: %v, want ErrProtocolVersion", err)
	}
	mustContain(t, err, "peer speaks protocol 4, this backstream speaks 3: upgrade this backstream")
	r := <-ch
	mustContain(t, r.err, "peer speaks protocol 3, this backstream speaks 4: upgrade the peer's backstream")
}

// A byte changed on the wire after the handshake, in a record's body or
// in any field of its header: the reader says the data was altered,
// whatever part of TLS noticed (the record's authentication, its length,
// its type).
func TestAlteredRecord(t *testing.T) {
	for _, c := range []struct {
		name string
		at   int  // offset in the record, header included
		mask byte // XORed into the byte there
	}{
		{"type", 0, 0x01},
		{"version", 2, 0x01},
		{"length", 3, 0x40},
		{"body", 100, 0x10},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := listen(t, testOptions())
			proxy := testkit.ServeTCP(t, func(in net.Conn) {
				out, err := net.Dial("tcp", l.Addr().String())
				if err != nil {
					return
				}
				defer out.Close()
				go io.Copy(in, out)
				alterRecord(in, out, 64<<10, c.at, c.mask)
			})
			ctx := testContext(t)
			ch := accept(ctx, l)
			client, err := Dial(ctx, proxy, "control", testOptions())
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			r := <-ch
			if r.err != nil {
				t.Fatal(r.err)
			}
			defer r.c.Close()
			go client.WriteMessage(1, make([]byte, 1<<20))
			_, _, err = r.c.ReadMessage(nil)
			mustContain(t, err, "data altered on the wire (TLS refused a record)")
		})
	}
}

// alterRecord copies the TLS records read from in to out, and XORs mask
// into byte at of the first record that starts after skip bytes.
func alterRecord(in io.Reader, out io.Writer, skip, at int, mask byte) {
	seen, done := 0, false
	var hdr [5]byte
	for {
		if _, err := io.ReadFull(in, hdr[:]); err != nil {
			return
		}
		rec := make([]byte, 5+(int(hdr[3])<<8|int(hdr[4])))
		copy(rec, hdr[:])
		if _, err := io.ReadFull(in, rec[5:]); err != nil {
			return
		}
		if !done && seen >= skip && at < len(rec) {
			rec[at] ^= mask
			done = true
		}
		seen += len(rec)
		if _, err := out.Write(rec); err != nil {
			return
		}
	}
}

package transport

import (
	"errors"
	"testing"
	"time"
)

// A reader blocked on a connection when another goroutine aborts it
// returns at once with ErrAborted, and so does every later read: the drain
// is the only reader from then on. Close after Abort leaves the
// connection to the drain, which ends when the peer has read the reason
// and closed.
func TestAbortStopsTheReader(t *testing.T) {
	l := listen(t, testOptions())
	client, server := pair(t, l, "control", testOptions())
	read := make(chan error, 1)
	go func() {
		_, _, err := server.ReadMessage(nil)
		read <- err
	}()
	time.Sleep(100 * time.Millisecond) // the reader is in ReadMessage
	if err := server.Abort("the receiver gave up"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-read:
		if !errors.Is(err, ErrAborted) {
			t.Fatalf("the reader got %v, want ErrAborted", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the reader was still reading after Abort")
	}
	if _, _, err := server.ReadMessage(nil); !errors.Is(err, ErrAborted) {
		t.Errorf("a read after Abort: %v, want ErrAborted", err)
	}
	if err := server.Close(); err != nil {
		t.Errorf("Close after Abort: %v", err)
	}
	if err := server.Abort("again"); err != nil {
		t.Errorf("a second Abort: %v", err)
	}
	// What the peer sends now goes to the drain, not to a reader.
	for range 10 {
		if err := client.WriteMessage(1, make([]byte, 64<<10)); err != nil {
			break
		}
	}
	_, _, err := client.ReadMessage(nil)
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Reason != "the receiver gave up" {
		t.Fatalf("the peer read %v, want the reason", err)
	}
	if WaitDrains(100 * time.Millisecond) {
		t.Error("WaitDrains: the drain ended while the peer was still connected")
	}
	client.Close()
	if !WaitDrains(abortLinger) {
		t.Error("the drain did not end when the peer closed")
	}
}

// A connection closed right after Abort, with bytes of the peer's still
// unread (as a receiver that refuses a transfer in full flow does, its
// deferred Close following the Abort), still gets the reason across:
// Close leaves the connection to the drain. (On loopback the reason
// arrives before the reset the old Close sent, so this guards the rule
// rather than reproducing the loss, which needs a lost segment.)
func TestAbortThenClose(t *testing.T) {
	l := listen(t, testOptions())
	for i := range 5 {
		client, server := pair(t, l, "stream 0", testOptions())
		// The peer sends more than the receive buffers hold, and goes on.
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			for range 256 {
				if client.WriteMessage(1, make([]byte, 64<<10)) != nil {
					return
				}
			}
		}()
		time.Sleep(50 * time.Millisecond)
		if err := server.Abort("disk full"); err != nil {
			t.Fatal(err)
		}
		server.Close()
		<-sent
		_, _, err := client.ReadMessage(nil)
		var pe *PeerError
		if !errors.As(err, &pe) || pe.Reason != "disk full" {
			t.Fatalf("round %d: the peer read %v, want the reason", i, err)
		}
		client.Close()
	}
	if !WaitDrains(abortLinger) {
		t.Error("the drains did not end")
	}
}

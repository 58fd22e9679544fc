package transport

import (
	"testing"
	"time"
)

// A writer that ends cleanly (CloseWrite, then Close) while its peer,
// slower, still has megabytes of what it sent to read, and has sent it
// heartbeats it never read: the peer reads every message and the end.
// (Closing a socket that holds unread bytes makes the kernel reset the
// connection and drop what it has not delivered yet: the peer read
// "connection reset by peer" in the middle of a message.)
func TestCloseAfterCloseWriteDeliversEverything(t *testing.T) {
	opt := testOptions()
	opt.Heartbeat = 50 * time.Millisecond
	l := listen(t, opt)
	client, server := pair(t, l, "stream 0", opt)
	time.Sleep(300 * time.Millisecond) // the server's heartbeats reach the client, unread
	msgs := messages(7)
	for range 3 {
		msgs = append(msgs, msgs...)
	}
	sent := make(chan error, 1)
	go func() {
		err := sendAll(client, msgs)
		client.Close()
		sent <- err
	}()
	time.Sleep(500 * time.Millisecond) // the reader starts late: the sockets fill
	if err := receiveAll(server, msgs); err != nil {
		t.Fatalf("the reader of a connection closed after CloseWrite: %v", err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("sending: %v", err)
	}
}

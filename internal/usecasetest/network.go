package usecasetest

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/backstream/backstream/internal/transport"
)

// TokenFile writes a fresh transfer token (transport.GenerateToken) into
// a file of its own, as --token-file reads it.
func TokenFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(transport.GenerateToken()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// FreeAddr is a loopback address with a port free when it was chosen.
func FreeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

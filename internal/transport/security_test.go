package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/testkit"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // the CA certificate, PEM
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name+".pem")
	writePEM(t, file, "CERTIFICATE", der)
	return &testCA{cert: cert, key: key, file: file}
}

// issue writes a server certificate for localhost and 127.0.0.1 and its
// key, and returns their paths.
func (ca *testCA) issue(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "receiver"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func TestPKI(t *testing.T) {
	ca, other := newCA(t, "site-ca"), newCA(t, "other-ca")
	serverOpt := testOptions()
	serverOpt.CertFile, serverOpt.KeyFile = ca.issue(t)
	serverOpt.CAFile = ca.file // ignored by the listener: the same Options serve both ends
	l := listen(t, serverOpt)
	port := l.Addr().(*net.TCPAddr).Port

	t.Run("verified", func(t *testing.T) {
		opt := testOptions()
		opt.CAFile = ca.file
		client, server := pair(t, l, "control", opt)
		if err := client.WriteMessage(1, []byte("hi")); err != nil {
			t.Fatal(err)
		}
		if _, p, err := server.ReadMessage(nil); err != nil || string(p) != "hi" {
			t.Fatalf("%q, %v", p, err)
		}
		if n := len(client.tls.ConnectionState().VerifiedChains); n == 0 {
			t.Error("the client did not verify a chain")
		}
	})
	t.Run("by name", func(t *testing.T) {
		opt := testOptions()
		opt.CAFile = ca.file
		ctx := testContext(t)
		ch := accept(ctx, l)
		c, err := Dial(ctx, net.JoinHostPort("localhost", itoa(port)), "control", opt)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if r := <-ch; r.err != nil {
			t.Fatal(r.err)
		}
	})
	failures := []struct {
		name  string
		ca    string
		sname string
		want  string
	}{
		{"wrong CA", other.file, "", "does not verify against CA file"},
		{"wrong name", ca.file, "db.example.com", "does not verify against CA file"},
	}
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			opt := testOptions()
			opt.CAFile, opt.ServerName = f.ca, f.sname
			ctx := testContext(t)
			ch := accept(ctx, l)
			_, err := Dial(ctx, l.Addr().String(), "control", opt)
			mustContain(t, err, f.want)
			r := <-ch
			var he *HandshakeError
			if !errors.As(r.err, &he) {
				t.Errorf("server: %v, want a HandshakeError", r.err)
			}
		})
	}
	t.Run("token still checked", func(t *testing.T) {
		opt := testOptions()
		opt.CAFile = ca.file
		opt.Token = []byte("a-different-token-of-enough-length")
		ctx := testContext(t)
		ch := accept(ctx, l)
		_, err := Dial(ctx, l.Addr().String(), "control", opt)
		if !errors.Is(err, ErrWrongToken) {
			t.Errorf("client: %v, want ErrWrongToken", err)
		}
		if r := <-ch; !errors.Is(r.err, ErrWrongToken) {
			t.Errorf("server: %v, want ErrWrongToken", r.err)
		}
	})
}

func itoa(n int) string { return big.NewInt(int64(n)).String() }

// tlsRelay is a man in the middle that knows no token: it terminates TLS
// from the dialer with its own certificate, opens its own TLS session to
// the listener, and copies the plaintext both ways.
func tlsRelay(t *testing.T, upstream string) string {
	cert, err := selfSigned()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	return testkit.ServeTCP(t, func(c net.Conn) {
		down := tls.Server(c, cfg)
		up, err := tls.Dial("tcp", upstream, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
		if err != nil {
			return
		}
		defer up.Close()
		go func() { _, _ = io.Copy(up, down); up.CloseWrite() }()
		_, _ = io.Copy(down, up)
	})
}

// TestManInTheMiddle shows that a relay without the token fails on both
// ends even though it sees every plaintext byte: the proofs it forwards
// are bound to the other TLS session.
func TestManInTheMiddle(t *testing.T) {
	l := listen(t, testOptions())
	relay := tlsRelay(t, l.Addr().String())
	ctx := testContext(t)
	ch := accept(ctx, l)
	_, err := Dial(ctx, relay, "control", testOptions())
	if !errors.Is(err, ErrWrongToken) {
		t.Errorf("dialer behind the relay: %v, want ErrWrongToken", err)
	}
	r := <-ch
	if !errors.Is(r.err, ErrWrongToken) {
		t.Errorf("listener behind the relay: %v, want ErrWrongToken", r.err)
	}
}

// tokenProxy is a man in the middle that knows the token: it accepts with
// its own listener and dials the real one, so each side authenticates to
// it separately, and forwards one message.
func tokenProxy(t *testing.T, upstream string) (addr string, done <-chan error) {
	pl := listen(t, testOptions())
	ch := make(chan error, 1)
	go func() {
		ctx := testContext(t)
		down, err := pl.Accept(ctx)
		if err != nil {
			ch <- err
			return
		}
		defer down.Close()
		up, err := Dial(ctx, upstream, down.Purpose(), testOptions())
		if err != nil {
			ch <- err
			return
		}
		defer up.Close()
		typ, p, err := down.ReadMessage(nil)
		if err == nil {
			err = up.WriteMessage(typ, p)
		}
		ch <- err
	}()
	return pl.Addr().String(), ch
}

// TestTokenHolderInTheMiddle documents the limit of the default mode: a
// man in the middle who knows the token passes, because it can compute
// proofs for each session. With the site's PKI the dialer refuses it.
func TestTokenHolderInTheMiddle(t *testing.T) {
	t.Run("default mode: passes", func(t *testing.T) {
		l := listen(t, testOptions())
		proxy, done := tokenProxy(t, l.Addr().String())
		ctx := testContext(t)
		ch := accept(ctx, l)
		c, err := Dial(ctx, proxy, "control", testOptions())
		if err != nil {
			t.Fatalf("the token holder was refused: %v", err)
		}
		defer c.Close()
		if err := c.WriteMessage(1, []byte("read by the proxy")); err != nil {
			t.Fatal(err)
		}
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		defer r.c.Close()
		if _, p, err := r.c.ReadMessage(nil); err != nil || string(p) != "read by the proxy" {
			t.Fatalf("%q, %v", p, err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("PKI mode: refused", func(t *testing.T) {
		ca := newCA(t, "site-ca")
		serverOpt := testOptions()
		serverOpt.CertFile, serverOpt.KeyFile = ca.issue(t)
		l := listen(t, serverOpt)
		proxy, _ := tokenProxy(t, l.Addr().String())
		opt := testOptions()
		opt.CAFile = ca.file
		opt.ServerName = "localhost"
		_, err := Dial(testContext(t), proxy, "control", opt)
		mustContain(t, err, "does not verify against CA file")
	})
}

func TestLoadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "token-from-a-file-0123456789\n", 0o600)
	tests := []struct {
		name, file, env string
		want, wantErr   string
	}{
		{name: "file", file: good, want: "token-from-a-file-0123456789"},
		{name: "file wins over env", file: good, env: "token-from-the-environment", want: "token-from-a-file-0123456789"},
		{name: "owner read only", file: write("ro", "read-only-token-0123456789", 0o400), want: "read-only-token-0123456789"},
		{name: "world readable", file: write("open", "token-from-a-file-0123456789", 0o644), wantErr: "has mode 0644: group and others must have no access"},
		{name: "group readable", file: write("group", "token-from-a-file-0123456789", 0o640), wantErr: "has mode 0640"},
		{name: "short file", file: write("short", "tiny\n", 0o600), wantErr: "shorter than the minimum of 16"},
		{name: "missing file", file: filepath.Join(dir, "nope"), wantErr: "no such file"},
		{name: "directory", file: t.TempDir(), wantErr: "is not a regular file"},
		{name: "env", env: "  token-from-the-environment\n", want: "token-from-the-environment"},
		{name: "short env", env: "tiny", wantErr: "from BACKSTREAM_TOKEN is 4 bytes"},
		{name: "nothing", wantErr: "BACKSTREAM_TOKEN is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv(TokenEnv, tt.env)
			} else {
				t.Setenv(TokenEnv, "")
				os.Unsetenv(TokenEnv)
			}
			tok, err := LoadToken(tt.file)
			if tt.wantErr != "" {
				mustContain(t, err, tt.wantErr)
				if tok != nil {
					t.Errorf("a token came back with the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(tok) != tt.want {
				t.Errorf("token %q, want %q", tok, tt.want)
			}
		})
	}
}

func TestGenerateToken(t *testing.T) {
	a, b := GenerateToken(), GenerateToken()
	if a == b {
		t.Fatal("two generated tokens are equal")
	}
	if len(a) != 43 {
		t.Errorf("token %q has %d characters, want 43", a, len(a))
	}
	// A generated token works as a token.
	opt := testOptions()
	opt.Token = []byte(a)
	l := listen(t, opt)
	pair(t, l, "control", opt)
}

package mariadb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // the certificate, PEM
}

func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, name+".pem")
	writePEM(t, file, "CERTIFICATE", der)
	return &testCA{cert: cert, key: key, file: file}
}

// issue makes a certificate for names (IP addresses or DNS names), valid
// from notBefore for an hour, and writes it and its key to dir/name.pem
// and dir/name-key.pem.
func (ca *testCA) issue(t *testing.T, dir, name string, notBefore time.Time, names ...string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: notBefore, NotAfter: notBefore.Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature,
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func writePEM(t *testing.T, file, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tlsServer accepts TLS connections on 127.0.0.1 with the given
// certificate, asking for a client certificate signed by clientCA when it
// is set, and finishes each handshake; it returns the port.
func tlsServer(t *testing.T, certFile, keyFile string, clientCA *testCA) int {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	conf := &tls.Config{Certificates: []tls.Certificate{pair}}
	if clientCA != nil {
		pool := x509.NewCertPool()
		pool.AddCert(clientCA.cert)
		conf.ClientCAs, conf.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				_ = c.(*tls.Conn).Handshake()
				var b [1]byte
				_, _ = c.Read(b[:]) // until the client goes
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// handshake connects to port as cfg says, with cfg's TLS configuration.
func handshake(cfg Config, port int) error {
	conf, err := cfg.tlsConfig()
	if err != nil {
		return err
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), conf)
	if err != nil {
		return err
	}
	// TLS 1.3 reports a rejected client certificate on the first read.
	_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var b [1]byte
	_, err = conn.Read(b[:])
	conn.Close()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	return err
}

// The client's semantics (checked against the MariaDB 10.11 client, see
// docs/guide.md): --ssl alone checks nothing; a CA checks the chain but not
// the name; --ssl-verify-server-cert checks both, against the system's CAs
// when no CA is given. Each failure names the problem and the CA it used.
func TestTLSVerification(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := newTestCA(t, dir, "test CA")
	other := newTestCA(t, dir, "other CA")
	now := time.Now().Add(-time.Minute)
	ipCert, ipKey := ca.issue(t, dir, "server-ip", now, "127.0.0.1", "localhost")
	nameCert, nameKey := ca.issue(t, dir, "server-name", now, "db.example")
	oldCert, oldKey := ca.issue(t, dir, "server-old", now.Add(-3*time.Hour), "127.0.0.1")
	clientCert, clientKey := ca.issue(t, dir, "client", now)
	ipPort := tlsServer(t, ipCert, ipKey, nil)
	namePort := tlsServer(t, nameCert, nameKey, nil)
	oldPort := tlsServer(t, oldCert, oldKey, nil)
	mutualPort := tlsServer(t, ipCert, ipKey, ca)
	capath := filepath.Join(dir, "capath")
	if err := os.Mkdir(capath, 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(ca.file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(capath, "a1b2c3d4.0"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(capath, "README"), []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	tcp := func(t TLS) Config {
		return Config{User: "u", Host: "127.0.0.1", Protocol: ProtocolTCP, TLS: t}
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		port int
		want string // "" for success, else a part of the error
	}{
		{"ssl alone, a name that does not match", tcp(TLS{SSL: true}), namePort, ""},
		{"ssl alone, an expired certificate", tcp(TLS{SSL: true}), oldPort, ""},
		{"ca, the right one", tcp(TLS{SSL: true, CA: ca.file}), ipPort, ""},
		{"ca without verify leaves the name alone", tcp(TLS{SSL: true, CA: ca.file}), namePort, ""},
		{"ca, a wrong one", tcp(TLS{SSL: true, CA: other.file}), ipPort,
			`the server's certificate (subject "CN=server-ip", issuer "CN=test CA") is not signed by a CA in ssl-ca ` + other.file},
		{"capath, the right one", tcp(TLS{SSL: true, CAPath: capath}), ipPort, ""},
		{"ca, an expired certificate", tcp(TLS{SSL: true, CA: ca.file}), oldPort, `the server's certificate (subject "CN=server-old", valid`},
		{"verify, the right CA and name", tcp(TLS{SSL: true, CA: ca.file, VerifyServerCert: true}), ipPort, ""},
		{"verify, a wrong name", tcp(TLS{SSL: true, CA: ca.file, VerifyServerCert: true}), namePort,
			`the server's certificate does not name the host "127.0.0.1" connected to, which ssl-verify-server-cert checks: x509: cannot validate certificate for 127.0.0.1`},
		{"verify by host name", Config{Host: "localhost", Protocol: ProtocolTCP, TLS: TLS{SSL: true, CA: ca.file, VerifyServerCert: true}}, ipPort, ""},
		{"verify without a CA uses the system's", tcp(TLS{SSL: true, VerifyServerCert: true}), ipPort,
			"is not signed by a CA in the system's trusted CAs (no ssl-ca given)"},
		{"client certificate", tcp(TLS{SSL: true, CA: ca.file, Cert: clientCert, Key: clientKey}), mutualPort, ""},
		{"no client certificate", tcp(TLS{SSL: true, CA: ca.file}), mutualPort, "certificate required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := handshake(tc.cfg, tc.port)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("handshake failed: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("handshake: err = %v, want one containing %q", err, tc.want)
			}
			var ce *CertificateError
			if err != nil && tc.want != "certificate required" && !errors.As(err, &ce) {
				t.Errorf("err %T is not a *CertificateError", err)
			}
		})
	}
}

// Files that do not hold what the options need fail before connecting,
// naming the file and where the setting came from.
func TestTLSConfigBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	src := map[string]string{"ssl-ca": "/etc/x.cnf [client]"}
	for _, tc := range []struct {
		tls  TLS
		want string
	}{
		{TLS{SSL: true, CA: notPEM}, "ssl-ca " + notPEM + " (from /etc/x.cnf [client]): no PEM certificate in it"},
		{TLS{SSL: true, CA: filepath.Join(dir, "missing.pem")}, "missing.pem: no such file"},
		{TLS{SSL: true, CAPath: empty}, empty + ": no PEM certificate in any file of it"},
		{TLS{SSL: true, Cert: notPEM}, "client certificate (ssl-cert " + notPEM + ", ssl-key " + notPEM + ")"},
	} {
		_, err := Config{TLS: tc.tls, Sources: src}.tlsConfig()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want one containing %q", tc.tls, err, tc.want)
		}
	}
	if conf, err := (Config{TLS: TLS{CA: notPEM}}).tlsConfig(); conf != nil || err != nil {
		t.Errorf("TLS off: %v, %v; want nil, nil (the files are not read)", conf, err)
	}
}

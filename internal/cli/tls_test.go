package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// testCerts are the files of a CA, a server certificate it signed (for
// 127.0.0.1 and localhost), a client certificate it signed, and a second,
// unrelated CA, made with openssl in a test's directory.
type testCerts struct {
	ca, serverCert, serverKey, clientCert, clientKey, wrongCA string
}

func makeTestCerts(t *testing.T) testCerts {
	t.Helper()
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	if err := os.WriteFile(p("server.ext"), []byte("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p("client.ext"), []byte("extendedKeyUsage=clientAuth\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ec := []string{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"}
	openssl := func(args ...string) {
		t.Helper()
		out, err := exec.Command("openssl", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, ca := range []struct{ name, cn string }{{"ca", "backstream test CA"}, {"wrong-ca", "some other CA"}} {
		openssl(append(append([]string{"req", "-x509"}, ec...), "-keyout", p(ca.name+"-key.pem"), "-out", p(ca.name+".pem"),
			"-days", "2", "-subj", "/CN="+ca.cn)...)
	}
	for _, leaf := range []struct{ name, cn string }{{"server", "localhost"}, {"client", "backstream test client"}} {
		openssl(append(append([]string{"req"}, ec...), "-keyout", p(leaf.name+"-key.pem"), "-out", p(leaf.name+".csr"), "-subj", "/CN="+leaf.cn)...)
		openssl("x509", "-req", "-in", p(leaf.name+".csr"), "-CA", p("ca.pem"), "-CAkey", p("ca-key.pem"), "-CAcreateserial",
			"-out", p(leaf.name+".pem"), "-days", "2", "-extfile", p(leaf.name+".ext"))
	}
	return testCerts{ca: p("ca.pem"), serverCert: p("server.pem"), serverKey: p("server-key.pem"),
		clientCert: p("client.pem"), clientKey: p("client-key.pem"), wrongCA: p("wrong-ca.pem")}
}

// TLS to a server with require_secure_transport=ON, over TCP (its socket
// counts as secure): a logical backup, a physical backup (mariabackup),
// binary log archiving (mariadb-binlog) and a logical restore each fail
// without TLS, naming the cause and --ssl, and work with it. The account
// "bsx" REQUIRE X509 logs in only with the client certificate, so that its
// runs prove the children got the TLS settings: their own default (ssl on,
// without a certificate) would be refused. The physical backup takes its
// settings from a --defaults-extra-file [client] group; a wrong CA fails,
// naming the certificate problem.
func TestTLSConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	certs := makeTestCerts(t)
	srv := sandboxtest.Start(t, sandbox.Options{Args: []string{
		"--ssl-cert=" + certs.serverCert, "--ssl-key=" + certs.serverKey, "--ssl-ca=" + certs.ca, "--require-secure-transport=ON",
	}})
	for _, q := range []string{
		"CREATE USER 'bs'@'127.0.0.1' IDENTIFIED BY 'tls-pw'",
		"GRANT ALL PRIVILEGES ON *.* TO 'bs'@'127.0.0.1'",
		"CREATE USER 'bsx'@'127.0.0.1' IDENTIFIED BY 'tls-pw' REQUIRE X509",
		"GRANT ALL PRIVILEGES ON *.* TO 'bsx'@'127.0.0.1'",
	} {
		if _, err := srv.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := sandbox.LoadSample(ctx, srv.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	want, err := sandbox.ChecksumTables(ctx, srv.DB())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.DB().ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
		t.Fatal(err)
	}
	repoDir := newRepoDir(t)

	tcp := []string{"--no-defaults", "--host", "127.0.0.1", "--port", strconv.Itoa(srv.Port), "--password=tls-pw"}
	plain := append([]string{"--user", "bs"}, tcp...)
	x509 := append([]string{"--user", "bsx", "--ssl-ca", certs.ca, "--ssl-verify-server-cert",
		"--ssl-cert", certs.clientCert, "--ssl-key", certs.clientKey}, tcp...)
	fails := func(what, want string, args ...string) {
		t.Helper()
		r := run(t, args...)
		if r.code != 1 || r.err == nil || !strings.Contains(r.err.Error(), want) {
			t.Fatalf("%s: exit %d, err %v; want exit 1 and an error containing %q\nstderr: %s", what, r.code, r.err, want, r.stderr)
		}
	}
	const refused = "the server refuses unencrypted connections (require_secure_transport=ON, or an account created with REQUIRE SSL): connect with --ssl"

	// A logical backup: refused without TLS; --ssl alone encrypts.
	logical := append([]string{"backup", "--logical", "--repo", repoDir, "--database", "sample", "--skip-users"}, plain...)
	fails("logical backup without TLS", refused, logical...)
	r := run(t, append(logical, "--ssl")...).mustSucceed(t)
	if !strings.Contains(r.stdout, "logical") {
		t.Errorf("backup printed %q", r.stdout)
	}

	// The server's certificate checked against the wrong CA: with
	// --ssl-verify-server-cert, and with the CA alone, which checks the
	// chain too (as the mariadb client does).
	badCA := `the server's certificate (subject "CN=localhost", issuer "CN=backstream test CA") is not signed by a CA in ssl-ca ` + certs.wrongCA
	fails("wrong CA, verifying", badCA, append(logical, "--ssl-ca", certs.wrongCA, "--ssl-verify-server-cert")...)
	fails("wrong CA", badCA, append(logical, "--ssl-ca", certs.wrongCA)...)
	// --skip-ssl overrides what the other TLS flags imply.
	fails("--skip-ssl", refused, append(logical, "--ssl-ca", certs.ca, "--skip-ssl")...)

	// A physical backup: mariabackup takes the TLS settings, here from a
	// --defaults-extra-file [client] group, spelled with - and _.
	physical := []string{"backup", "--repo", repoDir, "--parallel", "2"}
	fails("physical backup without TLS", refused, append(physical, plain...)...)
	extra := filepath.Join(t.TempDir(), "tls.cnf")
	cnf := "[client]\nssl-ca=" + certs.ca + "\nssl_cert=" + certs.clientCert + "\nssl_key = \"" + certs.clientKey + "\"\nssl-verify-server-cert\n"
	if err := os.WriteFile(extra, []byte(cnf), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, append(physical, "--defaults-extra-file", extra, "--user", "bsx", "--password=tls-pw",
		"--host", "127.0.0.1", "--port", strconv.Itoa(srv.Port))...).mustSucceed(t)
	entries := backupListing(t, repoDir)
	if len(entries) != 2 || entries[1].Kind != "physical" {
		t.Fatalf("listing %+v, want a logical and a physical backup", entries)
	}

	// Binary log archiving: mariadb-binlog takes them.
	binlog := []string{"binlog", "--repo", repoDir}
	fails("binlog without TLS", refused, append(binlog, plain...)...)
	run(t, append(binlog, x509...)...).mustSucceed(t)
	r = run(t, "list", "--repo", repoDir, "--binlogs").mustSucceed(t)
	if !strings.Contains(r.stdout, "mariadb-bin.000001") {
		t.Fatalf("list --binlogs shows no archived file:\n%s", r.stdout)
	}

	// A logical restore into the same server.
	restore := []string{"restore", entries[0].ID, "--repo", repoDir, "--drop-existing"}
	fails("restore without TLS", refused, append(restore, plain...)...)
	if _, err := srv.DB().ExecContext(ctx, "DROP DATABASE sample"); err != nil {
		t.Fatal(err)
	}
	run(t, append(restore, x509...)...).mustSucceed(t)
	got, err := sandbox.ChecksumTables(ctx, srv.DB())
	if err != nil {
		t.Fatal(err)
	}
	usecasetest.CompareChecksums(t, got, want)
}

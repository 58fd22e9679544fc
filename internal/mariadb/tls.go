package mariadb

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TLS holds a connection's TLS settings, named and meant as the mariadb
// client's --ssl options are in MariaDB 10.11 (whose clients link
// Connector/C 3.3):
//
//   - SSL alone encrypts without checking the server's certificate.
//   - CA or CAPath: the server's certificate must chain to one of those
//     CAs; the host name in it is not checked.
//   - VerifyServerCert: the chain is checked (against CA and CAPath, or
//     the system's trusted CAs when neither is given), and the certificate
//     must name the host connected to ("localhost" over a Unix socket).
//   - Cert and Key: the client's own certificate, for accounts created
//     with REQUIRE X509, ISSUER or SUBJECT. Either alone names a file
//     holding both.
//
// Where the 10.11 client falls back to an unencrypted connection when the
// server offers no TLS, backstream refuses to connect: a backup tool asked
// for TLS never sends its login and data in the clear.
type TLS struct {
	// SSL turns TLS on. Every setting below implies it, as in the client,
	// unless ssl=0 (--skip-ssl) comes after it.
	SSL bool
	// SSLSet is true when SSL was decided by an option (given, implied or
	// turned off) rather than left at its default, so that an explicit
	// "off" reaches the child processes too, whose own default is on.
	SSLSet bool
	// CA is a PEM file of trusted CA certificates (--ssl-ca).
	CA string
	// CAPath is a directory of PEM files of trusted CA certificates
	// (--ssl-capath).
	CAPath string
	// Cert and Key are the client's certificate and private key, PEM
	// (--ssl-cert, --ssl-key). They are paths: the key's content is never
	// read into a message or written anywhere.
	Cert string
	Key  string
	// VerifyServerCert checks the server's certificate chain and host name
	// (--ssl-verify-server-cert).
	VerifyServerCert bool
}

// unsupportedTLSOptions are client TLS options backstream cannot apply to
// its own connections. An option file that sets one is refused rather than
// connecting with less than it asks for.
var unsupportedTLSOptions = []string{"ssl-cipher", "ssl-crl", "ssl-crlpath", "tls-version"}

// tlsConfig builds the crypto/tls configuration of c's connections, or nil
// when c does not use TLS. Go's own verification is off: verifyServer,
// run for every handshake, checks what c.TLS asks for and explains a
// failure in the terms of the options.
func (c Config) tlsConfig() (*tls.Config, error) {
	t := c.TLS
	if !t.SSL {
		return nil, nil
	}
	var roots *x509.CertPool
	if t.CA != "" || t.CAPath != "" {
		roots = x509.NewCertPool()
		if t.CA != "" {
			data, err := os.ReadFile(t.CA)
			if err != nil {
				return nil, fmt.Errorf("ssl-ca%s: %w", c.from("ssl-ca"), err)
			}
			if !roots.AppendCertsFromPEM(data) {
				return nil, fmt.Errorf("ssl-ca %s%s: no PEM certificate in it", t.CA, c.from("ssl-ca"))
			}
		}
		if t.CAPath != "" {
			if err := appendCADir(roots, t.CAPath); err != nil {
				return nil, fmt.Errorf("ssl-capath%s: %w", c.from("ssl-capath"), err)
			}
		}
	}
	conf := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The checks are verifyServer's, so that they are the client's
		// (a CA without --ssl-verify-server-cert checks the chain only).
		InsecureSkipVerify: true,
	}
	if t.Cert != "" || t.Key != "" {
		cert, key := t.Cert, t.Key
		if cert == "" {
			cert = key
		}
		if key == "" {
			key = cert
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("client certificate (ssl-cert %s, ssl-key %s): %w", cert, key, err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	if t.VerifyServerCert || roots != nil {
		v := verifier{roots: roots, cas: c.caNames()}
		if t.VerifyServerCert {
			v.host = c.Host
			if c.UsesSocket() || v.host == "" {
				v.host = "localhost"
			}
		}
		conf.VerifyConnection = v.verify
	}
	return conf, nil
}

// from names where setting came from, " (from FILE [group])", or "".
func (c Config) from(setting string) string {
	if s := c.Sources[setting]; s != "" {
		return " (from " + s + ")"
	}
	return ""
}

// caNames says which CAs the server's certificate is checked against.
func (c Config) caNames() string {
	var names []string
	if c.TLS.CA != "" {
		names = append(names, "ssl-ca "+c.TLS.CA)
	}
	if c.TLS.CAPath != "" {
		names = append(names, "ssl-capath "+c.TLS.CAPath)
	}
	if len(names) == 0 {
		return "the system's trusted CAs (no ssl-ca given)"
	}
	return strings.Join(names, " and ")
}

// appendCADir adds the certificates of every PEM file in dir to pool, as
// OpenSSL's CA directory does (it looks files up by hash names; reading
// them all finds the same certificates and more).
func appendCADir(pool *x509.CertPool, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	found := false
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if pool.AppendCertsFromPEM(data) {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("%s: no PEM certificate in any file of it", dir)
	}
	return nil
}

// verifier checks a server's certificate as the client does: the chain
// against roots (nil: the system's), and the host name when host is set.
type verifier struct {
	roots *x509.CertPool
	cas   string // the roots, for messages
	host  string
}

// CertificateError is a server certificate that failed a check asked for
// with --ssl-ca, --ssl-capath or --ssl-verify-server-cert.
type CertificateError struct {
	// Problem says what is wrong, in the options' terms.
	Problem string
	// Err is the x509 error.
	Err error
}

func (e *CertificateError) Error() string { return e.Problem + ": " + e.Err.Error() }
func (e *CertificateError) Unwrap() error { return e.Err }

func (v verifier) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return &CertificateError{Problem: "the server sent no certificate", Err: errors.New("empty certificate chain")}
	}
	leaf := cs.PeerCertificates[0]
	opts := x509.VerifyOptions{Roots: v.roots, Intermediates: x509.NewCertPool()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		var unknown x509.UnknownAuthorityError
		var invalid x509.CertificateInvalidError
		switch {
		case errors.As(err, &unknown):
			return &CertificateError{Err: err, Problem: fmt.Sprintf(
				"the server's certificate (subject %q, issuer %q) is not signed by a CA in %s", leaf.Subject, leaf.Issuer, v.cas)}
		case errors.As(err, &invalid):
			return &CertificateError{Err: err, Problem: fmt.Sprintf(
				"the server's certificate (subject %q, valid %s to %s UTC) is not valid", leaf.Subject,
				leaf.NotBefore.UTC().Format("2006-01-02 15:04"), leaf.NotAfter.UTC().Format("2006-01-02 15:04"))}
		}
		return &CertificateError{Err: err, Problem: fmt.Sprintf("the server's certificate (subject %q) cannot be verified", leaf.Subject)}
	}
	if v.host != "" {
		if err := leaf.VerifyHostname(v.host); err != nil {
			return &CertificateError{Err: err, Problem: fmt.Sprintf(
				"the server's certificate does not name the host %q connected to, which ssl-verify-server-cert checks", v.host)}
		}
	}
	return nil
}

// setOption applies one option file setting, key without its "loose-"
// prefix, if it is a TLS option; from names its file and group. Booleans
// take my_getopt's prefixes: enable-X is X=1, skip-X and disable-X are
// X=0 (skip-ssl is the usual spelling of ssl=0).
func (t *TLS) setOption(key string, o Option, from string, sources map[string]string) error {
	negate := false
	for _, prefix := range []string{"enable-", "skip-", "disable-"} {
		if rest, ok := strings.CutPrefix(key, prefix); ok && (rest == "ssl" || rest == "ssl-verify-server-cert") {
			key, negate = rest, prefix != "enable-"
			break
		}
	}
	switch key {
	case "ssl", "ssl-verify-server-cert":
		on, err := ParseOptionBool(o.Value, o.Bare)
		if err != nil {
			return fmt.Errorf("%s: %w", o.Key, err)
		}
		if negate {
			on = !on
		}
		sources[key] = from
		if key == "ssl" {
			t.SSL, t.SSLSet = on, true
		} else {
			t.VerifyServerCert = on
			if on {
				t.implySSL(from, sources)
			}
		}
	case "ssl-ca", "ssl-capath", "ssl-cert", "ssl-key":
		*t.path(key) = o.Value
		sources[key] = from
		if o.Value != "" {
			t.implySSL(from, sources)
		}
	default:
		for _, u := range unsupportedTLSOptions {
			if key == u {
				return fmt.Errorf("%s: backstream cannot apply this TLS option to its own connections and will not connect with less than it asks for; "+
					"move it to a group that only the mariadb client reads, such as [mariadb-client]", o.Key)
			}
		}
	}
	return nil
}

// setFlags lays the TLS flags of f over t: the path flags and
// --ssl-verify-server-cert imply --ssl, and --ssl or --skip-ssl, when
// given, has the last word.
func (t *TLS) setFlags(f Flags, sources map[string]string) {
	for _, p := range []struct{ name, value string }{
		{"ssl-ca", f.SSLCA}, {"ssl-capath", f.SSLCAPath}, {"ssl-cert", f.SSLCert}, {"ssl-key", f.SSLKey},
	} {
		if p.value != "" {
			*t.path(p.name) = p.value
			sources[p.name] = "--" + p.name
			t.implySSL("--"+p.name, sources)
		}
	}
	if f.SSLVerifyServerCert != nil {
		t.VerifyServerCert = *f.SSLVerifyServerCert
		sources["ssl-verify-server-cert"] = "--ssl-verify-server-cert"
		if t.VerifyServerCert {
			t.implySSL("--ssl-verify-server-cert", sources)
		}
	}
	if f.SSL != nil {
		t.SSL, t.SSLSet = *f.SSL, true
		sources["ssl"] = "--ssl"
		if !t.SSL {
			sources["ssl"] = "--skip-ssl"
		}
	}
}

// implySSL turns TLS on because a setting from from asks for it.
func (t *TLS) implySSL(from string, sources map[string]string) {
	t.SSL, t.SSLSet = true, true
	sources["ssl"] = from
}

// path is the field of the path setting name.
func (t *TLS) path(name string) *string {
	switch name {
	case "ssl-ca":
		return &t.CA
	case "ssl-capath":
		return &t.CAPath
	case "ssl-cert":
		return &t.Cert
	}
	return &t.Key
}

// absolutePaths makes the file settings absolute, relative to the working
// directory as the client takes them: child processes run elsewhere.
func (t *TLS) absolutePaths() error {
	for _, p := range []*string{&t.CA, &t.CAPath, &t.Cert, &t.Key} {
		if *p == "" || filepath.IsAbs(*p) {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("TLS file %s: %w", *p, err)
		}
		*p = abs
	}
	return nil
}

// ParseOptionBool reads an option file boolean as my_getopt does: a bare key is true;
// 1, on and true, 0, off and false, in any case. my_getopt turns anything
// else into false with a warning; backstream refuses it, since a TLS
// option silently read as off would connect with less than was asked.
func ParseOptionBool(v string, bare bool) (bool, error) {
	if bare {
		return true, nil
	}
	switch strings.ToLower(v) {
	case "1", "on", "true":
		return true, nil
	case "0", "off", "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (use 1, 0, on, off, true or false)", v)
}

package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// selfSigned makes the listener's ephemeral certificate. It lives only in
// memory and only as long as the listener; nobody verifies it, the token
// proofs authenticate the session instead.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("ephemeral certificate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("ephemeral certificate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "backstream receiver (ephemeral)"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("ephemeral certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// serverConfig is the listener's TLS configuration.
func serverConfig(opt *Options) (*tls.Config, error) {
	var cert tls.Certificate
	switch {
	case opt.CertFile != "" && opt.KeyFile != "":
		var err error
		cert, err = tls.LoadX509KeyPair(opt.CertFile, opt.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS certificate %s with key %s: %w", opt.CertFile, opt.KeyFile, err)
		}
	case opt.CertFile != "" || opt.KeyFile != "":
		return nil, errors.New("TLS certificate and key must be given together")
	default:
		var err error
		if cert, err = selfSigned(); err != nil {
			return nil, err
		}
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS13,
		MaxVersion:   tls.VersionTLS13,
		// Each connection is one full handshake; tickets would only cost
		// bytes and make the client read post-handshake messages.
		SessionTicketsDisabled: true,
		// Streams carry bulk data: full-size records from the first byte.
		DynamicRecordSizingDisabled: true,
	}, nil
}

// clientConfig is the dialer's TLS configuration for a connection to addr.
func clientConfig(opt *Options, addr string) (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:                  tls.VersionTLS13,
		MaxVersion:                  tls.VersionTLS13,
		DynamicRecordSizingDisabled: true,
	}
	if opt.CAFile == "" {
		// The certificate is ephemeral and self-signed: the token proofs
		// bound to this session authenticate the listener instead. The
		// check below only insists on TLS 1.3, which the keying-material
		// binding relies on.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if cs.Version != tls.VersionTLS13 {
				return fmt.Errorf("peer negotiated TLS version 0x%04x, backstream requires TLS 1.3", cs.Version)
			}
			return nil
		}
		return cfg, nil
	}
	pem, err := os.ReadFile(opt.CAFile)
	if err != nil {
		return nil, fmt.Errorf("TLS CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("TLS CA file %s: no PEM certificate in it", opt.CAFile)
	}
	cfg.RootCAs = pool
	cfg.ServerName = opt.ServerName
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("address %s: %w", addr, err)
		}
		cfg.ServerName = host
	}
	return cfg, nil
}

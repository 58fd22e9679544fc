package mariadb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// maxOptionLine is the longest line we write. The MariaDB option file reader
// reads lines with fgets into a 4096-byte buffer and would split a longer
// line into two, silently corrupting the value.
const maxOptionLine = 4000

// WriteDefaultsFile writes cfg as a [client] option file for mariabackup and
// the mariadb clients (user, password, host, port, socket, protocol and
// the TLS settings; only what is set).
// The file is created exclusively with mode 0600, so it never exists with
// looser permissions, and an existing file is never overwritten.
//
// Values are written double-quoted with backslash escapes, which MariaDB's
// reader (mysys/my_default.c) undoes exactly: quoting keeps leading and
// trailing blanks and '#' from being cut, and \\, \", \', \n, \r, \t, \b
// cover the characters that would otherwise end the quote or the line. A
// value containing a NUL byte cannot be represented and is refused.
func WriteDefaultsFile(path string, cfg Config) error {
	var b strings.Builder
	b.WriteString("[client]\n")
	add := func(key, value string) error {
		line, err := optionLine(key, value)
		if err != nil {
			return err
		}
		b.WriteString(line)
		return nil
	}
	if cfg.User != "" {
		if err := add("user", cfg.User); err != nil {
			return fmt.Errorf("defaults file %s: %w", path, err)
		}
	}
	if cfg.PasswordSet {
		if err := add("password", cfg.Password); err != nil {
			return fmt.Errorf("defaults file %s: %w", path, err)
		}
	}
	if cfg.Host != "" {
		if err := add("host", cfg.Host); err != nil {
			return fmt.Errorf("defaults file %s: %w", path, err)
		}
	}
	if cfg.Port != 0 {
		if cfg.Port < 0 || cfg.Port > 65535 {
			return fmt.Errorf("defaults file %s: port %d out of range", path, cfg.Port)
		}
		b.WriteString("port=" + strconv.Itoa(cfg.Port) + "\n")
	}
	if cfg.Socket != "" {
		if err := add("socket", cfg.Socket); err != nil {
			return fmt.Errorf("defaults file %s: %w", path, err)
		}
	}
	switch cfg.Protocol {
	case "":
	case ProtocolTCP, ProtocolSocket:
		// Without it, host=localhost would mean the socket to mariabackup
		// even when cfg means TCP to localhost.
		b.WriteString("protocol=" + cfg.Protocol + "\n")
	default:
		return fmt.Errorf("defaults file %s: protocol %q not supported", path, cfg.Protocol)
	}
	if err := writeTLS(&b, cfg.TLS, add); err != nil {
		return fmt.Errorf("defaults file %s: %w", path, err)
	}

	return writePrivateFile(path, b.String())
}

// WriteOptionFile writes opts as one [group] of an option file, in their
// order (the last of a repeated key wins, as MariaDB reads it), with the
// quoting and the exclusive 0600 creation of WriteDefaultsFile: the
// options may hold a secret, such as a key file's password.
func WriteOptionFile(path, group string, opts []Option) error {
	var b strings.Builder
	b.WriteString("[" + group + "]\n")
	for _, o := range opts {
		if o.Bare {
			b.WriteString(o.Key + "\n")
			continue
		}
		line, err := optionLine(o.Key, o.Value)
		if err != nil {
			return fmt.Errorf("option file %s: %w", path, err)
		}
		b.WriteString(line)
	}
	return writePrivateFile(path, b.String())
}

// optionLine is key=value, the value quoted, as one line MariaDB reads back.
func optionLine(key, value string) (string, error) {
	q, err := quoteOptionValue(value)
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	line := key + "=" + q + "\n"
	if len(line) > maxOptionLine {
		return "", fmt.Errorf("%s: value too long for an option file (%d bytes, limit %d)", key, len(line), maxOptionLine)
	}
	return line, nil
}

// writePrivateFile creates path, which must not exist, with mode 0600 and
// content; a failure leaves no file.
func writePrivateFile(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("defaults file: %w", err)
	}
	// The umask can only remove bits, but a chmod makes the intent explicit
	// and survives odd umasks or filesystems.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("defaults file %s: %w", path, err)
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("defaults file %s: write: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("defaults file %s: close: %w", path, err)
	}
	return nil
}

var errNULInValue = errors.New("value contains a NUL byte, which option files cannot hold")

// quoteOptionValue returns v as a double-quoted option file value that
// MariaDB's reader turns back into exactly v.
func quoteOptionValue(v string) (string, error) {
	if strings.IndexByte(v, 0) >= 0 {
		return "", errNULInValue
	}
	var b strings.Builder
	b.Grow(len(v) + 2)
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\'':
			b.WriteString(`\'`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

// writeTLS adds t's settings. With TLS on, every one is written, the
// booleans as 0 or 1, so that a global option file the child reads first
// cannot leave it with more or less than backstream uses; the paths are
// absolute, since the child runs in another directory. With TLS turned
// off explicitly, ssl=0 and ssl-verify-server-cert=0 say so. Left at its
// default (no TLS for backstream), nothing is written and the child keeps
// its own default.
func writeTLS(b *strings.Builder, t TLS, add func(key, value string) error) error {
	if !t.SSL {
		if t.SSLSet {
			b.WriteString("ssl=0\nssl-verify-server-cert=0\n")
		}
		return nil
	}
	b.WriteString("ssl=1\n")
	for _, p := range []struct{ key, value string }{
		{"ssl-ca", t.CA}, {"ssl-capath", t.CAPath}, {"ssl-cert", t.Cert}, {"ssl-key", t.Key},
	} {
		if p.value == "" {
			continue
		}
		abs, err := filepath.Abs(p.value)
		if err != nil {
			return fmt.Errorf("%s: %w", p.key, err)
		}
		if err := add(p.key, abs); err != nil {
			return err
		}
	}
	if t.VerifyServerCert {
		b.WriteString("ssl-verify-server-cert=1\n")
	} else {
		b.WriteString("ssl-verify-server-cert=0\n")
	}
	return nil
}

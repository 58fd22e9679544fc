package mariadb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// OptionGroups are the option file groups Resolve reads, in the order the
// mariadb clients list theirs, plus backstream's own group.
var OptionGroups = []string{"client", "client-server", "client-mariadb", "backstream"}

// GlobalOptionFiles are the system-wide option files the Debian-built
// MariaDB 10.11 clients read first, in this order (see "mariadb --help").
var GlobalOptionFiles = []string{"/etc/my.cnf", "/etc/mysql/my.cnf"}

// Resolve builds a Config the way the MariaDB clients do. Later sources
// override earlier ones:
//
//  1. Option files, unless f.NoDefaults. With f.DefaultsFile, only that file
//     (which must exist). Otherwise /etc/my.cnf, /etc/mysql/my.cnf,
//     $MYSQL_HOME/my.cnf (when MYSQL_HOME is set), f.DefaultsExtraFile (which
//     must exist) and then ~/.my.cnf; missing files are skipped. From each,
//     the groups in OptionGroups are read. As in MariaDB, options apply in
//     the order they are read, files in the order above and, within a
//     file, top to bottom whatever their group: the last value of a key
//     wins. Keys may carry MariaDB's "loose-" prefix. A bare "password" line
//     asks for a prompt (Config.PromptPassword). The TLS keys are the
//     client's: ssl (also skip-ssl, ssl=0), ssl-ca, ssl-capath, ssl-cert,
//     ssl-key and ssl-verify-server-cert, each but ssl implying ssl; the
//     client's ssl-cipher, ssl-crl, ssl-crlpath and tls-version are refused,
//     since backstream's own connections cannot apply them.
//  2. The environment, for what is still unset: MYSQL_PWD (password),
//     MYSQL_HOST, MYSQL_TCP_PORT and MYSQL_UNIX_PORT, as libmariadb reads
//     them.
//  3. The flags in f: every one that is set wins; --ssl or --skip-ssl
//     wins over what the other TLS flags imply.
//
// Then the defaults: the user is the OS user name. The transport follows
// the mariadb client: an explicit protocol (flag, then option files) decides;
// otherwise a port given as a flag without a socket flag means TCP, even to
// localhost (MariaDB 10.6+ clients do the same); otherwise an empty host or
// "localhost" means the Unix socket (the configured one, else
// DefaultSocket) and any other host, 127.0.0.1 included, means TCP (port
// DefaultPort unless set).
func Resolve(f Flags) (Config, error) {
	return resolve(f, resolveEnv{
		lookupEnv: os.LookupEnv,
		globals:   GlobalOptionFiles,
		osUser:    currentUserName,
	})
}

// resolveEnv is what Resolve takes from the machine, so tests can replace it.
type resolveEnv struct {
	lookupEnv func(string) (string, bool)
	globals   []string
	osUser    func() string
}

func (e resolveEnv) getenv(name string) string {
	v, _ := e.lookupEnv(name)
	return v
}

// OptionSource is one option file to read: a Required one must exist
// (--defaults-file, --defaults-extra-file), others are skipped when
// missing.
type OptionSource struct {
	Path     string
	Required bool
}

// ReadOptionFiles reads files in order (see ReadOptionFile), skipping a
// missing one that is not Required, and returns their options of groups
// in the order read.
func ReadOptionFiles(files []OptionSource, groups ...string) ([]Option, error) {
	var out []Option
	for _, f := range files {
		opts, err := ReadOptionFile(f.Path, groups...)
		if errors.Is(err, fs.ErrNotExist) && !f.Required {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, opts...)
	}
	return out, nil
}

// OptionFiles lists the option files a client given f reads, in the
// order Resolve reads them.
func OptionFiles(f Flags) []OptionSource {
	return optionFiles(f, resolveEnv{lookupEnv: os.LookupEnv, globals: GlobalOptionFiles})
}

// optionFiles lists the option files to read for f, in precedence order.
func optionFiles(f Flags, env resolveEnv) []OptionSource {
	if f.NoDefaults {
		return nil
	}
	if f.DefaultsFile != "" {
		return []OptionSource{{Path: f.DefaultsFile, Required: true}}
	}
	var files []OptionSource
	for _, g := range env.globals {
		files = append(files, OptionSource{Path: g})
	}
	if mh := env.getenv("MYSQL_HOME"); mh != "" {
		files = append(files, OptionSource{Path: filepath.Join(mh, "my.cnf")})
	}
	if f.DefaultsExtraFile != "" {
		files = append(files, OptionSource{Path: f.DefaultsExtraFile, Required: true})
	}
	if home := env.getenv("HOME"); home != "" {
		files = append(files, OptionSource{Path: filepath.Join(home, ".my.cnf")})
	}
	return files
}

func resolve(f Flags, env resolveEnv) (Config, error) {
	cfg := Config{Sources: map[string]string{}}
	var protocol, protocolFrom string
	set := func(field, value, from string) {
		cfg.Sources[field] = from
		switch field {
		case "host":
			cfg.Host = value
		case "socket":
			cfg.Socket = value
		case "user":
			cfg.User = value
		case "password":
			cfg.Password, cfg.PasswordSet, cfg.PromptPassword = value, true, false
		}
	}

	opts, err := ReadOptionFiles(optionFiles(f, env), OptionGroups...)
	if err != nil {
		return Config{}, fmt.Errorf("reading connection options: %w", err)
	}
	for _, o := range opts {
		key := strings.TrimPrefix(o.Key, "loose-")
		from := fmt.Sprintf("%s [%s]", o.File, o.Group)
		switch key {
		case "host", "socket", "user":
			set(key, o.Value, from)
		case "password":
			if o.Bare {
				cfg.Password, cfg.PasswordSet, cfg.PromptPassword = "", false, true
				cfg.Sources["password"] = from
			} else {
				set(key, o.Value, from)
			}
		case "port":
			p, err := parsePort(o.Value)
			if err != nil {
				return Config{}, fmt.Errorf("option file %s:%d: port: %w", o.File, o.Line, err)
			}
			cfg.Port = p
			cfg.Sources["port"] = from
		case "protocol":
			protocol, protocolFrom = o.Value, fmt.Sprintf("%s:%d", o.File, o.Line)
		default:
			if err := cfg.TLS.setOption(key, o, from, cfg.Sources); err != nil {
				return Config{}, fmt.Errorf("option file %s:%d: %w", o.File, o.Line, err)
			}
		}
	}

	if !cfg.PasswordSet && !cfg.PromptPassword {
		if pw, ok := env.lookupEnv("MYSQL_PWD"); ok {
			set("password", pw, "MYSQL_PWD")
		}
	}
	if cfg.Host == "" {
		if h := env.getenv("MYSQL_HOST"); h != "" {
			set("host", h, "MYSQL_HOST")
		}
	}
	if cfg.Port == 0 {
		if v := env.getenv("MYSQL_TCP_PORT"); v != "" {
			p, err := parsePort(v)
			if err != nil {
				return Config{}, fmt.Errorf("MYSQL_TCP_PORT: %w", err)
			}
			cfg.Port = p
			cfg.Sources["port"] = "MYSQL_TCP_PORT"
		}
	}
	if cfg.Socket == "" {
		if s := env.getenv("MYSQL_UNIX_PORT"); s != "" {
			set("socket", s, "MYSQL_UNIX_PORT")
		}
	}

	if f.Host != "" {
		set("host", f.Host, "--host")
	}
	if f.Socket != "" {
		set("socket", f.Socket, "--socket")
	}
	if f.User != "" {
		set("user", f.User, "--user")
	}
	if f.Password != nil {
		set("password", *f.Password, "--password")
	}
	if f.Port != 0 {
		if f.Port < 0 || f.Port > 65535 {
			return Config{}, fmt.Errorf("--port %d: out of range 1-65535", f.Port)
		}
		cfg.Port = f.Port
		cfg.Sources["port"] = "--port"
	}
	if f.Protocol != "" {
		protocol, protocolFrom = f.Protocol, "--protocol"
	}
	cfg.TLS.setFlags(f, cfg.Sources)
	if err := cfg.TLS.absolutePaths(); err != nil {
		return Config{}, err
	}

	switch strings.ToLower(protocol) {
	case "":
		switch {
		case f.Port != 0 && f.Socket == "" && (cfg.Host == "" || cfg.Host == "localhost"):
			cfg.Protocol = ProtocolTCP
		case cfg.Host == "" || cfg.Host == "localhost":
			cfg.Protocol = ProtocolSocket
		default:
			cfg.Protocol = ProtocolTCP
		}
	case ProtocolTCP:
		cfg.Protocol = ProtocolTCP
	case ProtocolSocket:
		cfg.Protocol = ProtocolSocket
	default:
		return Config{}, fmt.Errorf("%s: protocol %q not supported (use tcp or socket)", protocolFrom, protocol)
	}

	if cfg.User == "" {
		if u := env.osUser(); u != "" {
			set("user", u, "OS user")
		}
	}
	if cfg.Host == "" {
		cfg.Host = "localhost"
		cfg.Sources["host"] = "default"
	}
	if cfg.Protocol == ProtocolSocket && cfg.Socket == "" {
		set("socket", DefaultSocket, "default")
	}
	if cfg.Protocol == ProtocolTCP && cfg.Port == 0 {
		cfg.Port = DefaultPort
		cfg.Sources["port"] = "default"
	}
	return cfg, nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if p < 0 || p > 65535 {
		return 0, fmt.Errorf("%d out of range 0-65535", p)
	}
	return p, nil
}

// currentUserName is the effective user's login name, as libmariadb uses
// when no user is given.
func currentUserName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

package s3

import (
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/retry"
)

// Config says where a repository lives in an object store and how to talk
// to it. Credentials are deliberately absent: they come only from the
// environment or the shared AWS credentials file (see New), never from a
// command line where other users could read them.
type Config struct {
	Bucket, Prefix string // from s3://bucket/prefix

	// Endpoint is host[:port] or an http:// or https:// URL of an
	// S3-compatible server; empty means AWS S3.
	Endpoint string
	// Region signs requests; empty lets the client ask the bucket.
	Region string
	// PathStyle forces path-style bucket addressing. Custom endpoints get
	// it anyway (most S3-compatible servers have no wildcard DNS) unless
	// VirtualHostStyle asks for bucket.host addressing.
	PathStyle        bool
	VirtualHostStyle bool
	// CAFile is a PEM bundle trusted in addition to the system roots.
	CAFile string
	// Insecure speaks plain http to a bare host:port endpoint.
	Insecure bool

	// PartSize is the size of the first parts of a multipart upload;
	// 0 means 16 MiB. It must lie within S3's limits, 5 MiB to 5 GiB.
	PartSize int64
	// PartConcurrency is how many parts of one Put upload at once;
	// 0 means 4.
	PartConcurrency int
	// UploadMemory bounds, across all Puts of this Backend, the bytes of
	// parts being uploaded; 0 means 256 MiB. See Backend.Put for the
	// whole memory formula.
	UploadMemory int64
	// RetryWindow is how long transient failures of one request of a Put
	// (or of RemoveLeftovers, or of New's check of the bucket) are retried
	// before the operation fails; 0 means 2 minutes. The retry decorator
	// has its own window, for the calls it retries.
	RetryWindow time.Duration
	// StallTimeout cancels and retries a request that moves no byte for
	// this long; 0 means 60 seconds.
	StallTimeout time.Duration
	// Requests, if set, counts every request the Backend sends, New's
	// check of the bucket included.
	Requests *Requests
}

// Defaults applied by New to zero fields of Config.
const (
	DefaultPartSize        = 16 << 20
	DefaultPartConcurrency = 4
	DefaultUploadMemory    = 256 << 20
	DefaultRetryWindow     = retry.DefaultWindow
	DefaultStallTimeout    = 60 * time.Second

	// MinPartSize and MaxPartSize are S3's limits for every part but the
	// last; MaxParts is its limit on parts per upload.
	MinPartSize = 5 << 20
	MaxPartSize = 5 << 30
	MaxParts    = 10000
)

// ParseURL splits s3://bucket[/prefix] into bucket and prefix. The prefix
// has no leading or trailing slash and must itself be a valid object name,
// so that every object name below it is one too.
func ParseURL(u string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(u, "s3://")
	if !ok {
		return "", "", fmt.Errorf("repository URL %q: want s3://bucket[/prefix]", u)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if err := checkBucket(bucket); err != nil {
		return "", "", fmt.Errorf("repository URL %q: %w", u, err)
	}
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix != "" {
		if err := storage.CheckName(prefix); err != nil {
			return "", "", fmt.Errorf("repository URL %q: prefix: %w", u, err)
		}
	}
	return bucket, prefix, nil
}

// checkBucket applies S3's bucket naming rules, so that a typo fails here
// with a clear message rather than as an opaque signature or DNS error.
func checkBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket name %q: must be 3 to 63 characters", b)
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return fmt.Errorf("bucket name %q: character %q at %d is not a lower-case letter, digit, '-' or '.'", b, c, i)
		}
	}
	if !isAlnum(b[0]) || !isAlnum(b[len(b)-1]) {
		return fmt.Errorf("bucket name %q: must begin and end with a letter or digit", b)
	}
	if strings.Contains(b, "..") {
		return fmt.Errorf("bucket name %q: has two adjacent periods", b)
	}
	return nil
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// ConfigFromEnv parses a repository URL and fills what the AWS tools take
// from the environment: the endpoint (AWS_ENDPOINT_URL_S3, then
// AWS_ENDPOINT_URL), the region (AWS_REGION, AWS_DEFAULT_REGION, then the
// region of the profile AWS_PROFILE, default "default", in AWS_CONFIG_FILE
// or ~/.aws/config) and the CA bundle (AWS_CA_BUNDLE). Command-line flags
// are meant to override the result.
func ConfigFromEnv(u string) (Config, error) {
	bucket, prefix, err := ParseURL(u)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Bucket: bucket, Prefix: prefix}
	cfg.Endpoint = firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	if !strings.HasPrefix(cfg.Endpoint, "http://") {
		// A machine-wide CA bundle means nothing to a plain-http endpoint.
		cfg.CAFile = os.Getenv("AWS_CA_BUNDLE")
	}
	cfg.Region = firstEnv("AWS_REGION", "AWS_DEFAULT_REGION")
	if cfg.Region == "" {
		path := os.Getenv("AWS_CONFIG_FILE")
		if path == "" {
			if home, err := os.UserHomeDir(); err == nil {
				path = filepath.Join(home, ".aws", "config")
			}
		}
		if path != "" {
			data, err := os.ReadFile(path)
			switch {
			case err == nil:
				cfg.Region = profileRegion(data, orDefault(os.Getenv("AWS_PROFILE"), "default"))
			case !os.IsNotExist(err):
				return Config{}, fmt.Errorf("reading AWS config file: %w", err)
			}
		}
	}
	return cfg, nil
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// profileRegion returns the region key of profile in an AWS config file:
// section [default] or [profile NAME] (the config file's spelling; the
// credentials file uses bare [NAME], accepted too). Only the few INI rules
// those files use are understood: comments start with # or ;, keys are
// "key = value", indented lines continue a nested block and are skipped.
func profileRegion(data []byte, profile string) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	in := false
	region := ""
	for sc.Scan() {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			name, ok := strings.CutSuffix(line[1:], "]")
			name = strings.TrimSpace(name)
			if p, isProfile := strings.CutPrefix(name, "profile "); isProfile {
				name = strings.TrimSpace(p)
			}
			in = ok && name == profile
			continue
		}
		if !in || raw[0] == ' ' || raw[0] == '\t' {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(key) == "region" {
			region = strings.TrimSpace(value)
		}
	}
	return region
}

// parseEndpoint turns Config.Endpoint into what minio-go wants: a bare
// host[:port] and whether to use TLS.
func parseEndpoint(ep string, insecure bool) (host string, secure bool, err error) {
	if ep == "" {
		return "s3.amazonaws.com", !insecure, nil
	}
	if !strings.Contains(ep, "://") {
		if strings.ContainsAny(ep, "/?#@ ") {
			return "", false, fmt.Errorf("endpoint %q: want host[:port] or http(s)://host[:port]", ep)
		}
		return ep, !insecure, nil
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", false, fmt.Errorf("endpoint %q: %w", ep, err)
	}
	if u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
		return "", false, fmt.Errorf("endpoint %q: want http(s)://host[:port] with no path, query or user", ep)
	}
	switch u.Scheme {
	case "http":
		return u.Host, false, nil
	case "https":
		if insecure {
			return "", false, fmt.Errorf("endpoint %q is https but plain http (insecure) was asked for", ep)
		}
		return u.Host, true, nil
	default:
		return "", false, fmt.Errorf("endpoint %q: scheme %q, want http or https", ep, u.Scheme)
	}
}

package s3

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/backstream/backstream/internal/storage"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		in             string
		bucket, prefix string
		ok             bool
	}{
		{"s3://bucket", "bucket", "", true},
		{"s3://bucket/", "bucket", "", true},
		{"s3://my-bucket.1/prod/db1", "my-bucket.1", "prod/db1", true},
		{"s3://bucket/prod/db1/", "bucket", "prod/db1", true},
		{"s3://", "", "", false},
		{"s3:///prefix", "", "", false},
		{"http://bucket/x", "", "", false},
		{"bucket/x", "", "", false},
		{"s3://Bucket/x", "", "", false},
		{"s3://ab", "", "", false},
		{"s3://-bucket", "", "", false},
		{"s3://bu..cket", "", "", false},
		{"s3://bucket/a//b", "", "", false},
		{"s3://bucket/../x", "", "", false},
		{"s3://bucket//x", "", "", false},
		{"s3://bucket/.x.tmp", "", "", false},
	}
	for _, tc := range tests {
		b, p, err := ParseURL(tc.in)
		if tc.ok != (err == nil) || b != tc.bucket || p != tc.prefix {
			t.Errorf("ParseURL(%q) = %q, %q, %v; want %q, %q, ok %v", tc.in, b, p, err, tc.bucket, tc.prefix, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), tc.in) {
			t.Errorf("ParseURL(%q) error %q does not name the URL", tc.in, err)
		}
	}
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"s3://bucket", "s3://b-1.x/a/b/", "s3://bucket//", "s3://x/\xff", "s3://abc/./d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		bucket, prefix, err := ParseURL(u)
		if err != nil {
			return
		}
		if checkBucket(bucket) != nil {
			t.Fatalf("ParseURL(%q) accepted bucket %q", u, bucket)
		}
		if prefix != "" && storage.CheckName(prefix) != nil {
			t.Fatalf("ParseURL(%q) accepted prefix %q", u, prefix)
		}
		// The URL names the same place again.
		again := "s3://" + bucket
		if prefix != "" {
			again += "/" + prefix
		}
		b2, p2, err := ParseURL(again)
		if err != nil || b2 != bucket || p2 != prefix {
			t.Fatalf("ParseURL(%q) = %q, %q, %v; from %q", again, b2, p2, err, u)
		}
	})
}

func TestProfileRegion(t *testing.T) {
	const file = `
# comment
[default]
region = eu-west-1
output=json

[profile prod]
s3 =
  region = nested-is-not-it
region=us-east-2
; another comment
[sso-session x]
region = no
[plain]
region = ap-south-1
`
	tests := map[string]string{"default": "eu-west-1", "prod": "us-east-2", "plain": "ap-south-1", "missing": "", "x": ""}
	for profile, want := range tests {
		if got := profileRegion([]byte(file), profile); got != want {
			t.Errorf("profileRegion(%q) = %q, want %q", profile, got, want)
		}
	}
}

func FuzzProfileRegion(f *testing.F) {
	f.Add([]byte("[default]\nregion = x\n"), "default")
	f.Add([]byte("[profile a]\n  region=y\nregion=z"), "a")
	f.Add([]byte("[\n]\n=\nregion"), "")
	f.Fuzz(func(t *testing.T, data []byte, profile string) {
		r := profileRegion(data, profile)
		if strings.ContainsAny(r, "\n") || r != strings.TrimSpace(r) {
			t.Fatalf("region %q is not one trimmed line", r)
		}
		if r != "" && !strings.Contains(string(data), r) {
			t.Fatalf("region %q is not in the file", r)
		}
	})
}

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		ep       string
		insecure bool
		host     string
		secure   bool
		ok       bool
	}{
		{"", false, "s3.amazonaws.com", true, true},
		{"minio:9000", false, "minio:9000", true, true},
		{"minio:9000", true, "minio:9000", false, true},
		{"http://127.0.0.1:9000", false, "127.0.0.1:9000", false, true},
		{"http://127.0.0.1:9000/", false, "127.0.0.1:9000", false, true},
		{"https://s3.example.com", false, "s3.example.com", true, true},
		{"https://s3.example.com", true, "", false, false},
		{"ftp://x", false, "", false, false},
		{"http://x/path", false, "", false, false},
		{"http://user:pw@x", false, "", false, false},
		{"x/y", false, "", false, false},
		{"http://", false, "", false, false},
	}
	for _, tc := range tests {
		host, secure, err := parseEndpoint(tc.ep, tc.insecure)
		if tc.ok != (err == nil) || host != tc.host || secure != tc.secure {
			t.Errorf("parseEndpoint(%q, %v) = %q, %v, %v; want %q, %v, ok %v", tc.ep, tc.insecure, host, secure, err, tc.host, tc.secure, tc.ok)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	dir := t.TempDir()
	conf := dir + "/config"
	if err := os.WriteFile(conf, []byte("[profile p]\nregion = from-profile\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", conf)
	t.Setenv("AWS_PROFILE", "p")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
	t.Setenv("AWS_CA_BUNDLE", "")
	cfg, err := ConfigFromEnv("s3://bkt/p/q")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Bucket: "bkt", Prefix: "p/q", Endpoint: "http://127.0.0.1:9", Region: "from-profile"}
	if cfg != want {
		t.Errorf("ConfigFromEnv = %+v, want %+v", cfg, want)
	}
	t.Setenv("AWS_DEFAULT_REGION", "env-region")
	if cfg, _ := ConfigFromEnv("s3://bkt"); cfg.Region != "env-region" {
		t.Errorf("AWS_DEFAULT_REGION ignored: region %q", cfg.Region)
	}
	if _, err := ConfigFromEnv("s3://B"); err == nil {
		t.Error("ConfigFromEnv accepted a bad URL")
	}
}

func TestPartSchedule(t *testing.T) {
	const fiveTiB = 5 << 40
	for _, first := range []int64{MinPartSize, DefaultPartSize, 64 << 20, 1 << 30, MaxPartSize} {
		t.Run(fmt.Sprint(first>>20, "MiB"), func(t *testing.T) {
			var total, prev int64
			for n := range MaxParts {
				s := partSizeAt(first, n)
				if s < MinPartSize || s > MaxPartSize {
					t.Fatalf("part %d: size %d outside S3's limits", n, s)
				}
				if s < prev {
					t.Fatalf("part %d: size %d shrinks from %d", n, s, prev)
				}
				if n < 1000 && s != first {
					t.Fatalf("part %d: size %d, want the first size %d", n, s, first)
				}
				prev = s
				total += s
			}
			if total < fiveTiB {
				t.Errorf("%d parts hold %d bytes, less than 5 TiB", MaxParts, total)
			}
		})
	}
	// The default keeps the first 15 GiB in small parts, which bounds memory.
	if got := partSizeAt(DefaultPartSize, 999); got != DefaultPartSize {
		t.Errorf("part 999 = %d", got)
	}
	if got := partSizeAt(DefaultPartSize, 1000); got != 2*DefaultPartSize {
		t.Errorf("part 1000 = %d, want doubled", got)
	}
}

func TestTransient(t *testing.T) {
	resp := func(status int, code string) error {
		return minio.ErrorResponse{StatusCode: status, Code: code}
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"500", resp(500, "InternalError"), true},
		{"503 slow down", resp(503, "SlowDown"), true},
		{"502 no code", resp(502, ""), true},
		{"501", resp(501, "NotImplemented"), false},
		{"408", resp(408, "RequestTimeout"), true},
		{"429", resp(429, "TooManyRequests"), true},
		{"403", resp(403, "AccessDenied"), false},
		{"bad key", resp(403, "InvalidAccessKeyId"), false},
		{"signature", resp(403, "SignatureDoesNotMatch"), false},
		{"no bucket", resp(404, "NoSuchBucket"), false},
		{"wrapped 503", fmt.Errorf("x: %w", resp(503, "")), true},
		{"refused", &url.Error{Op: "Put", URL: "u", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, true},
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{"cut body", io.ErrUnexpectedEOF, true},
		{"stall", fmt.Errorf("%w: %w", errStalled, context.Canceled), true},
		{"unknown CA", &url.Error{Op: "Get", URL: "u", Err: x509.UnknownAuthorityError{}}, false},
	}
	for _, tc := range tests {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("%s: transient(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestFill(t *testing.T) {
	src := strings.Repeat("x", 100)
	buf := make([]byte, 40)
	n, err := fill(t.Context(), io.LimitReader(strings.NewReader(src), 100), buf)
	if n != 40 || err != nil {
		t.Errorf("fill of a long input = %d, %v; want 40, nil", n, err)
	}
	n, err = fill(t.Context(), strings.NewReader("abc"), buf)
	if n != 3 || err != io.EOF {
		t.Errorf("fill of a short input = %d, %v; want 3, EOF", n, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := fill(ctx, strings.NewReader(src), buf); !errors.Is(err, context.Canceled) {
		t.Errorf("fill with a cancelled context = %v", err)
	}
}

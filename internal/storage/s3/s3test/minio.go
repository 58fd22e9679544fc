// Package s3test runs a real MinIO for tests of anything that stores in S3:
// the s3 backend's own tests and the end-to-end tests of the commands.
//
// Only _test.go files import it: it imports testing, which must never reach
// the shipped binary.
package s3test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Server is a real MinIO for one test, on a loopback port with its
// data in a temporary directory. It can be stopped and started again on
// the same port and data, as a server restart looks to a client.
type Server struct {
	t          *testing.T
	bin, dir   string
	port       int
	console    int
	user, pass string
	Endpoint   string // http://127.0.0.1:port
	Bucket     string // created at start

	mu  sync.Mutex
	cmd *exec.Cmd
	// removeDir: Stop removes dir (a server of Main, which no test's
	// temporary directory holds).
	removeDir bool
	lazy      *lazyStart // Main's: started on the first NewBucket
}

// PinnedMinio is the MinIO release the tests run against, as
// scripts/minio.sh pins it (TestPinnedMinioIsTheScripts keeps the two
// equal).
const PinnedMinio = "v0.0.0-20260212201848-7aac2a2c5b7c"

// InstallingEnv names the environment variable through which
// scripts/test.sh says that it is building MinIO beside the tests (on a
// fresh machine): its value is a file the build holds an exclusive lock
// on (flock) until it ends, and findMinio waits for that lock.
const InstallingEnv = "BACKSTREAM_MINIO_INSTALLING"

// findMinio looks for the minio binary where scripts/minio.sh puts it:
// its cache of the pinned release, then PATH, then Go's bin directories
// (where an older minio.sh installed it). While scripts/test.sh still
// builds it (InstallingEnv), it waits for the build to end first.
func findMinio() (string, error) {
	if lock := os.Getenv(InstallingEnv); lock != "" {
		if err := waitUnlocked(lock); err != nil {
			return "", fmt.Errorf("waiting for scripts/test.sh's build of MinIO (%s=%s): %w", InstallingEnv, lock, err)
		}
	}
	var dirs []string
	cache := os.Getenv("XDG_CACHE_HOME")
	if home, err := os.UserHomeDir(); cache == "" && err == nil {
		cache = filepath.Join(home, ".cache")
	}
	if cache != "" {
		dir := filepath.Join(cache, "backstream-minio", PinnedMinio)
		if p := filepath.Join(dir, "minio"); isFile(p) {
			return p, nil
		}
		dirs = append(dirs, dir)
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		// One line each; GOBIN's is empty when unset, so trim only the
		// end: trimming the front too would lose the line.
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		if len(lines) == 2 {
			if lines[0] != "" {
				dirs = append(dirs, strings.TrimSpace(lines[0]))
			}
			dirs = append(dirs, filepath.Join(strings.TrimSpace(lines[1]), "bin"))
		}
	}
	for _, d := range dirs {
		if p := filepath.Join(d, "minio"); isFile(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("minio not found on PATH nor in %v: run scripts/minio.sh install", dirs)
}

// waitUnlocked waits until no one holds an exclusive lock on the file
// at path (a shared lock, taken and let go at once).
func waitUnlocked(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH)
		if err == syscall.EINTR {
			continue
		}
		return err
	}
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := freePortErr()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func freePortErr() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start starts a MinIO with one empty bucket, points the AWS
// environment variables at it, and stops it when the test ends. A missing
// binary fails the test: the S3 backend is never left untested.
func Start(t *testing.T) *Server {
	t.Helper()
	bin, err := findMinio()
	if err != nil {
		t.Fatal(err)
	}
	m := &Server{
		t:       t,
		bin:     bin,
		dir:     t.TempDir(),
		port:    freePort(t),
		console: freePort(t),
		Bucket:  "bs-test",
	}
	m.user, m.pass = processCredentials()
	m.Endpoint = "http://127.0.0.1:" + strconv.Itoa(m.port)
	t.Cleanup(m.Stop)
	m.Restart()
	m.SetEnv(t)
	if err := m.Client(t).MakeBucket(t.Context(), m.Bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("creating bucket %s: %v", m.Bucket, err)
	}
	return m
}

// SetEnv makes the server's credentials those New finds, and hides any
// of the machine's own AWS settings.
func (m *Server) SetEnv(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", m.user)
	t.Setenv("AWS_SECRET_ACCESS_KEY", m.pass)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(m.dir, "no-credentials"))
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(m.dir, "no-config"))
	t.Setenv("AWS_CA_BUNDLE", "")
}

// Client is a plain minio-go client for checking what the backend did.
func (m *Server) Client(t *testing.T) *minio.Client {
	t.Helper()
	c, err := minio.New(strings.TrimPrefix(m.Endpoint, "http://"), &minio.Options{
		Creds:  credentials.NewStaticV4(m.user, m.pass, ""),
		Region: "us-east-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Restart starts the server (again, after Stop) and waits until it serves requests.
func (m *Server) Restart() {
	m.t.Helper()
	if err := m.TryRestart(); err != nil {
		m.t.Fatal(err)
	}
}

// TryRestart is Restart for goroutines other than the test's: it returns the error.
func (m *Server) TryRestart() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return errors.New("minio already running")
	}
	logPath := filepath.Join(m.dir, "minio.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(m.bin, "server", filepath.Join(m.dir, "data"),
		"--address", "127.0.0.1:"+strconv.Itoa(m.port),
		"--console-address", "127.0.0.1:"+strconv.Itoa(m.console), "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+m.user, "MINIO_ROOT_PASSWORD="+m.pass, "MINIO_BROWSER=off")
	cmd.Stdout, cmd.Stderr = logf, logf
	// A killed test binary takes its servers with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", m.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	m.cmd = cmd
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(m.Endpoint + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			m.cmd = nil
			return fmt.Errorf("minio exited at start: %s", log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("minio on port %d not ready after 30s", m.port)
		}
	}
}

// Stop kills the server, as a crash or a pulled cable would look.
func (m *Server) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.removeDir && m.dir != "" {
		defer os.RemoveAll(m.dir)
	}
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	// Wait until the port is closed, so that the test's next step sees
	// the server gone.
	for range 100 {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(m.port), 100*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		time.Sleep(20 * time.Millisecond)
	}
	m.cmd = nil
}

// Freeze and Thaw stop and continue the server process (SIGSTOP,
// SIGCONT): connections stay open and silent, as with a hung server.
func (m *Server) Freeze() { m.signal(syscall.SIGSTOP) }
func (m *Server) Thaw()   { m.signal(syscall.SIGCONT) }

func (m *Server) signal(sig syscall.Signal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		_ = m.cmd.Process.Signal(sig)
	}
}

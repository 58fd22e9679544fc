package physical

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/scratch"
)

// The server tests share one sandbox: starting one costs seconds, and every
// test here only reads from it (backups) or uses its own account.
var shared struct {
	once sync.Once
	srv  *sandbox.Server
	err  error
}

// Test account with a password, so that tests can check where it travels.
const (
	testUser     = "bkuser"
	testPassword = "Pw-s3cret-7f3a"
	tableRows    = 40000 // about 6 MB in the table's .ibd
)

func TestMain(m *testing.M) {
	code := m.Run()
	// What the package's code put in its scratch directory (option files,
	// mariabackup's log) goes with the test process, as with backstream's.
	if err := scratch.Cleanup(); err != nil {
		fmt.Fprintf(os.Stderr, "remove scratch directory: %v\n", err)
	}
	if shared.srv != nil {
		if err := shared.srv.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "close shared sandbox: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// sharedServer returns the shared sandbox with db1.t loaded and the test
// account created, starting it on first use.
func sharedServer(t *testing.T) *sandbox.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a MariaDB server and mariabackup")
	}
	if _, err := exec.LookPath("mariabackup"); err != nil {
		t.Fatalf("mariabackup not installed (scripts/deps.sh installs it): %v", err)
	}
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		srv, err := sandbox.Start(ctx, sandbox.Options{})
		if err != nil {
			shared.err = err
			return
		}
		shared.srv = srv
		shared.err = loadTestData(ctx, srv.DB())
	})
	if shared.err != nil {
		t.Fatalf("shared sandbox: %v", shared.err)
	}
	return shared.srv
}

func loadTestData(ctx context.Context, db *sql.DB) error {
	stmts := []string{
		"CREATE DATABASE db1",
		"CREATE TABLE db1.t (id INT PRIMARY KEY, v VARCHAR(200), n DOUBLE) ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO db1.t SELECT seq, REPEAT(MD5(seq), 4), seq/7 FROM db1.seq_1_to_%d", tableRows),
		"CREATE TABLE db1.small (id INT PRIMARY KEY, s TEXT) ENGINE=InnoDB",
		"INSERT INTO db1.small SELECT seq, CONCAT('row ', seq) FROM db1.seq_1_to_100",
		"CREATE TABLE db1.aria (id INT PRIMARY KEY, s TEXT) ENGINE=Aria",
		"INSERT INTO db1.aria SELECT seq, CONCAT('aria ', seq) FROM db1.seq_1_to_500",
		"CREATE DATABASE empty_db",
		fmt.Sprintf("CREATE USER '%s'@'localhost' IDENTIFIED BY '%s'", testUser, testPassword),
		fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO '%s'@'localhost'", testUser),
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// testConn is how mariabackup reaches the shared sandbox as the test account.
func testConn(srv *sandbox.Server) mariadb.Config {
	return mariadb.Config{Socket: srv.Socket, User: testUser, Password: testPassword, PasswordSet: true}
}

func testBinary(t *testing.T) *Binary {
	t.Helper()
	b, err := FindBinary(context.Background(), "", nil, 10, 11, ForServer)
	if err != nil {
		t.Fatalf("FindBinary: %v", err)
	}
	return b
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// wrapped is a backup of the shared server through a wrapper of
// mariabackup, into a repository of its own.
type wrapped struct {
	m   *archive.Manifest
	err error
	rec *recorder  // the progress it reported
	r   *repo.Repo // the repository
}

func backupThrough(t *testing.T, srv *sandbox.Server, mariabackup string) wrapped {
	t.Helper()
	c, err := codec.Parse("zstd")
	if err != nil {
		t.Fatal(err)
	}
	w := wrapped{rec: &recorder{}, r: repotest.New(t)}
	w.m, w.err = RunBackup(context.Background(), BackupJob{
		Dest: w.r, Conn: testConn(srv), Mariabackup: mariabackup, Parallel: 2, Codec: c, Progress: w.rec,
	})
	return w
}

// holds fails the test unless the repository holds exactly the backups ids.
func (w wrapped) holds(t *testing.T, ids ...string) {
	t.Helper()
	ms, err := w.r.List(context.Background())
	got := make([]string, len(ms))
	for i, m := range ms {
		got[i] = m.ID
	}
	if err != nil || !slices.Equal(got, ids) {
		t.Errorf("repository holds %v (%v), want %v", got, err, ids)
	}
}

// Package pitrload is the command bench/pitr.sh drives, its load: a
// writer at a fixed rate that kills the source at a random moment and
// records what was committed, the count of what a restore lost, and the
// transactions a replay is timed on.
// It knows MariaDB and the tables it writes; nothing of backstream. It
// also makes the MinIO bucket the repositories go in, so that the script
// needs no S3 client of its own.
//
//	pitrload write --socket S --rate R --duration D --kill PID[,PID] --out FILE
//	pitrload loss --socket S --commits FILE
//	pitrload fill --socket S --txns N --rows-per-txn K
//	pitrload mkbucket NAME     (at $AWS_ENDPOINT_URL, with the AWS_* credentials)
package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pitrload write|loss|fill [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "write":
		err = write(os.Args[2:])
	case "loss":
		err = loss(os.Args[2:])
	case "fill":
		err = fill(os.Args[2:])
	case "mkbucket":
		err = mkbucket(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pitrload:", err)
		os.Exit(1)
	}
}

func open(socket string, conns int) (*sql.DB, error) {
	// The driver logs every write to a killed server; the errors are expected.
	mysql.SetLogger(log.New(io.Discard, "", 0))
	db, err := sql.Open("mysql", "root@unix("+socket+")/?interpolateParams=true")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return db, db.Ping()
}

// commit is one transaction the source acknowledged, and when.
type commit struct {
	id int64
	at time.Time
}

// write inserts into m.counter (id BIGINT PRIMARY KEY, at DATETIME(6)) at
// --rate autocommit inserts a second, from --workers connections (one
// connection cannot reach thousands of durable commits a second: each
// waits for its own fsync, and only concurrent commits share one), and
// sends SIGKILL to the processes --kill lists, in order, at a random
// moment of the second half of --duration. Each id is recorded with the moment its commit returned,
// never before. --out gets "kill <unix ns> <last id sent>", then "<id>
// <unix ns>" per commit; stderr the rate reached.
func write(args []string) error {
	fs := flag.NewFlagSet("write", flag.ExitOnError)
	socket := fs.String("socket", "", "the source's socket")
	rate := fs.Float64("rate", 100, "transactions a second")
	duration := fs.Duration("duration", 20*time.Second, "the kill comes in the second half of this")
	workers := fs.Int("workers", 16, "connections")
	kill := fs.String("kill", "", "process ids to kill, comma-separated: the source's last")
	out := fs.String("out", "", "where the commits go")
	fs.Parse(args)
	if *socket == "" || *kill == "" || *out == "" || *rate <= 0 {
		return errors.New("write needs --socket, --kill, --out and a positive --rate")
	}
	var pids []int
	for _, f := range strings.Split(*kill, ",") {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return fmt.Errorf("--kill %q: not a list of process ids", *kill)
		}
		pids = append(pids, pid)
	}
	db, err := open(*socket, *workers)
	if err != nil {
		return err
	}
	defer db.Close()

	ids := make(chan int64)
	var (
		mu        sync.Mutex
		committed []commit
		wg        sync.WaitGroup
	)
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				if _, err := db.Exec("INSERT INTO m.counter VALUES (?, NOW(6))", id); err != nil {
					continue // the source is gone; drain the ids sent before the kill
				}
				at := time.Now()
				mu.Lock()
				committed = append(committed, commit{id, at})
				mu.Unlock()
			}
		}()
	}
	// Id n is due at start + n/rate; when the workers fall behind, the
	// dispatcher waits for them, so the rate reached is what is reported.
	start := time.Now()
	killAfter := *duration/2 + rand.N(*duration/2)
	var killAt time.Time
	var id int64
	for id = 1; ; id++ {
		due := start.Add(time.Duration(float64(id-1) / *rate * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		if time.Since(start) >= killAfter {
			killAt = time.Now()
			for _, pid := range pids {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					return fmt.Errorf("kill pid %d: %w", pid, err)
				}
			}
			break
		}
		ids <- id
	}
	close(ids)
	wg.Wait()
	if len(committed) == 0 {
		return errors.New("nothing was committed")
	}
	sort.Slice(committed, func(i, j int) bool { return committed[i].at.Before(committed[j].at) })
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "kill %d %d\n", killAt.UnixNano(), id-1)
	for _, c := range committed {
		fmt.Fprintf(w, "%d %d\n", c.id, c.at.UnixNano())
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	reached := float64(len(committed)) / killAt.Sub(committed[0].at).Seconds()
	fmt.Fprintf(os.Stderr, "pitrload: %d commits at %.0f a second (asked %.0f), killed %.1f s in\n",
		len(committed), reached, *rate, killAt.Sub(start).Seconds())
	return nil
}

// loss compares the rows of m.counter on a restored server with the
// commits write recorded and prints one line: "<rate reached> <commits>
// <lost> <lost seconds>". Lost seconds run from the first commit that is
// missing to the kill: every transaction committed in that window is at
// risk, and the window is what an operator loses. Rows never committed
// (sent, but killed before the answer) may be there; a row the writer
// never sent is an error, and so is a missing commit older than one that
// was restored by more than a second (a hole, not a tail).
func loss(args []string) error {
	fs := flag.NewFlagSet("loss", flag.ExitOnError)
	socket := fs.String("socket", "", "the restored server's socket")
	commits := fs.String("commits", "", "what write recorded")
	fs.Parse(args)
	killAt, sent, committed, err := readCommits(*commits)
	if err != nil {
		return err
	}
	db, err := open(*socket, 1)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.Query("SELECT id FROM m.counter")
	if err != nil {
		return err
	}
	restored := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		restored[id] = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var lost int
	var firstLost, lastKept time.Time
	for _, c := range committed {
		if restored[c.id] {
			lastKept = c.at
			continue
		}
		lost++
		if firstLost.IsZero() {
			firstLost = c.at
		}
	}
	for id := range restored {
		if id > sent {
			return fmt.Errorf("the restored table holds id %d; the writer sent no more than %d", id, sent)
		}
	}
	if !firstLost.IsZero() && lastKept.Sub(firstLost) > time.Second {
		return fmt.Errorf("a hole: a commit of %s is missing, one of %s is restored", firstLost.Format(time.StampMicro), lastKept.Format(time.StampMicro))
	}
	seconds := 0.0
	if !firstLost.IsZero() {
		seconds = max(killAt.Sub(firstLost).Seconds(), 0)
	}
	rate := float64(len(committed)) / killAt.Sub(committed[0].at).Seconds()
	fmt.Printf("%.0f %d %d %.3f\n", rate, len(committed), lost, seconds)
	return nil
}

// readCommits reads what write recorded: the kill time, the last id
// sent, and the commits.
func readCommits(name string) (killAt time.Time, sent int64, out []commit, err error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return killAt, 0, nil, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var id, ns int64
		if n, _ := fmt.Sscanf(line, "kill %d %d", &ns, &sent); n == 2 {
			killAt = time.Unix(0, ns)
			continue
		}
		if n, _ := fmt.Sscanf(line, "%d %d", &id, &ns); n != 2 {
			return killAt, 0, nil, fmt.Errorf("%s: bad line %q", name, line)
		}
		out = append(out, commit{id, time.Unix(0, ns)})
	}
	if killAt.IsZero() || len(out) == 0 {
		return killAt, 0, nil, fmt.Errorf("%s: no kill time or no commits", name)
	}
	return killAt, sent, out, nil
}

// fill writes --txns transactions of --rows-per-txn single-row INSERTs
// each into m.sbtest (sysbench's table shape), from --workers
// connections: the binary log a replay is timed on.
func fill(args []string) error {
	fs := flag.NewFlagSet("fill", flag.ExitOnError)
	socket := fs.String("socket", "", "the source's socket")
	txns := fs.Int("txns", 50000, "transactions")
	perTxn := fs.Int("rows-per-txn", 4, "single-row INSERTs per transaction")
	workers := fs.Int("workers", 8, "connections")
	rate := fs.Float64("rate", 0, "transactions a second started at most (0: as fast as the server commits)")
	fs.Parse(args)
	db, err := open(*socket, *workers)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	next := make(chan int)
	errs := make(chan error, *workers)
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				if err := fillOne(ctx, db, *perTxn); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	start := time.Now()
	func() {
		defer close(next)
		for i := range *txns {
			if *rate > 0 {
				time.Sleep(time.Until(start.Add(time.Duration(float64(i) / *rate * float64(time.Second)))))
			}
			select {
			case next <- i:
			case err = <-errs:
				return
			}
		}
	}()
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
	}
	took := time.Since(start).Seconds()
	fmt.Fprintf(os.Stderr, "pitrload: %d transactions of %d inserts in %.1f s (%.0f a second)\n", *txns, *perTxn, took, float64(*txns)/took)
	return nil
}

func fillOne(ctx context.Context, db *sql.DB, rows int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for range rows {
		if _, err := tx.Exec("INSERT INTO m.sbtest (k, c, pad) VALUES (?, ?, ?)",
			rand.N(1000000), randomDigits(120), randomDigits(60)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// randomDigits is sysbench's c and pad: groups of digits and dashes.
func randomDigits(n int) string {
	b := make([]byte, n)
	for i := range b {
		if i%12 == 11 {
			b[i] = '-'
		} else {
			b[i] = byte('0' + rand.N(10))
		}
	}
	return string(b)
}

// mkbucket creates bucket args[0] on the S3 server of the environment.
func mkbucket(args []string) error {
	if len(args) != 1 {
		return errors.New("mkbucket NAME")
	}
	u, err := url.Parse(os.Getenv("AWS_ENDPOINT_URL"))
	if err != nil || u.Host == "" {
		return fmt.Errorf("AWS_ENDPOINT_URL %q: not an endpoint", os.Getenv("AWS_ENDPOINT_URL"))
	}
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewEnvAWS(), Secure: u.Scheme == "https"})
	if err != nil {
		return err
	}
	return c.MakeBucket(context.Background(), args[0], minio.MakeBucketOptions{})
}

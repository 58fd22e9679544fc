// Package fidelity is the command bench/fidelity.sh drives: it loads the
// fidelity corpus (internal/fidelitytest) into a server, fingerprints a
// server's copies of the fixtures, and compares two sets of fingerprints,
// so that any tool's round trip (mariadb-dump, mydumper, mariabackup,
// backstream) is judged by the same rule as the corpus test.
//
//	fidelity list PATH MODE                   fixtures that take PATH (logical, physical, or refuse) under MODE, one a line
//	fidelity refusal NAME                     the object fixture NAME's backup must refuse
//	fidelity load SOCKET PATH MODE            loads them into the server on SOCKET
//	fidelity fingerprint SOCKET PATH MODE OUT fingerprints them into OUT (JSON)
//	fidelity compare WANT GOT                 "name pass|fail|missing" a line; differences on stderr
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/backstream/backstream/internal/fidelitytest"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fidelity:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: fidelity list|refusal|load|fingerprint|compare")
	}
	switch {
	case args[0] == "list" && len(args) == 3:
		fixtures, err := takes(args[1], args[2])
		if err != nil {
			return err
		}
		for _, f := range fixtures {
			fmt.Println(f.Name)
		}
		return nil
	case args[0] == "load" && len(args) == 4:
		fixtures, err := takes(args[2], args[3])
		if err != nil {
			return err
		}
		for _, f := range fixtures {
			if err := f.Load(ctx, args[1], "root"); err != nil {
				return err
			}
		}
		return nil
	case args[0] == "refusal" && len(args) == 2:
		fixtures, err := takes("refuse", "permissive")
		if err != nil {
			return err
		}
		for _, f := range fixtures {
			if f.Name == args[1] {
				fmt.Println(f.Refuse)
			}
		}
		return nil
	case args[0] == "fingerprint" && len(args) == 5:
		return fingerprint(ctx, args[1], args[2], args[3], args[4])
	case args[0] == "compare" && len(args) == 3:
		return compare(args[1], args[2])
	}
	return fmt.Errorf("usage: fidelity list|refusal|load|fingerprint|compare: bad arguments %q", args)
}

// takes lists the fixtures that round-trip on path under mode (a fixture
// that must be refused takes no round trip); path "refuse" lists those
// that must be refused instead.
func takes(path, mode string) ([]*fidelitytest.Fixture, error) {
	all, err := fidelitytest.Corpus()
	if err != nil {
		return nil, err
	}
	var out []*fidelitytest.Fixture
	for _, f := range all {
		refuse := path == "refuse"
		if refuse && f.Refuse != "" && slices.Contains(f.Modes, mode) || !refuse && f.Refuse == "" && f.Takes(path, mode) {
			out = append(out, f)
		}
	}
	return out, nil
}

// fingerprint writes {fixture: fingerprint} for every fixture on the path;
// a fixture whose database cannot be fingerprinted (absent, unreadable)
// is left out, and compare reports it missing.
func fingerprint(ctx context.Context, socket, path, mode, out string) error {
	fixtures, err := takes(path, mode)
	if err != nil {
		return err
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "unix", socket
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	all := map[string]map[string]string{}
	for _, f := range fixtures {
		fp, err := fidelitytest.Fingerprint(ctx, db, f.Database)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fidelity: %s: %v\n", f.Name, err)
			continue
		}
		all[f.Name] = fp
	}
	data, err := json.Marshal(all)
	if err != nil {
		return err
	}
	return os.WriteFile(out, data, 0o644)
}

func compare(wantFile, gotFile string) error {
	var want, got map[string]map[string]string
	for _, x := range []struct {
		file string
		into *map[string]map[string]string
	}{{wantFile, &want}, {gotFile, &got}} {
		data, err := os.ReadFile(x.file)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, x.into); err != nil {
			return fmt.Errorf("%s: %w", x.file, err)
		}
	}
	for _, name := range sortedKeys(want) {
		g, ok := got[name]
		if !ok {
			fmt.Println(name, "missing")
			continue
		}
		diffs := fidelitytest.Compare(g, want[name])
		if len(diffs) == 0 {
			fmt.Println(name, "pass")
			continue
		}
		fmt.Println(name, "fail")
		fmt.Fprintf(os.Stderr, "%s: %d differences:\n%s\n", name, len(diffs), strings.Join(diffs, "\n"))
	}
	return nil
}

func sortedKeys(m map[string]map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

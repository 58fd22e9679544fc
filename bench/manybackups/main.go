// Package manybackups is the command bench/scale.sh uses to make a local
// repository hold many backups of a large server without taking them: it
// copies one complete full backup N times, each copy a backup of its own
// (a new id, a minute apart, a manifest of its own), whose objects are
// hard links to the original's, its contents object among them: a copy
// costs a manifest of a few kilobytes, whatever the server's size.
// What it makes is what list, check and expire read of a repository with
// months of nightly backups; the copies share their data, so nothing but
// the listing is meaningful to time on them.
//
//	manybackups -repo DIR -from ID -copies N
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/storage/local"
)

func main() {
	dir := flag.String("repo", "", "the local repository")
	from := flag.String("from", "", "the id of the full backup to copy")
	copies := flag.Int("copies", 0, "how many copies to make")
	flag.Parse()
	if *dir == "" || *from == "" || *copies < 1 {
		log.Fatal("usage: manybackups -repo DIR -from ID -copies N")
	}
	if err := run(context.Background(), *dir, *from, *copies); err != nil {
		log.Fatal("manybackups: ", err)
	}
}

func run(ctx context.Context, dir, from string, copies int) error {
	b, err := local.New(dir)
	if err != nil {
		return err
	}
	r, err := repo.Open(ctx, b)
	if err != nil {
		return err
	}
	m, err := r.FindKind(ctx, from, "")
	if err != nil {
		return err
	}
	if m.Parent != "" {
		return fmt.Errorf("backup %s is an incremental: copy a full backup", m.ID)
	}
	src := filepath.Join(dir, repo.Dir(m.ID))
	for i := 1; i <= copies; i++ {
		c := *m
		shift := time.Duration(i) * time.Minute
		c.Started, c.Finished = m.Started.Add(shift), m.Finished.Add(shift)
		c.ID = backupid.New(c.Started)
		c.Chain = c.ID
		if err := link(src, filepath.Join(dir, repo.Dir(c.ID))); err != nil {
			return err
		}
		data, err := c.Marshal()
		if err != nil {
			return err
		}
		if _, err := b.Put(ctx, repo.Dir(c.ID)+"/"+repo.ManifestName, bytes.NewReader(data)); err != nil {
			return err
		}
	}
	return nil
}

// link hard-links every object of the backup directory src into dst,
// but its manifest and verdict, which are the copy's own.
func link(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		case rel == repo.ManifestName || rel == repo.VerdictName:
			return nil
		}
		return os.Link(p, filepath.Join(dst, rel))
	})
}

package repo

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Created is what init reports of the repository it created: where it is,
// its id and format, when it was made, and what everything written into
// it is encrypted to (none without encryption). It is init's JSON form.
type Created struct {
	Repository string    `json:"repository"`
	ID         string    `json:"id"`
	Format     int       `json:"format"`
	Created    time.Time `json:"created"`
	Recipients []string  `json:"recipients,omitempty"`
	// Dedup says the repository deduplicates its backups' blocks.
	Dedup     bool `json:"dedup,omitempty"`
	encrypted bool // the repository has its own encryption
}

// Created is r as init reports it.
func (r *Repo) Created() Created {
	c := Created{Repository: r.Backend.Location(), ID: r.Config.ID, Format: r.Config.Format, Created: r.Config.Created, Dedup: r.Config.Dedup != nil}
	if e := r.Config.Encryption; e != nil {
		c.Recipients, c.encrypted = e.Recipients, true
	}
	return c
}

// WriteText writes c for people.
func (c Created) WriteText(w io.Writer) {
	fmt.Fprintf(w, "created repository %s (id %s, format %d)\n", c.Repository, c.ID, c.Format)
	if c.encrypted {
		fmt.Fprintf(w, "everything written into it is encrypted to %s\n", strings.Join(c.Recipients, ", "))
	}
	if c.Dedup {
		fmt.Fprintf(w, "it deduplicates: each backup stores only the blocks of its files it does not hold yet\n")
	}
}

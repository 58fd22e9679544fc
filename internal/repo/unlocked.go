package repo

import (
	"fmt"
	"io"
)

// Unlocked is what unlock did: the locks it removed from the repository,
// and why it stopped if removing one failed. It is unlock's JSON form.
type Unlocked struct {
	Repository string        `json:"repository"`
	Removed    []RemovedLock `json:"removed"`
	Error      string        `json:"error,omitempty"`
}

// RemovedLock is one lock unlock removed: its object, what its holder
// said of itself (zero for an object that could not be read, which
// --all removes too) and that said as a sentence.
type RemovedLock struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	LockInfo
}

// Unlocked is what Unlock of r returned, removed and err, as unlock
// reports it.
func (r *Repo) Unlocked(removed []StoredLock, err error) Unlocked {
	u := Unlocked{Repository: r.Backend.Location(), Removed: []RemovedLock{}}
	for _, l := range removed {
		u.Removed = append(u.Removed, RemovedLock{Name: l.Name, Description: l.Describe(), LockInfo: l.LockInfo})
	}
	if err != nil {
		u.Error = err.Error()
	}
	return u
}

// WriteText writes u for people: a line for each lock removed, or, when
// none was and nothing failed, that none was. Why it failed is the
// caller's error to report.
func (u Unlocked) WriteText(w io.Writer) {
	for _, l := range u.Removed {
		fmt.Fprintf(w, "removed lock %s: %s\n", l.Name, l.Description)
	}
	if u.Error == "" && len(u.Removed) == 0 {
		fmt.Fprintln(w, "no locks removed")
	}
}

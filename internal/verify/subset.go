package verify

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/refusal"
)

// Subset is what part of a backup's data a verify reads (verify
// --read-data-subset): a share of its bytes, files chosen at random each
// run ("10%"), or part n of m of its files, the same files every run, so
// that m runs, one per part, read everything ("2/7"). The zero Subset
// reads everything.
type Subset struct {
	Percent float64
	Part    int // 1..Of
	Of      int
}

// ParseSubset reads "P%" (0 < P <= 100) or "n/m" (1 <= n <= m); "" is
// everything, what all (--read-data) asks for too.
func ParseSubset(s string, all bool) (Subset, error) {
	switch {
	case s == "":
		return Subset{}, nil
	case all:
		return Subset{}, refusal.New("--read-data reads every byte and --read-data-subset a part: give one of them")
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || !(v > 0 && v <= 100) {
			return Subset{}, refusal.Errorf("--read-data-subset %q: a share is a percentage above 0 and at most 100, as 10%%", s)
		}
		return Subset{Percent: v}, nil
	}
	n, m, ok := strings.Cut(s, "/")
	part, err1 := strconv.Atoi(n)
	of, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || of < 1 || part < 1 || part > of {
		return Subset{}, refusal.Errorf("--read-data-subset %q: give a share of the data (10%%) or a part of it (n/m, 1 <= n <= m: part 2/7 reads what 1/7 and 3/7 do not)", s)
	}
	return Subset{Part: part, Of: of}, nil
}

// All reports whether s reads everything.
func (s Subset) All() bool { return s.Percent == 0 && s.Of == 0 || s.Percent == 100 || s.Of == 1 }

func (s Subset) String() string {
	if s.Of > 0 {
		return fmt.Sprintf("part %d/%d", s.Part, s.Of)
	}
	return strconv.FormatFloat(s.Percent, 'f', -1, 64) + "%"
}

// Sampled is what a subset verify read of the backups it checked.
type Sampled struct {
	Files, OfFiles int
	Bytes, OfBytes int64 // the files' sizes
}

// choose returns the files of m that s reads, adding them to into.
func (s Subset) choose(m *archive.Manifest, into *Sampled) map[string]bool {
	chosen := map[string]bool{}
	var total int64
	for _, f := range m.Files {
		total += f.Size
	}
	into.OfFiles += len(m.Files)
	into.OfBytes += total
	take := func(f archive.File) {
		if !chosen[f.Path] {
			chosen[f.Path] = true
			into.Files++
			into.Bytes += f.Size
		}
	}
	if s.Of > 0 {
		for _, f := range m.Files {
			h := fnv.New64a()
			h.Write([]byte(f.Path))
			if int(h.Sum64()%uint64(s.Of)) == s.Part-1 {
				take(f)
			}
		}
		return chosen
	}
	want := int64(float64(total) * s.Percent / 100)
	var got int64
	for _, i := range rand.Perm(len(m.Files)) {
		if got >= want && len(chosen) > 0 {
			break
		}
		take(m.Files[i])
		got += m.Files[i].Size
	}
	return chosen
}

// Package repo is a backup repository on a storage backend: its layout
// (config object, backups/, binlogs/, locks/, keys/), the catalog of
// complete backups, the commit of a backup by writing its manifest last,
// removal, locks, and which of its objects are encrypted (it puts the
// crypt decorator over the backend it is given), and what init and unlock
// print of it (Created, Unlocked). It is the one package
// that knows the repository's layout; it knows nothing of MariaDB or of
// how a backend stores bytes.
package repo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/dedup"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/crypt"
)

// ConfigName is the repository's config object; its presence makes a
// location a backstream repository.
const ConfigName = "backstream.json"

// ManifestName is the manifest object inside a backup's directory.
const ManifestName = "manifest.json"

// BegunName is the object a backup writes first: its manifest header,
// which names the stream objects it is about to create, so that the
// leftovers of a backup that never committed can be found and removed,
// including uploads the backend keeps invisible until they complete.
const BegunName = "begun.json"

const backupsDir = "backups"

// Config is the content of backstream.json.
type Config struct {
	Format  int       `json:"format"`
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	// Encryption, when set (init --encrypt), is what every backup and
	// archived binary log is encrypted to unless the command names other
	// keys: the writers need no key flag, and a backup host no secret.
	// Such a repository has format 2, which a backstream that reads
	// format 1 only refuses instead of writing plain objects into it.
	Encryption *DefaultEncryption `json:"encryption,omitempty"`
	// Dedup, when set (format 3), makes the repository store every
	// backup's streams as blocks kept once (package dedup).
	Dedup *DedupConfig `json:"dedup,omitempty"`
}

// DedupConfig is a deduplicating repository's: the block size its backups
// were cut with.
type DedupConfig struct {
	Block int `json:"block"`
}

// DefaultEncryption is a repository's own encryption: age public keys,
// and the key object a passphrase opens when one of them is the
// repository's passphrase key. No secret is stored here.
type DefaultEncryption struct {
	Recipients    []string `json:"recipients"`
	PassphraseKey string   `json:"passphrase_key,omitempty"`
}

// The repository formats: 1 for every repository, 2 for one with its own
// encryption (Config.Encryption), which older backstreams must refuse.
const (
	formatPlain     = 1
	formatEncrypted = 2
	formatDedup     = 3
)

// Repo is an opened repository.
type Repo struct {
	// Backend is the repository's storage as its users see it: objects
	// that are stored encrypted read back decrypted.
	Backend storage.Backend
	Config  Config

	crypt *crypt.Backend
	store *dedup.Store // a deduplicating repository's blocks
}

// ErrNotRepository reports a location without a backstream.json.
var ErrNotRepository = errors.New("not a backstream repository")

// Open opens an existing repository, without keys: encrypted objects
// cannot be read.
func Open(ctx context.Context, b storage.Backend) (*Repo, error) {
	return OpenWith(ctx, b, Options{})
}

// ErrExists reports an Init where a repository already is.
var ErrExists = errors.New("already a backstream repository")

// Init creates a repository at a location that holds no objects at all,
// and opens it as OpenWith does. A location that holds a repository, or
// other objects, is refused: only Init creates one, so that a mistyped
// location given to any other command fails instead of scattering
// backups.
func Init(ctx context.Context, b storage.Backend, opts Options) (*Repo, error) {
	cb := crypt.New(b, opts.Keys, crypt.Options{Covers: Encrypted, KeyPrefix: KeysDir})
	r, err := open(ctx, cb)
	switch {
	case err == nil:
		return nil, fmt.Errorf("%s: %w (id %s, created %s)", b.Location(), ErrExists, r.Config.ID, r.Config.Created.Format(time.RFC3339))
	case !errors.Is(err, ErrNotRepository):
		return nil, err
	}
	if r, err = create(ctx, cb, opts); err != nil {
		return nil, err
	}
	r.crypt = cb
	return r, r.openStore(ctx)
}

// OpenWith opens the repository on b as opts say. Its Backend is b under
// the crypt decorator, which covers the objects Encrypted names and reads
// them with opts.Keys; it writes them plainly until Encrypt is called.
func OpenWith(ctx context.Context, b storage.Backend, opts Options) (*Repo, error) {
	cb := crypt.New(b, opts.Keys, crypt.Options{Covers: Encrypted, KeyPrefix: KeysDir})
	r, err := open(ctx, cb)
	if err != nil {
		return nil, err
	}
	if e := r.Config.Encryption; e != nil && len(opts.Keys.Recipients) == 0 && opts.Keys.Passphrase == "" {
		// Written to the repository's own keys, read with those given.
		keys := opts.Keys
		if err := keys.AddRecipients(strings.NewReader(strings.Join(e.Recipients, "\n"))); err != nil {
			return nil, fmt.Errorf("%s: %s: encryption recipients: %w", b.Location(), ConfigName, err)
		}
		cb = crypt.New(b, keys, crypt.Options{Covers: Encrypted, KeyPrefix: KeysDir})
		r.Backend = cb
	}
	r.crypt = cb
	return r, r.openStore(ctx)
}

// openStore opens a deduplicating repository's block store.
func (r *Repo) openStore(ctx context.Context) error {
	if r.Config.Dedup == nil {
		return nil
	}
	if r.Config.Dedup.Block != dedup.BlockSize {
		return fmt.Errorf("%s: %s: blocks of %d bytes; this backstream cuts blocks of %d", r.Backend.Location(), ConfigName, r.Config.Dedup.Block, dedup.BlockSize)
	}
	// Its key is read when a backup or expire needs it: listing and
	// reading need no key of an encrypted repository's.
	r.store = dedup.New(r.Backend)
	return nil
}

// BoundBlockIndex bounds what a backup into a deduplicating repository
// holds of the block store's index to budget bytes, saying on notes when
// that leaves part of it out (see dedup.Store.Budget).
func (r *Repo) BoundBlockIndex(budget int64, notes io.Writer) {
	if r.store != nil {
		r.store.Budget, r.store.Notes = budget, notes
	}
}

// BlockIndexBudget is what BoundBlockIndex gave (0: no bound, or the
// repository does not deduplicate).
func (r *Repo) BlockIndexBudget() int64 {
	if r.store == nil {
		return 0
	}
	return r.store.Budget
}

// Dedup reports whether the repository deduplicates its backups' blocks.
func (r *Repo) Dedup() bool { return r.store != nil }

// StoreDamage says, for a deduplicating repository, whether its block
// store lost packs its index names (nil when it did not): the backups
// holding their blocks cannot be restored, which verify names one by one.
func (r *Repo) StoreDamage(ctx context.Context) error {
	if r.store == nil {
		return nil
	}
	missing, err := r.store.MissingPacks(ctx)
	if err != nil || len(missing) == 0 {
		return err
	}
	return archive.Corruptf("the block store lost %d packs its index names (%s first): the backups holding their blocks cannot be restored (verify names them)", len(missing), missing[0])
}

// CollectBlocks removes from a deduplicating repository's block store the
// blocks no complete backup names (dedup.Store.Collect). The caller holds
// the exclusive lock; a backup whose manifest is damaged keeps every
// block (nothing is collected), since what it names is not known.
func (r *Repo) CollectBlocks(ctx context.Context) (dedup.Collected, error) {
	entries, err := r.Scan(ctx)
	if err != nil {
		return dedup.Collected{}, err
	}
	live := &dedup.Live{}
	for _, e := range entries {
		if e.Damage != nil {
			return dedup.Collected{}, fmt.Errorf("no block collected: backup %s is damaged, and the blocks it names are not known: %w", e.ID, e.Damage)
		}
		if e.Manifest == nil || e.Manifest.Storage != archive.StorageDedup {
			continue
		}
		if err := r.store.LiveNames(ctx, Dir(e.ID), e.Manifest, live); err != nil {
			return dedup.Collected{}, fmt.Errorf("no block collected: %w", err)
		}
	}
	return r.store.Collect(ctx, live)
}

// EncryptsByDefault reports whether the repository has its own
// encryption (init --encrypt): every write is encrypted without asking.
func (r *Repo) EncryptsByDefault() bool { return r.Config.Encryption != nil }

func open(ctx context.Context, b storage.Backend) (*Repo, error) {
	rc, err := b.Open(ctx, ConfigName, 0, -1)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (no %s)", b.Location(), ErrNotRepository, ConfigName)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Location(), err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", b.Location(), ConfigName, err)
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", b.Location(), ConfigName, err)
	}
	switch {
	case c.Format == formatPlain && c.Encryption == nil && c.Dedup == nil,
		c.Format == formatEncrypted && c.Encryption != nil && len(c.Encryption.Recipients) > 0 && c.Dedup == nil,
		c.Format == formatDedup && c.Dedup != nil && (c.Encryption == nil || len(c.Encryption.Recipients) > 0):
	case c.Format >= formatPlain && c.Format <= formatDedup:
		return nil, fmt.Errorf("%s: %s: format %d with encryption %v and dedup %v: damaged", b.Location(), ConfigName, c.Format, c.Encryption, c.Dedup)
	default:
		return nil, fmt.Errorf("%s: repository format %d is not supported (this backstream reads versions %d to %d)", b.Location(), c.Format, formatPlain, formatDedup)
	}
	return &Repo{Backend: b, Config: c}, nil
}

// create makes a repository at an empty location.
func create(ctx context.Context, b *crypt.Backend, opts Options) (*Repo, error) {
	existing, err := b.List(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Location(), err)
	}
	if len(existing) > 0 {
		return nil, fmt.Errorf("%s: %w: it holds %d other objects (e.g. %s); choose an empty location", b.Location(), ErrNotRepository, len(existing), existing[0].Name)
	}
	c := Config{Format: formatPlain, ID: randomHex(8), Created: time.Now().UTC().Truncate(time.Second)}
	if opts.Encrypt {
		// The passphrase key, if any, is stored before the config that
		// names it: a config never points at a key that is not there.
		public, key, err := b.Encrypt(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: create repository: %w", b.Location(), err)
		}
		c.Format, c.Encryption = formatEncrypted, &DefaultEncryption{Recipients: public, PassphraseKey: key}
	}
	if opts.Dedup {
		// The block store's key is stored (encrypted, in an encrypted
		// repository) before the config that makes the repository one
		// that needs it.
		if err := dedup.Init(ctx, b); err != nil {
			return nil, fmt.Errorf("%s: create repository: %w", b.Location(), err)
		}
		c.Format, c.Dedup = formatDedup, &DedupConfig{Block: dedup.BlockSize}
	}
	data, _ := json.MarshalIndent(c, "", "  ")
	if _, err := b.Put(ctx, ConfigName, bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("%s: create repository: %w", b.Location(), err)
	}
	return &Repo{Backend: b, Config: c}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Dir is the directory of backup id in the repository.
func Dir(id string) string { return backupsDir + "/" + id }

// Entry is a backup directory of the repository.
type Entry struct {
	ID       string
	Manifest *archive.Manifest // nil for an incomplete or damaged backup
	// Damage, when not nil, says why the backup's manifest, which is
	// stored, cannot be trusted (truncated, not JSON, not valid, naming
	// another backup); archive.IsCorrupt holds for it.
	Damage error
	Size   int64 // bytes stored under its directory
	// Missing names the objects the manifest names that the listing of
	// the backup's directory lacks: the backup cannot be restored.
	Missing []string
	// Verdict says whether the backup's directory holds a verdict object
	// (see ReadVerdict), which the listing alone shows.
	Verdict bool
}

// Scan lists every backup directory, complete or not, oldest first: the
// complete ones in the order they became complete (see
// archive.CompareFinished), the others by the time their id records. A
// damaged manifest marks its own entry (Damage) and nothing else; a
// manifest that cannot be read at all (the backend fails) is an error
// naming the backup.
func (r *Repo) Scan(ctx context.Context) ([]Entry, error) {
	objs, err := r.Backend.List(ctx, backupsDir+"/")
	if err != nil {
		return nil, fmt.Errorf("%s: list backups: %w", r.Backend.Location(), err)
	}
	byID := map[string]*Entry{}
	var ids []string
	stored := map[string]bool{}
	for _, o := range objs {
		stored[o.Name] = true
		id, rest, ok := strings.Cut(strings.TrimPrefix(o.Name, backupsDir+"/"), "/")
		if !ok || !backupid.Valid(id) {
			continue
		}
		e := byID[id]
		if e == nil {
			e = &Entry{ID: id}
			byID[id] = e
			ids = append(ids, id)
		}
		e.Size += o.Size
		if rest == ManifestName {
			m, err := r.readManifest(ctx, id)
			switch {
			case archive.IsCorrupt(err):
				e.Damage = err
			case err != nil:
				return nil, err
			}
			e.Manifest = m
		}
	}
	out := make([]Entry, 0, len(ids))
	for _, id := range ids {
		e := byID[id]
		e.Verdict = stored[Dir(id)+"/"+VerdictName]
		if e.Manifest != nil {
			for _, name := range ObjectNames(e.Manifest) {
				if !stored[Dir(id)+"/"+name] {
					e.Missing = append(e.Missing, Dir(id)+"/"+name)
				}
			}
		}
		out = append(out, *e)
	}
	slices.SortFunc(out, compareEntries)
	return out, nil
}

// ObjectNames are the objects of backup m that a restore reads, relative
// to its directory: its stream objects, their frame indexes when stored
// apart, and its metadata objects.
func ObjectNames(m *archive.Manifest) []string {
	var names []string
	for _, st := range m.Streams {
		if m.Storage != archive.StorageDedup {
			names = append(names, st.Name)
		}
		if st.Index.Name != "" {
			names = append(names, st.Index.Name)
		}
	}
	for _, o := range m.Meta {
		names = append(names, o.Name)
	}
	return names
}

// MissingError is the damage of a backup whose manifest names objects
// that are not stored: archive.IsCorrupt holds for it.
func (e Entry) MissingError() error {
	if len(e.Missing) == 0 {
		return nil
	}
	more := ""
	if len(e.Missing) > 1 {
		more = fmt.Sprintf(" (and %d more objects)", len(e.Missing)-1)
	}
	return archive.Corruptf("backup %s: %s, named by its manifest, is missing%s", e.ID, e.Missing[0], more)
}

// compareEntries orders backups oldest first. A backup without a (whole)
// manifest stands at the time its id records, when it started: all that
// is known of it.
func compareEntries(a, b Entry) int {
	return archive.CompareFinished(a.known(), b.known())
}

// known is e's manifest, or what its id says: its id and start.
func (e Entry) known() *archive.Manifest {
	if e.Manifest != nil {
		return e.Manifest
	}
	t, _ := backupid.Time(e.ID)
	return &archive.Manifest{ID: e.ID, Started: t, Finished: t}
}

// List returns the complete backups, oldest first (in the order they
// became complete, see Scan). Backups whose
// manifest is damaged are left out (Scan names them).
func (r *Repo) List(ctx context.Context) ([]*archive.Manifest, error) {
	entries, err := r.Scan(ctx)
	if err != nil {
		return nil, err
	}
	var ms []*archive.Manifest
	for _, e := range entries {
		if e.Manifest != nil {
			ms = append(ms, e.Manifest)
		}
	}
	return ms, nil
}

// readManifest reads and parses the manifest of backup id. A manifest
// that is stored but cannot be trusted is damage (archive.IsCorrupt)
// naming the object; a backend failure is returned as it is.
func (r *Repo) readManifest(ctx context.Context, id string) (*archive.Manifest, error) {
	name := Dir(id) + "/" + ManifestName
	rc, err := r.Backend.Open(ctx, name, 0, -1)
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", id, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxManifest+1))
	if err != nil {
		return nil, fmt.Errorf("backup %s: read manifest: %w", id, err)
	}
	if len(data) > maxManifest {
		return nil, archive.Corruptf("backup %s: %s is damaged: larger than %d bytes", id, name, maxManifest)
	}
	m, err := archive.ParseManifest(data)
	if err != nil {
		return nil, archive.Corruptf("backup %s: %s is damaged: %v", id, name, err)
	}
	if m.ID != id {
		return nil, archive.Corruptf("backup %s: %s is damaged: it names backup %s", id, name, m.ID)
	}
	return m, nil
}

// maxManifest is the largest manifest read.
const maxManifest = 256 << 20

// Resolve finds a complete backup by id, "latest" (see Latest), or a
// unique prefix of an id, and returns it with its contents loaded (see
// Whole).
func (r *Repo) Resolve(ctx context.Context, ref string) (*archive.Manifest, error) {
	return r.ResolveKind(ctx, ref, "")
}

// ResolveKind is Resolve with "latest" naming the latest backup of kind
// (archive.KindPhysical or KindLogical; "" for any, see Latest). A backup
// named by its id is found whatever its kind.
func (r *Repo) ResolveKind(ctx context.Context, ref, kind string) (*archive.Manifest, error) {
	m, err := r.FindKind(ctx, ref, kind)
	if err != nil {
		return nil, err
	}
	return r.Whole(ctx, m)
}

// FindKind is ResolveKind without loading the backup's contents: its
// manifest alone, enough to choose it by and to build on it, which needs
// no key of an encrypted repository.
func (r *Repo) FindKind(ctx context.Context, ref, kind string) (*archive.Manifest, error) {
	if ref == "" {
		ref = "latest"
	}
	if backupid.Valid(ref) {
		m, err := r.readManifest(ctx, ref)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("backup %s: no such complete backup in %s", ref, r.Backend.Location())
		}
		return m, err
	}
	entries, err := r.Scan(ctx)
	if err != nil {
		return nil, err
	}
	if ref == "latest" {
		// A damaged manifest is skipped (list names it).
		var ms []*archive.Manifest
		for _, e := range entries {
			if e.Manifest != nil {
				ms = append(ms, e.Manifest)
			}
		}
		if m := Latest(ms, kind); m != nil {
			return m, nil
		}
		if kind != "" {
			return nil, fmt.Errorf("%s: no complete %s backups", r.Backend.Location(), kind)
		}
		return nil, fmt.Errorf("%s: no complete backups", r.Backend.Location())
	}
	var found []Entry
	for _, e := range entries {
		if (e.Manifest != nil || e.Damage != nil) && strings.HasPrefix(e.ID, ref) {
			found = append(found, e)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("backup %s: no such complete backup in %s", ref, r.Backend.Location())
	case 1:
		return found[0].Manifest, found[0].Damage
	}
	return nil, fmt.Errorf("backup %s: ambiguous, matches %d backups (%s, %s, ...)", ref, len(found), found[0].ID, found[1].ID)
}

// Latest is the backup that "latest" names among the complete backups ms,
// oldest first: the newest whole-server backup (see
// archive.Manifest.WholeServer) of kind, or without a kind the newest
// whole-server physical backup, else the newest whole-server logical one.
// Only a repository without any whole-server backup of the kind asked
// names its newest partial one. nil when ms holds no backup of kind.
func Latest(ms []*archive.Manifest, kind string) *archive.Manifest {
	if m := NewestWhole(ms, kind); m != nil {
		return m
	}
	for _, k := range latestKinds(kind) {
		if m := newest(ms, k, false); m != nil {
			return m
		}
	}
	return nil
}

// NewestWhole is the backup Latest names when ms holds a whole-server
// backup of kind, else nil: the one a schedule of whole-server backups
// is judged by.
func NewestWhole(ms []*archive.Manifest, kind string) *archive.Manifest {
	for _, k := range latestKinds(kind) {
		if m := newest(ms, k, true); m != nil {
			return m
		}
	}
	return nil
}

// latestKinds are the kinds Latest looks for, in order.
func latestKinds(kind string) []string {
	if kind == "" {
		return []string{archive.KindPhysical, archive.KindLogical}
	}
	return []string{kind}
}

// newest is the last backup of ms of kind, whole-server ones only when
// whole is set.
func newest(ms []*archive.Manifest, kind string, whole bool) *archive.Manifest {
	for i := len(ms) - 1; i >= 0; i-- {
		if m := ms[i]; m.Kind == kind && (!whole || m.WholeServer()) {
			return m
		}
	}
	return nil
}

// Commit stores the manifest, which makes the backup complete. Call it only
// after every object the manifest names is durable. The manifest's files,
// tables and barriers go first into their own meta object
// (archive.ContentsName, see Manifest.Contents), so that the manifest
// stays small whatever the server's size; m is left describing what was
// stored, its contents loaded.
func (r *Repo) Commit(ctx context.Context, m *archive.Manifest) error {
	contents, err := m.Detach()
	if err != nil {
		return fmt.Errorf("backup %s: %w", m.ID, err)
	}
	o, err := r.PutMeta(ctx, m.ID, archive.ContentsName, contents, m.Hash)
	if err != nil {
		return fmt.Errorf("backup %s: store the manifest's contents: %w", m.ID, err)
	}
	m.Meta = append(slices.DeleteFunc(m.Meta, func(o archive.Object) bool { return o.Name == archive.ContentsName }), o)
	data, err := m.Marshal()
	if err != nil {
		return fmt.Errorf("backup %s: encode manifest: %w", m.ID, err)
	}
	head, err := archive.ParseManifest(data)
	if err == nil {
		_, err = head.LoadContents(contents)
	}
	if err != nil {
		return fmt.Errorf("backup %s: refusing to commit an invalid manifest: %w", m.ID, err)
	}
	if _, err := r.Backend.Put(ctx, Dir(m.ID)+"/"+ManifestName, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("backup %s: store manifest: %w", m.ID, err)
	}
	return nil
}

// Whole is backup m with its contents (files, tables, barriers) loaded
// from their meta object, checked against the manifest's digest: what
// reading the backup's data needs. m itself when they are loaded already
// or inline (a backup stored before they were kept apart); damage of the
// object is named.
func (r *Repo) Whole(ctx context.Context, m *archive.Manifest) (*archive.Manifest, error) {
	if !m.Detached() {
		return m, nil
	}
	data, err := r.ReadMeta(ctx, m, archive.ContentsName)
	if err != nil && m.Encryption != nil && !archive.IsCorrupt(err) {
		return nil, encrypted(m, err)
	}
	if err != nil {
		return nil, err
	}
	w, err := m.LoadContents(data)
	if err != nil {
		return nil, archive.Corruptf("backup %s: %s is damaged: %v", m.ID, Dir(m.ID)+"/"+archive.ContentsName, err)
	}
	return w, nil
}

// Remove deletes every object of a backup, the manifest first so that the
// backup stops counting as complete before anything else goes, and
// whatever unfinished writes left invisible under its directory: the
// temporary files of a local repository, the incomplete multipart uploads
// of S3.
func (r *Repo) Remove(ctx context.Context, id string) error {
	_, err := r.RemoveCounted(ctx, id)
	return err
}

// RemoveCounted is Remove, and says how many leftovers of unfinished
// writes it removed with the backup.
//
// Order: the manifest goes first; then the leftovers, found by the
// backup's directory and, for a backup without a manifest, also by the
// names of the objects it wrote or was writing (its begun marker names
// its streams, whose indexes are named after them), since MinIO finds
// incomplete uploads by whole name only; then the objects, the marker
// last, so that a removal cut short can be repeated and still find them.
func (r *Repo) RemoveCounted(ctx context.Context, id string) (storage.Leftovers, error) {
	var left storage.Leftovers
	if !backupid.Valid(id) {
		return left, fmt.Errorf("backup %s: not a backup id", id)
	}
	dir := Dir(id)
	objs, err := r.Backend.List(ctx, dir+"/")
	if err != nil {
		return left, fmt.Errorf("backup %s: %w", id, err)
	}
	if err := r.Backend.Delete(ctx, dir+"/"+ManifestName); err != nil {
		return left, fmt.Errorf("backup %s: %w", id, err)
	}
	if lr, ok := storage.Lookup[storage.LeftoverRemover](r.Backend); ok {
		var names []string
		if !slices.ContainsFunc(objs, func(o storage.Info) bool { return o.Name == dir+"/"+ManifestName }) {
			if names, err = r.writtenNames(ctx, id, objs); err != nil {
				return left, fmt.Errorf("backup %s: %w", id, err)
			}
		}
		if left, err = lr.RemoveLeftovers(ctx, dir+"/", storage.LeftoverOptions{Names: names}); err != nil {
			return left, fmt.Errorf("backup %s: %w", id, err)
		}
	}
	slices.SortStableFunc(objs, func(a, b storage.Info) int {
		return cmpBool(path.Base(a.Name) == BegunName, path.Base(b.Name) == BegunName)
	})
	for _, o := range objs {
		if o.Name == dir+"/"+ManifestName {
			continue
		}
		if err := r.Backend.Delete(ctx, o.Name); err != nil {
			return left, fmt.Errorf("backup %s: %w", id, err)
		}
	}
	return left, nil
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// RemoveLeftovers removes the leftovers of unfinished writes anywhere
// under backups/, those of complete backups included (no backup needs
// them): temporary files a killed writer left in a local repository, even
// in a directory that holds nothing else, and incomplete S3 multipart
// uploads. On MinIO, which finds uploads by whole name only, those of
// the objects the backups ids wrote or were writing are found too (see
// RemoveCounted); give the incomplete ones. dryRun only counts.
//
// The caller holds the exclusive lock, so that no writer is running: a
// leftover removed under a running write would make it fail.
func (r *Repo) RemoveLeftovers(ctx context.Context, ids []string, dryRun bool) (storage.Leftovers, error) {
	lr, ok := storage.Lookup[storage.LeftoverRemover](r.Backend)
	if !ok {
		return storage.Leftovers{}, nil
	}
	var names []string
	for _, id := range ids {
		if !backupid.Valid(id) {
			return storage.Leftovers{}, fmt.Errorf("backup %s: not a backup id", id)
		}
		objs, err := r.Backend.List(ctx, Dir(id)+"/")
		if err != nil {
			return storage.Leftovers{}, fmt.Errorf("backup %s: %w", id, err)
		}
		more, err := r.writtenNames(ctx, id, objs)
		if err != nil {
			return storage.Leftovers{}, fmt.Errorf("backup %s: %w", id, err)
		}
		names = append(names, more...)
	}
	left, err := lr.RemoveLeftovers(ctx, backupsDir+"/", storage.LeftoverOptions{Names: names, DryRun: dryRun})
	if err != nil {
		return left, fmt.Errorf("%s: leftovers under %s/: %w", r.Backend.Location(), backupsDir, err)
	}
	return left, nil
}

// writtenNames names the objects backup id wrote or may have been writing
// when it stopped: those stored (objs, its directory's listing), its
// manifest and begun marker, and the stream objects the marker names with
// their indexes.
func (r *Repo) writtenNames(ctx context.Context, id string, objs []storage.Info) ([]string, error) {
	dir := Dir(id)
	names := []string{dir + "/" + BegunName, dir + "/" + ManifestName}
	for _, o := range objs {
		if !slices.Contains(names, o.Name) {
			names = append(names, o.Name)
		}
	}
	rc, err := r.Backend.Open(ctx, dir+"/"+BegunName, 0, -1)
	if errors.Is(err, fs.ErrNotExist) {
		return names, nil
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var header archive.Manifest
	if err := json.NewDecoder(io.LimitReader(rc, 16<<20)).Decode(&header); err != nil {
		return nil, fmt.Errorf("%s: %w", BegunName, err)
	}
	for i, s := range header.Streams {
		if err := storage.CheckName(s.Name); err != nil || !strings.HasPrefix(s.Name, "streams/") {
			return nil, fmt.Errorf("%s: bad stream name %q", BegunName, s.Name)
		}
		for _, n := range []string{dir + "/" + s.Name, dir + "/" + archive.IndexName(i)} {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names, nil
}

// Begin writes the backup's begun marker, before any stream object.
func (r *Repo) Begin(ctx context.Context, header *archive.Manifest) error {
	if r.store != nil {
		// Its streams go to the block store (Output): the manifest says so.
		header.Storage = archive.StorageDedup
	}
	data, err := json.Marshal(header)
	if err != nil {
		return err
	}
	_, err = r.Backend.Put(ctx, Dir(header.ID)+"/"+BegunName, bytes.NewReader(data))
	return err
}

// Output is where the streams of a new backup id go.
func (r *Repo) Output(id, hash string) archive.Output {
	if r.store != nil {
		return dedup.NewOutput(r.store, Dir(id), hash)
	}
	return archive.BackendOutput{Backend: r.Backend, Dir: Dir(id), Hash: hash}
}

// PutMeta stores a small object in the directory of backup id.
func (r *Repo) PutMeta(ctx context.Context, id, name string, data []byte, hash string) (archive.Object, error) {
	return archive.PutSmall(ctx, r.Backend, Dir(id), name, data, hash)
}

// Discard removes every object of backup id; an alias of Remove for
// writers that failed.
func (r *Repo) Discard(ctx context.Context, id string) error { return r.Remove(ctx, id) }

// Input reads the streams of the complete backup m.
func (r *Repo) Input(m *archive.Manifest) archive.Input {
	if r.store != nil && m.Storage == archive.StorageDedup {
		return dedup.NewInput(r.store, Dir(m.ID), m)
	}
	return archive.BackendInput{Backend: r.objects(m), Dir: Dir(m.ID)}
}

// objects is the backend to read the objects of the backup or archived
// binary log m through: with m's recipients known to the crypt decorator,
// so that a header that the key in use, one of them, cannot open is
// damage, not a wrong key.
func (r *Repo) objects(m *archive.Manifest) storage.Backend {
	if m.Encryption == nil || r.crypt == nil {
		return r.Backend
	}
	return r.crypt.EncryptedTo(m.Encryption.Recipients)
}

// ReadMeta reads meta object name of a complete backup and checks its
// size and digest against the manifest.
func (r *Repo) ReadMeta(ctx context.Context, m *archive.Manifest, name string) ([]byte, error) {
	for _, o := range m.Meta {
		if o.Name != name {
			continue
		}
		rc, err := r.objects(m).Open(ctx, Dir(m.ID)+"/"+name, 0, -1)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, archive.Corruptf("backup %s: %s, named by the manifest, is missing: %v", m.ID, name, err)
		}
		if err != nil {
			return nil, fmt.Errorf("backup %s: %w", m.ID, err)
		}
		defer rc.Close()
		data, err := io.ReadAll(io.LimitReader(rc, o.Size+1))
		if err != nil {
			return nil, fmt.Errorf("backup %s: %s: %w", m.ID, name, err)
		}
		if int64(len(data)) != o.Size {
			return nil, archive.Corruptf("backup %s: %s: %d bytes, the manifest says %d", m.ID, name, len(data), o.Size)
		}
		if err := archive.CheckDigest(data, o.Digest); err != nil {
			return nil, archive.Corruptf("backup %s: %s: %v", m.ID, name, err)
		}
		return data, nil
	}
	return nil, fmt.Errorf("backup %s: the manifest names no %s", m.ID, name)
}

// Chain returns the backups an incremental m builds on, its full base
// first and its parent last (none for a full backup), their contents
// loaded. A link that is not a
// complete backup of the repository is an error naming it.
func (r *Repo) Chain(ctx context.Context, m *archive.Manifest) ([]*archive.Manifest, error) {
	var links []*archive.Manifest
	seen := map[string]bool{m.ID: true}
	for child, p := m.ID, m.Parent; p != ""; {
		if seen[p] {
			return nil, fmt.Errorf("backup %s: its chain loops back to %s", m.ID, p)
		}
		seen[p] = true
		pm, err := r.readManifest(ctx, p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("backup %s: its chain is broken: %s, the parent of %s, is not a complete backup in %s", m.ID, p, child, r.Backend.Location())
		}
		if err == nil {
			pm, err = r.Whole(ctx, pm)
		}
		if archive.IsCorrupt(err) {
			return nil, archive.Corruptf("backup %s: its chain is broken at %s, the parent of %s: %v", m.ID, p, child, err)
		}
		if err != nil {
			return nil, err
		}
		links = append([]*archive.Manifest{pm}, links...)
		child, p = p, pm.Parent
	}
	return links, nil
}

// CheckReadable reads one small object of an encrypted backup (its first
// stream's index), so that a missing or wrong key fails before a restore
// writes anything.
func (r *Repo) CheckReadable(ctx context.Context, m *archive.Manifest) error {
	if err := r.checkReadable(ctx, Dir(m.ID), m); err != nil {
		return encrypted(m, err)
	}
	return nil
}

// encrypted is err, which reading an object of the encrypted backup m
// failed with, saying how m is encrypted: the keys a reader lacked.
func encrypted(m *archive.Manifest, err error) error {
	return fmt.Errorf("backup %s is encrypted (%s, for %s): %w", m.ID, m.Encryption.Scheme, strings.Join(m.Encryption.Recipients, ", "), err)
}

// checkReadable reads the first stream's index of the encrypted backup or
// archived binary log m stored under dir.
func (r *Repo) checkReadable(ctx context.Context, dir string, m *archive.Manifest) error {
	if m.Encryption == nil || len(m.Streams) == 0 || m.Streams[0].Index.Name == "" {
		return nil
	}
	_, err := archive.GetSmall(ctx, r.objects(m), dir, m.Streams[0].Index)
	return err
}

package physical

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/scratch"
	"github.com/backstream/backstream/internal/xbstream"
)

// realEncryptedCnf is what mariabackup 10.11.19 wrote into backup-my.cnf
// for a server whose key file has a password.
var realEncryptedCnf = strings.NewReplacer(
	"file_key_management_filekey=\n", "file_key_management_filekey=secret123\n",
	"KEY_FILE", "/tmp/fk/keys.enc", "PLUGIN_DIR", "/usr/lib/mysql/plugin/",
).Replace(realEncryptedBackupMyCnf)

func TestWithholdBackupMyCnf(t *testing.T) {
	const mark = "# file_key_management_filekey=<withheld by backstream>\n"
	cases := []struct {
		name, in, want string
		found          bool
	}{
		{"as mariabackup writes it", realEncryptedCnf, strings.Replace(realEncryptedCnf, "file_key_management_filekey=secret123\n", mark, 1), true},
		{"dashes, loose-, blanks, quotes, CRLF", "[mysqld]\r\nloose-file-key-management-filekey = \"s e c\"\r\nx=1\r\n",
			"[mysqld]\r\n" + mark + "x=1\r\n", true},
		{"last line without newline", "[mysqld]\nFILE_KEY_MANAGEMENT_FILEKEY=pw", "[mysqld]\n" + mark, true},
		{"a file's path is no secret", "[mysqld]\nfile_key_management_filekey=FILE:/etc/mysql/filekey\n",
			"[mysqld]\nfile_key_management_filekey=FILE:/etc/mysql/filekey\n", false},
		{"no password", "[mysqld]\nfile_key_management_filename=/k\ninnodb_page_size=16384", "[mysqld]\nfile_key_management_filename=/k\ninnodb_page_size=16384", false},
		{"an empty one", "[mysqld]\nfile_key_management_filekey=\n", "[mysqld]\nfile_key_management_filekey=\n", false},
		{"other options holding the word", "[mysqld]\nfile_key_management_filekey_x=1\n# file_key_management_filekey=old\n",
			"[mysqld]\nfile_key_management_filekey_x=1\n# file_key_management_filekey=old\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, found := WithholdBackupMyCnf([]byte(c.in))
			if string(got) != c.want || found != c.found {
				t.Fatalf("got %q, %v\nwant %q, %v", got, found, c.want, c.found)
			}
			// What --prepare and the server read of it is unchanged but for the password.
			opts, err := mariadb.ParseOptionFile(BackupMyCnf, got, "mysqld")
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range opts {
				if isFileKeyOption(o.Key) && secretFileKey(o.Value) {
					t.Fatalf("%s = %q is still read", o.Key, o.Value)
				}
			}
		})
	}
}

func TestWithholdInfo(t *testing.T) {
	// A password that also occurs in a position stays in the position.
	info := realInfo + "tool_command = --backup --file-key-management-filekey=44894 --x\n"
	got := string(withholdInfo([]byte(info), "44894"))
	if !strings.Contains(got, "to_lsn = 44894\n") || !strings.Contains(got, "innodb_to_lsn = 44894\n") {
		t.Errorf("positions changed:\n%s", got)
	}
	if strings.Contains(got, "filekey=44894") || !strings.Contains(got, "filekey=<withheld by backstream> --x") {
		t.Errorf("tool_command keeps the password:\n%s", got)
	}
	if got := withholdInfo([]byte(info), ""); string(got) != info {
		t.Errorf("without a password the info changed")
	}
}

// memOutput keeps each stream's stored bytes.
type memOutput struct {
	mu      sync.Mutex
	streams map[int]*bytes.Buffer
}

type memStream struct {
	o *memOutput
	i int
}

func (o *memOutput) OpenStream(ctx context.Context, i int, name string) (archive.StreamOutput, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.streams[i] = &bytes.Buffer{}
	return memStream{o, i}, nil
}

func (s memStream) WriteFrame(f archive.Frame, stored []byte) error {
	s.o.mu.Lock()
	defer s.o.mu.Unlock()
	s.o.streams[s.i].Write(stored)
	return nil
}
func (s memStream) Close(st archive.Stream) (archive.Stream, error) { return st, nil }
func (s memStream) Abort(error)                                     {}

// pump rewrites the files that may hold the key file's password, however
// mariabackup cut them into chunks, into valid chunks (length and CRC of
// the new payload: the reader checks them) of the content without it, and
// keeps the same in its metadata copies; the other files pass unchanged.
func TestPumpWithholdsFileKey(t *testing.T) {
	const secret = "secret123"
	var in bytes.Buffer
	xw := xbstream.NewWriter(&in)
	cnf := []byte(realEncryptedCnf)
	info := []byte(realInfo + "tool_command = --backup --file_key_management_filekey=" + secret + "\n")
	data := bytes.Repeat([]byte("page "+secret+" "), 5000)
	cut := bytes.Index(cnf, []byte(secret)) + 3
	for _, c := range []xbstream.Chunk{
		{Type: xbstream.TypePayload, Path: "ibdata1", Payload: data},
		// backup-my.cnf in two chunks, the password cut between them.
		{Flags: xbstream.FlagRewrite, Type: xbstream.TypePayload, Path: BackupMyCnf, Payload: cnf[:cut]},
		{Type: xbstream.TypePayload, Path: BackupMyCnf, Offset: uint64(cut), Payload: cnf[cut:]},
		{Type: xbstream.TypeEOF, Path: "ibdata1"},
		{Type: xbstream.TypeEOF, Path: BackupMyCnf},
		{Type: xbstream.TypePayload, Path: "xtrabackup_info", Payload: info},
		{Type: xbstream.TypeEOF, Path: "xtrabackup_info"},
	} {
		if err := xw.WriteChunk(&c); err != nil {
			t.Fatal(err)
		}
	}
	out := &memOutput{streams: map[int]*bytes.Buffer{}}
	none, _ := codec.Parse("none")
	w, err := archive.NewWriter(context.Background(), archive.WriterOptions{Output: out, Streams: 2, Codec: none})
	if err != nil {
		t.Fatal(err)
	}
	meta, had, err := pump(xbstream.NewReader(&in), w, secret, nil, &RedoCopy{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wantCnf, _ := WithholdBackupMyCnf(cnf)
	if !had || string(meta[BackupMyCnf]) != string(wantCnf) || bytes.Contains(meta["xtrabackup_info"], []byte(secret)) {
		t.Fatalf("metadata copies: had %v\n%s\n%s", had, meta[BackupMyCnf], meta["xtrabackup_info"])
	}
	files := map[string][]byte{}
	flags := map[string]xbstream.Flags{}
	for _, s := range out.streams {
		r := xbstream.NewReader(s)
		for {
			c, _, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Type == xbstream.TypePayload {
				if _, seen := files[c.Path]; !seen {
					flags[c.Path] = c.Flags
				}
				files[c.Path] = append(files[c.Path], c.Payload...)
			}
		}
	}
	switch {
	case string(files[BackupMyCnf]) != string(wantCnf):
		t.Errorf("stored backup-my.cnf:\n%s", files[BackupMyCnf])
	case flags[BackupMyCnf] != xbstream.FlagRewrite:
		t.Errorf("backup-my.cnf lost its rewrite flag: %v", flags[BackupMyCnf])
	case string(files["xtrabackup_info"]) != string(meta["xtrabackup_info"]):
		t.Errorf("stored xtrabackup_info differs from its copy:\n%s", files["xtrabackup_info"])
	case !bytes.Equal(files["ibdata1"], data):
		t.Errorf("ibdata1 changed: a data file is not the key file's password's place")
	}

	// Without a password the server showed, backup-my.cnf's is still
	// taken out, and said so.
	in.Reset()
	xw = xbstream.NewWriter(&in)
	if err := xw.WriteFile(BackupMyCnf, bytes.NewReader(cnf), 100); err != nil {
		t.Fatal(err)
	}
	w, err = archive.NewWriter(context.Background(), archive.WriterOptions{Output: &memOutput{streams: map[int]*bytes.Buffer{}}, Streams: 1, Codec: none})
	if err != nil {
		t.Fatal(err)
	}
	meta, had, err = pump(xbstream.NewReader(&in), w, "", nil, &RedoCopy{})
	w.Abort(io.EOF)
	if err != nil || !had || bytes.Contains(meta[BackupMyCnf], []byte(secret)) {
		t.Fatalf("no password shown: had %v, %v\n%s", had, err, meta[BackupMyCnf])
	}
}

// The password goes to children in a private file that the option names,
// and nothing stays when they are done.
func TestFileKeyInFile(t *testing.T) {
	opts := []mariadb.Option{{Key: "plugin-load-add", Value: "file_key_management"},
		{Key: "loose-file-key-management-filekey", Value: "pw-1"}, {Key: FileKeyOption, Value: "FILE:/etc/k"}}
	out, remove, err := FileKeyInFile(opts)
	if err != nil {
		t.Fatal(err)
	}
	if out[0] != opts[0] || out[2] != opts[2] || opts[1].Value != "pw-1" {
		t.Fatalf("options changed beyond the password: %+v", out)
	}
	path, ok := strings.CutPrefix(out[1].Value, "FILE:")
	if !ok {
		t.Fatalf("the password is still in the option: %+v", out[1])
	}
	dir, _ := scratch.Dir()
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 || !strings.HasPrefix(path, dir+"/") {
		t.Fatalf("password file %s: %v, %v (want 0600 in %s)", path, st, err, dir)
	}
	if b, _ := os.ReadFile(path); string(b) != "pw-1" {
		t.Fatalf("password file holds %q", b)
	}
	remove()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("password file left: %v", err)
	}
}

func TestUserFileKey(t *testing.T) {
	cnf := writeTemp(t, "[client]\nfile_key_management_filekey=not-this\n[mariadbd]\nloose_file_key_management_filekey = from-file\n")
	t.Setenv(FileKeyEnv, "from-env")
	for file, want := range map[string]string{cnf: "from-file", "": "from-env", writeTemp(t, "[mysqld]\nx=1\n"): "from-env"} {
		if got, err := UserFileKey(file); err != nil || got != want {
			t.Errorf("UserFileKey(%q) = %q, %v; want %q", file, got, err, want)
		}
	}
	if _, err := UserFileKey(cnf + ".missing"); err == nil {
		t.Errorf("a missing option file was not an error")
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "*.cnf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// A stream that ends inside a withheld file (no end chunk) is refused,
// naming it (by the xbstream reader): committed, the backup would lack
// what --prepare reads.
func TestPumpRefusesUnendedWithheldFile(t *testing.T) {
	var in bytes.Buffer
	xw := xbstream.NewWriter(&in)
	c := xbstream.Chunk{Type: xbstream.TypePayload, Path: BackupMyCnf, Payload: []byte(realEncryptedCnf)}
	if err := xw.WriteChunk(&c); err != nil {
		t.Fatal(err)
	}
	none, _ := codec.Parse("none")
	w, err := archive.NewWriter(context.Background(), archive.WriterOptions{Output: &memOutput{streams: map[int]*bytes.Buffer{}}, Streams: 1, Codec: none})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort(errors.New("test over"))
	if _, _, err := pump(xbstream.NewReader(&in), w, "secret123", nil, &RedoCopy{}); err == nil || !strings.Contains(err.Error(), "no end chunk") || !strings.Contains(err.Error(), BackupMyCnf) {
		t.Fatalf("pump of a stream ending inside %s: %v", BackupMyCnf, err)
	}
}

package codec

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// cliDecoders are the stock tools that must read our objects, and how to run
// them: a stream object is the plain concatenation of frames.
var cliDecoders = map[string][]string{
	"zstd": {"zstd", "-dc"},
	"lz4":  {"lz4", "-dc"},
	"gzip": {"gzip", "-dc"},
}

// cliEncoders write one frame from stdin (so with no content size in it).
var cliEncoders = map[string][]string{
	"zstd": {"zstd", "-c", "-q"},
	"lz4":  {"lz4", "-c", "-q"},
	"gzip": {"gzip", "-c"},
}

func lookTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s not installed (scripts/deps.sh installs it): %v", name, err)
	}
}

// TestStockToolsReadObjects writes an object of several frames (one of them
// empty) to a file and has the stock tool decompress it.
func TestStockToolsReadObjects(t *testing.T) {
	parts := [][]byte{innodbLike(1<<20, 7), nil, textLines(500<<10, 8), randomBytes(70<<10, 9), {'\n'}}
	var want []byte
	for _, p := range parts {
		want = append(want, p...)
	}
	for _, c := range []Codec{Zstd{1}, Zstd{2}, LZ4{1}, LZ4{3}, Gzip{1}, Gzip{6}} {
		t.Run(c.String(), func(t *testing.T) {
			argv := cliDecoders[c.Name()]
			lookTool(t, argv[0])
			var object []byte
			for _, p := range parts {
				var err error
				if object, err = c.Compress(object, p); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(t.TempDir(), "00000.xbs"+c.Suffix())
			if err := os.WriteFile(path, object, 0o600); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd := exec.Command(argv[0], append(argv[1:], path)...)
			cmd.Stderr = &stderr
			got, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v %s: %v: %s", argv, path, err, stderr.String())
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%v gave %d bytes, want the %d bytes compressed", argv, len(got), len(want))
			}
		})
	}
}

// TestReadStockToolFrames decodes frames the stock tools write from a pipe.
func TestReadStockToolFrames(t *testing.T) {
	data := innodbLike(2<<20, 10)
	for name, argv := range cliEncoders {
		t.Run(name, func(t *testing.T) {
			lookTool(t, argv[0])
			var stderr bytes.Buffer
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Stdin = bytes.NewReader(data)
			cmd.Stderr = &stderr
			frame, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %v: %s", argv, err, stderr.String())
			}
			c, err := Parse(name)
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.Decompress(nil, frame, len(data))
			if err != nil {
				t.Fatalf("%s: frame from %v: %v", c, argv, err)
			}
			if !bytes.Equal(out, data) {
				t.Fatalf("%s: frame from %v decodes to different data", c, argv)
			}
		})
	}
}

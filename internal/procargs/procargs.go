// Package procargs overwrites parts of this process's command line where
// the kernel keeps it, so that ps and /proc/PID/cmdline stop showing them.
// It knows nothing of flags: its caller says which bytes are secret.
package procargs

import (
	"os"
	"strings"
	"unsafe"
)

// Mask replaces the bytes of os.Args[i] from offset from to its end with
// 'x', as the mariadb client does with a password on its command line.
//
// On Linux the Go runtime makes os.Args from the argv block that the
// kernel placed on the initial stack, without copying: each string's data
// points into the range (mm->arg_start..arg_end) that /proc/PID/cmdline
// and ps read. Mask first gives os.Args[i] a copy of its own, so the
// program still sees the value, and then writes over the original bytes
// in place; their length and the NUL after them stay, so the command line
// keeps its shape.
func Mask(i, from int) {
	if i < 0 || i >= len(os.Args) || from < 0 || from >= len(os.Args[i]) {
		return
	}
	orig := os.Args[i]
	os.Args[i] = strings.Clone(orig)
	b := unsafe.Slice(unsafe.StringData(orig), len(orig))
	for j := from; j < len(b); j++ {
		b[j] = 'x'
	}
}

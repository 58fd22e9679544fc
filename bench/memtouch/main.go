// Package memtouch is a command that takes the given number of MiB of
// memory and writes one byte to each of its pages, then exits:
// bench/lib.sh's steady_memory runs it so that the free memory of a
// virtual machine whose host took it back (free page reporting) is the
// guest's again before a bench times anything on it.
//
//	memtouch MiB
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
)

func main() {
	mib, err := strconv.Atoi(os.Args[len(os.Args)-1])
	if len(os.Args) != 2 || err != nil || mib < 0 {
		fmt.Fprintln(os.Stderr, "usage: memtouch MiB")
		os.Exit(2)
	}
	page := os.Getpagesize()
	// In pieces of 64 MiB, so that no allocation is larger than it must be.
	const piece = 64 << 20
	var held [][]byte
	for left := int64(mib) << 20; left > 0; left -= piece {
		b := make([]byte, min(left, piece))
		for i := 0; i < len(b); i += page {
			b[i] = 1
		}
		held = append(held, b)
	}
	runtime.KeepAlive(held)
}

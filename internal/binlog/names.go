package binlog

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// SourceKey names a server's directory under binlogs/: hostname-server_id,
// reduced to characters every backend takes.
func SourceKey(hostname string, serverID uint32) string {
	return fmt.Sprintf("%s-%d", unsafeChars.ReplaceAllString(hostname, "_"), serverID)
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// NumberGap names the files missing between two binary log names of one
// series (base.000007 then base.000010: "base.000008 .. base.000009").
func NumberGap(a, b string) string {
	baseA, numA, okA := splitBinlogName(a)
	baseB, numB, okB := splitBinlogName(b)
	if !okA || !okB || baseA != baseB || numB <= numA+1 {
		return ""
	}
	width := len(a) - len(baseA) - 1
	name := func(n int) string { return fmt.Sprintf("%s.%0*d", baseA, width, n) }
	if numB == numA+2 {
		return name(numA + 1)
	}
	return name(numA+1) + " .. " + name(numB-1)
}

// sameSeries reports whether b is the file right after a in one series
// (base.000007 then base.000008).
func sameSeries(a, b string) bool {
	baseA, numA, okA := splitBinlogName(a)
	baseB, numB, okB := splitBinlogName(b)
	return okA && okB && baseA == baseB && numB == numA+1
}

func splitBinlogName(s string) (string, int, bool) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(s[i+1:])
	return s[:i], n, err == nil
}

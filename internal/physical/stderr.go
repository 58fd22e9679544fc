package physical

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EventKind says what a line of mariabackup's stderr reported.
type EventKind int

// Event kinds, in the order they usually appear during a backup.
const (
	// EventFileStart: a copy thread started streaming Path.
	EventFileStart EventKind = iota + 1
	// EventFileDone: a copy thread finished its current file ("...done").
	EventFileDone
	// EventLogScanned: the redo log copier has read up to LSN.
	EventLogScanned
	// EventWaitLog: the data files are copied and mariabackup waits for the
	// redo log copier to reach LSN ("Waiting for log copy thread to read lsn").
	EventWaitLog
	// EventStage: a locking step (BACKUP STAGE, FLUSH TABLES, UNLOCK) in Message.
	EventStage
	// EventCompleted: mariabackup said "completed OK!".
	EventCompleted
)

// String names the kind for logs and JSON.
func (k EventKind) String() string {
	switch k {
	case EventFileStart:
		return "file-start"
	case EventFileDone:
		return "file-done"
	case EventLogScanned:
		return "log-scanned"
	case EventWaitLog:
		return "wait-log"
	case EventStage:
		return "stage"
	case EventCompleted:
		return "completed"
	}
	return "event(" + strconv.Itoa(int(k)) + ")"
}

// Event is something worth showing from mariabackup's stderr. Byte counts are
// not in stderr; count the stream instead.
type Event struct {
	Kind    EventKind
	Thread  int    // mariabackup's thread number, the [NN] prefix
	Path    string // EventFileStart: the file, relative to the datadir
	LSN     uint64 // EventLogScanned, EventWaitLog
	Message string // the line without its thread and time prefix
}

// "[01] 2024-11-21 19:30:00 message"; the time is absent in some lines.
var linePrefix = regexp.MustCompile(`^\[(\d+)\]\s+(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+)?(.*)$`)

var (
	reStreaming = regexp.MustCompile(`^(?:Streaming|Copying) (.+?)(?: to .*)?$`)
	reScanned   = regexp.MustCompile(`>> log scanned up to \((\d+)\)`)
	reWaitLog   = regexp.MustCompile(`Waiting for log copy thread to read lsn (\d+)`)
)

// parseEvent turns one stderr line into an Event, if it is one.
func parseEvent(line string) (Event, bool) {
	ev := Event{Message: line}
	if m := linePrefix.FindStringSubmatch(line); m != nil {
		ev.Thread, _ = strconv.Atoi(m[1])
		ev.Message = m[2]
	}
	msg := strings.TrimSpace(ev.Message)
	switch {
	case strings.Contains(msg, "completed OK!"):
		ev.Kind = EventCompleted
	case msg == "...done":
		ev.Kind = EventFileDone
	case reWaitLog.MatchString(msg):
		ev.Kind = EventWaitLog
		ev.LSN, _ = strconv.ParseUint(reWaitLog.FindStringSubmatch(msg)[1], 10, 64)
	case reScanned.MatchString(msg):
		ev.Kind = EventLogScanned
		ev.LSN, _ = strconv.ParseUint(reScanned.FindStringSubmatch(msg)[1], 10, 64)
	case reStreaming.MatchString(msg):
		ev.Kind = EventFileStart
		ev.Path = strings.TrimPrefix(reStreaming.FindStringSubmatch(msg)[1], "./")
		if ev.Path == "" {
			return Event{}, false
		}
	case strings.HasPrefix(msg, "Executing BACKUP STAGE"), strings.HasPrefix(msg, "Executing FLUSH"),
		strings.HasPrefix(msg, "Executing UNLOCK"), strings.HasPrefix(msg, "Acquiring BACKUP LOCKS"):
		ev.Kind = EventStage
	default:
		return Event{}, false
	}
	return ev, true
}

// tailLines is how many stderr lines an error quotes; errorLines how
// many of the error lines before them (mariabackup's own [ERROR] lines)
// it quotes too: a tool often says why it fails well before it stops.
const (
	tailLines  = 8
	errorLines = 5
)

// stderrSink receives a child's stderr (or combined output) as one
// goroutine writes it (exec's copy goroutine, or a backup's stderrPump):
// it forwards every line to log as soon as the line is complete, parses
// events, remembers "completed OK!" and keeps the last lines for error
// messages. The mutex is for the readers after Wait.
type stderrSink struct {
	log        io.Writer
	onProgress func(Event)
	hook       func(raw string) // called with every line as mariabackup wrote it
	withhold   []string         // secrets replaced in every line ("" is ignored)

	mu        sync.Mutex
	partial   []byte
	tail      []string
	completed bool
	known     []string // every line that matched a known failure, in order
	vanished  []string // tables a file of which vanished during its copy, as DDLRaceError names them
	errors    []string // the first errorLines error lines, which the tail may have lost
	logErr    error
	locks     lockClock
}

// Write takes output in any pieces and handles it line by line. It never
// fails: a failing log must not fail the child's pipe (the child would get
// SIGPIPE and the backup would die for a logging problem).
func (s *stderrSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.partial = append(s.partial, p...)
			// A line without end that grows without bound would be a bug in
			// the child; cap memory by flushing it as a line.
			if len(s.partial) > 64<<10 {
				s.lineLocked(string(s.partial))
				s.partial = s.partial[:0]
			}
			break
		}
		line := string(append(s.partial, p[:i]...))
		s.partial = s.partial[:0]
		p = p[i+1:]
		s.lineLocked(line)
	}
	return n, nil
}

// flush handles a last line without a newline.
func (s *stderrSink) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.partial) > 0 {
		s.lineLocked(string(s.partial))
		s.partial = s.partial[:0]
	}
}

func (s *stderrSink) lineLocked(raw string) {
	raw = strings.TrimRight(raw, "\r")
	// Parsed as mariabackup wrote it (a password such as "OK" or digits
	// must not hide "completed OK!" or an LSN); kept, logged and shown
	// only with the secrets withheld.
	line := raw
	for _, secret := range s.withhold {
		if secret != "" {
			line = strings.ReplaceAll(line, secret, withheldMark)
		}
	}
	if s.log != nil && s.logErr == nil {
		if _, err := io.WriteString(s.log, line+"\n"); err != nil {
			s.logErr = err
		}
	}
	if strings.TrimSpace(raw) == "" {
		return
	}
	if s.hook != nil {
		s.hook(raw)
	}
	s.locks.line(raw, time.Now())
	if strings.Contains(raw, "completed OK!") {
		s.completed = true
	}
	if _, ok := knownFailure(raw); ok {
		s.known = append(s.known, line)
	}
	if m := vanishedLine.FindStringSubmatch(raw); m != nil {
		s.vanished = append(s.vanished, fmt.Sprintf("%s (its file %s vanished while mariabackup copied it)",
			strings.ReplaceAll(m[2], "`", ""), strings.TrimPrefix(m[1], "./")))
	}
	if len(s.errors) < errorLines && isErrorLine(raw) {
		s.errors = append(s.errors, line)
	}
	s.tail = append(s.tail, line)
	if len(s.tail) > tailLines {
		s.tail = s.tail[len(s.tail)-tailLines:]
	}
	if s.onProgress != nil {
		if ev, ok := parseEvent(raw); ok {
			s.onProgress(ev)
		}
	}
}

// failure describes why the child failed: what failed, the cause (usually
// the exit status), the recognised reason if any, and the last stderr lines.
func (s *stderrSink) failure(what string, cause error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	if len(s.known) > 0 {
		hint, _ := knownFailure(s.known[0])
		fmt.Fprintf(&b, ": %s (mariabackup said: %q)", hint, strings.TrimSpace(s.known[0]))
	}
	var earlier []string
	for _, l := range s.errors {
		if !slices.Contains(s.tail, l) {
			earlier = append(earlier, l)
		}
	}
	if len(earlier) > 0 {
		b.WriteString("; error lines before them:")
		for _, l := range earlier {
			b.WriteString("\n  " + l)
		}
	}
	if len(s.tail) > 0 {
		b.WriteString("; last lines of its output:")
		for _, l := range s.tail {
			b.WriteString("\n  " + l)
		}
	} else {
		b.WriteString("; it wrote nothing to stderr")
	}
	if cause != nil {
		return fmt.Errorf("%s (%w)%s", what, cause, b.String())
	}
	return fmt.Errorf("%s%s", what, b.String())
}

// vanishedLine is how mariabackup reports a file of a non-InnoDB table
// that was gone when it came to copy it (errno 2, ENOENT):
//
//	Error 2 on file ./r/conv.MYD open during `r`.`conv` table copy
var vanishedLine = regexp.MustCompile("Error 2 on file (\\S+) open during (`.+`) table copy")

// vanishedTables names the tables a file of which vanished during the
// copy, unless mariabackup also met a known failure (a full disk, a lost
// connection): that one is the cause to report, and no new attempt
// would miss it.
func (s *stderrSink) vanishedTables() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.known) > 0 {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(s.vanished)))
}

// isErrorLine reports a line in which mariabackup (or the server code in
// it) reports an error: "[ERROR]", "Error:", or "ERROR:".
func isErrorLine(line string) bool {
	return strings.Contains(line, "[ERROR]") || strings.Contains(line, "Error:") || strings.Contains(line, "ERROR:") || strings.Contains(line, "error:")
}

// knownFailures maps a substring of a mariabackup error line to what it means
// for the user. Order matters: the first match wins.
var knownFailures = []struct{ needle, hint string }{
	{"Was only able to copy log", "the server overwrote redo log that mariabackup had not copied yet; increase innodb_log_file_size or back up at a quieter time"},
	{"log has wrapped around", "the server overwrote redo log that mariabackup had not copied yet; increase innodb_log_file_size or back up at a quieter time"},
	{"Access denied for user", "access denied: the server refused the login; check user and password"},
	{"Lock wait timeout", "mariabackup timed out waiting for a lock; a long query or transaction holds it (mariabackup's --ftwrl-wait-timeout, given with --mariabackup-option=, lets it wait for such queries to end)"},
	{"Unable to obtain lock", "mariabackup could not obtain the backup lock in time; a long query or transaction holds it"},
	{"Can't connect to", "mariabackup could not connect to the server: check host, port and socket"},
	{"Failed to connect to", "mariabackup could not connect to the server: check host, port, socket, user and password"},
	{"No space left on device", "a disk is full"},
	{"Can't open backup-my.cnf", "the directory does not hold a mariabackup backup (it has no backup-my.cnf)"},
	{"Too many open files", "mariabackup ran out of file descriptors: it opens the tablespace of every table, and backstream already gave it the hard limit of open files; raise that limit (LimitNOFILE= of the systemd unit, limits.conf, or ulimit -Hn as root); where it cannot be raised, --mariabackup-option=--close-files has mariabackup close each file once copied, which mariabackup itself calls unsafe when DDL runs during the backup"},
	{"Operating system error number 13", "mariabackup may not read a file in the datadir: run backstream as a user that can read it (root or the server's user)"},
	{"Permission denied", "permission denied: run backstream as a user that can read the datadir (root or the server's user)"},
}

func knownFailure(line string) (string, bool) {
	for _, k := range knownFailures {
		if strings.Contains(line, k.needle) {
			return k.hint, true
		}
	}
	return "", false
}

// lockClock times the locks mariabackup holds on the server, from when it
// reports each (as the lines reach backstream, a pipe away): DDL waits
// from its request of BACKUP STAGE BLOCK_DDL, and commits (with every
// write to a non-transactional table) from its request of BLOCK_COMMIT,
// until it unlocks. FLUSH TABLES WITH READ LOCK, on a mariabackup without
// backup stages, blocks both. A request counts from when it is made: the
// writers that come while it waits for those running wait behind it.
type lockClock struct {
	ddl, commit, end time.Time
}

// line notes what one line of mariabackup's stderr says of its locks.
func (c *lockClock) line(raw string, now time.Time) {
	start := func(t *time.Time) {
		if t.IsZero() {
			*t = now
		}
	}
	switch {
	case strings.Contains(raw, "All tables unlocked"), strings.Contains(raw, "Executing BACKUP STAGE END"),
		strings.Contains(raw, "Executing UNLOCK TABLES"):
		if !c.ddl.IsZero() && c.end.IsZero() {
			c.end = now
		}
	case strings.Contains(raw, "FLUSH TABLES WITH READ LOCK"), strings.Contains(raw, "BACKUP STAGE BLOCK_COMMIT"):
		start(&c.ddl)
		start(&c.commit)
	case strings.Contains(raw, "BACKUP STAGE BLOCK_DDL"):
		start(&c.ddl)
	}
}

// blocked is how long DDL and commits waited for mariabackup, which
// exited at exited: a lock it never reported letting go of counts until
// then.
func (c *lockClock) blocked(exited time.Time) (ddl, commit time.Duration) {
	end := c.end
	if end.IsZero() {
		end = exited
	}
	if !c.ddl.IsZero() {
		ddl = end.Sub(c.ddl)
	}
	if !c.commit.IsZero() {
		commit = end.Sub(c.commit)
	}
	return max(ddl, 0), max(commit, 0)
}

// blocked is how long mariabackup blocked DDL and commits on the server
// (see lockClock), once it has exited.
func (s *stderrSink) blocked(exited time.Time) (ddl, commit time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.locks.blocked(exited)
}

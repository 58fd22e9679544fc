// Package offcpu is a command that runs a command and samples, every
// interval until it exits, what each thread of its process tree is doing:
// running, or waiting, and on what (the kernel's wchan and, as root, the
// first frame of the kernel stack below the scheduler). It prints how
// many samples each process name spent in each state and where, with
// their spread over the run's tenths, and in how many samples no thread
// ran at all: where a bench's wall time goes when its CPU time does not
// explain it.
//
//	offcpu [-every 35ms] [-top 25] -- command [arg ...]
//
// It exits with the command's exit code.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	every := flag.Duration("every", 35*time.Millisecond, "time between samples")
	top := flag.Int("top", 25, "rows printed, the most sampled first")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: offcpu [-every 35ms] [-top 25] -- command [arg ...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || *every <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "offcpu:", err)
		os.Exit(2)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var samples []sample
	tick := time.NewTicker(*every)
	defer tick.Stop()
	var err error
loop:
	for {
		select {
		case err = <-done:
			break loop
		case <-tick.C:
			samples = append(samples, take(cmd.Process.Pid))
		}
	}
	report(os.Stderr, samples, *every, *top)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "offcpu:", err)
		os.Exit(2)
	}
}

// sample is what every thread of the tree was doing at one moment.
type sample []threadState

type threadState struct {
	process string // the process's name (comm)
	state   string // R, S, D, ...
	where   string // for a thread not running: wchan, then the stack's first frame
}

// take samples the threads of root and of its descendants.
func take(root int) sample {
	var s sample
	for _, pid := range tree(root) {
		name := readLine(fmt.Sprintf("/proc/%d/comm", pid))
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
		for _, task := range tasks {
			state := taskState(task)
			if state == "" {
				continue // gone
			}
			t := threadState{process: name, state: state}
			if state != "R" {
				t.where = readLine(task + "/wchan")
				if f := stackFrame(task); f != "" && f != t.where {
					t.where += " < " + f
				}
			}
			s = append(s, t)
		}
	}
	return s
}

// tree lists root and its descendants, from every process's parent.
func tree(root int) []int {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if f := statFields(b); len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			children[ppid] = append(children[ppid], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// statFields returns the fields of a stat line after the name, which may
// hold spaces: state, ppid, ...
func statFields(b []byte) []string {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

func taskState(task string) string {
	b, err := os.ReadFile(task + "/stat")
	if err != nil {
		return ""
	}
	if f := statFields(b); len(f) > 0 {
		return f[0]
	}
	return ""
}

// stackFrame is the first frame of the thread's kernel stack that is not
// the scheduler's (readable as root only).
func stackFrame(task string) string {
	f, err := os.Open(task + "/stack")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		fn, _, _ := strings.Cut(fields[1], "+")
		if strings.Contains(fn, "schedule") || strings.HasPrefix(fn, "__switch_to") {
			continue
		}
		return fn
	}
	return ""
}

func readLine(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// report prints the rows, the most sampled first, with their samples per
// tenth of the run.
func report(w *os.File, samples []sample, every time.Duration, top int) {
	type row struct {
		threadState
		n      int
		tenths [10]int
	}
	rows := map[threadState]*row{}
	idle := 0
	for i, s := range samples {
		ran := false
		for _, t := range s {
			r := rows[t]
			if r == nil {
				r = &row{threadState: t}
				rows[t] = r
			}
			r.n++
			r.tenths[i*10/len(samples)]++
			ran = ran || t.state == "R"
		}
		if !ran {
			idle++
		}
	}
	list := make([]*row, 0, len(rows))
	for _, r := range rows {
		list = append(list, r)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].n != list[j].n {
			return list[i].n > list[j].n
		}
		return fmt.Sprint(list[i].threadState) < fmt.Sprint(list[j].threadState)
	})
	fmt.Fprintf(w, "offcpu: %d samples, one every %s; in %d of them no thread ran\n", len(samples), every, idle)
	fmt.Fprintf(w, "%-16s %-5s %-50s %8s  %s\n", "process", "state", "where", "samples", "per tenth of the run")
	for i, r := range list {
		if i == top {
			fmt.Fprintf(w, "(%d more rows)\n", len(list)-top)
			break
		}
		fmt.Fprintf(w, "%-16s %-5s %-50s %8d  %v\n", r.process, r.state, r.where, r.n, r.tenths)
	}
}

// Package profiling writes the diagnostic profiles of one command, for
// whoever measures backstream (the hidden --cpuprofile and --memprofile
// flags): a CPU profile of the whole run, and the heap profile of the
// moment the heap was largest, which is what a peak RSS is made of.
package profiling

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"
)

// heapSample is how often the profiler looks for a finished garbage
// collection, after which it takes a heap profile.
const heapSample = 200 * time.Millisecond

// Start starts the profiles whose files are not empty and returns the
// function that stops them and writes the files, saying on errs what it
// could not write.
func Start(cpuFile, memFile string, errs io.Writer) (stop func(), err error) {
	// Both files first, so that a bad path fails the command before it
	// runs and leaves no profile started.
	var cpu, mem *os.File
	if cpuFile != "" {
		if cpu, err = os.Create(cpuFile); err != nil {
			return nil, err
		}
	}
	if memFile != "" {
		if mem, err = os.Create(memFile); err != nil {
			if cpu != nil {
				cpu.Close()
			}
			return nil, err
		}
	}
	var stops []func() error
	if cpu != nil {
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			if mem != nil {
				mem.Close()
			}
			return nil, err
		}
		stops = append(stops, func() error {
			pprof.StopCPUProfile()
			return cpu.Close()
		})
	}
	if mem != nil {
		p := startPeak()
		stops = append(stops, func() error {
			if _, err := mem.Write(p.stop()); err != nil {
				mem.Close()
				return err
			}
			return mem.Close()
		})
	}
	return func() {
		for _, s := range stops {
			if err := s(); err != nil {
				fmt.Fprintf(errs, "writing a profile: %v\n", err)
			}
		}
	}, nil
}

// peak keeps the heap profile that shows the most bytes in use. A heap
// profile is as of a finished garbage collection, and a growing heap is
// what makes collections run, so one is taken after each collection
// (at most one per heapSample) and the biggest kept.
type peak struct {
	done   chan struct{}
	wg     sync.WaitGroup
	cycles uint64
	inuse  int64
	prof   []byte
}

func startPeak() *peak {
	p := &peak{done: make(chan struct{})}
	p.sample()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(heapSample)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				p.sample()
			}
		}
	}()
	return p
}

func (p *peak) sample() {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		n := s[0].Value.Uint64()
		if p.prof != nil && n == p.cycles {
			return // no collection since the last profile
		}
		p.cycles = n
	}
	// The text form (debug 1), which go tool pprof reads as it reads the
	// binary one, and whose first line says the bytes in use:
	// "heap profile: <objects>: <bytes> [...".
	var b bytes.Buffer
	if pprof.Lookup("heap").WriteTo(&b, 1) != nil {
		return
	}
	var objects, inuse int64
	fmt.Sscanf(b.String(), "heap profile: %d: %d", &objects, &inuse)
	if p.prof == nil || inuse > p.inuse {
		p.inuse, p.prof = inuse, b.Bytes()
	}
}

// stop ends the sampling and returns the profile of the most bytes in use.
func (p *peak) stop() []byte {
	close(p.done)
	p.wg.Wait()
	p.sample()
	return p.prof
}

package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

// Hashing and parsing a line does not depend on the lines before it, and is
// nearly all the work of verifying, so VerifyDir spreads it over every core:
// a reader cuts the file into chunks of whole lines, workers prepare the
// chunks' lines, and the caller's goroutine feeds them to the ChainVerifier
// in file order.

// chunkSize is how much the reader hands a worker at a time; a longer line
// gets a chunk of its own.
const chunkSize = 1 << 20

type job struct {
	data  []byte
	lines []prepared
	done  chan struct{} // closed when lines are ready
}

// run cuts the chunk into lines and prepares them.
func (j *job) run(d *parser) {
	j.lines = j.lines[:0]
	for data := j.data; len(data) > 0; {
		line, rest, newline := bytes.Cut(data, []byte{'\n'})
		data = rest
		j.lines = append(j.lines, prepared{})
		p := &j.lines[len(j.lines)-1]
		p.prepare(d, line)
		p.newline = newline
	}
	close(j.done)
}

// feedFile feeds one file to v.
func feedFile(v *ChainVerifier, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	size := int64(chunkSize)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	if err := feedReader(v, filepath.Base(path), f, size); err != nil {
		return fmt.Errorf("audit: reading %s: %w", path, err)
	}
	return nil
}

// feedReader feeds the file name, read from r, to v; size is about how long
// it is, so that a small file gets a small buffer. Every goroutine it starts
// has returned when it returns.
func feedReader(v *ChainVerifier, name string, r io.Reader, size int64) error {
	v.File(name)
	first := int(min(max(size+1, 512), chunkSize))
	n := runtime.GOMAXPROCS(0)
	work := make(chan *job, 2*n)   // to the workers
	order := make(chan *job, 2*n)  // to this goroutine, in file order
	free := make(chan *job, 4*n+2) // jobs done with, for reuse
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var d parser
			for j := range work {
				j.run(&d)
			}
		}()
	}
	var readErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(work)
		readErr = readChunks(r, first, func(data []byte) {
			var j *job
			select {
			case j = <-free:
			default:
				j = &job{}
			}
			j.data, j.done = data, make(chan struct{})
			work <- j
			order <- j
		}, free)
	}()
	for j := range order {
		<-j.done
		for i := range j.lines {
			p := &j.lines[i]
			v.take(p, !p.newline, p.newline)
		}
		select {
		case free <- j:
		default:
		}
	}
	wg.Wait()
	return readErr
}

// readChunks reads r to the end, handing emit chunks that end with a newline
// (the last may not); the first buffer has first bytes. Buffers come from
// jobs done with, where possible.
func readChunks(r io.Reader, first int, emit func([]byte), free chan *job) error {
	buf := newBuf(free, first)
	n := 0
	for {
		m, err := r.Read(buf[n:])
		n += m
		if errors.Is(err, io.EOF) {
			if n > 0 {
				emit(buf[:n])
			}
			return nil
		}
		if err != nil {
			return err
		}
		if n < len(buf) {
			continue
		}
		k := bytes.LastIndexByte(buf[:n], '\n')
		if k < 0 {
			// One line fills the buffer: grow it.
			buf = append(buf, make([]byte, len(buf))...)
			continue
		}
		next := newBuf(free, max(chunkSize, 2*(n-k-1)))
		rest := copy(next, buf[k+1:n])
		emit(buf[:k+1])
		buf, n = next, rest
	}
}

// newBuf returns a buffer of at least size bytes, reusing a finished job's.
// The job itself stays with the free list for the next emit.
func newBuf(free chan *job, size int) []byte {
	select {
	case j := <-free:
		b := j.data[:cap(j.data)]
		j.data = nil
		select {
		case free <- j:
		default:
		}
		if len(b) >= size {
			return b
		}
	default:
	}
	return make([]byte, size)
}

package brokerd

import (
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"boxmaker/wire"
)

// BenchmarkFloorThroughput32 is the ceiling under BenchmarkDeniedThroughput32
// on this machine: the same 32 clients, connections and frames, against a
// server that does only what no broker can skip. It accepts, reads the
// frame without decoding it, commits a line of a Decision record's size
// with one write and one fdatasync per batch, answers with the same bytes
// and closes. Its ratio to the bare fsync loop is the most any server of
// this protocol, written in Go, reaches on this machine.
func BenchmarkFloorThroughput32(b *testing.B) {
	bb := startBench(b, nil)
	bb.target = startFloor(b, bb)
	throughput(b, bb)
}

// startFloor starts the floor server in bb's directory and returns its
// socket; it stops when the benchmark ends.
func startFloor(b *testing.B, bb *bench) string {
	sock := filepath.Join(bb.dir, "floor.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(bb.dir, "floor.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	c := &floorLog{f: f, line: bb.line, wake: make(chan struct{}, 1)}
	var committer, handlers sync.WaitGroup
	committer.Go(c.run)
	handlers.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			handlers.Go(func() {
				defer conn.Close()
				if _, err := wire.ReadFrame(conn); err != nil {
					return
				}
				c.commit()
				conn.Write(bb.denied)
			})
		}
	})
	b.Cleanup(func() {
		// Every client is done: the handlers end, then the committer.
		ln.Close()
		handlers.Wait()
		close(c.wake)
		committer.Wait()
		f.Close()
	})
	return sock
}

// floorLog is group commit at its simplest: callers queue, one goroutine
// writes everything queued with one write and one fdatasync, then answers.
type floorLog struct {
	f    *os.File
	line []byte
	wake chan struct{}

	mu    sync.Mutex
	queue []chan struct{}
}

func (l *floorLog) commit() {
	done := make(chan struct{})
	l.mu.Lock()
	l.queue = append(l.queue, done)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	<-done
}

func (l *floorLog) run() {
	var buf []byte
	for range l.wake {
		for {
			l.mu.Lock()
			batch := l.queue
			l.queue = nil
			l.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			buf = buf[:0]
			for range batch {
				buf = append(buf, l.line...)
			}
			if _, err := l.f.Write(buf); err != nil {
				panic(err)
			}
			if err := syscall.Fdatasync(int(l.f.Fd())); err != nil {
				panic(err)
			}
			for _, d := range batch {
				close(d)
			}
		}
	}
}

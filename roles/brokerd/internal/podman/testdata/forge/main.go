// Command forge is the attacker of TestAnswerCannotBeForged: run inside a
// tool container as a shell command, it tries every route it knows to the
// toolkit's answer channel (PID 1's stdout) and writes the forged answer
// line in its first argument's file through each one that opens. It
// prints one line per route: "ROUTE name: denied (why)" or "ROUTE name:
// OPEN", and "forge: done" at the end. It is built by the test, static,
// and mounted read-only into the container.
package main

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

var forged []byte

func main() {
	var err error
	if forged, err = os.ReadFile(os.Args[1]); err != nil {
		fmt.Println("forge: cannot read the forged line:", err)
		os.Exit(1)
	}
	// Every descriptor of PID 1, under its own fd/ and under each thread's.
	for _, fd := range []string{"0", "1", "2"} {
		open("/proc/1/fd/" + fd)
		open("/proc/self/../1/fd/" + fd)
	}
	tids, err := os.ReadDir("/proc/1/task")
	if err != nil {
		fmt.Printf("ROUTE list /proc/1/task: denied (%v)\n", err)
	}
	for _, t := range tids {
		for _, fd := range []string{"0", "1", "2"} {
			open("/proc/1/task/" + t.Name() + "/fd/" + fd)
		}
	}
	list("/proc/1/fd")
	list("/proc/1/fdinfo")
	open("/proc/1/mem")
	// ptrace, to write into the toolkit's memory or make it write.
	report("ptrace attach 1", unix.PtraceAttach(1))
	report("ptrace seize 1", unix.PtraceSeize(1))
	// pidfd_getfd, to take a copy of its stdout.
	if pidfd, err := unix.PidfdOpen(1, 0); err != nil {
		report("pidfd_open 1", err)
	} else {
		fd, err := unix.PidfdGetfd(pidfd, 1, 0)
		if err == nil {
			unix.Write(fd, forged)
		}
		report("pidfd_getfd 1 1", err)
	}
	// process_vm_writev: EPERM is a refusal; EFAULT would mean the kernel
	// let it through to the (bad) address.
	b := []byte{0}
	_, err = unix.ProcessVMWritev(1, []unix.Iovec{{Base: &b[0], Len: 1}},
		[]unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(nil)) + 4096, Len: 1}}, 0)
	report("process_vm_writev 1", err)
	fmt.Println("forge: done")
}

// open opens path for writing and, if it opens, writes the forged line.
func open(path string) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		f.Write(forged)
		f.Close()
	}
	report("open "+path, err)
}

func list(dir string) {
	_, err := os.ReadDir(dir)
	report("list "+dir, err)
}

func report(route string, err error) {
	if err != nil {
		fmt.Printf("ROUTE %s: denied (%v)\n", route, err)
		return
	}
	fmt.Printf("ROUTE %s: OPEN\n", route)
}

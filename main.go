// Command boxmaker is every program of the harness in one executable,
// chosen busybox-style by the name it is run as: loopd, brokerd, gatewayd,
// inferproxy and bxctl are symlinks to it. Run as boxmaker (or any other
// name), it is the owner's CLI: bxctl's commands, each role as
// "boxmaker <role> ...", and the setup commands links and version.
//
// argv[0] chooses behaviour, never privilege: each role's privileges come
// from the OS user it is started as.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"boxmaker/deploy"
	"boxmaker/roles/brokerd"
	"boxmaker/roles/bxctl"
	"boxmaker/roles/gatewayd"
	"boxmaker/roles/inferproxy"
	"boxmaker/roles/loopd"
	"boxmaker/roles/toolkit"
)

func main() { os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr)) }

// entry is a role's one exported entry point.
type entry func(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int

// roles in the order help lists them; links creates one symlink per name.
var roles = []struct {
	name  string
	main  entry
	about string
}{
	{"loopd", loopd.Main, "the agent loop: sessions, the model, the channel on loop.sock"},
	{"brokerd", brokerd.Main, "the tool broker: grants, approvals, the audit log, tool runs"},
	{"gatewayd", gatewayd.Main, "the Mattermost gateway for chat and approvals"},
	{"inferproxy", inferproxy.Main, "the forwarder from infer.sock to the model server"},
	{"bxctl", bxctl.Main, "the owner's commands, as listed above"},
}

func role(name string) entry {
	for _, r := range roles {
		if r.name == name {
			return r.main
		}
	}
	return nil
}

// run is the whole program with its inputs explicit, so tests can drive it
// in process. It returns the exit status.
func run(argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	prog := "boxmaker"
	if len(argv) > 0 {
		prog = filepath.Base(argv[0])
	}
	var args []string
	if len(argv) > 1 {
		args = argv[1:]
	}
	if m := role(prog); m != nil {
		return m(prog, args, stdin, stdout, stderr)
	}
	if prog == "toolkit" { // hidden: the program inside tool containers (roles/toolkit)
		return toolkit.Main(prog, args, stdin, stdout, stderr)
	}
	return owner(prog, args, stdin, stdout, stderr)
}

// owner is the owner's CLI under any name that is not a role's.
func owner(prog string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		// No command: the overview, on stderr, as a usage error.
		ownerHelp(prog, stdin, stderr, stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help":
		return ownerHelp(prog, stdin, stdout, stderr)
	case "links", "version":
		return setup(prog, args, stdout, stderr)
	case "deploy":
		return deploy.Main(prog+" deploy", args[1:], stdout, stderr)
	}
	if m := role(args[0]); m != nil {
		return m(prog+" "+args[0], args[1:], stdin, stdout, stderr)
	}
	return bxctl.Main(prog, args, stdin, stdout, stderr)
}

// ownerHelp prints bxctl's help under the owner's name, then what only the
// owner's CLI has.
func ownerHelp(prog string, stdin io.Reader, stdout, stderr io.Writer) int {
	code := bxctl.Main(prog, []string{"--help"}, stdin, stdout, stderr)
	fmt.Fprintf(stdout, "\nRoles (also run as a symlink of the same name; see %q):\n", prog+" links")
	for _, r := range roles {
		fmt.Fprintf(stdout, "  %-28s %s\n", prog+" "+r.name+" ...", r.about)
	}
	fmt.Fprintf(stdout, "\nSetup:\n")
	fmt.Fprintf(stdout, "  %-28s %s\n", prog+" links DIR", "create the role symlinks in DIR, pointing at this executable")
	fmt.Fprintf(stdout, "  %-28s %s\n", prog+" version", "print the version")
	fmt.Fprintf(stdout, "  %-28s %s\n", prog+" deploy plan|apply", "print the deployment plan, or make this system match it (as root)")
	fmt.Fprintf(stdout, "  %-28s %s\n", prog+" deploy remove", "undo apply, keeping the state unless --purge (as root)")
	return code
}

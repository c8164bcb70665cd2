// Command statefixture writes the state fixture TestStateFromLastRelease
// loads: it runs the harness of the checkout it is built in (the release
// whose format the fixture keeps), drives one run that writes every kind of
// state the roles keep under BOXMAKER_HOME, stops everything, and copies
// that state, byte for byte, to -out. What is machine-specific or no state
// (sockets, the audit lock, configs with this machine's paths, Podman's
// storage) is left out. internal/harness/testdata/state-e5f67ba/README.md
// says how it was run for e5f67ba; it is copied into an older checkout to
// run there, so it uses only the harness API that checkout has.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"boxmaker/internal/harness"
)

// home is fixed, not a temporary name, so the paths inside the fixture's
// records (tool arguments, grant paths) are the same at every regeneration
// and a diff between two fixtures shows only format changes.
const home = "/tmp/bxstatefix"

// keep are the paths under BOXMAKER_HOME that are state (relative to it),
// and jobs/, the owner's job file: brokerd keeps a job's last run only
// for a job its directory has, so the state means nothing without it.
// Everything else (etc/, run/, podman/, grants/, secrets/) is
// configuration with this machine's paths, which the loading test writes
// for its own home.
var keep = []string{"audit", "broker", "index", "jobs", "memory", "sessions"}

// skip are names within keep that are no state: the audit directory's
// lock is held by a running brokerd, and brokerd rewrites its seccomp
// profile at every start.
var skip = regexp.MustCompile(`(^|/)(lock|[^/]*\.lock|[^/]*\.sock|seccomp\.json)$`)

var sessionLine = regexp.MustCompile(`\[session (chat-[0-9a-z-]+), epoch`)

func main() {
	bin := flag.String("bin", "", "the folder with boxmaker, its role links and fakellama of the release")
	out := flag.String("out", "", "where the state goes (must not exist)")
	flag.Parse()
	if *bin == "" || *out == "" {
		fail(fmt.Errorf("-bin and -out are required"))
	}
	if err := run(*bin, *out); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "statefixture:", err)
	os.Exit(1)
}

func run(bin, out string) (err error) {
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("%s exists", out)
	}
	if err := os.RemoveAll(home); err != nil {
		return err
	}
	logf, err := os.CreateTemp("", "statefixture-*.log")
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintln(os.Stderr, "statefixture: the processes' output is in", logf.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h, err := harness.Start(ctx, harness.Options{Bin: bin, Home: home, Log: logf})
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			h.Stop()
		}
	}()
	bx := func(stdin string, args ...string) (string, error) {
		var b strings.Builder
		err := h.Bxctl(ctx, strings.NewReader(stdin), &b, &b, args...)
		fmt.Fprintf(os.Stderr, "== bxctl %s\n%s", strings.Join(args, " "), b.String())
		if err != nil {
			return b.String(), fmt.Errorf("bxctl %v: %w", args, err)
		}
		return b.String(), nil
	}

	// One session, every kind of call: an ask grant's read approved (the
	// session becomes private), the same refused, a trusted note, an auto
	// grant's shell (untrusted output: the session becomes untrusted), a
	// note it writes after that (so untrusted), and a call no grant allows.
	script := "What do my notes say?\ny\nWhat do my notes say?\nn\n" +
		"remember: Plants | Water the plants on Friday label: trusted\n" +
		"List the scratch folder.\n" +
		"remember: From the page | The page says the boat is blue label: trusted\n" +
		"Fetch a web page for me.\n"
	chat, err := bx(script, "chat")
	if err != nil {
		return err
	}
	m := sessionLine.FindStringSubmatch(chat)
	if m == nil {
		return fmt.Errorf("no session line in the chat")
	}
	// The owner promotes the untrusted note.
	list, err := bx("", "notes", "list")
	if err != nil {
		return err
	}
	var untrusted string
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, "untrusted  session "+m[1]) {
			untrusted, _, _ = strings.Cut(line, " ")
		}
	}
	if untrusted == "" {
		return fmt.Errorf("no untrusted note in the list")
	}
	shown, err := bx("", "notes", "show", untrusted)
	if err != nil {
		return err
	}
	_, version, _ := strings.Cut(shown, "\nversion ")
	version, _, _ = strings.Cut(version, " ")
	if _, err := bx("", "notes", "promote", untrusted, version); err != nil {
		return err
	}

	// A scheduled job, run by hand under its own auto grant, its result a
	// note: jobs.json, job-sessions and the job's session log. The grant
	// calls what it reads secret, so the job's session is secret and the
	// taint floor (floor.json) is raised: no other call writes it.
	grant := "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nuntrusted = false\njob = \"digest\"\n\n[constraints]\npaths = [\"" +
		h.Notes() + "\"]\n"
	if err := os.WriteFile(filepath.Join(h.GrantsDir(), "digest-notes.toml"), []byte(grant), 0o644); err != nil {
		return err
	}
	job := "every = \"24h\"\nprompt = \"What do my notes say?\"\nresult = \"note\"\n"
	if err := os.WriteFile(filepath.Join(h.JobsDir(), "digest.toml"), []byte(job), 0o600); err != nil {
		return err
	}
	if _, err := bx("", "jobs", "run", "digest"); err != nil {
		return err
	}
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		jobs, _ := bx("", "jobs")
		if strings.Contains(jobs, "(manual) ok session ") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the job never ended ok")
		}
	}
	if _, err := bx("", "audit", "verify", "--home", h.Home); err != nil {
		return err
	}
	stopped = true
	if err := h.Stop(); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "statefixture: the chat's session is", m[1])
	var mtimes strings.Builder
	for _, dir := range keep {
		if err := copyTree(filepath.Join(h.Home, dir), filepath.Join(out, dir), dir, &mtimes); err != nil {
			return err
		}
	}
	// Git keeps no modification times, and the notes' index holds each
	// note file's: without them the index is stale and rebuilt, and its
	// format never tested. The harness sets them again from this file.
	if err := os.WriteFile(filepath.Join(out, "mtimes"), []byte(mtimes.String()), 0o644); err != nil {
		return err
	}
	return os.RemoveAll(home)
}

// copyTree copies the regular files and directories under from, byte for
// byte; anything else (a socket, a link) is refused, so nothing that is not
// state slips into the fixture unseen.
// Each file's modification time goes to mtimes as "<ns> <path>", the path
// under rel.
func copyTree(from, to, rel0 string, mtimes *strings.Builder) error {
	return filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if skip.MatchString(rel) {
			fmt.Fprintln(os.Stderr, "statefixture: left out", path)
			return nil
		}
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			fmt.Fprintf(mtimes, "%d %s\n", fi.ModTime().UnixNano(), filepath.Join(rel0, rel))
			return copyFile(path, dst)
		}
		return fmt.Errorf("%s is neither a file nor a directory", path)
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Package image builds the tool image from files on this machine (no
// registry is reachable, or wanted): the static boxmaker executable as
// /bin/toolkit, Debian's static busybox as /bin/sh and the common
// applets, the host's CA bundle for http_fetch, and a passwd and group
// file naming the unprivileged user. It imports the image into Podman
// through the bindings and returns its id for brokerd.toml.
package image

import (
	"archive/tar"
	"cmp"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"time"
)

// Applets are the busybox applets the image links into /bin: those a
// command line for files and text uses. System administration applets
// (mount, reboot, ip, ...) are left out; none could work unprivileged
// without a network anyway. The image test checks each against the
// installed busybox.
var Applets = []string{
	"[", "[[", "ash", "awk", "base64", "basename", "bc", "bunzip2", "bzcat", "bzip2", "cat", "chmod",
	"cmp", "cp", "cut", "date", "dc", "dd", "diff", "dirname", "du", "echo", "ed", "egrep", "env",
	"expand", "expr", "factor", "false", "fgrep", "find", "fold", "getopt", "grep", "gunzip", "gzip",
	"head", "hexdump", "id", "kill", "less", "ln", "ls", "lzcat", "md5sum", "mkdir", "mktemp", "more",
	"mv", "nl", "nproc", "od", "paste", "patch", "printf", "pwd", "readlink", "realpath", "rev", "rm",
	"rmdir", "sed", "seq", "sh", "sha1sum", "sha256sum", "sha512sum", "shuf", "sleep", "sort", "stat",
	"strings", "tac", "tail", "tar", "tee", "test", "time", "timeout", "touch", "tr", "true", "truncate",
	"uname", "unexpand", "uniq", "unlink", "unxz", "unzip", "uudecode", "uuencode", "vi", "wc", "which",
	"whoami", "xargs", "xxd", "xz", "xzcat", "yes", "zcat",
}

// epoch is every entry's time, so the layer depends only on its inputs.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Files fixed by the image itself.
const (
	passwd = "root:x:0:0:root:/root:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	group  = "root:x:0:\nnogroup:x:65534:\n"
	hosts  = "127.0.0.1\tlocalhost\n::1\tlocalhost\n"
)

// Inputs are the host files the image is made of.
type Inputs struct {
	Toolkit  string // a static boxmaker executable
	Busybox  string // a static busybox
	CABundle string // PEM certificates for http_fetch's TLS
}

// entry is one file of the layer. Exactly one of dir, link, data or src
// says what it is.
type entry struct {
	name string
	mode int64
	dir  bool
	link string
	data string
	src  string
}

func (in Inputs) entries() []entry {
	es := []entry{
		{name: "bin", mode: 0o755, dir: true},
		{name: "bin/toolkit", mode: 0o755, src: in.Toolkit},
		{name: "bin/busybox", mode: 0o755, src: in.Busybox},
		{name: "dev", mode: 0o755, dir: true},
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: group},
		{name: "etc/hosts", mode: 0o644, data: hosts},
		{name: "etc/passwd", mode: 0o644, data: passwd},
		{name: "etc/ssl", mode: 0o755, dir: true},
		{name: "etc/ssl/certs", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, src: in.CABundle},
		{name: "proc", mode: 0o555, dir: true},
		{name: "run", mode: 0o755, dir: true},
		{name: "sys", mode: 0o555, dir: true},
		{name: "tmp", mode: 0o1777, dir: true},
		{name: "var", mode: 0o755, dir: true},
		{name: "var/tmp", mode: 0o1777, dir: true},
	}
	for _, a := range Applets {
		es = append(es, entry{name: "bin/" + a, mode: 0o777, link: "busybox"})
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.name, b.name) })
	return es
}

// writeLayer writes the image's one layer as a tar stream.
func writeLayer(w io.Writer, in Inputs) error {
	tw := tar.NewWriter(w)
	for _, e := range in.entries() {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case e.dir:
			h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		case e.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		case e.src != "":
			h.Typeflag = tar.TypeReg
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if e.src != "" {
			if err := copyFile(tw, h, e.src); err != nil {
				return err
			}
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

func copyFile(tw *tar.Writer, h *tar.Header, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("image: %s is not a regular file (%s)", src, fi.Mode().Type()&fs.ModeType)
	}
	h.Size = fi.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if n, err := io.Copy(tw, f); err != nil || n != h.Size {
		return fmt.Errorf("image: copying %s into %s: %d of %d bytes: %v", src, path.Clean("/"+h.Name), n, h.Size, err)
	}
	return nil
}

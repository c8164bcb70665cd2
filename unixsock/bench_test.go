package unixsock

import (
	"net"
	"path/filepath"
	"testing"
)

// BenchmarkAccept is a connect and accept on one socket: without a rule,
// with a user rule (one getsockopt more), and with a group rule that the
// peer (root) does not pass, so that its uid and listed groups are looked
// up: the slowest path a connection takes.
func BenchmarkAccept(b *testing.B) {
	for _, c := range []struct {
		name string
		rule *Rule
	}{{"no rule", nil}, {"user", &Rule{User: "root"}}, {"group, refused after the lookup", &Rule{Group: "nogroup"}}} {
		b.Run(c.name, func(b *testing.B) {
			ln, err := Listen(filepath.Join(b.TempDir(), "s.sock"), c.rule, func(line string) { b.Error(line) })
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			for b.Loop() {
				d, err := net.Dial("unix", ln.Path())
				if err != nil {
					b.Fatal(err)
				}
				if c.rule != nil && c.rule.Group != "" {
					// Accept would wait on for a peer that passes: check by hand.
					a, err := ln.ln.AcceptUnix()
					if err != nil {
						b.Fatal(err)
					}
					if _, ok := c.rule.admit(ln.Path(), a); ok {
						b.Fatal("root passed a rule for nogroup")
					}
					a.Close()
				} else if a, err := ln.Accept(); err != nil {
					b.Fatal(err)
				} else {
					a.Close()
				}
				d.Close()
			}
		})
	}
}

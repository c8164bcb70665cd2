package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// JSON is the plan as `boxmaker deploy plan --json` prints it and plan.json
// holds it: indented, fields in declared order, no HTML escaping, one final
// newline.
func (p Plan) JSON() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		panic(err) // the plan holds only strings, bools and slices of them
	}
	return b.Bytes()
}

// Text is the plan for a person: users, groups, paths, sockets and units,
// one line each.
func (p Plan) Text() string {
	var s strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&s, format, a...) }
	w("Users (each with a primary group of the same name):\n")
	for _, u := range p.Users {
		w("  %-22s %-10s home %s, groups %s", u.Name, u.Role, u.Home, list(u.Groups))
		if u.SubIDs {
			w(", subordinate ids")
		}
		w("\n")
	}
	w("\nGroups:\n")
	for _, g := range p.Groups {
		w("  %-28s members %s: %s\n", g.Name, list(g.Members), g.Why)
	}
	w("\nPaths:\n")
	for _, x := range p.Paths {
		switch x.Kind {
		case KindLink:
			w("  link %s -> %s\n", x.Path, x.Target)
		default:
			w("  %-4s %s %s %s:%s", x.Kind, x.Mode, x.Path, x.Owner, x.Group)
			if x.Content != "" {
				w(" (%s)", x.Content)
			}
			w("\n")
		}
	}
	w("\nSockets:\n")
	for _, k := range p.Sockets {
		peer := "user " + k.PeerUser
		switch {
		case k.PeerGroup != "":
			peer = "group " + k.PeerGroup
		case k.PeerUser == "":
			peer = "not checked: Podman's socket, guarded by its modes alone"
		}
		w("  %s: %s listens, %s connects (peer: %s)\n", k.Path, k.Listener, k.Client, peer)
	}
	w("\nUnits:\n")
	for _, u := range p.Units {
		w("  %s as %s: %s\n", u.Name, u.User, strings.Join(u.Exec, " "))
	}
	return s.String()
}

func list(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	return strings.Join(l, ", ")
}

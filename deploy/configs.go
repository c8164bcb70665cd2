package deploy

import (
	"fmt"
	"strings"
)

// config is the first content of a role's configuration file: every path
// and socket the plan decided, and the [peers] each listener checks. The
// owner fills in what only they know (the model server, the Mattermost
// server, the tool image's id); after that the file is theirs.
func (b *builder) config(role string) string {
	sock := func(dir, name string) string { return b.home("run", dir, name) }
	var s strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&s, format, a...) }
	w("# %s's configuration, first written by `boxmaker deploy apply`; yours to edit now.\n", role)
	w("# The paths and [peers] come from the deployment plan (boxmaker deploy plan).\n\n")
	switch role {
	case "brokerd":
		w("[paths]\nhome = %q\ngrants = %q\nsecrets = %q\njobs = %q\n\n", b.p.Home, b.etc("grants"), b.etc("secrets"), b.etc("jobs"))
		w("[sockets]\nbroker = %q\nadmin = %q\ngateway = %q\nloop = %q\n\n", sock("loop-broker", "broker.sock"),
			sock("owner-broker", "admin.sock"), sock("broker-gateway", "gateway.sock"), sock("broker-loop", "loop.sock"))
		w("[podman]\nsocket = %q\nshared_dir = %q\n", "unix://"+sock("broker-tools", "podman.sock"), b.home("run", "tools-broker"))
		w("# Rootless Podman enforces no per-call memory, pids or cpu limit on cgroup v1 hosts; there,\n")
		w("# accept that (the tools unit's own limits bound all calls together):\n")
		w("# accept_unenforced = [\"memory\", \"pids\", \"cpu\"]\n")
		w("# The tool image's id: `sudo -u %s brokerd image build --config %s` prints it.\nimage = \"\"\n\n",
			b.name("brokerd"), b.etc("brokerd.toml"))
		w("[peers]\nbroker = { user = %q }\nadmin = { group = %q }\n", b.name("loopd"), b.name("owner"))
	case "loopd":
		w("[paths]\nhome = %q\n\n[model]\nsocket = %q\n\n", b.p.Home, sock("loop-infer", "infer.sock"))
		w("[listen]\nsocket = %q\ngateway = %q\njobs = %q\n\n", sock("owner-loop", "loop.sock"), sock("gateway-loop", "loop.sock"),
			sock("broker-loop", "loop.sock"))
		w("[broker]\nsocket = %q\n\n", sock("loop-broker", "broker.sock"))
		w("[peers]\nsocket = { group = %q }\ngateway = { user = %q }\njobs = { user = %q }\n", b.name("owner"), b.name("gatewayd"),
			b.name("brokerd"))
	case "inferproxy":
		w("# The model server: llama-server, on this machine.\n[upstream]\nurl = \"http://127.0.0.1:8080\"\n\n")
		w("[listen]\nsocket = %q\n\n", sock("loop-infer", "infer.sock"))
		w("[peers]\nsocket = { user = %q }\n", b.name("loopd"))
	case "gatewayd":
		w("# Your Mattermost server and the user ids of the owners who may chat and approve.\n")
		w("[mattermost]\nurl = \"https://mattermost.invalid\"\ntoken_file = %q\nowners = []\n\n", b.credential("gatewayd", "mattermost-token"))
		w("[sockets]\ngateway = %q\nloop = %q\n\n", sock("broker-gateway", "gateway.sock"), sock("gateway-loop", "loop.sock"))
		w("[paths]\nhome = %q\n\n", b.p.Home)
		w("[peers]\ngateway = { user = %q }\n", b.name("brokerd"))
	}
	return s.String()
}

// credential is where systemd puts a unit's credential (LoadCredential=):
// the file is the unit user's, mode 0400, and exists only while it runs.
func (b *builder) credential(role, name string) string {
	return "/run/credentials/" + b.unitName(role) + "/" + name
}

func (b *builder) unitName(role string) string { return b.name(role) + ".service" }

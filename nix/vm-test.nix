# checks.<system>.vm: a NixOS VM with services.boxmaker and the repository's
# stand-in model (fakellama) as the model server. The owner, alice, chats
# with bxctl chat: a read of her notes under an ask grant, approved in the
# chat (the same admin.sock call as `bxctl approve`); a shell in the
# scratch folder under an auto grant; a web fetch no grant allows, denied.
# Then bxctl audit verify, and two walls: loopd's user cannot reach
# admin.sock, and no tool container runs as root or a role's user.
#
# It runs only on NixOS (nix flake check, or nix build .#checks.x86_64-linux.vm);
# where this repository is developed nixpkgs cannot be reached, and the gate
# only parses this file.
{ pkgs, module, fakellama }:
pkgs.testers.runNixOSTest {
  name = "boxmaker";

  nodes.machine = { pkgs, ... }: {
    imports = [ module ];
    virtualisation.memorySize = 2048;
    virtualisation.diskSize = 4096;

    users.users.alice = { isNormalUser = true; };

    services.boxmaker = {
      enable = true;
      owners = [ "alice" ];
      modelServer.url = "http://127.0.0.1:8080";
      # The VM's rootless Podman uses the cgroupfs manager (no systemd user
      # session for a system user), which sets no per-call limit; the tools
      # unit's own limits bound the calls together (docs/decisions.md,
      # "Where tool containers run"). Unchecked here: remove it on a host
      # where the probe sees the limits.
      settings.brokerd.podman.accept_unenforced = [ "memory" "pids" "cpu" ];
      # The demo's grants (internal/harness/home.go), on folders outside
      # the home.
      grants = {
        notes-read = {
          tool = "read_file"; mode = "ask"; max_taint = "secret"; result_class = "private"; untrusted = false;
          constraints.paths = [ "/srv/notes" ];
        };
        scratch-shell = {
          tool = "shell"; mode = "auto"; max_taint = "secret"; result_class = "private";
          constraints.paths = [ "/srv/scratch" ];
        };
      };
    };

    systemd.services.fakellama = {
      description = "the stand-in model (not a real one)";
      wantedBy = [ "multi-user.target" ];
      before = [ "boxmaker-inferproxy.service" ];
      serviceConfig = {
        ExecStart = "${fakellama}/bin/fakellama --listen 127.0.0.1:8080 --notes /srv/notes --scratch /srv/scratch";
        DynamicUser = true;
      };
    };

    systemd.tmpfiles.rules = [
      "d /srv/notes 0755 alice users -"
      "f /srv/notes/today.md 0644 alice users - Water the plants."
      "d /srv/scratch 0755 alice users -"
    ];
  };

  testScript = ''
    machine.wait_for_unit("multi-user.target")
    machine.wait_for_unit("boxmaker-tools.service")
    machine.wait_for_file("/var/lib/boxmaker/run/broker-tools/podman.sock")

    # The tool image: built by brokerd's own command as brokerd's user into
    # the rootless Podman, then named in brokerd.toml (on a real machine the
    # owner puts the id in services.boxmaker.settings.brokerd.podman.image).
    image = machine.succeed(
        "runuser -u boxmaker-brokerd -- brokerd image build --config /etc/boxmaker/brokerd.toml"
        + " --busybox ${pkgs.pkgsStatic.busybox}/bin/busybox"
    ).strip().splitlines()[-1]
    assert image.startswith("sha256:"), image
    machine.succeed(f"sed -i 's|^image = .*|image = \"{image}\"|' /etc/boxmaker/brokerd.toml")
    machine.succeed("systemctl reset-failed; systemctl restart boxmaker-brokerd boxmaker-inferproxy boxmaker-loopd")
    for unit in ["boxmaker-brokerd", "boxmaker-inferproxy", "boxmaker-loopd", "fakellama"]:
        machine.wait_for_unit(unit + ".service")
    machine.wait_for_file("/var/lib/boxmaker/run/owner-loop/loop.sock")
    machine.wait_for_file("/var/lib/boxmaker/run/owner-broker/admin.sock")

    # Each role as its own user, as the plan says.
    for role in ["loopd", "brokerd", "inferproxy"]:
        user = machine.succeed(f"systemctl show -p User --value boxmaker-{role}.service").strip()
        assert user == f"boxmaker-{role}", user
        machine.succeed(f"pgrep -u boxmaker-{role} -x {role}")

    # The chat, as the owner: approval, an auto run, a denial.
    out = machine.succeed(
        "printf 'What do my notes say?\\ny\\nList the scratch folder.\\nFetch a web page for me.\\n'"
        + " | runuser -u alice -- bxctl chat 2>&1"
    )
    print(out)
    assert "approved 0: runs" in out, out
    assert "Water the plants." in out, out
    assert "tool call 1 ended: result, private" in out, out
    assert "tool call 2 ended: result, private" in out, out
    assert "tool call 3 ended: denied (no_grant)" in out, out

    # The audit log the chat wrote, verified by the owner.
    out = machine.succeed("runuser -u alice -- bxctl audit verify 2>&1")
    assert "audit: ok" in out, out

    # loopd's user cannot approve its own calls: admin.sock is the owner's.
    machine.fail("runuser -u boxmaker-loopd -- bxctl approvals")
    # No container left behind in the tools user's rootless Podman (the
    # only Podman brokerd can reach; its user is not a role's).
    left = machine.succeed(
        "${pkgs.podman}/bin/podman --remote --url unix:///var/lib/boxmaker/run/broker-tools/podman.sock ps -aq"
    )
    assert left.strip() == "", left
  '';
}

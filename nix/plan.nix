# The deployment plan (deploy/plan.json, what `boxmaker deploy plan --json`
# prints) as NixOS settings: users, groups, tmpfiles rules, systemd services
# and the roles' configuration files. Builtins only, no nixpkgs: the gate
# evaluates this file where nixpkgs cannot be reached (go run ./internal/gate
# nix, through eval-check.nix) and compares what it makes with the Go plan.
# module.nix adds what needs nixpkgs: options, the package, TOML rendering.
#
# Nothing the plan holds is restated here: names, paths, modes, owners,
# groups, commands and hardening all come from `plan`. What is NixOS's own
# (how serviceConfig, users.users and environment.etc spell things) is here.
{
  # builtins.fromJSON of deploy/plan.json.
  plan,
  # The folder with boxmaker and its role links (the package's bin): it
  # replaces the plan's bin in every unit's command.
  bin ? plan.bin,
  # Other programs the units run, by file name: { podman = ".../bin/podman"; }.
  # The plan names them where Debian has them.
  programs ? { },
  # Credentials by role, { gatewayd = { mattermost-token = "/path"; }; },
  # merged over the plan's LoadCredential= entries (same name: this wins).
  credentials ? { },
  # Settings by role, { inferproxy = { upstream.url = "..."; }; }, merged
  # over the plan's seed configuration of that role.
  settings ? { },
  # The humans added to the owner group.
  owners ? [ ],
}:
let
  inherit (builtins)
    attrNames concatMap concatStringsSep elemAt filter foldl' hasAttr head isAttrs isList
    length listToAttrs mapAttrs match split stringLength substring tail
    ;

  hasPrefix = p: s: substring 0 (stringLength p) s == p;
  removePrefix = p: s: if hasPrefix p s then substring (stringLength p) (stringLength s) s else s;
  hasSuffix = x: s: stringLength s >= stringLength x && substring (stringLength s - stringLength x) (stringLength x) s == x;
  removeSuffix = x: s: if hasSuffix x s then substring 0 (stringLength s - stringLength x) s else s;
  baseName = s: let parts = split "/" s; in elemAt parts (length parts - 1);
  under = dir: p: p == dir || hasPrefix (dir + "/") p;
  toList = x: if isList x then x else [ x ];
  only = what: l: if length l == 1 then head l else throw "boxmaker plan.nix: want one ${what}, the plan has ${toString (length l)}";
  # Attribute sets merged recursively, b over a (lib.recursiveUpdate).
  merge = a: b: a // mapAttrs (n: v: if isAttrs v && hasAttr n a && isAttrs a.${n} then merge a.${n} v else v) b;

  # The owner group is the peer group of the sockets the owner connects to.
  ownerGroup = only "owner group" (foldl' (acc: s: if s.client == "owner" && !(builtins.elem s.peer_group acc) then acc ++ [ s.peer_group ] else acc) [ ] plan.sockets);

  unitOf = role: only "unit of ${role}" (filter (u: u.role == role) plan.units);

  # A unit's LoadCredential= entries as { name = path; }.
  planCredentials = unit: listToAttrs (map (s: let m = match "([^:]*):(.*)" s.value; in { name = elemAt m 0; value = elemAt m 1; })
    (filter (s: s.key == "LoadCredential") unit.service));
  unitCredentials = unit: planCredentials unit // (credentials.${unit.role} or { });

  # The command: the plan's bin becomes the package's, another program is
  # looked up by its name in programs.
  program = unit: path:
    let name = baseName path; in
    if builtins.dirOf path == plan.bin then "${bin}/${name}"
    else if hasAttr name programs then programs.${name}
    else throw "boxmaker plan.nix: unit ${unit.name} runs ${path}, which is neither in the plan's bin (${plan.bin}) nor among programs";

  # [Service] as NixOS's serviceConfig: a key set once is a string, a key
  # set again (Environment, SystemCallFilter) is the list of its values in
  # order, which NixOS writes back as repeated lines. LoadCredential= is
  # rebuilt from unitCredentials so that an option can replace a source.
  serviceConfig = unit:
    let
      add = acc: s: acc // { ${s.key} = if hasAttr s.key acc then toList acc.${s.key} ++ [ s.value ] else s.value; };
      creds = unitCredentials unit;
      # Unit.Text writes these before the plan's settings (deploy/units.go).
      head' = {
        Type = "simple";
        User = unit.user;
        Group = unit.group;
        ExecStart = concatStringsSep " " ([ (program unit (head unit.exec)) ] ++ tail unit.exec);
      };
    in
    foldl' add head' (filter (s: s.key != "LoadCredential") unit.service)
    // (if creds == { } then { } else { LoadCredential = map (n: "${n}:${creds.${n}}") (attrNames creds); });

  service = unit: {
    name = removeSuffix ".service" unit.name;
    value = {
      description = unit.description;
      after = unit.after;
      wants = unit.after;
      wantedBy = [ "multi-user.target" ];
      serviceConfig = serviceConfig unit;
    };
  };

  dirs = filter (p: p.kind == "dir") plan.paths;
  rule = p: "d ${p.path} ${p.mode} ${p.owner} ${p.group} -";

  # The seed files under etc: the roles' configurations. A <role>.toml is
  # read with fromTOML and the role's settings are merged over it.
  etcRel = path: if hasPrefix "/etc/" path then removePrefix "/etc/" path
    else throw "boxmaker plan.nix: ${path} is not under /etc, where environment.etc writes";
  seeds = filter (p: p.kind == "file" && p.content == "seed" && under plan.etc p.path) plan.paths;
  roleOfSeed = p: removeSuffix ".toml" (baseName p.path);
  configs = listToAttrs (map (p: { name = roleOfSeed p; value = merge (builtins.fromTOML p.text) (settings.${roleOfSeed p} or { }); })
    (filter (p: hasSuffix ".toml" p.path) seeds));
in
{
  inherit ownerGroup configs;

  # users.users: system users, each in its unit's group, in the pair
  # groups of the sockets it connects to; the one with subids gets a
  # range of subordinate ids allocated by NixOS.
  users = listToAttrs (map (u: {
    name = u.name;
    value = {
      isSystemUser = true;
      group = (only "unit run as ${u.name}" (filter (x: x.user == u.name) plan.units)).group;
      extraGroups = u.groups;
      home = u.home;
      createHome = false;
      autoSubUidGidRange = u.subids;
    };
  }) plan.users);

  # users.groups, with the owners in the owner group.
  groups = listToAttrs (map (g: {
    name = g.name;
    value.members = g.members ++ (if g.name == ownerGroup then owners else [ ]);
  }) plan.groups);

  tmpfiles = {
    # The home's directories: the same lines as the plan's tmpfiles.d file.
    home = map rule (filter (p: under plan.home p.path) dirs);
    # The configuration directories (grants, secrets): /etc is not
    # volatile, but environment.etc makes directories 0755 root.
    etc = map rule (filter (p: under plan.etc p.path) dirs);
  };

  services = listToAttrs (map service plan.units);
  # The role of each service, by the service's name.
  unitRoles = listToAttrs (map (u: { name = removeSuffix ".service" u.name; value = u.role; }) plan.units);

  # environment.etc entries for the seed files, without their content:
  # the module renders configs.<role> to TOML, or uses the seed's text.
  etc = listToAttrs (map (p: {
    name = etcRel p.path;
    value = { inherit (p) mode; user = p.owner; group = p.group; role = roleOfSeed p; toml = hasSuffix ".toml" p.path; text = p.text; };
  }) seeds);

  # Where systemd puts a unit's credentials (LoadCredential=).
  credentialsDir = role: "/run/credentials/${(unitOf role).name}";
  unitName = role: removeSuffix ".service" (unitOf role).name;
  # The credential names the plan gives a role, and the paths it reads
  # them from.
  planCredentials = role: planCredentials (unitOf role);
  inherit etcRel;
}

# What the gate evaluates (go run ./internal/gate nix) and compares with the
# Go plan: plan.nix's mapping of deploy/plan.json, with the units written
# out line by line as NixOS writes serviceConfig, so that each can be held
# against the unit file `boxmaker deploy apply` writes on Debian. Builtins
# only: it needs no nixpkgs.
let
  inherit (builtins) attrNames concatMap concatStringsSep head isList listToAttrs map mapAttrs removeAttrs;
  plan = builtins.fromJSON (builtins.readFile ../deploy/plan.json);
  # Every other program where the plan has it, and the plan's own bin: the
  # commands come out as the plan's.
  programs = listToAttrs (map (u: { name = baseNameOf (head u.exec); value = head u.exec; }) plan.units);
  m = import ./plan.nix { inherit plan programs; };
  toList = x: if isList x then x else [ x ];
  # serviceConfig as NixOS writes it: a list is one line per value.
  lines = attrs: concatMap (k: map (v: "${k}=${v}") (toList attrs.${k})) (attrNames attrs);
  unit = s: {
    Unit = [ "Description=${s.description}" ]
      ++ (if s.after == [ ] then [ ] else [ "After=${concatStringsSep " " s.after}" "Wants=${concatStringsSep " " s.wants}" ]);
    Service = lines s.serviceConfig;
    Install = [ "WantedBy=${concatStringsSep " " s.wantedBy}" ];
  };
in
{
  inherit (m) users groups ownerGroup configs tmpfiles;
  units = mapAttrs (_: unit) m.services;
  etc = mapAttrs (_: f: removeAttrs f [ "text" ]) m.etc;
  build = import ./build.nix;
}

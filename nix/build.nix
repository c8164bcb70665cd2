# What the build takes from the repository's own files, so that no second
# copy can drift: the Go version go.mod asks for and the build tags the
# justfile's GOFLAGS sets for the Podman bindings (docs/decisions.md,
# "Podman build tags"). Builtins only: the gate evaluates it (eval-check.nix).
let
  inherit (builtins) filter head length match readFile split isString;
  lines = file: filter isString (split "\n" (readFile file));
  one = what: l: if length l == 1 then head l else throw "boxmaker build.nix: want one ${what}, found ${toString (length l)}";
  found = re: file: map head (filter (m: m != null) (map (match re) (lines file)));
in
{
  # "1.26.0" from `go 1.26.0`.
  goVersion = one "go line in go.mod" (found "go ([0-9.]+)" ../go.mod);
  # [ "remote" "exclude_graphdriver_btrfs" ... ] from GOFLAGS' -tags=.
  tags = filter isString (split "," (one "-tags= in the justfile" (found ".*-tags=([a-z0-9_,]+).*" ../justfile)));
}

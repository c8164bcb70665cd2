# boxmaker on Nix: the package, a development shell, the NixOS module
# (services.boxmaker, which reads deploy/plan.json) and a NixOS VM test.
# docs/running.md, "Install on NixOS", is the walkthrough. Here (Debian,
# no nixpkgs) the gate only parses these files and evaluates nix/plan.nix
# (go run ./internal/gate nix); building and the VM test run on NixOS.
{
  description = "boxmaker: a local agent whose tools run in containers, each role as its own user";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in
    {
      packages = forAll (pkgs: rec {
        boxmaker = pkgs.callPackage ./nix/package.nix { };
        # The in-repository stand-in model, for the VM test: built from the
        # same source and modules, never part of boxmaker.
        fakellama = boxmaker.overrideAttrs (old: {
          pname = "boxmaker-fakellama";
          subPackages = [ "internal/fakellama/cmd/fakellama" ];
          postInstall = "";
          meta = old.meta // { mainProgram = "fakellama"; };
        });
        default = boxmaker;
      });

      devShells = forAll (pkgs: {
        default = pkgs.mkShell {
          # The Go go.mod asks for (the package chose it), just, Podman for
          # the tool runner's tests, staticcheck (also `go tool staticcheck`).
          packages = [ self.packages.${pkgs.stdenv.hostPlatform.system}.boxmaker.go pkgs.just pkgs.podman pkgs.go-tools pkgs.nix ];
        };
      });

      nixosModules.default = { lib, pkgs, ... }: {
        imports = [ ./nix/module.nix ];
        services.boxmaker.package = lib.mkDefault self.packages.${pkgs.stdenv.hostPlatform.system}.default;
      };

      checks = forAll (pkgs: {
        vm = import ./nix/vm-test.nix {
          inherit pkgs;
          module = self.nixosModules.default;
          fakellama = self.packages.${pkgs.stdenv.hostPlatform.system}.fakellama;
        };
      });
    };
}

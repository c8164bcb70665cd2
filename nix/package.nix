# boxmaker: one static executable and its role symlinks (loopd, brokerd,
# gatewayd, inferproxy, bxctl) beside it in $out/bin, as `just build`
# makes them. The Go version and the build tags come from go.mod and the
# justfile (build.nix).
{
  lib,
  buildGoModule,
  go,
  go_1_26 ? null,
}:
let
  build = import ./build.nix;
  # go.mod asks for this Go; nixpkgs' default may be older.
  go' =
    if lib.versionAtLeast go.version build.goVersion then go
    else if go_1_26 != null && lib.versionAtLeast go_1_26.version build.goVersion then go_1_26
    else throw "boxmaker: go.mod asks for Go ${build.goVersion}; this nixpkgs has ${go.version}: use a newer nixpkgs";
in
(buildGoModule.override { go = go'; }) {
  pname = "boxmaker";
  version = "0-unstable";
  src = lib.cleanSource ../.;

  # THE VENDOR HASH: the only place it is written. It cannot be computed
  # without nixpkgs (it is the hash of the modules go.sum pins, as
  # buildGoModule downloads them). The first build on NixOS, and every
  # build after go.mod or go.sum changes, fails with
  #   error: hash mismatch in fixed-output derivation '...-boxmaker-0-unstable-go-modules.drv':
  #            specified: sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=
  #               got:    sha256-<the real hash>
  # Put the "got:" value here and build again (docs/running.md, "Install
  # on NixOS"). lib.fakeHash is that all-A placeholder.
  vendorHash = lib.fakeHash;

  subPackages = [ "." ];
  tags = build.tags;
  # Static: brokerd's `image build` puts this very executable into the
  # tool image as the toolkit, and the tags keep cgo-only code out.
  env.CGO_ENABLED = "0";
  ldflags = [ "-s" "-w" ];
  # The tests need root, Podman and other users (just gate runs them);
  # the sandbox has none of those.
  doCheck = false;

  postInstall = ''
    $out/bin/boxmaker links $out/bin
  '';

  meta = {
    description = "A local agent whose tools run in containers under grants the owner approves";
    mainProgram = "boxmaker";
    platforms = lib.platforms.linux;
  };
}

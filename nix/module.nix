# services.boxmaker: every role as its own system user, from the plan.
#
# Users, groups, directories (tmpfiles), units and the seed configurations
# are TAKEN FROM deploy/plan.json, the plan `boxmaker deploy plan --json`
# prints and the gate keeps equal to the Go code; plan.nix maps it to NixOS
# settings. This file only adds options: the owners, the model server,
# Mattermost, role settings, grants and secrets. It restates no path, mode,
# user or group the plan holds (docs/decisions.md, "The NixOS module reads
# the plan").
{ config, lib, pkgs, ... }:
let
  inherit (lib) mkOption mkEnableOption mkIf types;
  cfg = config.services.boxmaker;
  plan = builtins.fromJSON (builtins.readFile ../deploy/plan.json);
  toml = pkgs.formats.toml { };

  # The plan alone: names and places for the options' defaults and checks.
  bare = import ./plan.nix { inherit plan; };
  tokenName = lib.head (builtins.attrNames (bare.planCredentials "gatewayd"));
  gatewaydOn = cfg.mattermost.url != null;

  # The settings the options below stand for, under the settings the
  # owner gives; both over the plan's seed configuration.
  optionSettings = {
    inferproxy = lib.optionalAttrs (cfg.modelServer.url != null) { upstream.url = cfg.modelServer.url; };
    gatewayd = lib.optionalAttrs gatewaydOn { mattermost = { inherit (cfg.mattermost) url owners; }; };
    # Secrets are systemd credentials: brokerd reads them where systemd
    # puts them while it runs, never from the Nix store.
    brokerd.paths.secrets = bare.credentialsDir "brokerd";
  };

  mapped = import ./plan.nix {
    inherit plan;
    bin = "${cfg.package}/bin";
    programs.podman = lib.getExe cfg.podmanPackage;
    inherit (cfg) owners;
    credentials = {
      gatewayd = lib.optionalAttrs (cfg.mattermost.tokenFile != null) { ${tokenName} = cfg.mattermost.tokenFile; };
      brokerd = cfg.secrets;
    };
    settings = lib.recursiveUpdate optionSettings cfg.settings;
  };

  configFile = name: role: toml.generate name mapped.configs.${role};
  etcFiles = lib.mapAttrs (rel: f: {
    inherit (f) mode user group;
  } // (if f.toml then { source = configFile (baseNameOf rel) f.role; } else { inherit (f) text; })) mapped.etc;

  # Grants: one file per grant in the grants directory brokerd.toml names,
  # group-readable by that directory's group (the plan's).
  grantsDir = mapped.configs.brokerd.paths.grants;
  grantsGroup = (lib.findFirst (p: p.path == grantsDir) (throw "boxmaker: the grants directory ${grantsDir} is not in the plan") plan.paths).group;
  grantFiles = lib.mapAttrs' (name: grant: lib.nameValuePair "${mapped.etcRel grantsDir}/${name}.toml" {
    source = toml.generate "${name}.toml" grant;
    mode = "0640";
    user = "root";
    group = grantsGroup;
  }) cfg.grants;

  # The Podman configuration the tools unit names (CONTAINERS_CONF=).
  toolsConf = lib.findFirst (lib.hasPrefix "CONTAINERS_CONF=") null
    (lib.toList (mapped.services.${bare.unitName "tools"}.serviceConfig.Environment or [ ]));
  toolsConfPath = if toolsConf == null then throw "boxmaker: the plan's tools unit names no CONTAINERS_CONF="
    else lib.removePrefix "CONTAINERS_CONF=" toolsConf;
  toolsConfFile = toml.generate "tools-containers.conf" cfg.podmanSettings;
  # The plan's own file at that path: its text is the option's default,
  # its owner, group and mode are the file's.
  planToolsConfPath = lib.removePrefix "CONTAINERS_CONF=" (lib.findFirst (lib.hasPrefix "CONTAINERS_CONF=")
    (throw "boxmaker: the plan's tools unit names no CONTAINERS_CONF=")
    (lib.toList (bare.services.${bare.unitName "tools"}.serviceConfig.Environment or [ ])));
  planToolsConf = lib.findFirst (x: x.path == planToolsConfPath)
    (throw "boxmaker: the plan holds no ${planToolsConfPath}") plan.paths;

  outsideStore = what: types.addCheck types.str (p: lib.hasPrefix "/" p && !lib.hasPrefix builtins.storeDir p) // {
    description = "absolute path of a file outside the Nix store (${what})";
  };
in
{
  options.services.boxmaker = {
    enable = mkEnableOption "boxmaker, every role as its own system user (deploy/plan.json)";

    package = mkOption {
      type = types.package;
      default = pkgs.callPackage ./package.nix { };
      defaultText = lib.literalExpression "pkgs.callPackage ./nix/package.nix { }";
      description = "The boxmaker package; its bin holds boxmaker and the role links.";
    };

    podmanPackage = mkOption {
      type = types.package;
      default = pkgs.podman;
      defaultText = lib.literalExpression "pkgs.podman";
      description = "Podman, run rootless as the plan's tools user for the tool containers.";
    };

    owners = mkOption {
      type = types.listOf types.str;
      default = [ ];
      example = [ "alice" ];
      description = ''
        The humans who may run bxctl (approvals, chat) and read the audit
        log: added to the plan's owner group (${bare.ownerGroup}).
      '';
    };

    modelServer.url = mkOption {
      type = types.nullOr types.str;
      default = null;
      example = "http://127.0.0.1:8080";
      description = "llama-server's URL, for inferproxy ([upstream] url); null keeps the plan's seed value.";
    };

    mattermost = {
      url = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "https://chat.example.org";
        description = "The Mattermost server. gatewayd starts only when this is set.";
      };
      tokenFile = mkOption {
        type = types.nullOr (outsideStore "the bot's token");
        default = null;
        example = "/var/keys/boxmaker-mattermost-token";
        description = ''
          A file outside the Nix store holding the bot's token. systemd hands
          it to gatewayd as the credential ${tokenName} (LoadCredential=);
          null keeps the plan's path ${(bare.planCredentials "gatewayd").${tokenName}}.
        '';
      };
      owners = mkOption {
        type = types.listOf types.str;
        default = [ ];
        description = "The Mattermost user ids whose messages and approvals count.";
      };
    };

    settings = mkOption {
      type = types.attrsOf toml.type;
      default = { };
      example = lib.literalExpression ''{ brokerd.podman.image = "sha256:..."; brokerd.approvals.ttl_ms = 600000; }'';
      description = ''
        Each role's configuration, by role (loopd, brokerd, gatewayd,
        inferproxy): merged over the plan's seed configuration of that role
        and written, as TOML, where the plan puts it.
      '';
    };

    grants = mkOption {
      type = types.attrsOf toml.type;
      default = { };
      example = lib.literalExpression ''
        { notes-read = { tool = "read_file"; mode = "ask"; max_taint = "secret"; result_class = "private"; constraints.paths = [ "/srv/notes" ]; }; }
      '';
      description = ''
        Grants by name: each becomes <name>.toml in the grants directory.
        A grant names a secret, it never holds one; its text is in the Nix
        store, which every local user can read.
      '';
    };

    secrets = mkOption {
      type = types.attrsOf (outsideStore "a secret");
      default = { };
      example = { weather-api-key = "/var/keys/weather-api-key"; };
      description = ''
        Grants' secrets by name: files outside the Nix store, handed to
        brokerd as systemd credentials (LoadCredential=) and read by it from
        ${bare.credentialsDir "brokerd"}, which brokerd.toml's [paths] secrets names.
      '';
    };

    podmanSettings = mkOption {
      type = toml.type;
      default = builtins.fromTOML planToolsConf.text;
      defaultText = "the plan's tools-containers.conf";
      description = "The rootless Podman service's containers.conf, at the path the plan's tools unit names.";
    };
  };

  config = mkIf cfg.enable {
    assertions = [
      {
        assertion = lib.all (n: builtins.match "[a-z0-9_-]{1,64}" n != null) (builtins.attrNames cfg.secrets);
        message = "services.boxmaker.secrets: a secret's name is 1 to 64 characters of [a-z0-9_-]";
      }
    ];

    users.users = mapped.users;
    users.groups = mapped.groups;
    systemd.tmpfiles.rules = mapped.tmpfiles.home ++ mapped.tmpfiles.etc;

    systemd.services = lib.mapAttrs (name: unit: unit // {
      # A changed configuration restarts its role.
      restartTriggers = lib.mapAttrsToList (rel: _: etcFiles.${rel}.source or etcFiles.${rel}.text)
        (lib.filterAttrs (_: f: f.role == mapped.unitRoles.${name}) mapped.etc);
    } // lib.optionalAttrs (name == bare.unitName "tools") {
      # newuidmap and newgidmap are NixOS's setuid wrappers.
      path = [ "/run/wrappers" ];
      restartTriggers = [ toolsConfFile ];
    } // lib.optionalAttrs (name == bare.unitName "gatewayd" && !gatewaydOn) {
      wantedBy = [ ];
    }) mapped.services;

    environment.etc = etcFiles // grantFiles // {
      ${mapped.etcRel toolsConfPath} = {
        source = toolsConfFile;
        inherit (planToolsConf) mode;
        user = planToolsConf.owner;
        inherit (planToolsConf) group;
      };
    };

    # /etc/containers (policy.json, registries.conf, storage.conf) for Podman.
    virtualisation.containers.enable = true;
    environment.systemPackages = [ cfg.package ];
    environment.variables.BOXMAKER_HOME = plan.home;
  };
}

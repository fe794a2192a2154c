{
  description = "Agent and workflow HTTP service on Effect";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-24.11";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in {
      devShells = forAll (pkgs: {
        default = pkgs.mkShell {
          # Node 20 (the Effect 3 line and ai@6 need no more); python3, make and g++ build better-sqlite3;
          # postgresql for the Postgres tests; chromium for the browser test.
          packages = with pkgs; [ nodejs_20 python3 gnumake gcc postgresql ]
            ++ pkgs.lib.optional pkgs.stdenv.isLinux pkgs.chromium;
        };
      });
    };
}

#!/usr/bin/env bash
# Packages every publishable crate of the workspace (each one without `publish = false`) as
# `cargo publish` would upload it, in dependency order, and checks what came out:
#
# 1. Every one of them has the metadata crates.io shows (cargo only warns about it):
#    description, license, repository, readme, keywords, rust-version.
# 2. `cargo package -p A -p B ...`: one call for all of them. Cargo orders them by dependency
#    and resolves the path dependencies among them against the packages it has just made (a
#    local registry laid over crates.io), so nothing is uploaded and no rlx crate needs to be
#    on crates.io yet. This fails on what would make `cargo publish` fail, such as a
#    dependency without a version (a path-only one: a dev-only crate used as a normal
#    dependency). Then it builds each package from its .crate file (cargo's verification), so
#    a file the build needs but the package leaves out (a kernel, a build-script input) fails.
# 3. Every .crate is under crates.io's 10 MiB limit.
#
# `--no-verify` as the first argument skips the builds of step 2 (seconds instead of minutes).
# Uncommitted changes are packaged as they are (`--allow-dirty`), so the script checks a work
# tree too. Needs python3 (to read `cargo metadata`) and crates.io for the external
# dependencies' index.
set -euo pipefail
cd "$(dirname "$0")/.."

verify=()
if [ "${1:-}" = "--no-verify" ]; then
  verify=(--no-verify)
fi
target=${CARGO_TARGET_DIR:-target}
# The verification builds need no debug info: less to write and link, and less disk.
export CARGO_PROFILE_DEV_DEBUG=${CARGO_PROFILE_DEV_DEBUG:-false}
start=$(date +%s)

# The publishable members (`publish` is null in cargo metadata unless the manifest restricts
# it), each with the metadata crates.io shows; a member without some of it fails here.
list=$(cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys
bad = []
for p in json.load(sys.stdin)["packages"]:
    if p["publish"] is not None:
        continue
    need = ["description", "license", "repository", "readme", "keywords", "rust_version"]
    missing = [k for k in need if not p.get(k)]
    if missing:
        bad.append(p["name"] + " has no " + ", ".join(missing))
    print(p["name"])
if bad:
    sys.exit("package_check: " + "; ".join(bad))
')
mapfile -t crates <<<"$list"
if [ -z "$list" ]; then
  echo "package_check: no publishable crate found" >&2
  exit 1
fi
echo "package_check: ${#crates[@]} crates: ${crates[*]}"

# Stale packages of crates that were renamed or unpublished must not pass the size check.
rm -f "$target"/package/*.crate
# The verification builds read each packaged crate from a local registry, which cargo unpacks
# into $CARGO_HOME/registry/src/-<hash>/NAME-VERSION (the hash from the target folder's path)
# and reuses when that folder already exists: a second run from the same target folder built
# the first run's sources (a module added since was missing). Drop those copies first.
cargo_home=${CARGO_HOME:-$HOME/.cargo}
for c in "${crates[@]}"; do
  rm -rf "$cargo_home"/registry/src/-*/"$c"-[0-9]*
done
args=()
for c in "${crates[@]}"; do
  args+=(-p "$c")
done
cargo package "${args[@]}" --allow-dirty "${verify[@]}"

limit=$((10 * 1024 * 1024))
status=0
for c in "${crates[@]}"; do
  file=$(ls "$target"/package/"$c"-[0-9]*.crate 2>/dev/null | head -1 || true)
  if [ -z "$file" ]; then
    echo "package_check: no .crate for $c in $target/package" >&2
    status=1
    continue
  fi
  size=$(stat -c %s "$file")
  if [ "$size" -gt "$limit" ]; then
    echo "package_check: $file is $size bytes, over crates.io's limit of $limit" >&2
    status=1
  fi
  printf '  %-14s %8d KiB\n' "$c" $((size / 1024))
done
echo "package_check: done in $(($(date +%s) - start)) s"
exit $status

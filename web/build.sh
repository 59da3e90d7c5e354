#!/usr/bin/env bash
# Builds the browser page into target/web/ (index.html, wgsplat_web.js, wgsplat_web_bg.wasm).
# Serve that folder with any static file server, e.g. `python3 -m http.server -d target/web`, and
# put model files beside it to open them with ?model=NAME.
#
# Needs the wasm32 target and the wasm-bindgen command of the same version as the wasm-bindgen
# crate in Cargo.lock; set WASM_BINDGEN to use one that is not on PATH. PROFILE=dev, or
# PROFILE=web-test (unoptimised, what CI's test uses), builds faster and runs slower (default:
# release); any other cargo profile works too. `web/build.sh --bindgen-version` prints the
# wasm-bindgen version it needs and exits.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
profile="${PROFILE:-release}"
wanted="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)"
if [ "${1:-}" = "--bindgen-version" ]; then
  echo "$wanted"
  exit 0
fi
bindgen="${WASM_BINDGEN:-wasm-bindgen}"
if ! command -v "$bindgen" > /dev/null; then
  echo "error: no wasm-bindgen command; install it with: cargo install wasm-bindgen-cli --version $wanted" >&2
  exit 1
fi
have="$("$bindgen" --version | awk '{ print $2 }')"
if [ "$have" != "$wanted" ]; then
  echo "error: wasm-bindgen $have is installed but Cargo.lock has $wanted; install it with: cargo install wasm-bindgen-cli --version $wanted" >&2
  exit 1
fi
if ! rustup target list --installed 2> /dev/null | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi
case "$profile" in
    release) flag=(--release); dir=release ;;
    dev) flag=(); dir=debug ;;
    *) flag=(--profile "$profile"); dir="$profile" ;;
esac
cargo build -p wgsplat-web --lib --target wasm32-unknown-unknown "${flag[@]}"
out="$root/target/web"
mkdir -p "$out"
"$bindgen" --target web --no-typescript --out-dir "$out" \
    "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/$dir/wgsplat_web.wasm"
cp web/index.html "$out/index.html"
echo "built $out ($(du -h "$out/wgsplat_web_bg.wasm" | cut -f1) of WebAssembly)"

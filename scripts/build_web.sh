#!/usr/bin/env bash
# Builds the browser demo into target/web/site (serve that folder; see the README):
#   pkg/      rlx-web for wasm32 (cargo profile `web`, SIMD128) through `wasm-bindgen --target web`
#   index.html, main.js   the demo page (web/)
#   model/    all-MiniLM-L6-v2's files, linked from rlx's model cache (fetched when missing),
#             or from RLX_MODEL_DIR when set
#   fixture.json          sentence-transformers' reference embeddings (the browser test's)
# Needs: rustup target wasm32-unknown-unknown, and wasm-bindgen-cli at the version of the
# wasm-bindgen crate in Cargo.lock.
set -euo pipefail
cd "$(dirname "$0")/.."
site=target/web/site
out="${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/web"

RUSTFLAGS="-C target-feature=+simd128" \
  cargo build --profile web --target wasm32-unknown-unknown -p rlx-web
rm -rf "$site"
mkdir -p "$site/model/1_Pooling"
# The TypeScript declarations (pkg/rlx_web.d.ts) come with the JavaScript glue.
wasm-bindgen --target web --out-dir "$site/pkg" "$out/rlx_web.wasm"
cp web/index.html web/main.js "$site/"
cp crates/rlx-models/tests/fixtures/minilm_reference.json "$site/fixture.json"

model="${RLX_MODEL_DIR:-}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rlx/models/all-minilm-l6-v2"
# A folder sealed by a finished `rlx fetch` (the README's test command fetches it first).
if [ -z "$model" ] && [ -f "$cache/.rlx-complete" ]; then
  model="$cache"
fi
if [ -z "$model" ]; then
  # The test profile: the binary `cargo test --workspace` already built, not a second build.
  model="$(cargo run -q --profile test -p rlx-cli -- fetch all-minilm-l6-v2)"
fi
for f in config.json tokenizer.json model.safetensors sentence_bert_config.json 1_Pooling/config.json; do
  ln -s "$(cd "$model" && pwd)/$f" "$site/model/$f"
done

wasm="$site/pkg/rlx_web_bg.wasm"
raw=$(stat -c %s "$wasm")
gz=$(gzip -9 -c "$wasm" | wc -c)
echo "rlx-web wasm: $raw bytes raw, $gz bytes gzipped (gzip -9)" | tee target/web/size.txt

#!/usr/bin/env bash
# Builds the browser demo (scripts/build_web.sh) and runs it in headless Chromium with WebGPU
# on SwiftShader and with the CPU fallback forced (scripts/browser_test.py). Screenshots and
# results land in target/browser/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build_web.sh
python3 scripts/browser_test.py

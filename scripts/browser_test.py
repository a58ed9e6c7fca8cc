#!/usr/bin/env python3
"""The browser test: the demo page (target/web/site, built by scripts/build_web.sh) in headless
Chromium with WebGPU on SwiftShader, driven over the DevTools protocol.

Two runs: device=auto (must come out as WebGPU, not the CPU fallback) and device=cpu (the wasm
CPU backend, forced). Each embeds sentence-transformers' fixture sentences
(crates/rlx-models/tests/fixtures/minilm_reference.json); every embedding must reach cosine
>= 0.9999 against the fixture. The WebGPU run also checks that f16 precision is refused with an
error naming shader-f16 (SwiftShader has none). A screenshot of each run's page is saved under
target/browser/ and checked to be a real, non-uniform image; target/browser/results.json
keeps the numbers. Any failure, a missing browser or a run past its time limit exits non-zero:
this test never skips.

Needs: chromium (Debian's package, /usr/bin/chromium or $CHROMIUM) and Python's `websockets`.
"""

import base64
import json
import math
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from pathlib import Path

from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "target/web/site"
OUT = ROOT / "target/browser"
FIXTURE = ROOT / "crates/rlx-models/tests/fixtures/minilm_reference.json"
MIN_COSINE = 0.9999
# Per run: loading, compiling and embedding on SwiftShader or the single-threaded wasm CPU
# (the WebGPU run takes about 6 minutes on SwiftShader on 2 cores; the limit leaves room).
RUN_TIMEOUT_S = float(os.environ.get("RLX_BROWSER_TIMEOUT", "1200"))
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-unsafe-webgpu",
    "--use-webgpu-adapter=swiftshader",
    "--enable-features=Vulkan",
    "--window-size=1200,900",
]


def fail(message):
    print(f"browser test FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


class Page:
    """One Chromium page over the DevTools protocol (only the calls this test needs)."""

    def __init__(self, ws_url):
        self.ws = connect(ws_url, max_size=None, open_timeout=30)
        self.next_id = 0
        # The page's console and uncaught exceptions, shown when a run fails or stalls.
        self.console = []

    def call(self, method, timeout=60, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                fail(f"no answer to {method} within {timeout} s")
            message = json.loads(self.ws.recv(timeout=left))
            self.note_event(message)
            if message.get("id") == self.next_id:
                if "error" in message:
                    fail(f"{method}: {message['error']}")
                return message.get("result", {})

    def note_event(self, message):
        params = message.get("params", {})
        if message.get("method") == "Runtime.consoleAPICalled":
            args = [str(a.get("value", a.get("description", ""))) for a in params.get("args", [])]
            self.console.append(f"console.{params.get('type')}: {' '.join(args)}")
        elif message.get("method") == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            exception = details.get("exception", {}).get("description") or details.get("text")
            self.console.append(f"uncaught: {exception}")

    def console_tail(self, lines=20):
        return "\n".join(self.console[-lines:]) or "(nothing on the console)"

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")


def launch(browser, profile):
    proc = subprocess.Popen(
        [browser, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    port_file = Path(profile) / "DevToolsActivePort"
    deadline = time.monotonic() + 60
    while not port_file.exists() or not port_file.read_text().strip():
        if proc.poll() is not None:
            fail(f"chromium exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            fail("chromium did not open its DevTools port within 60 s")
        time.sleep(0.2)
    port = port_file.read_text().split()[0]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
        targets = json.load(r)
    pages = [t for t in targets if t.get("type") == "page"]
    if not pages:
        proc.kill()
        fail("chromium shows no page target")
    return proc, pages[0]["webSocketDebuggerUrl"]


def run_page(browser, url, shot):
    profile = tempfile.mkdtemp(prefix="rlx-chromium-")
    proc, ws_url = launch(browser, profile)
    try:
        page = Page(ws_url)
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.call("Page.navigate", url=url)
        deadline = time.monotonic() + RUN_TIMEOUT_S
        result = None
        while time.monotonic() < deadline:
            text = page.evaluate("window.rlxResult ? JSON.stringify(window.rlxResult) : null")
            if text:
                result = json.loads(text)
                break
            time.sleep(1)
        if result is None:
            status = page.evaluate("document.getElementById('status')?.innerText")
            fail(
                f"{url}: no result within {RUN_TIMEOUT_S:.0f} s; the page says: {status!r}; "
                f"its console:\n{page.console_tail()}"
            )
        png = base64.b64decode(page.call("Page.captureScreenshot", format="png")["data"])
        shot.write_bytes(png)
        return result
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


def check_screenshot(path):
    """A PNG of real content: over 20 KB, and its pixels not all one value."""
    data = path.read_bytes()
    if len(data) < 20_000 or data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path}: {len(data)} bytes, not a PNG of the page")
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    distinct = len(set(zlib.decompress(idat)))
    if distinct < 16:
        fail(f"{path}: only {distinct} distinct byte values: a blank page")
    return len(data)


def check(name, result, fixture, want_device):
    if "error" in result:
        fail(f"{name}: the page reported an error: {result['error']}")
    if result["device"] != want_device:
        fail(f"{name}: ran on {result['device']!r} ({result['adapter']}), expected {want_device!r}")
    got, want = result["embeddings"], fixture["embeddings"]
    if len(got) != len(want):
        fail(f"{name}: {len(got)} embeddings for {len(want)} sentences")
    cosines = [cosine(g, w) for g, w in zip(got, want)]
    worst = min(range(len(cosines)), key=cosines.__getitem__)
    print(
        f"{name}: device {result['device']}, adapter {result['adapter']!r}; "
        f"fixture batch of {result['batch']}: {result['ms_first']:.0f} ms (with compiles); "
        f"demo batch of {result['demo_batch']}: "
        f"{result['demo_ms_first']:.0f} ms first, {result['demo_ms_warm']:.0f} ms warm; "
        f"min cosine {cosines[worst]:.6f} (sentence {worst})"
    )
    bad = [(i, c) for i, c in enumerate(cosines) if not c >= MIN_COSINE]
    if bad:
        fail(f"{name}: cosine below {MIN_COSINE} for sentences {bad}")
    return cosines


def main():
    browser = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        fail("no chromium (Debian: apt-get install chromium)")
    if not (SITE / "pkg/rlx_web_bg.wasm").exists():
        fail(f"{SITE} is not built: run scripts/build_web.sh first")
    fixture = json.loads(FIXTURE.read_text())
    OUT.mkdir(parents=True, exist_ok=True)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(SITE)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}/index.html?test=1"
        runs = [("webgpu", f"{base}&device=auto&f16check=1", "webgpu"), ("cpu", f"{base}&device=cpu", "cpu")]
        summary = {}
        only = os.environ.get("RLX_BROWSER_ONLY")  # "webgpu" or "cpu": one run, for debugging
        for name, url, want in runs:
            if only and name != only:
                continue
            shot = OUT / f"demo-{name}.png"
            result = run_page(browser, url, shot)
            cosines = check(name, result, fixture, want)
            size = check_screenshot(shot)
            print(f"{name}: screenshot {shot.relative_to(ROOT)} ({size} bytes)")
            if name == "webgpu":
                f16 = result.get("f16") or ""
                if "shader-f16" not in f16:
                    fail(f"f16 on SwiftShader should be refused naming shader-f16; got {f16!r}")
                print(f"webgpu: f16 refused as expected: {f16}")
            summary[name] = {k: v for k, v in result.items() if k != "embeddings"}
            summary[name]["cosines"] = cosines
        (OUT / "results.json").write_text(json.dumps(summary, indent=2))
        print(f"browser test: {len(summary)} passed, 0 failed")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()

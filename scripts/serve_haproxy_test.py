#!/usr/bin/env python3
"""Three `rlx serve` replicas behind HAProxy (Debian's package), one killed during a load test.

What it checks (issue 26, "Scale-out on an existing load balancer"):
- HAProxy health-checks each replica on GET /health and spreads streaming chat requests over
  the three (least connections, one request per replica at a time, so HAProxy queues the rest
  itself and a replica never holds work it has not started).
- During the load one replica is killed with SIGKILL while it is streaming an answer. That
  stream fails with a clean error (the connection ends before `data: [DONE]`), promptly, never a
  hang.
- No other request fails: requests HAProxy had not yet sent to the dead replica go to the other
  two (L7 retries on connection failure, redispatch, and the health check taking it out).
- Every completed answer is the same greedy text (one model, one prompt) on every replica.

The replicas run the tiny Llama fixture of rlx-models on `--device vulkan` (lavapipe in CI: slow
enough that a stream is still running when the kill lands). Everything binds 127.0.0.1; every
wait is bounded.

    apt-get install -y haproxy
    python3 scripts/serve_haproxy_test.py --rlx target/debug/rlx
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "crates", "rlx-models", "tests", "fixtures")
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
)
REQUESTS = 30
CLIENTS = 6
MAX_TOKENS = 32  # the tiny model has 64 positions; the chat prompt takes 27
KILL_AFTER = 6  # completed requests before the kill
TIMEOUT = 60  # seconds any one request may take


def tiny_llama(tmp):
    """The tiny Llama checkpoint with a tokenizer and a chat template, in a folder of its own."""
    d = os.path.join(tmp, "tiny-llama")
    os.makedirs(d)
    for name in ["config.json", "generation_config.json", "model.safetensors"]:
        shutil.copy(os.path.join(FIXTURES, "decoders", "llama", name), d)
    shutil.copy(os.path.join(FIXTURES, "gguf_decoders", "llama.tokenizer.json"), os.path.join(d, "tokenizer.json"))
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"chat_template": CHAT_TEMPLATE, "bos_token": "<s>", "eos_token": "</s>"}, f)
    return d


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_replica(binary, model, device, name):
    cmd = [binary, "serve", "--model", model, "--device", device, "--port", "0", "--max-streams", "1",
           "--queue", "4"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    port = None
    deadline = time.time() + 300
    while time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            sys.exit(f"replica {name} exited early ({proc.wait()})")
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
        if "ready on" in line:
            break
    else:
        proc.kill()
        sys.exit(f"replica {name} was not ready within 300 s")
    # Keep draining its request log so the pipe never fills.
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    return proc, port


def haproxy_config(front, ports):
    servers = "\n".join(f"    server r{i} 127.0.0.1:{p} check" for i, p in enumerate(ports))
    return f"""global
    maxconn 200
    log stdout format raw local0 info
defaults
    mode http
    log global
    option httplog
    option log-health-checks
    timeout connect 2s
    timeout client {TIMEOUT}s
    timeout server {TIMEOUT}s
    timeout queue {TIMEOUT}s
    retries 3
    option redispatch 1
    option http-buffer-request
    retry-on conn-failure empty-response
frontend fe
    bind 127.0.0.1:{front}
    default_backend rlx
backend rlx
    balance leastconn
    option httpchk GET /health
    http-check expect status 200
    timeout check 5s
    default-server inter 500ms fall 3 rise 1 maxconn 1 observe layer4 error-limit 1 on-error mark-down
    http-response set-header X-Served-By %[srv_name]
{servers}
"""


def wait_healthy(front, deadline_s=60):
    deadline = time.time() + deadline_s
    ok = 0
    while time.time() < deadline and ok < 3:
        try:
            c = http.client.HTTPConnection("127.0.0.1", front, timeout=5)
            c.request("GET", "/health")
            ok = ok + 1 if c.getresponse().status == 200 else 0
            c.close()
        except OSError:
            ok = 0
        time.sleep(0.1)
    if ok < 3:
        sys.exit("HAProxy did not answer /health within the deadline")


class Load:
    """The client side: streaming chat requests, the kill, and what each request saw."""

    def __init__(self, front, victim):
        self.front = front
        self.victim = victim  # (name, process)
        self.lock = threading.Lock()
        self.completed = 0
        self.killed_stream = None  # index of the request whose replica was killed mid-stream
        self.results = []

    def one(self, i):
        t0 = time.time()
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hello there"}],
                           "temperature": 0, "max_tokens": MAX_TOKENS, "stream": True})
        server, text, done, error = None, "", False, None
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.front, timeout=TIMEOUT)
            c.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            r = c.getresponse()
            server = r.getheader("X-Served-By")
            if r.status != 200:
                error = f"HTTP {r.status}: {r.read()[:200]!r}"
            else:
                first = True
                for raw in r:
                    line = raw.decode("utf-8", "replace").strip()
                    if not line.startswith("data: "):
                        continue
                    data = line[len("data: "):]
                    if data == "[DONE]":
                        done = True
                        break
                    chunk = json.loads(data)
                    if chunk.get("choices"):
                        text += chunk["choices"][0].get("delta", {}).get("content") or ""
                    if first:
                        first = False
                        self.maybe_kill(i, server)
                if not done:
                    error = "the stream ended before [DONE]"
            c.close()
        except (OSError, http.client.HTTPException, ValueError) as e:
            error = f"{type(e).__name__}: {e}"
        with self.lock:
            if done:
                self.completed += 1
            self.results.append({"i": i, "server": server, "done": done, "text": text, "error": error,
                                 "seconds": time.time() - t0})

    def maybe_kill(self, i, server):
        """Kills the victim replica while request i is streaming from it, once, after the load
        has warmed up."""
        name, proc = self.victim
        with self.lock:
            if self.killed_stream is not None or self.completed < KILL_AFTER or server != name:
                return
            self.killed_stream = i
        proc.send_signal(signal.SIGKILL)
        print(f"killed replica {name} (pid {proc.pid}) while request {i} was streaming from it")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(ROOT, "target", "debug", "rlx"), help="the rlx binary")
    ap.add_argument("--device", default="vulkan", help="the replicas' device")
    ap.add_argument("--haproxy", default=shutil.which("haproxy") or "/usr/sbin/haproxy")
    args = ap.parse_args()
    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="rlx-serve-haproxy-")
    model = tiny_llama(tmp)
    replicas = [start_replica(args.rlx, model, args.device, f"r{i}") for i in range(3)]
    front = free_port()
    cfg = os.path.join(tmp, "haproxy.cfg")
    with open(cfg, "w") as f:
        f.write(haproxy_config(front, [p for _, p in replicas]))
    hlog = open(os.path.join(tmp, "haproxy.log"), "w")
    haproxy = subprocess.Popen([args.haproxy, "-f", cfg, "-db"], stdout=hlog, stderr=subprocess.STDOUT)
    try:
        wait_healthy(front)
        load = Load(front, ("r1", replicas[1][0]))
        with ThreadPoolExecutor(CLIENTS) as pool:
            list(pool.map(load.one, range(REQUESTS)))
        results = sorted(load.results, key=lambda r: r["i"])
        failed = [r for r in results if not r["done"]]
        served = {}
        for r in results:
            served[r["server"]] = served.get(r["server"], 0) + 1
        print(f"{REQUESTS} streaming requests, {CLIENTS} at a time: served by {served}; "
              f"{len(failed)} failed; slowest {max(r['seconds'] for r in results):.1f} s")
        alive = {f"r{k}": p.poll() is None for k, (p, _) in enumerate(replicas)}
        print(f"replicas alive after the load: {alive}")
        for r in failed:
            print(f"  request {r['i']} on {r['server']}: {r['error']} after {r['seconds']:.1f} s")

        # The kill landed mid-stream, and that stream (only it) failed, cleanly and promptly.
        assert load.killed_stream is not None, "no stream from r1 to kill (the load never reached r1)"
        assert [r["i"] for r in failed] == [load.killed_stream], \
            f"failed {[r['i'] for r in failed]}, expected only the killed stream {load.killed_stream}"
        assert failed[0]["seconds"] < TIMEOUT / 2, "the killed stream hung instead of failing"
        # Every replica served, the other answers are all the same greedy text.
        assert set(served) == {"r0", "r1", "r2"}, served
        texts = {r["text"] for r in results if r["done"]}
        assert len(texts) == 1 and texts != {""}, texts
        # Requests after the kill went to the two live replicas only.
        after = [r for r in results if r["i"] > load.killed_stream + CLIENTS]
        assert after and all(r["server"] in ("r0", "r2") for r in after), \
            [(r["i"], r["server"]) for r in after]
        print(f"serve behind HAProxy: ok in {time.time() - t0:.1f} s")
    finally:
        haproxy.terminate()
        for proc, _ in replicas:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in [haproxy] + [p for p, _ in replicas]:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        hlog.close()
        if os.environ.get("RLX_KEEP_TMP"):
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

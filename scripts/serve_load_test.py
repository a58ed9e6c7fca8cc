#!/usr/bin/env python3
"""`rlx serve` under load and faults (issue 26 §3, "Load" and "Faults"). Plain Python: the
standard library's http.client and threads, nothing from pip.

Server A: the tiny Llama fixture of rlx-models and all-minilm-l6-v2 on the CPU, with continuous
batching (`--max-streams 4`: up to four generations share each decode step).
1. Load: 500 requests, 32 at a time, three in five streaming chats (five prompts, greedy, 16
   tokens) and two in five embeddings. Every request succeeds; each stream's text equals the same
   request run alone beforehand, each embedding equals its alone-run within 1e-5. Prints
   requests/s, aggregate tokens/s and p50/p99 time to first token.
2. Clients killed mid-stream: 24 streams whose client closes the socket (RST) after the first
   chunk (the role, on admission) or, for half of them, the first token's text.
   rlx_requests_cancelled_total grows by more than three quarters of them, the server is
   healthy, and the next request is answered (the same text as alone) within 10 s.
3. A flood past the queue limit, on server B (the tiny Llama on the CPU, `--max-streams 1
   --queue 2`): 50 chats at once; every answer is 200 or 429 with Retry-After and OpenAI's error
   body (rate_limit_error), at least one of each; healthy afterwards.
5. Flat memory, on A: 10 000 short requests (1-4-token completions and one-text embeddings), 8
   at a time. The server's VmRSS (/proc/PID/status) after 1 000 and at the end grows by less
   than RSS_BOUND_MIB, and its live device objects (`rlx_device_live_objects` on /metrics, what
   `rlx bench soak` reads) do not grow. The CPU counts no device objects, so the same soak,
   shorter (1 000), then runs on server C on `--device vulkan` (lavapipe in CI), which must show
   them.
4. SIGTERM on A with six streams in flight (admitted, the later ones still queued or generating):
   every one ends with [DONE] and its alone-run text, a new connection is refused, and the
   process exits 0 within --drain-timeout.

Everything binds 127.0.0.1; every wait is bounded. About 75 s on two cores.

    rlx fetch all-minilm-l6-v2
    python3 scripts/serve_load_test.py --rlx target/debug/rlx
"""

import argparse
import http.client
import json
import math
import os
import queue
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "crates", "rlx-models", "tests", "fixtures")
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
)
TIMEOUT = 60  # seconds any one request may take
# Short prompts: the tiny model has 64 positions and the chat template takes about 25 of them.
PROMPTS = ["hello there", "how are you", "tell me a story", "once upon a time", "good morning"]
TEXTS = [["A man is eating food."], ["The sky is blue today.", "Someone is having a meal."],
         ["rlx serves embeddings"], ["a b c d e f g"]]
CHAT_TOKENS = 16
STREAMS = 4  # --max-streams of servers A and C
LOAD_REQUESTS, LOAD_CLIENTS = 500, 32
KILLED_STREAMS = 24
FLOOD = 50
SOAK_REQUESTS, SOAK_WARMUP, SOAK_CLIENTS, SOAK_EMBEDDERS = 10_000, 1_000, 8, 2
VK_SOAK_REQUESTS, VK_SOAK_WARMUP = 1_000, 200
# RSS may grow by less than this after the warm-up. A leak of 1 KiB per request would add ~9 MiB
# over the CPU soak's 9 000 requests after its warm-up (10 KiB per request over the Vulkan soak's
# 800); what allocators settle into after a warm-up (thread arenas, the tokenizers' and lavapipe's
# caches) measured +0.1 MiB (CPU) and +2.1 MiB (Vulkan) here.
RSS_BOUND_MIB = 8


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


class Server:
    """An `rlx serve` process on 127.0.0.1 and a free port, ready to answer."""

    def __init__(self, binary, name, *args):
        self.name = name
        cmd = [binary, "serve", "--port", "0", *args]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        self.log = deque(maxlen=40)
        lines = queue.Queue()

        def drain():  # the request log, so that the pipe never fills
            for line in self.proc.stderr:
                self.log.append(line.rstrip())
                lines.put(line)
            lines.put(None)

        threading.Thread(target=drain, daemon=True).start()
        self.port = None
        deadline = time.monotonic() + 300
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                self.fail(f"not ready within 300 s ({' '.join(cmd)})")
            if line is None:
                self.fail(f"exited early with {self.proc.wait()}")
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
            if "ready on" in line:
                break
        # Drop the queued lines from here on; the drain thread keeps the log tail.
        threading.Thread(target=lambda: [None for _ in iter(lines.get, None)], daemon=True).start()

    def fail(self, why):
        if self.proc.poll() is None:
            self.proc.kill()
        sys.exit(f"server {self.name}: {why}\n" + "\n".join(self.log))

    def conn(self, timeout=TIMEOUT):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def get(self, path):
        c = self.conn(10)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode()
        finally:
            c.close()

    def healthy(self):
        try:
            return self.get("/health")[0] == 200
        except OSError:
            return False

    def metrics(self):
        """Every sample of /metrics, by its name with labels."""
        out = {}
        for line in self.get("/metrics")[1].splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def live_objects(self):
        """(live device objects summed over kinds, device buffer bytes) by worker."""
        live = {}
        for name, v in self.metrics().items():
            m = re.match(r'rlx_device_live_objects\{kind="\w+",worker="(\w+)"\}', name)
            if m:
                objects, nbytes = live.get(m.group(1), (0, 0))
                live[m.group(1)] = (objects + int(v), nbytes)
            m = re.match(r'rlx_device_buffer_bytes\{worker="(\w+)"\}', name)
            if m:
                objects, nbytes = live.get(m.group(1), (0, 0))
                live[m.group(1)] = (objects, nbytes + int(v))
        return live

    def rss_mib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        self.fail("no VmRSS in /proc/PID/status")

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def post(conn, path, body):
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    return conn.getresponse()


def chat_body(prompt, max_tokens, stream=True):
    body = {"messages": [{"role": "user", "content": prompt}], "temperature": 0, "max_tokens": max_tokens,
            "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def stream_chat(server, prompt, max_tokens=CHAT_TOKENS, on_chunk=None):
    """One streaming chat: {text, tokens, ttft, seconds, ended, done, error}. `on_chunk(conn,
    response, n)` runs at the n-th `data:` chunk (the first is the assistant's role, sent on
    admission; the second the first token's text); returning True stops reading there (it
    closed the socket)."""
    t0 = time.monotonic()
    out = {"text": "", "tokens": 0, "ttft": None, "done": False, "error": None}
    c = server.conn()
    try:
        r = post(c, "/v1/chat/completions", chat_body(prompt, max_tokens))
        if r.status != 200:
            out["error"] = f"HTTP {r.status}: {r.read()[:200]!r}"
            return out
        n = 0
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data: "):
                continue
            data = line[len("data: "):]
            n += 1
            if on_chunk and on_chunk(c, r, n):
                return out
            if data == "[DONE]":
                out["done"] = True
                break
            chunk = json.loads(data)
            if chunk.get("usage"):
                out["tokens"] = chunk["usage"]["completion_tokens"]
            for choice in chunk.get("choices") or []:
                piece = choice.get("delta", {}).get("content")
                if piece:
                    out["ttft"] = out["ttft"] or time.monotonic() - t0
                    out["text"] += piece
        if not out["done"]:
            out["error"] = "the stream ended before [DONE]"
    except (OSError, http.client.HTTPException, ValueError) as e:
        out["error"] = f"{type(e).__name__}: {e}"
    finally:
        out["ended"] = time.monotonic()
        out["seconds"] = out["ended"] - t0
        c.close()
    return out


def embed(conn, texts):
    """The embeddings of `texts` (float lists) through `conn`, or raises with the answer."""
    r = post(conn, "/v1/embeddings", {"input": texts})
    body = r.read()
    if r.status != 200:
        raise RuntimeError(f"embeddings: HTTP {r.status}: {body[:200]!r}")
    return [d["embedding"] for d in sorted(json.loads(body)["data"], key=lambda d: d["index"])]


def complete(conn, prompt, max_tokens):
    r = post(conn, "/v1/completions", {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0})
    body = r.read()
    if r.status != 200:
        raise RuntimeError(f"completions: HTTP {r.status}: {body[:200]!r}")
    return json.loads(body)["choices"][0]["text"]


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(p / 100 * len(xs)) - 1))]


def worst_diff(got, want):
    assert len(got) == len(want) and all(len(g) == len(w) for g, w in zip(got, want)), (len(got), len(want))
    return max(abs(a - b) for g, w in zip(got, want) for a, b in zip(g, w))


def load(a):
    """1. The mixed load against alone-runs."""
    alone_chat = {}
    for p in PROMPTS:
        r = stream_chat(a, p)
        assert r["done"] and r["text"], (p, r)
        alone_chat[p] = r["text"]
    c = a.conn()
    alone_emb = {i: embed(c, t) for i, t in enumerate(TEXTS)}
    c.close()

    def one(i):
        if i % 5 in (1, 3):  # two in five are embeddings
            k = i % len(TEXTS)
            t0 = time.monotonic()
            c = a.conn()
            try:
                got = embed(c, TEXTS[k])
                return {"kind": "embed", "diff": worst_diff(got, alone_emb[k]), "seconds": time.monotonic() - t0}
            except (OSError, http.client.HTTPException, ValueError, RuntimeError) as e:
                return {"kind": "embed", "error": f"{type(e).__name__}: {e}"}
            finally:
                c.close()
        p = PROMPTS[(i + i // 5) % len(PROMPTS)]  # every prompt, though chats are 0, 2, 4 mod 5
        r = stream_chat(a, p)
        r.update(kind="chat", prompt=p)
        return r

    t0 = time.monotonic()
    with ThreadPoolExecutor(LOAD_CLIENTS) as pool:
        results = list(pool.map(one, range(LOAD_REQUESTS)))
    wall = time.monotonic() - t0
    failed = [r for r in results if r.get("error")]
    chats = [r for r in results if r["kind"] == "chat" and not r.get("error")]
    embeds = [r for r in results if r["kind"] == "embed" and not r.get("error")]
    tokens = sum(r["tokens"] for r in chats)
    ttfts = [r["ttft"] for r in chats if r["ttft"] is not None]
    print(f"1. load: {LOAD_REQUESTS} requests ({len(chats)} streaming chats, {len(embeds)} embeddings), "
          f"{LOAD_CLIENTS} at a time, in {wall:.1f} s: {LOAD_REQUESTS / wall:.1f} requests/s, "
          f"{tokens / wall:.1f} tokens/s, time to first token p50 {percentile(ttfts, 50) * 1000:.0f} ms "
          f"p99 {percentile(ttfts, 99) * 1000:.0f} ms")
    assert not failed, failed[:5]
    wrong = [(r["prompt"], r["text"], alone_chat[r["prompt"]]) for r in chats if r["text"] != alone_chat[r["prompt"]]]
    assert not wrong, f"{len(wrong)} streams differ from their alone-run, e.g. {wrong[:3]}"
    assert all(r["tokens"] >= 1 for r in chats), "a stream reported no usage"
    worst = max(r["diff"] for r in embeds)
    assert worst <= 1e-5, f"an embedding differs from its alone-run by {worst}"
    print(f"   every stream equals its alone-run; embeddings within {worst:.1e} of theirs")
    m = a.metrics()
    steps, lone = m["rlx_decode_step_streams_count"], m['rlx_decode_step_streams_bucket{le="1"}']
    full = steps - m[f'rlx_decode_step_streams_bucket{{le="{STREAMS // 2}"}}']
    print(f"   continuous batching: {steps:.0f} decode steps, {steps - lone:.0f} carrying 2 or more streams, "
          f"{full:.0f} more than {STREAMS // 2}")
    assert lone < steps, "no decode step carried two streams: the requests were not batched"
    return alone_chat


def killed_clients(a, alone_chat):
    """2. Streams whose client goes away after the first chunk or the first token's."""
    before = a.metrics().get("rlx_requests_cancelled_total", 0)

    def leave_after(k):
        def leave(c, r, n):
            if n < k:
                return False
            # As a killed process: the socket closes at once, unread data and all (RST).
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            r.close()
            c.close()
            return True
        return leave

    # Half leave after the first chunk (most of them still queued), half after the first token's
    # (their generation running).
    with ThreadPoolExecutor(KILLED_STREAMS) as pool:
        results = list(pool.map(lambda i: stream_chat(a, PROMPTS[i % len(PROMPTS)], 32, leave_after(1 + i % 2)),
                                range(KILLED_STREAMS)))
    opened = [r for r in results if not r["error"]]
    assert len(opened) == KILLED_STREAMS, [r["error"] for r in results if r["error"]][:3]
    # Queued ones are counted when the worker reaches them: wait for it (bounded).
    deadline = time.monotonic() + 60
    cancelled = 0
    while time.monotonic() < deadline:
        cancelled = a.metrics().get("rlx_requests_cancelled_total", 0) - before
        if cancelled >= KILLED_STREAMS and a.metrics().get('rlx_queue_depth{queue="generate"}', 1) == 0:
            break
        time.sleep(0.2)
    t0 = time.monotonic()
    assert a.healthy(), "unhealthy after the clients went away"
    r = stream_chat(a, PROMPTS[0])
    took = time.monotonic() - t0
    print(f"2. {KILLED_STREAMS} clients left mid-stream: {int(cancelled)} counted cancelled; "
          f"the next request answered in {took:.2f} s")
    # Most, not all: a generation may finish between the client's close and the server noticing.
    assert cancelled > KILLED_STREAMS * 3 // 4, f"only {cancelled} of {KILLED_STREAMS} counted cancelled"
    assert r["done"] and r["text"] == alone_chat[PROMPTS[0]], r
    assert took < 10, f"the next request took {took:.1f} s"


def flood(b):
    """3. More requests at once than --max-streams 1 --queue 2 admit."""
    start = threading.Barrier(FLOOD, timeout=30)

    def one(i):
        c = b.conn()
        try:
            c.connect()
            start.wait()
            r = post(c, "/v1/chat/completions", chat_body(PROMPTS[i % len(PROMPTS)], 8, stream=False))
            body = r.read()
            return r.status, r.getheader("Retry-After"), body
        except (OSError, http.client.HTTPException, threading.BrokenBarrierError) as e:
            return None, None, f"{type(e).__name__}: {e}".encode()
        finally:
            c.close()

    with ThreadPoolExecutor(FLOOD) as pool:
        answers = list(pool.map(one, range(FLOOD)))
    counts = {}
    for status, retry, body in answers:
        counts[status] = counts.get(status, 0) + 1
        assert status in (200, 429), (status, body[:300])
        doc = json.loads(body)
        if status == 200:
            assert doc["choices"][0]["message"]["content"] is not None, doc
        else:
            assert retry is not None and int(retry) >= 1, f"429 without Retry-After: {retry!r}"
            err = doc["error"]
            assert err["type"] == "rate_limit_error" and err["message"] and "code" in err and "param" in err, err
    print(f"3. flood: {FLOOD} requests at once against --max-streams 1 --queue 2: {counts}")
    assert counts.get(429, 0) >= 1, "no request was refused"
    assert counts.get(200, 0) >= 1, "no request was served"
    assert b.healthy(), "unhealthy after the flood"


def soak(server, total, warmup, label):
    """5. Many short requests: SOAK_EMBEDDERS clients send embeddings of one short text, the
    others 1-4-token completions. RSS and live device objects after the warm-up and at the end.

    The embedding clients are few and the text one, so that the embedder's batches take few
    shapes: it compiles (and caches, up to 8) an executable per batch shape, each holding its
    own copy of the weights (~90 MiB for MiniLM), so a first-seen batch size after the warm-up
    would step RSS up by that much without any leak. Each possible shape is compiled before the
    warm-up."""
    counter = {"next": 0, "end": 0, "embeds": 0}
    errors = []
    lock = threading.Lock()

    def take():
        with lock:
            if counter["next"] >= counter["end"]:
                return None
            counter["next"] += 1
            return counter["next"] - 1

    def client(k):
        conn = server.conn()
        while (i := take()) is not None:
            try:
                if k < SOAK_EMBEDDERS:
                    embed(conn, ["a short text"])
                    with lock:
                        counter["embeds"] += 1
                else:
                    complete(conn, PROMPTS[i % len(PROMPTS)], 1 + i % 4)
            except (OSError, http.client.HTTPException, ValueError, RuntimeError) as e:
                conn.close()
                conn = server.conn()
                with lock:
                    errors.append(f"{type(e).__name__}: {e}")
        conn.close()

    def run_to(end):
        counter["end"] = end
        threads = [threading.Thread(target=client, args=(k,)) for k in range(SOAK_CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
            assert not t.is_alive(), "a soak client is stuck"

    # Every batch the embedder can see here holds 1..SOAK_EMBEDDERS copies of the one text (each
    # embedding client has one request out at a time): compile each of those shapes first, so
    # which ones the timing of the warm-up happens to produce cannot matter. CI once saw the
    # two-text shape first appear after a Vulkan warm-up, and RSS and the live objects step up
    # by one copy of the weights.
    conn = server.conn()
    for n in range(1, SOAK_EMBEDDERS + 1):
        embed(conn, ["a short text"] * n)
    conn.close()
    t0 = time.monotonic()
    run_to(warmup)
    rss0, live0 = server.rss_mib(), server.live_objects()
    run_to(total)
    rss1, live1 = server.rss_mib(), server.live_objects()
    wall = time.monotonic() - t0
    print(f"5. {label}: {total} short requests ({counter['embeds']} embeddings), {SOAK_CLIENTS} at a time, "
          f"in {wall:.1f} s ({total / wall:.0f}/s); RSS after {warmup}: {rss0:.1f} MiB, at the end: "
          f"{rss1:.1f} MiB ({rss1 - rss0:+.1f}); live device objects and bytes "
          f"{live0 or 'none (the CPU counts none)'} -> {live1 or 'none'}")
    assert not errors, errors[:5]
    assert rss1 - rss0 < RSS_BOUND_MIB, f"RSS grew by {rss1 - rss0:.1f} MiB (bound {RSS_BOUND_MIB} MiB)"
    assert set(live1) == set(live0), (live0, live1)
    for w, (objects, nbytes) in live0.items():
        assert live1[w][0] <= objects, f"{w}: live device objects grew from {objects} to {live1[w][0]}"
        # As rlx bench soak: device bytes may move by 1% (a staging buffer resized).
        assert live1[w][1] <= nbytes * 1.01, f"{w}: device bytes grew from {nbytes} to {live1[w][1]}"
    return live0


def sigterm(a, alone_chat, drain):
    """4. SIGTERM with streams in flight."""
    started = threading.Semaphore(0)

    def in_flight(c, r, n):
        if n == 1:
            started.release()
        return False  # keep reading

    with ThreadPoolExecutor(6) as pool:
        futures = [pool.submit(stream_chat, a, PROMPTS[i % len(PROMPTS)], CHAT_TOKENS, in_flight) for i in range(6)]
        for _ in range(6):
            assert started.acquire(timeout=TIMEOUT), "a stream did not start"
        t0 = time.monotonic()
        a.proc.send_signal(signal.SIGTERM)
        refused = False
        while time.monotonic() - t0 < 10 and not refused:
            try:
                socket.create_connection(("127.0.0.1", a.port), timeout=1).close()
                time.sleep(0.05)
            # Refused outright, or reset: a connection the kernel queued while the listener
            # was closing is reset, never accepted (seen once in CI).
            except (ConnectionRefusedError, ConnectionResetError):
                refused = True
        results = [f.result(timeout=TIMEOUT) for f in futures]
    try:
        code = a.proc.wait(timeout=drain + 10)
    except subprocess.TimeoutExpired:
        a.fail(f"still running {drain + 10} s after SIGTERM")
    took = time.monotonic() - t0
    # All six were admitted (their first chunk came) before the signal; the worker runs one at a
    # time, so the later ones were still queued or generating when it landed (their [DONE] came
    # after it).
    after = sum(r["ended"] > t0 for r in results)
    print(f"4. SIGTERM with 6 streams in flight ({after} of them finished after the signal): "
          f"{sum(r['done'] for r in results)} ended with [DONE]; new connections refused: {refused}; "
          f"exit {code} after {took:.1f} s (--drain-timeout {drain})")
    for r in results:
        assert r["done"], r
    assert after >= 1, "every stream had ended before SIGTERM: nothing was in flight"
    for i, r in enumerate(results):
        assert r["text"] == alone_chat[PROMPTS[i % len(PROMPTS)]], (r["text"], alone_chat[PROMPTS[i % len(PROMPTS)]])
    assert refused, "a new connection was accepted after SIGTERM"
    assert code == 0, f"exit status {code} after SIGTERM"
    assert took <= drain, f"exited {took:.1f} s after SIGTERM, past --drain-timeout {drain}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(ROOT, "target", "debug", "rlx"), help="the rlx binary")
    ap.add_argument("--embedding-model", default="all-minilm-l6-v2")
    ap.add_argument("--soak", type=int, default=SOAK_REQUESTS, help="requests of the CPU soak")
    ap.add_argument("--vulkan-soak", type=int, default=VK_SOAK_REQUESTS,
                    help="requests of the Vulkan soak for the live device objects (0: skip it)")
    args = ap.parse_args()
    t_all = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="rlx-serve-load-")
    model = tiny_llama(tmp)
    drain = 20
    servers = []
    try:
        a = Server(args.rlx, "A", "--model", model, "--embedding-model", args.embedding_model, "--device", "cpu",
                   "--max-streams", str(STREAMS),
                   "--drain-timeout", str(drain))
        servers.append(a)
        alone_chat = load(a)
        killed_clients(a, alone_chat)

        b = Server(args.rlx, "B", "--model", model, "--device", "cpu", "--max-streams", "1", "--queue", "2")
        servers.append(b)
        flood(b)
        b.stop()

        soak(a, args.soak, min(SOAK_WARMUP, args.soak // 10), "cpu")
        sigterm(a, alone_chat, drain)

        if args.vulkan_soak:
            c = Server(args.rlx, "C", "--model", model, "--embedding-model", args.embedding_model,
                       "--max-streams", str(STREAMS),
                       "--device", "vulkan")
            servers.append(c)
            live = soak(c, args.vulkan_soak, min(VK_SOAK_WARMUP, args.vulkan_soak // 5), "vulkan")
            assert set(live) == {"generate", "embed"} and all(n > 0 and nb > 0 for n, nb in live.values()), \
                f"vulkan shows no live device objects: {live}"
        print(f"serve under load and faults: ok in {time.monotonic() - t_all:.1f} s")
    finally:
        for s in servers:
            s.stop()
        if os.environ.get("RLX_KEEP_TMP"):
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

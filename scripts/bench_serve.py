#!/usr/bin/env python3
"""Streaming-generation load on an OpenAI-compatible server: `rlx serve` or llama.cpp's
`llama-server`, under the same client load (issue 26 §4). Standard library only.

Sends REQUESTS streaming `/v1/completions` requests, CONCURRENCY at a time, each asking for
MAX_TOKENS new tokens after the same prompt, and prints one line:

    serve NAME: R requests (F failed) in W s: aggregate T tokens/s, time to first token p50 A ms
    p99 B ms, inter-token latency p50 C ms p99 D ms

Tokens are counted from each answer's `usage` (requested with stream_options.include_usage)
when the server sends it, otherwise as the number of text chunks. Time to first token runs from
sending the request to the first chunk with text; inter-token latency is the gap between text
chunks of one stream. A random-init model may make llama-server answer 500 on invalid UTF-8: such
answers are counted as failed and reported, not hidden.

    python3 scripts/bench_serve.py --url http://127.0.0.1:8080 --name rlx [--requests 64]
        [--concurrency 32] [--max-tokens 256] [--prompt-ids 128] [--extra '{"ignore_eos": true}']
"""
import argparse
import http.client
import json
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

PROMPT = ("The history of computing is a story of machines that grew smaller and faster while the "
          "problems they solved grew larger. Early engineers counted every instruction; today a "
          "single card runs billions of them each second. Write a long essay about what comes next.")


def percentile(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def one(url, body, timeout):
    """Runs one streaming request: (tokens, ttft, [gaps], error)."""
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    t0 = time.monotonic()
    first, last, gaps, chunks, usage = None, None, [], 0, None
    try:
        conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        r = conn.getresponse()
        if r.status != 200:
            return 0, None, [], f"HTTP {r.status}: {r.read()[:200]!r}"
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            msg = json.loads(data)
            if msg.get("usage"):
                usage = msg["usage"].get("completion_tokens", usage)
            text = "".join(c.get("text") or "" for c in msg.get("choices", []))
            if not text:
                continue
            now = time.monotonic()
            if first is None:
                first = now - t0
            else:
                gaps.append(now - last)
            last = now
            chunks += 1
        return (usage if usage is not None else chunks), first, gaps, None
    except (OSError, http.client.HTTPException, ValueError) as e:
        return 0, None, [], f"{type(e).__name__}: {e}"
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--extra", default="{}", help="JSON fields added to every request body")
    ap.add_argument("--prompt-ids", type=int, default=0,
                    help="send a prompt of this many token ids (OpenAI's token-array form) instead of the text: "
                         "a random-init GGUF's placeholder vocabulary may not tokenize text in every server")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    prompt = [1000 + (7 * i) % 5000 for i in range(args.prompt_ids)] if args.prompt_ids else PROMPT
    body = {"prompt": prompt, "max_tokens": args.max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    body.update(json.loads(args.extra))
    t0 = time.monotonic()
    with ThreadPoolExecutor(args.concurrency) as pool:
        results = list(pool.map(lambda _: one(args.url, body, args.timeout), range(args.requests)))
    wall = time.monotonic() - t0
    ok = [r for r in results if r[3] is None]
    failed = [r[3] for r in results if r[3] is not None]
    tokens = sum(r[0] for r in ok)
    ttft = [r[1] for r in ok if r[1] is not None]
    gaps = [g for r in ok for g in r[2]]
    print(f"serve {args.name}: {len(results)} requests ({len(failed)} failed) in {wall:.1f} s: aggregate "
          f"{tokens / wall:.0f} tokens/s ({tokens} tokens), time to first token p50 "
          f"{percentile(ttft, 50) * 1e3:.0f} ms p99 {percentile(ttft, 99) * 1e3:.0f} ms, inter-token latency "
          f"p50 {percentile(gaps, 50) * 1e3:.1f} ms p99 {percentile(gaps, 99) * 1e3:.1f} ms", flush=True)
    for e in failed[:3]:
        print(f"  failed: {e}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""`rlx serve` against the official `openai` Python client (PyPI).

Starts `rlx serve` on 127.0.0.1 (a free port, an API key) with a language model and an
embedding model, then through the `openai` client runs chat (whole and streamed), completions
(whole and streamed) and embeddings, and checks the answers equal `rlx generate` and `rlx embed`
on the same inputs: greedy text identical, embeddings within 1e-5. `curl -N` shows the raw SSE
stream. Ends the server with SIGTERM and checks it exits cleanly. Every wait is bounded.

Defaults: the tiny Llama fixture of rlx-models (given a tokenizer.json and a chat template in a
temporary folder) and all-minilm-l6-v2 (fetched into the cache when missing).

    python3 -m pip install openai
    python3 scripts/serve_openai_client.py --rlx target/debug/rlx
"""

import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import openai

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "crates", "rlx-models", "tests", "fixtures")
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
)
API_KEY = "sk-rlx-test"


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


def rlx(binary, *args):
    out = subprocess.run([binary, *args], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        sys.exit(f"rlx {' '.join(args)} failed:\n{out.stderr}")
    return out.stdout


def start(binary, model, embedding_model):
    cmd = [binary, "serve", "--model", model, "--embedding-model", embedding_model, "--device", "cpu",
           "--port", "0", "--api-key", API_KEY]
    server = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    url = None
    deadline = time.time() + 300
    while time.time() < deadline:
        line = server.stderr.readline()
        if not line:
            sys.exit(f"rlx serve exited early ({server.wait()})")
        sys.stderr.write(line)
        m = re.search(r"listening on (http://\S+)", line)
        if m:
            url = m.group(1)
        if "ready on" in line:
            break
    else:
        server.kill()
        sys.exit("rlx serve was not ready within 300 s")
    # Keep draining the request log so the pipe never fills.
    import threading
    threading.Thread(target=lambda: [sys.stderr.write(l) for l in server.stderr], daemon=True).start()
    with urllib.request.urlopen(f"{url}/health", timeout=10) as r:
        assert r.status == 200, r.status
    return server, url


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(ROOT, "target", "debug", "rlx"), help="the rlx binary")
    ap.add_argument("--model", help="language model folder or .gguf (default: the tiny Llama fixture)")
    ap.add_argument("--embedding-model", default="all-minilm-l6-v2")
    args = ap.parse_args()
    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="rlx-serve-openai-")
    model = args.model or tiny_llama(tmp)
    server, url = start(args.rlx, model, args.embedding_model)
    try:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key=API_KEY, max_retries=0, timeout=120)
        name = client.models.list().data[0].id

        # Chat, whole and streamed, against `rlx generate --chat`.
        system, user, n = "be brief", "hello there", 12
        want = rlx(args.rlx, "generate", "--model", model, "--device", "cpu", "--chat", "--system", system,
                   "--max-tokens", str(n), user)[:-1]
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        got = client.chat.completions.create(model=name, messages=messages, temperature=0, max_tokens=n)
        assert got.choices[0].message.content == want, (got.choices[0].message.content, want)
        assert got.usage.completion_tokens >= 1
        stream = client.chat.completions.create(model=name, messages=messages, temperature=0, max_tokens=n,
                                                stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        assert text == want, (text, want)
        print(f"chat: {want!r} (whole and streamed equal rlx generate --chat)")

        # Completions, whole and streamed, against `rlx generate`.
        prompt = "hello world"
        want = rlx(args.rlx, "generate", "--model", model, "--device", "cpu", "--max-tokens", str(n), prompt)[:-1]
        got = client.completions.create(model=name, prompt=prompt, temperature=0, max_tokens=n)
        assert got.choices[0].text == want, (got.choices[0].text, want)
        stream = client.completions.create(model=name, prompt=prompt, temperature=0, max_tokens=n, stream=True)
        text = "".join(c.choices[0].text for c in stream if c.choices)
        assert text == want, (text, want)
        print(f"completions: {want!r} (whole and streamed equal rlx generate)")

        # Embeddings (the client asks for base64) against `rlx embed`.
        sentences = ["A man is eating food.", "Someone is having a meal.", "The sky is blue today."]
        want = json.loads(rlx(args.rlx, "embed", "--device", "cpu", "--model-dir",
                              embedding_dir(args.embedding_model), *sentences))
        emb_name = [m.id for m in client.models.list().data][-1]
        got = client.embeddings.create(model=emb_name, input=sentences)
        assert len(got.data) == len(want)
        worst = max(abs(a - b) for g, w in zip(got.data, want) for a, b in zip(g.embedding, w))
        assert all(len(g.embedding) == len(w) for g, w in zip(got.data, want))
        assert worst <= 1e-5 and not math.isnan(worst), worst
        print(f"embeddings: {len(want)} x {len(want[0])}, largest difference to rlx embed {worst:.2e}")

        # A wrong key is refused with the OpenAI error shape.
        try:
            openai.OpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0).models.list()
            sys.exit("a wrong API key was accepted")
        except openai.AuthenticationError as e:
            assert e.status_code == 401

        # curl shows the raw server-sent events.
        if shutil.which("curl"):
            body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "temperature": 0,
                               "stream": True})
            sse = subprocess.run(["curl", "-sN", f"{url}/v1/chat/completions", "-H", f"Authorization: Bearer {API_KEY}",
                                  "-H", "Content-Type: application/json", "-d", body],
                                 capture_output=True, text=True, timeout=60).stdout
            print("curl -N shows the stream:\n" + sse)
            assert sse.rstrip().endswith("data: [DONE]"), sse
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            sys.exit("rlx serve did not stop within 60 s of SIGTERM")
        shutil.rmtree(tmp, ignore_errors=True)
    assert code == 0, f"rlx serve exited with {code} after SIGTERM"
    print(f"serve_openai_client: all checks passed in {time.time() - t0:.1f} s (openai {openai.__version__})")


def embedding_dir(name):
    """The folder `rlx serve` resolved `name` to: itself when it is one, else the cache folder."""
    if os.path.isdir(name):
        return name
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rlx", "models", name)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""rlx's embedder fine-tune beside PyTorch (issue 28): the same model, data order, rate,
schedule and loss, step by step.

  python3 scripts/train_compare.py init MODEL_DIR OUT_DIR [--seed S]
      a copy of MODEL_DIR's config and tokenizer files with freshly initialised weights
      (transformers' BertModel init, seeded): the weights need not travel to the GPU host
  python3 scripts/train_compare.py pairs MODEL_DIR OUT.tsv [--pairs N] [--words W]
      writes N synthetic pairs (seeded; words drawn from the model's vocab.txt) to OUT.tsv
  python3 scripts/train_compare.py torch MODEL_DIR PAIRS.tsv --log torch.jsonl [--out DIR]
      fine-tunes with transformers' BertModel on CUDA in f32, no shuffle, no dropout
  python3 scripts/train_compare.py compare torch.jsonl rlx.jsonl [--rtol 1e-3]
      the loss curves step by step, and the rate (pairs/s) over the steps after the first 10
  python3 scripts/train_compare.py cosine MODEL_DIR TORCH_DIR RLX_DIR PAIRS.tsv
      embeddings of both fine-tuned models (computed by torch) on the pairs' first 256
      sentences: their lowest cosine

The decoder (next-token loss on a text file, `rlx train decoder`):

  python3 scripts/train_compare.py init-decoder TOKENIZER.json OUT_DIR [--hidden 256 --layers 4 ...]
      a small Llama folder: config.json, model.safetensors (transformers' LlamaForCausalLM
      init, seeded) and the tokenizer.json copied; its vocab is the tokenizer's
  python3 scripts/train_compare.py text TOKENIZER.json OUT.txt [--words N] [--seed S]
      a synthetic text (seeded) of words from the tokenizer's vocab, each word followed by one
      of a few likely successors, so a small model can learn it
  python3 scripts/train_compare.py torch-decoder MODEL_DIR TEXT --log torch.jsonl [--out DIR]
      trains with transformers' AutoModelForCausalLM on CUDA in f32, on the same windows in the
      same order as `rlx train decoder --max-steps N --log rlx.jsonl ...` (no --shuffle)
  python3 scripts/train_compare.py compare torch.jsonl rlx.jsonl --rtol 1e-2 --batch 8
      as above (the rate is then windows/s)

  The rlx side: `rlx train decoder --model MODEL_DIR --text TEXT --out DIR --max-steps 500
  --batch-size 8 --seq-len 128 --lr 5e-4 --warmup-steps 50 --weight-decay 0 --log rlx.jsonl`
  (torch-decoder's defaults); both start from the same model.safetensors.

The rlx side is `rlx train embedder --no-shuffle --log rlx.jsonl ...` with the same options.
The training recipe is sentence-transformers' MultipleNegativesRankingLoss (scale 20, cosine,
the other positives of the batch as negatives) over mean-pooled BERT outputs, AdamW with
decoupled weight decay on every weight but the biases and LayerNorm weights (transformers'
two parameter groups, as rlx's `transformers_decays`; the decoder's likewise spares its
biases and norm weights), gradients clipped to norm 1, and
get_linear_schedule_with_warmup. Dropout is off on both sides (rlx has none), so the two runs
compute the same function.
"""
import argparse
import json
import random
import sys
import time


def make_pairs(args):
    words = []
    with open(f"{args.model}/vocab.txt", encoding="utf-8") as f:
        for line in f:
            w = line.strip()
            if w.isalpha() and w.isascii() and len(w) > 2:
                words.append(w)
    rng = random.Random(args.seed)
    with open(args.out, "w", encoding="utf-8") as f:
        for _ in range(args.pairs):
            n = rng.randint(args.words // 2, args.words)
            a = [rng.choice(words) for _ in range(n)]
            p = [w if rng.random() > args.replace else rng.choice(words) for w in a]
            # A light local shuffle: the positive says the same words in a slightly other order.
            for i in range(0, len(p) - 1, 5):
                if rng.random() < 0.5:
                    p[i], p[i + 1] = p[i + 1], p[i]
            f.write(" ".join(a) + "\t" + " ".join(p) + "\n")
    print(f"wrote {args.pairs} pairs to {args.out}")


def init_model(args):
    import os
    import shutil

    import torch
    from safetensors.torch import save_file
    from transformers import BertConfig, BertModel

    os.makedirs(f"{args.out}/1_Pooling", exist_ok=True)
    for f in os.listdir(args.model):
        src = f"{args.model}/{f}"
        if os.path.isfile(src) and not f.endswith((".safetensors", ".bin", ".onnx", ".h5")):
            shutil.copy(src, f"{args.out}/{f}")
    if os.path.isfile(f"{args.model}/1_Pooling/config.json"):
        shutil.copy(f"{args.model}/1_Pooling/config.json", f"{args.out}/1_Pooling/config.json")
    torch.manual_seed(args.seed)
    model = BertModel(BertConfig.from_pretrained(args.model), add_pooling_layer=False)
    state = {k: v.contiguous() for k, v in model.state_dict().items() if k != "embeddings.position_ids"}
    save_file(state, f"{args.out}/model.safetensors")
    print(f"wrote {args.out}: {sum(v.numel() for v in state.values())} weights, seed {args.seed}")


def read_pairs(path):
    pairs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                a, p = line.rstrip("\n").split("\t")
                pairs.append((a, p))
    return pairs


def decays(name):
    """rlx's `transformers_decays` (transformers' `Trainer.get_decay_parameter_names` by name):
    no weight decay when the lowercased name contains bias, layernorm or rmsnorm, or has a
    dot-separated part that is `norm` or ends in `_norm`."""
    lower = name.lower()
    if any(p in lower for p in ("bias", "layernorm", "rmsnorm")):
        return False
    return not any(part == "norm" or part.endswith("_norm") for part in lower.split("."))


def param_groups(model, weight_decay):
    """AdamW's two parameter groups: the decayed weights, and the rest at weight decay 0."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    return [
        {"params": [p for n, p in named if decays(n)], "weight_decay": weight_decay},
        {"params": [p for n, p in named if not decays(n)], "weight_decay": 0.0},
    ]


def load_bert(model_dir, weights=None):
    import torch
    from safetensors.torch import load_file
    from transformers import BertConfig, BertModel

    cfg = BertConfig.from_pretrained(model_dir)
    cfg.hidden_dropout_prob = 0.0
    cfg.attention_probs_dropout_prob = 0.0
    model = BertModel(cfg, add_pooling_layer=False)
    state = load_file(weights or f"{model_dir}/model.safetensors")
    state = {k.removeprefix("bert."): v.float() for k, v in state.items() if not k.startswith("pooler.")}
    state.pop("embeddings.position_ids", None)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if m != "embeddings.position_ids"]
    if missing or unexpected:
        sys.exit(f"{weights or model_dir}: missing {missing}, unexpected {unexpected}")
    return model.float().cuda()


def pooled(model, enc):
    out = model(**enc).last_hidden_state
    m = enc["attention_mask"].unsqueeze(-1).float()
    return (out * m).sum(1) / m.sum(1).clamp(min=1e-9)


def train_torch(args):
    import torch
    import torch.nn.functional as F
    from transformers import AutoTokenizer, get_linear_schedule_with_warmup

    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    pairs = read_pairs(args.pairs)
    tok = AutoTokenizer.from_pretrained(args.model)
    model = load_bert(args.model)
    model.train()
    b = args.batch
    steps = min(args.steps, len(pairs) // b)
    opt = torch.optim.AdamW(param_groups(model, args.weight_decay), lr=args.lr, eps=1e-8)
    sched = get_linear_schedule_with_warmup(opt, args.warmup, steps)
    # rlx pads every step to the longest sentence of the data set (capped at max length).
    every = [s for p in pairs for s in p]
    longest = max(len(ids) for ids in tok(every, truncation=True, max_length=args.max_len)["input_ids"])
    labels = torch.arange(b, device="cuda")
    log = open(args.log, "w", encoding="utf-8")
    t0 = time.perf_counter()
    for step in range(steps):
        batch = pairs[step * b : (step + 1) * b]
        sents = [a for a, _ in batch] + [p for _, p in batch]
        enc = tok(sents, padding="max_length", truncation=True, max_length=longest, return_tensors="pt").to("cuda")
        e = pooled(model, enc)
        scores = F.normalize(e[:b], dim=-1) @ F.normalize(e[b:], dim=-1).T * args.scale
        loss = F.cross_entropy(scores, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
        lr = sched.get_last_lr()[0]
        opt.step()
        sched.step()
        torch.cuda.synchronize()
        rec = {"step": step + 1, "loss": loss.item(), "lr": lr, "grad_norm": norm.item(),
               "elapsed_s": time.perf_counter() - t0}
        log.write(json.dumps(rec) + "\n")
    log.close()
    print(f"torch: {steps} steps of {b} pairs, seq {longest}, loss {rec['loss']:.5f}")
    if args.out:
        import os
        from safetensors.torch import save_file

        os.makedirs(args.out, exist_ok=True)
        save_file({k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}, f"{args.out}/model.safetensors")


def init_decoder(args):
    import os
    import shutil

    import torch
    from tokenizers import Tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    vocab = Tokenizer.from_file(args.tokenizer).get_vocab_size(with_added_tokens=True)
    cfg = LlamaConfig(
        vocab_size=vocab,
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        max_position_embeddings=args.max_pos,
        rms_norm_eps=1e-6,
        rope_theta=10000.0,
        tie_word_embeddings=False,
        initializer_range=0.02,
    )
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(cfg).float()
    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)
    shutil.copy(args.tokenizer, f"{args.out}/tokenizer.json")
    n = sum(p.numel() for p in model.parameters())
    print(f"wrote {args.out}: Llama, {n} weights, vocab {vocab}, seed {args.seed}")


def make_text(args):
    from tokenizers import Tokenizer

    words = []
    for tok in Tokenizer.from_file(args.tokenizer).get_vocab():
        w = tok.lstrip("\u0120\u2581")  # GPT-2's and SentencePiece's word-start marks
        if w.isalpha() and w.isascii() and len(w) > 2 and w.islower():
            words.append(w)
    words = sorted(set(words))[: args.vocab]
    if len(words) < 8:
        sys.exit(f"{args.tokenizer}: only {len(words)} plain words in the vocab")
    rng = random.Random(args.seed)
    succ = {w: [rng.choice(words) for _ in range(3)] for w in words}
    w = rng.choice(words)
    out = []
    for i in range(args.words):
        out.append(w)
        w = rng.choice(succ[w]) if rng.random() < 0.9 else rng.choice(words)
    lines = [" ".join(out[i : i + 16]) for i in range(0, len(out), 16)]
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.words} words ({len(words)} distinct) to {args.out}")


def train_torch_decoder(args):
    import torch
    import torch.nn.functional as F
    from tokenizers import Tokenizer
    from transformers import AutoModelForCausalLM, get_linear_schedule_with_warmup

    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with open(args.text, encoding="utf-8") as f:
        text = f.read()
    # As rlx: the whole text as one stream, no special tokens.
    tok = Tokenizer.from_file(f"{args.model}/tokenizer.json")
    tok.no_truncation()
    tok.no_padding()
    ids = tok.encode(text, add_special_tokens=False).ids
    n, b = args.seq_len + 1, args.batch
    windows = torch.tensor(ids[: len(ids) // n * n], dtype=torch.long).view(-1, n)
    per_epoch = windows.shape[0] // b
    if per_epoch == 0:
        sys.exit(f"{args.text}: {len(ids)} tokens make no batch of {b} windows of {n}")
    # Config keys given to from_pretrained override config.json's: no attention dropout
    # (Llama's default too), as rlx has none.
    model = AutoModelForCausalLM.from_pretrained(args.model, attn_implementation="eager", attention_dropout=0.0)
    model = model.float().cuda()
    model.train()
    # As rlx: no weight decay on the biases and norm weights.
    opt = torch.optim.AdamW(param_groups(model, args.weight_decay), lr=args.lr, eps=1e-8)
    sched = get_linear_schedule_with_warmup(opt, args.warmup, args.steps)
    log = open(args.log, "w", encoding="utf-8")
    t0 = time.perf_counter()
    for step in range(args.steps):
        i = step % per_epoch  # the windows in order, epoch after epoch
        batch = windows[i * b : (i + 1) * b].cuda()
        x, y = batch[:, :-1], batch[:, 1:]
        logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.max_grad_norm > 0:
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm).item()
        else:
            norm = None
        lr = sched.get_last_lr()[0]
        opt.step()
        sched.step()
        torch.cuda.synchronize()
        rec = {"step": step + 1, "loss": loss.item(), "lr": lr, "grad_norm": norm,
               "elapsed_s": time.perf_counter() - t0}
        log.write(json.dumps(rec) + "\n")
    log.close()
    print(f"torch: {args.steps} steps of {b} windows of {n} tokens ({len(ids)} tokens), loss {rec['loss']:.5f}")
    if args.out:
        model.save_pretrained(args.out, safe_serialization=True)


def read_log(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def rate(log, batch, skip=10):
    if len(log) <= skip:
        return float("nan")
    dt = log[-1]["elapsed_s"] - log[skip - 1]["elapsed_s"]
    return (len(log) - skip) * batch / dt


def compare(args):
    t, r = read_log(args.torch_log), read_log(args.rlx_log)
    n = min(len(t), len(r))
    worst = max(range(n), key=lambda i: abs(t[i]["loss"] - r[i]["loss"]) / abs(t[i]["loss"]))
    rel = abs(t[worst]["loss"] - r[worst]["loss"]) / abs(t[worst]["loss"])
    print(f"{n} steps; worst relative loss difference {rel:.2e} at step {worst + 1} "
          f"(torch {t[worst]['loss']:.6f}, rlx {r[worst]['loss']:.6f})")
    for i in sorted({0, 1, 9, n // 2, n - 1}):
        print(f"  step {i + 1:4}: torch {t[i]['loss']:.6f} rlx {r[i]['loss']:.6f} "
              f"lr {t[i]['lr']:.3e}/{r[i]['lr']:.3e}")
    print(f"rate after step 10 (pairs/s): torch {rate(t, args.batch):.1f}, rlx {rate(r, args.batch):.1f}")
    if rel > args.rtol:
        sys.exit(f"FAIL: relative loss difference {rel:.2e} > {args.rtol}")
    print("PASS")


def cosine(args):
    import torch
    import torch.nn.functional as F
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.model)
    sents = [s for p in read_pairs(args.pairs)[:128] for s in p]
    enc = tok(sents, padding=True, truncation=True, max_length=128, return_tensors="pt").to("cuda")
    outs = []
    for d in (args.torch_dir, args.rlx_dir):
        m = load_bert(args.model, f"{d}/model.safetensors").eval()
        with torch.no_grad():
            outs.append(F.normalize(pooled(m, enc), dim=-1))
    base = load_bert(args.model).eval()
    with torch.no_grad():
        before = F.normalize(pooled(base, enc), dim=-1)
    cos = (outs[0] * outs[1]).sum(-1)
    moved = (outs[0] * before).sum(-1)
    print(f"{len(sents)} sentences: lowest cosine torch vs rlx fine-tuned {cos.min().item():.7f} "
          f"(torch fine-tuned vs the start: lowest {moved.min().item():.5f})")
    if cos.min().item() < args.min_cos:
        sys.exit(f"FAIL: cosine {cos.min().item():.7f} < {args.min_cos}")
    print("PASS")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("init")
    i.add_argument("model")
    i.add_argument("out")
    i.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("pairs")
    p.add_argument("model")
    p.add_argument("out")
    p.add_argument("--pairs", type=int, default=12800)
    p.add_argument("--words", type=int, default=120)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--replace", type=float, default=0.2, help="share of a positive's words replaced")
    t = sub.add_parser("torch")
    t.add_argument("model")
    t.add_argument("pairs")
    t.add_argument("--log", required=True)
    t.add_argument("--out")
    t.add_argument("--batch", type=int, default=64)
    t.add_argument("--steps", type=int, default=200)
    t.add_argument("--lr", type=float, default=2e-5)
    t.add_argument("--warmup", type=int, default=20)
    t.add_argument("--weight-decay", type=float, default=0.01)
    t.add_argument("--max-grad-norm", type=float, default=1.0)
    t.add_argument("--scale", type=float, default=20.0)
    t.add_argument("--max-len", type=int, default=128)
    t.add_argument("--seed", type=int, default=0)
    c = sub.add_parser("compare")
    c.add_argument("torch_log")
    c.add_argument("rlx_log")
    c.add_argument("--batch", type=int, default=64)
    c.add_argument("--rtol", type=float, default=1e-3)
    e = sub.add_parser("cosine")
    e.add_argument("model")
    e.add_argument("torch_dir")
    e.add_argument("rlx_dir")
    e.add_argument("pairs")
    e.add_argument("--min-cos", type=float, default=0.9999)
    d = sub.add_parser("init-decoder")
    d.add_argument("tokenizer", help="a tokenizer.json; its vocab size is the model's")
    d.add_argument("out")
    d.add_argument("--hidden", type=int, default=256)
    d.add_argument("--layers", type=int, default=4)
    d.add_argument("--heads", type=int, default=4)
    d.add_argument("--kv-heads", type=int, default=2)
    d.add_argument("--intermediate", type=int, default=688)
    d.add_argument("--max-pos", type=int, default=512)
    d.add_argument("--seed", type=int, default=0)
    x = sub.add_parser("text")
    x.add_argument("tokenizer")
    x.add_argument("out")
    x.add_argument("--words", type=int, default=200000)
    x.add_argument("--vocab", type=int, default=2000, help="distinct words at most")
    x.add_argument("--seed", type=int, default=7)
    td = sub.add_parser("torch-decoder")
    td.add_argument("model")
    td.add_argument("text")
    td.add_argument("--log", required=True)
    td.add_argument("--out")
    td.add_argument("--batch", type=int, default=8)
    td.add_argument("--seq-len", type=int, default=128)
    td.add_argument("--steps", type=int, default=500)
    td.add_argument("--lr", type=float, default=5e-4)
    td.add_argument("--warmup", type=int, default=50)
    td.add_argument("--weight-decay", type=float, default=0.0)
    td.add_argument("--max-grad-norm", type=float, default=1.0)
    td.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    {
        "init": init_model,
        "pairs": make_pairs,
        "torch": train_torch,
        "compare": compare,
        "cosine": cosine,
        "init-decoder": init_decoder,
        "text": make_text,
        "torch-decoder": train_torch_decoder,
    }[args.cmd](args)


if __name__ == "__main__":
    main()

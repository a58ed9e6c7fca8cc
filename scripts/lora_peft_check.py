"""Checks an `rlx train decoder --lora-rank R` output folder against PEFT: loads the base model,
applies the folder's adapter_model.safetensors with `peft.PeftModel.from_pretrained`, and
compares its logits with the merged model.safetensors rlx wrote (f32, on CUDA).

    python3 scripts/lora_peft_check.py BASE_DIR LORA_OUT_DIR
"""
import json, sys, torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM
base_dir, out_dir = sys.argv[1], sys.argv[2]
try:
    import peft
    print("peft", peft.__version__)
except ImportError:
    print("peft: not installed"); peft = None
ids = torch.arange(1, 65).reshape(1, 64).cuda()
merged = AutoModelForCausalLM.from_pretrained(base_dir, torch_dtype=torch.float32).cuda()
sd = load_file(f"{out_dir}/model.safetensors")
missing, unexpected = merged.load_state_dict(sd, strict=False)
print("merged load: missing", len(missing), "unexpected", len(unexpected))
with torch.no_grad():
    lm = merged(ids).logits
base = AutoModelForCausalLM.from_pretrained(base_dir, torch_dtype=torch.float32).cuda()
with torch.no_grad():
    lb = base(ids).logits
print("merged vs base: max |diff|", (lm - lb).abs().max().item())
if peft is not None:
    cfg = json.load(open(f"{out_dir}/adapter_config.json"))
    print("adapter_config", {k: cfg[k] for k in ("peft_type", "r", "lora_alpha", "target_modules")})
    pm = peft.PeftModel.from_pretrained(base, out_dir).cuda()
    with torch.no_grad():
        lp = pm(ids).logits
    d = (lp - lm).abs().max().item()
    print("peft(base + adapter) vs rlx merged: max |diff|", d, "relative", d / lm.abs().max().item())
    print("PASS" if d / lm.abs().max().item() < 1e-4 else "FAIL")

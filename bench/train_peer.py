"""Side-by-side training benchmark: `tunebench bench train` against Hugging Face transformers + PEFT doing the
same training (same model, random tokens of the same batch and sequence length, AdamW, grad clipping, fp32,
same thread count) in the same run on the same machine.

usage: python bench/train_peer.py [--tunebench build/bin/tunebench] [--batch 4] [--seq 128] [--steps 10]
                                  [--device cpu|cuda] [--precision fp32|bf16] [--json FILE]
Prints tokens/s of both and the ratio (ours / peer) for LoRA and full fine-tuning of the bundled stories260k
and of a random ~25M-parameter Llama. On CUDA both sides synchronise before reading the clock; bf16 is
autocast on both sides (fp32 master weights).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
import transformers
from peft import LoraConfig, get_peft_model

from common import ROOT, random_llama


def peer(path, method, batch, seq, warmup, steps, device="cpu", precision="fp32"):
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(device)
    if method == "lora":
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0,
                                                 target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.0)
    torch.manual_seed(0)
    ids = torch.randint(3, model.config.vocab_size, (batch, seq)).to(device)
    labels = ids.roll(-1, 1)
    autocast = torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16,
                              enabled=precision == "bf16")

    def sync():
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize()

    def step():
        with autocast:
            logits = model(input_ids=ids).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), labels.reshape(-1),
                                                 reduction="sum") / ids.numel()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()

    for _ in range(warmup):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return batch * seq * steps / (time.perf_counter() - t0)


def ours(binary, model, method, batch, seq, warmup, steps, device="cpu", precision="fp32"):
    out = subprocess.run([binary, "bench", "train", "--model", model, "--method", method, "--batch", str(batch),
                          "--seq", str(seq), "--steps", str(steps), "--warmup", str(warmup), "--device", device,
                          "--precision", precision, "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tunebench", default=os.path.join(ROOT, "build", "bin", "tunebench"))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    a = ap.parse_args()
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}, "
          f"batch {a.batch} x seq {a.seq}, {a.steps} timed steps after {a.warmup} warm-up, {a.precision}, AdamW, "
          f"device {a.device}" + (f" ({torch.cuda.get_device_name()})" if a.device == "cuda" else ""))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        rnd = os.path.join(tmp, "random-llama-25m")
        random_llama(rnd)
        models = [("stories260k", os.path.join(ROOT, "datasets", "models", "stories260k")), ("random-llama-25m", rnd)]
        print(f"{'model':<18} {'method':<6} {'tunebench tok/s':>16} {'MFU':>6} {'HF+PEFT tok/s':>14} {'ratio':>6}")
        for name, path in models:
            for method in ("lora", "full"):
                o = ours(a.tunebench, path, method, a.batch, a.seq, a.warmup, a.steps, a.device, a.precision)
                p = peer(path, method, a.batch, a.seq, a.warmup, a.steps, a.device, a.precision)
                print(f"{name:<18} {method:<6} {o['tokens_per_s']:>16.0f} {100 * o['mfu']:>5.1f}% {p:>14.0f} "
                      f"{o['tokens_per_s'] / p:>6.2f}", flush=True)
                rows.append({"model": name, "method": method, "tunebench_tokens_per_s": o["tokens_per_s"],
                             "mfu": o["mfu"], "peer_tokens_per_s": p, "ratio": o["tokens_per_s"] / p,
                             "tunebench_peak_memory_bytes": o.get("peak_memory_bytes")})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": a.device, "precision": a.precision, "batch": a.batch, "seq": a.seq, "rows": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Side-by-side batched generation: `tunebench bench generate --prompts` against transformers' batched `generate`
(left padding, attention mask, greedy) on the same model folder, prompts and token budget, at several batch
sizes, in the same run on the same machine. This is the generation an evaluation over a set does.

usage: python bench/eval_peer.py [--tunebench build/bin/tunebench] [--prompts 32] [--new-tokens 64]
                                 [--batches 1,4,16] [--repeats 3] [--models stories260k,random-llama-25m]
Models: the bundled stories260k and a random ~25M-parameter Llama (created here with transformers and saved, so both
sides load the same weights). Prompts: random ids, lengths uniform in [8, 96] (seed 1), one file both sides read.
EOS stops neither side (Tunebench's bench runs with stopAtEos off; the peer's generation config has no EOS), so every
row generates exactly --new-tokens tokens on both. Throughput: generated tokens over the wall seconds of the
generate calls (prefill included), after a short warm-up on each side, the best of --repeats passes that alternate
between the sides; ratio = Tunebench / transformers (above 1: Tunebench is faster). Also prints how many rows agree
token for token (greedy fp32 on both: all of them, unless two logits of a step lie within rounding of each other).
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import torch
import transformers

from common import ROOT, random_llama


def make_prompts(path, vocab, count, seed=1):
    rng = random.Random(seed)
    prompts = [[rng.randrange(3, vocab) for _ in range(rng.randint(8, 96))] for _ in range(count)]
    with open(path, "w") as f:
        for p in prompts:
            f.write(json.dumps({"ids": p}) + "\n")
    return prompts


def peer_pass(model, prompts, batch, new_tokens):
    """transformers' generate over the prompts, `batch` at a time, left-padded: (seconds, rows of new ids)."""
    model.generation_config = transformers.GenerationConfig(do_sample=False, pad_token_id=0, eos_token_id=None)
    seconds, rows = 0.0, []
    with torch.inference_mode():
        for start in range(0, len(prompts), batch):
            part = prompts[start:start + batch]
            width = max(len(p) for p in part)
            ids = torch.zeros((len(part), width), dtype=torch.long)
            mask = torch.zeros((len(part), width), dtype=torch.long)
            for i, p in enumerate(part):
                ids[i, width - len(p):] = torch.tensor(p)
                mask[i, width - len(p):] = 1
            t0 = time.perf_counter()
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens)
            seconds += time.perf_counter() - t0
            rows += out[:, width:].tolist()
    return seconds, rows


def ours(binary, path, prompts_file, batch, new_tokens):
    """One pass of `tunebench bench generate --prompts` (its own short warm-up first): (tokens/s, rows)."""
    out = subprocess.run([binary, "bench", "generate", "--model", path, "--prompts", prompts_file, "--batch",
                          str(batch), "--new-tokens", str(new_tokens), "--device", "cpu", "--json"],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return r["tokens_per_s"], r["tokens"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tunebench", default=os.path.join(ROOT, "build", "bin", "tunebench"))
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--batches", default="1,4,16")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models", default="stories260k,random-llama-25m")
    a = ap.parse_args()
    batches = [int(b) for b in a.batches.split(",")]
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}, "
          f"{a.prompts} prompts of 8-96 random tokens, {a.new_tokens} new tokens each, greedy, fp32, "
          f"load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        rnd = os.path.join(tmp, "random-llama-25m")
        random_llama(rnd)
        models = [("stories260k", os.path.join(ROOT, "datasets", "models", "stories260k")), ("random-llama-25m", rnd)]
        print(f"{'model':<18} {'batch':>5} {'tunebench tok/s':>16} {'transformers tok/s':>19} {'ratio':>7} "
              f"{'rows equal':>11}")
        for name, path in models:
            if name not in a.models.split(","):
                continue
            hf = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
            prompts_file = os.path.join(tmp, name + ".jsonl")
            prompts = make_prompts(prompts_file, hf.config.vocab_size, a.prompts)
            for batch in batches:
                # Passes alternate between the sides, so that a burst of load elsewhere hits both alike; the best
                # pass of each side counts.
                peer_pass(hf, prompts[:batch], batch, min(a.new_tokens, 8))  # warm-up
                xs, ys = [], []
                for _ in range(a.repeats):
                    x, ours_rows = ours(a.tunebench, path, prompts_file, batch, a.new_tokens)
                    seconds, peer_rows = peer_pass(hf, prompts, batch, a.new_tokens)
                    xs.append(x)
                    ys.append(sum(len(r) for r in peer_rows) / seconds)
                x, y = max(xs), max(ys)
                if any(len(r) != a.new_tokens for r in ours_rows + peer_rows):
                    raise SystemExit("a side generated a row of another length than --new-tokens")
                equal = sum(o == p for o, p in zip(ours_rows, peer_rows))
                print(f"{name:<18} {batch:>5} {x:>16.0f} {y:>19.0f} {x / y:>7.2f} {equal:>5}/{len(prompts):<5}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Side-by-side training benchmark: `tunebench bench train` against Hugging Face transformers + PEFT doing the
same training (same model and weights, the same random tokens, AdamW, grad clipping, same precision and thread
count) in the same run on the same machine.

usage: python bench/train_peer.py [--tunebench build/bin/tunebench] [--models stories260k,random-llama-25m]
                                  [--methods lora,full] [--batches 4] [--seqs 128] [--steps 10] [--warmup 2]
                                  [--precisions fp32] [--repeats 1] [--device cpu|cuda] [--json FILE]
--batches and --seqs take comma-separated lists and run every pair (the scaling grid of docs/benchmarks.md;
bench/scaling_plot.py draws a --json file of it).
Models: the bundled stories260k, the random 26.5M Llama and the random GPT-2 124M of bench/common.py, written
once as model folders both sides load. LoRA: r 8, alpha 16 on q_proj and v_proj (c_attn on GPT-2), the A
matrices drawn again from seed 1 in parameter order on both sides, so both train the same numbers. bf16 is
autocast on both sides over fp32 master weights (Tunebench keeps its frozen weights in bf16 once).
For every configuration it prints tokens/s of both sides (median and best of --repeats runs, each side in its
own process), the ratio (ours / peer), both sides' peak resident memory, and whether the losses of every step
agree within the precision's tolerance (fp32: 1e-4 relative; bf16: 2e-2); with --precisions fp32,bf16 also our
bf16 over our fp32 per configuration (goal 2 of docs/benchmarks.md). On CUDA both sides synchronise
before reading the clock.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from common import ROOT

TARGETS = {"gpt2-124m": ["c_attn"]}
TOLERANCE = {"fp32": 1e-4, "bf16": 2e-2}


def peer(spec):
    """Child: the peer's run of one configuration; returns tokens/s, each step's loss and this process's peak
    resident memory."""
    import torch
    import transformers
    from peft import LoraConfig, get_peft_model

    device = spec["device"]
    model = transformers.AutoModelForCausalLM.from_pretrained(spec["path"], dtype=torch.float32).to(device)
    if spec["method"] == "lora":
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0,
                                                 target_modules=TARGETS.get(spec["model"], ["q_proj", "v_proj"]),
                                                 task_type="CAUSAL_LM"))
        torch.manual_seed(1)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_A" in name:
                    p.uniform_(-p.size(1) ** -0.5, p.size(1) ** -0.5)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.0)
    torch.manual_seed(0)
    batch, seq = spec["batch"], spec["seq"]
    ids = torch.randint(3, model.config.vocab_size, (batch, seq)).to(device)
    labels = ids.roll(-1, 1)
    autocast = torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16,
                              enabled=spec["precision"] == "bf16")
    losses = []

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
        losses.append(loss.item())

    for _ in range(spec["warmup"]):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(spec["steps"]):
        step()
    sync()
    seconds = time.perf_counter() - t0
    return {"tokens_per_s": batch * seq * spec["steps"] / seconds, "losses": losses,
            "peak_resident_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def run_peer(spec):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--peer-child", json.dumps(spec)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_ours(binary, spec):
    out = subprocess.run([binary, "bench", "train", "--model", spec["path"], "--method", spec["method"],
                          "--batch", str(spec["batch"]), "--seq", str(spec["seq"]), "--steps", str(spec["steps"]),
                          "--warmup", str(spec["warmup"]), "--device", spec["device"],
                          "--precision", spec["precision"], "--json"],
                         check=True, capture_output=True, text=True).stdout
    o = json.loads(out)
    o["peak_resident_bytes"] = max(o["resident_peak_before_steps_bytes"], o["resident_peak_steps_bytes"])
    return o


def make_models(folder, names):
    """Child: writes the random model folders (config.json + model.safetensors, fp32)."""
    from common import random_gpt2, random_llama

    if "random-llama-25m" in names:
        random_llama(os.path.join(folder, "random-llama-25m"))
    if "gpt2-124m" in names:
        random_gpt2(os.path.join(folder, "gpt2-124m"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tunebench", default=os.path.join(ROOT, "build", "bin", "tunebench"))
    ap.add_argument("--models", default="stories260k,random-llama-25m",
                    help="comma-separated: stories260k, random-llama-25m, gpt2-124m")
    ap.add_argument("--methods", default="lora,full")
    ap.add_argument("--batches", "--batch", default="4", help="comma-separated micro-batch sizes")
    ap.add_argument("--seqs", "--seq", default="128", help="comma-separated sequence lengths")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--precisions", "--precision", default="fp32", help="comma-separated: fp32, bf16")
    ap.add_argument("--repeats", type=int, default=1, help="runs of each side per configuration")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    ap.add_argument("--peer-child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.peer_child:
        print(json.dumps(peer(json.loads(a.peer_child))))
        return 0
    import torch
    import transformers

    models = a.models.split(",")
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}, "
          f"batches {a.batches}, {a.steps} timed steps after {a.warmup} warm-up, AdamW, {a.repeats} run(s) of each "
          f"side, device {a.device}" + (f" ({torch.cuda.get_device_name()})" if a.device == "cuda" else ""))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); "
                        f"import train_peer; train_peer.make_models({tmp!r}, {models!r})"], check=True)
        paths = {"stories260k": os.path.join(ROOT, "datasets", "models", "stories260k")}
        paths.update({m: os.path.join(tmp, m) for m in models if m != "stories260k"})
        print(f"{'model':<17} {'method':<6} {'prec':<5} {'batch':>5} {'seq':>5} {'tunebench tok/s':>16} {'MFU':>6} "
              f"{'HF+PEFT tok/s':>14} {'ratio':>6} {'best':>6} {'RSS ours':>9} {'RSS peer':>9} {'losses':>14}")
        for name in models:
            for method in a.methods.split(","):
                for precision in a.precisions.split(","):
                    for batch, seq in [(b, t) for b in map(int, a.batches.split(","))
                                       for t in map(int, a.seqs.split(","))]:
                        spec = {"model": name, "path": paths[name], "method": method, "batch": batch,
                                "seq": seq, "steps": a.steps, "warmup": a.warmup, "device": a.device,
                                "precision": precision}
                        ours, theirs = [], []
                        for _ in range(a.repeats):
                            ours.append(run_ours(a.tunebench, spec))
                            theirs.append(run_peer(spec))
                        o_med = statistics.median(r["tokens_per_s"] for r in ours)
                        p_med = statistics.median(r["tokens_per_s"] for r in theirs)
                        o_best = max(r["tokens_per_s"] for r in ours)
                        p_best = max(r["tokens_per_s"] for r in theirs)
                        lo, lp = ours[0]["losses"], theirs[0]["losses"]
                        worst = max(abs(x - y) / abs(y) for x, y in zip(lo, lp))
                        agree = len(lo) == len(lp) and worst <= TOLERANCE[precision]
                        rss_o = max(r["peak_resident_bytes"] for r in ours) / 2**30
                        rss_p = max(r["peak_resident_bytes"] for r in theirs) / 2**30
                        print(f"{name:<17} {method:<6} {precision:<5} {batch:>5} {seq:>5} {o_med:>16.0f} "
                              f"{100 * ours[0]['mfu']:>5.1f}% {p_med:>14.0f} {o_med / p_med:>6.2f} "
                              f"{o_best / p_best:>6.2f} {rss_o:>7.2f} G {rss_p:>7.2f} G "
                              f"{'equal' if agree else 'DIFFER':>7} {worst:.0e}", flush=True)
                        rows.append({"model": name, "method": method, "precision": precision, "batch": batch,
                                     "seq": seq,
                                     "tunebench_tokens_per_s": [r["tokens_per_s"] for r in ours],
                                     "peer_tokens_per_s": [r["tokens_per_s"] for r in theirs],
                                     "ratio_median": o_med / p_med, "ratio_best": o_best / p_best,
                                     "mfu": ours[0]["mfu"], "phase_seconds": ours[0]["phase_seconds"],
                                     "tunebench_losses": lo, "peer_losses": lp, "losses_agree": agree,
                                     "loss_worst_relative_difference": worst,
                                     "tunebench_peak_resident_bytes": rss_o * 2**30,
                                     "peer_peak_resident_bytes": rss_p * 2**30})
    # Goal 2 of docs/benchmarks.md: our bf16 against our fp32, where both ran.
    speedups = []
    for r in rows:
        if r["precision"] != "bf16":
            continue
        same = [f for f in rows if f["precision"] == "fp32" and
                all(f[k] == r[k] for k in ("model", "method", "batch", "seq"))]
        if same:
            ratio = (statistics.median(r["tunebench_tokens_per_s"]) /
                     statistics.median(same[0]["tunebench_tokens_per_s"]))
            speedups.append({k: r[k] for k in ("model", "method", "batch", "seq")} | {"bf16_over_fp32": ratio})
            print(f"bf16 / fp32 (tunebench): {r['model']} {r['method']} B{r['batch']} x T{r['seq']}: {ratio:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": a.device, "rows": rows, "bf16_over_fp32": speedups}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

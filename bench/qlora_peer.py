"""Side-by-side QLoRA benchmark: `tunebench bench train --quant nf4 --quant-double` against transformers + PEFT +
bitsandbytes (BitsAndBytesConfig nf4, double quantisation) doing the same LoRA training, and both against their
own LoRA on the full-precision base, in the same run on the same machine.

usage: python bench/qlora_peer.py [--tunebench build/bin/tunebench] [--batch 4] [--seq 128] [--steps 3]
                                  [--warmup 1] [--repeats 3] [--threads 1] [--precisions fp32,bf16]
                                  [--models random-llama-25m,gpt2-124m] [--workdir DIR] [--json FILE]
       python bench/qlora_peer.py --report FILE   # the tables of a --json file again
Models: the random 26.5M Llama of bench/common.py (the shape of tunebench's random-llama-25m) and a random GPT-2
124M (transformers' default GPT2Config, which is gpt2's), written once as model folders that both sides load.
Same random tokens, batch and sequence, LoRA r 8 / alpha 16 on PEFT's default targets (q_proj, v_proj; c_attn),
AdamW (lr 1e-4), clipping at 1.0; every linear layer but the head quantised on both sides. bf16 is autocast on
both sides (the 4-bit weights dequantised into bf16). Every run is a process of its own with OMP_NUM_THREADS and
MKL_NUM_THREADS set to --threads; of --repeats runs (alternating between the sides) the fastest and the smallest
memory are printed, and the median of the ratios of the runs taken in pairs (ours / peer, one after the other).

Memory is the process's resident memory (Linux VmRSS/VmHWM, the same measure on both sides): at start-up (the
libraries loaded, no model), the peak through loading and the warm-up, and the peak over the timed steps alone
(the kernel's high-water mark reset after the warm-up, through /proc/self/clear_refs). Tunebench also reports
its tracked tensor peak over the timed steps (peak_memory_bytes), which has no peer counterpart. On the peer's
side the clean pages of the mapped model file that no tensor views any more (what quantising read) are found in
/proc/self/smaps and printed, and left out of "above start-up".
This driver imports no torch, so that it stays small; the peer and the model folders run in child processes.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20
TARGETS = {"random-llama-25m": ["q_proj", "v_proj"], "gpt2-124m": ["c_attn"]}


def resident(field):
    """VmRSS or VmHWM of this process in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def make_models(folder):
    """Child: writes the two model folders (config.json + model.safetensors, fp32)."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from common import random_gpt2, random_llama

    random_llama(os.path.join(folder, "random-llama-25m"))
    random_gpt2(os.path.join(folder, "gpt2-124m"))


def dead_file_pages(model, filename="model.safetensors"):
    """Resident bytes of the model file's mappings that no tensor of the model views any more: transformers'
    safetensors loading leaves the frozen tensors as views into the mapped file, so the file stays mapped while
    any one of them lives (the embedding does), and the pages quantisation read are clean, reclaimable file pages
    that VmRSS still counts. Zero when every mapped page backs a live tensor (plain LoRA)."""
    ranges, rss, current = [], 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                current = len(head) >= 6 and head[-1].endswith(filename)
                if current:
                    lo, hi = (int(x, 16) for x in head[0].split("-"))
                    ranges.append((lo, hi))
            elif current and head[0] == "Rss:":
                rss += int(head[1]) * 1024
    live = sum(t.nbytes for t in list(model.parameters()) + list(model.buffers())
               if any(lo <= t.data_ptr() < hi for lo, hi in ranges))
    return max(0, rss - live)


def weight_bytes(model):
    """Bytes of the parameters and buffers, with each 4-bit weight's quantisation state (absmax, the
    double-quantised absmax's own absmax and code tables)."""
    import bitsandbytes as bnb

    n = sum(t.nbytes for t in model.parameters()) + sum(t.nbytes for t in model.buffers())
    for p in model.parameters():
        if isinstance(p, bnb.nn.Params4bit) and p.quant_state is not None:
            s = p.quant_state
            n += s.absmax.nbytes + s.code.nbytes
            if s.nested:
                n += s.state2.absmax.nbytes + s.state2.code.nbytes + s.offset.nbytes
    return n


def peer(a):
    """Child: one peer run; prints one JSON line."""
    import bitsandbytes
    import peft
    import torch
    import transformers
    from peft import LoraConfig, get_peft_model

    torch.set_num_threads(a.threads)
    start = resident("VmRSS")
    bf16 = a.precision == "bf16"
    kwargs = {"dtype": torch.float32}
    if a.method == "qlora":
        kwargs["quantization_config"] = transformers.BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16 if bf16 else torch.float32)
        kwargs["device_map"] = "cpu"
    model = transformers.AutoModelForCausalLM.from_pretrained(a.model_dir, **kwargs)
    quantised = sum(isinstance(m, bitsandbytes.nn.Linear4bit) for m in model.modules())
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=TARGETS[a.name],
                                             task_type="CAUSAL_LM"))
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.0)
    torch.manual_seed(0)
    ids = torch.randint(3, model.config.vocab_size, (a.batch, a.seq))
    labels = ids.roll(-1, 1)

    def step():
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(input_ids=ids).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), labels.reshape(-1),
                                                 reduction="sum") / ids.numel()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    import time

    for _ in range(a.warmup):
        step()
    before = resident("VmHWM")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    seconds = time.perf_counter() - t0
    print(json.dumps({"tokens_per_s": a.batch * a.seq * a.steps / seconds, "loss": loss, "threads":
                      torch.get_num_threads(), "trainable_parameters": sum(p.numel() for p in params),
                      "quantised_layers": quantised, "weights_bytes": weight_bytes(model),
                      "resident_start_bytes": start, "resident_peak_before_steps_bytes": before,
                      "resident_peak_steps_bytes": resident("VmHWM"), "dead_file_bytes": dead_file_pages(model),
                      "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                                   "peft": peft.__version__, "bitsandbytes": bitsandbytes.__version__}}))


def child(cmd, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-4000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def ours_cmd(a, name, path, method, precision):
    cmd = [a.tunebench, "bench", "train", "--model", path, "--method", "lora", "--batch", str(a.batch), "--seq",
           str(a.seq), "--steps", str(a.steps), "--warmup", str(a.warmup), "--precision", precision, "--json"]
    return cmd + (["--quant", "nf4", "--quant-double"] if method == "qlora" else [])


def peer_cmd(a, name, path, method, precision):
    return [sys.executable, os.path.abspath(__file__), "--peer", "--name", name, "--model-dir", path, "--method",
            method, "--precision", precision, "--batch", str(a.batch), "--seq", str(a.seq), "--steps", str(a.steps),
            "--warmup", str(a.warmup), "--threads", str(a.threads)]


def best(runs):
    """The fastest run's tokens/s and the smallest of each memory figure."""
    out = {"tokens_per_s": max(r["tokens_per_s"] for r in runs), "runs_tokens_per_s": [r["tokens_per_s"] for r in runs]}
    for k in ("resident_start_bytes", "resident_peak_before_steps_bytes", "resident_peak_steps_bytes",
              "peak_memory_bytes", "weights_bytes", "dead_file_bytes"):
        if k in runs[0]:
            out[k] = min(r[k] for r in runs)
    out["resident_peak_bytes"] = min(max(r["resident_peak_before_steps_bytes"], r["resident_peak_steps_bytes"])
                                     for r in runs)
    return out


def above_start(side, peer_side):
    """The timed steps' resident peak above the process's start-up (libraries loaded, no model), less the dead
    pages of the model file on the peer's side (dead_file_pages)."""
    return (side["resident_peak_steps_bytes"] - side["resident_start_bytes"] -
            (side["dead_file_bytes"] if peer_side else 0))


def report(rows):
    print(f"\ntokens/s       {'model':<17} {'prec':<5} {'method':<6} {'ours':>7} {'peer':>7} {'ratio':>6} "
          f"{'pairs: median (min-max)':>24}")
    for r in rows:
        o, p = r["ours"], r["peer"]
        pairs = sorted(x / y for x, y in zip(o["runs_tokens_per_s"], p["runs_tokens_per_s"]))
        print(f"{'':<14} {r['model']:<17} {r['precision']:<5} {r['method']:<6} {o['tokens_per_s']:>7.0f} "
              f"{p['tokens_per_s']:>7.0f} {o['tokens_per_s'] / p['tokens_per_s']:>6.2f} "
              f"{statistics.median(pairs):>12.2f} ({pairs[0]:.2f}-{pairs[-1]:.2f})")
    print(f"\nMiB, resident  {'model':<17} {'prec':<5} {'method':<6} {'start':>11} {'whole peak':>11} "
          f"{'steps peak':>11} {'dead file':>5} {'above start':>11} {'ratio':>6} {'ours tracked':>12}")
    for r in rows:
        o, p = r["ours"], r["peer"]
        pair = lambda k: f"{o[k] / MIB:>5.0f}/{p[k] / MIB:<5.0f}"  # noqa: E731
        ao, ap = above_start(o, False), above_start(p, True)
        print(f"{'':<14} {r['model']:<17} {r['precision']:<5} {r['method']:<6} {pair('resident_start_bytes')} "
              f"{pair('resident_peak_bytes')} {pair('resident_peak_steps_bytes')} {p['dead_file_bytes'] / MIB:>9.0f} "
              f"{ao / MIB:>5.0f}/{ap / MIB:<5.0f} {ao / ap:>6.2f} {o['peak_memory_bytes'] / MIB:>12.0f}")
    print(f"\nQLoRA / LoRA   {'model':<17} {'prec':<5} {'tok/s ours':>10} {'tok/s peer':>10} {'above ours':>10} "
          f"{'above peer':>10} {'tracked':>8} {'weights ours':>12} {'weights peer':>12}")
    by = {(r["model"], r["precision"], r["method"]): r for r in rows}
    for (model, precision, method), q in by.items():
        lora = by.get((model, precision, "lora"))
        if method != "qlora" or not lora:
            continue
        f = lambda side, k: q[side][k] / lora[side][k]  # noqa: E731
        print(f"{'':<14} {model:<17} {precision:<5} {f('ours', 'tokens_per_s'):>10.2f} "
              f"{f('peer', 'tokens_per_s'):>10.2f} "
              f"{above_start(q['ours'], False) / above_start(lora['ours'], False):>10.2f} "
              f"{above_start(q['peer'], True) / above_start(lora['peer'], True):>10.2f} "
              f"{f('ours', 'peak_memory_bytes'):>8.2f} {f('ours', 'weights_bytes'):>12.2f} "
              f"{f('peer', 'weights_bytes'):>12.2f}")
    print("\n(ratios: ours / peer, or QLoRA / LoRA; resident pairs: ours/peer; 'above start' is the steps peak less "
          "start-up, and on the peer less the dead pages of the mapped model file)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tunebench", default=os.path.join(ROOT, "build", "bin", "tunebench"))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--models", default="random-llama-25m,gpt2-124m")
    ap.add_argument("--workdir", help="keep the model folders here (made when missing)")
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    ap.add_argument("--report", help="print the tables of a --json file again, running nothing")
    ap.add_argument("--peer", action="store_true", help=argparse.SUPPRESS)  # child modes
    ap.add_argument("--make-models", help=argparse.SUPPRESS)
    ap.add_argument("--name", help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", help=argparse.SUPPRESS)
    ap.add_argument("--method", help=argparse.SUPPRESS)
    ap.add_argument("--precision", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.make_models:
        return make_models(a.make_models)
    if a.peer:
        return peer(a)
    if a.report:
        with open(a.report) as f:
            saved = json.load(f)
        print(f"versions {saved['versions']}, threads {saved['threads']}, batch {saved['batch']} x seq {saved['seq']}, "
              f"{saved['steps']} timed steps after {saved['warmup']} warm-up, best of {saved['repeats']}")
        return report(saved["rows"])

    with tempfile.TemporaryDirectory() as tmp:
        work = a.workdir or tmp
        if not all(os.path.exists(os.path.join(work, m, "model.safetensors")) for m in TARGETS):
            subprocess.run([sys.executable, os.path.abspath(__file__), "--make-models", work], check=True,
                           capture_output=True)
        configs = [(m, prec, method) for m in a.models.split(",") for prec in a.precisions.split(",")
                   for method in ("lora", "qlora")]
        runs = {c: {"ours": [], "peer": []} for c in configs}
        versions = None
        for rep in range(a.repeats):
            for c in configs:
                path = os.path.join(work, c[0])
                o = child(ours_cmd(a, c[0], path, c[2], c[1]), a.threads)
                p = child(peer_cmd(a, c[0], path, c[2], c[1]), a.threads)
                if o["threads"] != a.threads or p["threads"] != a.threads:
                    sys.exit(f"thread counts differ: tunebench {o['threads']}, peer {p['threads']}, asked {a.threads}")
                if o["trainable_parameters"] != p["trainable_parameters"]:
                    sys.exit(f"{c}: trainable parameters differ: {o['trainable_parameters']} vs "
                             f"{p['trainable_parameters']}")
                versions = p.pop("versions")
                runs[c]["ours"].append(o)
                runs[c]["peer"].append(p)
                print(f"run {rep + 1}/{a.repeats} {c[0]} {c[1]} {c[2]}: {o['tokens_per_s']:.0f} / "
                      f"{p['tokens_per_s']:.0f} tok/s, steps peak {o['resident_peak_steps_bytes'] / MIB:.0f} / "
                      f"{p['resident_peak_steps_bytes'] / MIB:.0f} MiB, peer quantised layers "
                      f"{p['quantised_layers']}, load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"versions {versions}, threads {a.threads}, batch {a.batch} x seq {a.seq}, {a.steps} timed steps after "
          f"{a.warmup} warm-up, best of {a.repeats}")
    rows = [{"model": c[0], "precision": c[1], "method": c[2], "ours": best(r["ours"]), "peer": best(r["peer"])}
            for c, r in runs.items()]
    report(rows)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"versions": versions, "threads": a.threads, "batch": a.batch, "seq": a.seq, "steps": a.steps,
                       "warmup": a.warmup, "repeats": a.repeats, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

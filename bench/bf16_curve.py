"""bf16 against fp32 over a longer run: `tunebench bench train` for --steps steps in fp32 and in bf16 (autocast
over fp32 master weights, frozen weights held in bf16), same model, data, seed and optimizer, each in its own
process. Prints both sides' tokens/s and the speed ratio (bf16 / fp32), the path the bf16 run took (it falls back
to fp32 on a CPU without bf16 instructions, and says so), and how far the bf16 loss curve lies from the fp32 one:
the largest relative difference of any step, of the mean over each window of 20 steps (what a user reads off
a smoothed curve), and of the final loss. A configuration passes when every 20-step mean lies within --tolerance
(relative) of fp32's. With --plot, draws both curves per configuration as SVG.

usage: python bench/bf16_curve.py [--tunebench build/bin/tunebench] [--model random-llama-25m]
                                  [--methods lora,full] [--batch 4] [--seq 128] [--steps 200] [--lr 1e-3,1e-4]
                                  [--tolerance 0.02] [--plot FILE.svg] [--json FILE]
The model: the random 26.5M Llama of bench/common.py (or a model folder); the data: one fixed batch of random
tokens that the run learns, so the loss falls from ln(vocab) by several nats over 200 steps and differences show.
--lr: one learning rate, or one per method in --methods' order (the default: 1e-3 for LoRA, 1e-4 for full
fine-tuning, which at 1e-3 learns the batch by heart within 60 steps, down to losses of 0.002 where relative
differences say nothing).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import svg_plot
from common import ROOT

WINDOW = 20


def run(binary, model, method, batch, seq, steps, lr, precision):
    out = subprocess.run([binary, "bench", "train", "--model", model, "--method", method, "--batch", str(batch),
                          "--seq", str(seq), "--steps", str(steps), "--warmup", "0", "--lr", str(lr),
                          "--precision", precision, "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def windows(losses):
    return [sum(losses[i:i + WINDOW]) / len(losses[i:i + WINDOW]) for i in range(0, len(losses), WINDOW)]


def compare(fp32, bf16):
    a, b = fp32["losses"], bf16["losses"]
    wa, wb = windows(a), windows(b)
    return {
        "max_step_rel": max(abs(x - y) / abs(x) for x, y in zip(a, b)),
        "max_window_rel": max(abs(x - y) / abs(x) for x, y in zip(wa, wb)),
        "final_rel": abs(a[-1] - b[-1]) / abs(a[-1]),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tunebench", default=os.path.join(ROOT, "build", "bin", "tunebench"))
    ap.add_argument("--model", default="random-llama-25m", help="random-llama-25m or a model folder")
    ap.add_argument("--methods", default="lora,full")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", default="1e-3,1e-4", help="one rate, or one per method")
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--plot")
    ap.add_argument("--json")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model == "random-llama-25m":
            from common import random_llama

            model = os.path.join(tmp, "random-llama-25m")
            random_llama(model)
        rows, ok = [], True
        methods = args.methods.split(",")
        rates = [float(r) for r in args.lr.split(",")]
        if len(rates) not in (1, len(methods)):
            sys.exit(f"--lr: {len(rates)} rates for {len(methods)} methods (give one, or one per method)")
        for method, lr in zip(methods, rates * len(methods) if len(rates) == 1 else rates):
            fp32 = run(args.tunebench, model, method, args.batch, args.seq, args.steps, lr, "fp32")
            bf16 = run(args.tunebench, model, method, args.batch, args.seq, args.steps, lr, "bf16")
            c = compare(fp32, bf16)
            passed = c["max_window_rel"] <= args.tolerance
            ok = ok and passed
            rows.append({"method": method, "lr": lr, "fp32": fp32, "bf16": bf16, **c, "passed": passed})
            print(f"{method} B{args.batch} x T{args.seq}, {args.steps} steps, lr {lr:g}: "
                  f"fp32 {fp32['tokens_per_s']:.0f} tok/s, bf16 {bf16['tokens_per_s']:.0f} tok/s, "
                  f"ratio {bf16['tokens_per_s'] / fp32['tokens_per_s']:.2f} (bf16 path: {bf16['precision_path']})")
            print(f"  loss fp32 {fp32['losses'][0]:.4f} -> {fp32['losses'][-1]:.4f}, "
                  f"bf16 {bf16['losses'][0]:.4f} -> {bf16['losses'][-1]:.4f}; relative difference: "
                  f"largest step {c['max_step_rel']:.4f}, largest {WINDOW}-step mean {c['max_window_rel']:.4f}, "
                  f"final {c['final_rel']:.4f} -> {'within' if passed else 'OUTSIDE'} {args.tolerance:g}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f)
        if args.plot:
            panels = []
            for r in rows:
                low = min(min(r["fp32"]["losses"]), min(r["bf16"]["losses"]))
                p = svg_plot.Panel(f"{r['method']}, lr {r['lr']:g}: loss per step", "step", "loss",
                                   x_ticks=[1, 2, 5, 10, 20, 50, 100, 200], y_floor=float(int(low)),
                                   markers=False)
                p.add("fp32", svg_plot.COLOURS[0], False, list(enumerate(r["fp32"]["losses"], 1)))
                p.add("bf16", svg_plot.COLOURS[1], True, list(enumerate(r["bf16"]["losses"], 1)))
                panels.append(p)
            svg_plot.write(args.plot, [panels], [("fp32", svg_plot.COLOURS[0], False),
                                                 ("bf16 autocast, frozen weights in bf16", svg_plot.COLOURS[1],
                                                  True)])
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

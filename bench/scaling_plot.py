"""Draws the training scaling grid of bench/train_peer.py as an SVG: for each model, method and precision,
tokens/s and peak resident memory against the micro-batch, one colour per sequence length, Tunebench solid and
transformers + PEFT dashed (bench/svg_plot.py; no plotting library needed).

usage: python bench/scaling_plot.py ROWS.json OUT.svg    (ROWS.json: train_peer.py --json with --batches and
                                                          --seqs lists)
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import svg_plot  # noqa: E402

SIDES = (("Tunebench", False, "tunebench_tokens_per_s", "tunebench_peak_resident_bytes"),
         ("transformers + PEFT", True, "peer_tokens_per_s", "peer_peak_resident_bytes"))


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        rows = json.load(f)["rows"]
    groups = {}
    for r in rows:
        groups.setdefault((r["model"], r["method"], r["precision"]), []).append(r)
    seqs = sorted({r["seq"] for r in rows})
    colour = {s: svg_plot.COLOURS[i % len(svg_plot.COLOURS)] for i, s in enumerate(seqs)}
    grid = []
    for (model, method, precision), g in sorted(groups.items()):
        name = f"{model}, {method}, {precision}"
        speed = svg_plot.Panel(f"{name}: tokens/s", "micro-batch (sequences)", "tokens / s")
        memory = svg_plot.Panel(f"{name}: peak RSS", "micro-batch (sequences)", "GiB")
        for s in seqs:
            pts = [r for r in g if r["seq"] == s]
            for side, dashed, key, rss in SIDES:
                speed.add(f"{side} T{s}", colour[s], dashed,
                          [(r["batch"], statistics.median(r[key])) for r in pts])
                memory.add(f"{side} T{s}", colour[s], dashed, [(r["batch"], r[rss] / 2**30) for r in pts])
        grid.append([speed, memory])
    legend = [(f"T = {s}", colour[s], False) for s in seqs]
    legend += [("solid: Tunebench", None, False), ("dashed: transformers + PEFT", None, False)]
    svg_plot.write(sys.argv[2], grid, legend)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Dataset-store jobs at several sizes: runs bench/data_peer.py at each size (same generator, same side-by-side
jobs) and prints records vs seconds and peak RSS for dedup, stats and scan, Tunebench and the Python peer.

usage: python bench/data_sizes.py [--sizes 10000,100000,1000000] [--jobs dedup,stats,scan]
                                  [--tunebench build/bin/tunebench] [--baseline OLD_BINARY]
                                  [--workdir DIR] [--json OUT.json] [--plot OUT.svg]
--baseline runs another tunebench binary's dedup and scan on the same store after the others (an older build,
for before/after figures) and checks that it finds the same. Each size's files go to a folder under --workdir
(default: a temporary one) that is deleted after that size.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data_peer import ROOT, run_child  # noqa: E402

SAME = {"dedup": ("records", "exact_duplicates", "near_duplicates", "clusters", "cluster_ids"),
        "scan": ("records", "flagged", "by_kind")}


def run_size(a, n, work):
    cmd = [sys.executable, os.path.join(ROOT, "bench", "data_peer.py"), "--records", str(n), "--workdir", work,
           "--jobs", a.jobs, "--tunebench", a.tunebench, "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    summary = json.loads(out[out.index("{"):])
    rows = {r["job"]: r for r in summary["results"]}
    store = os.path.join(work, "tunebench.db")
    for job in ("dedup", "scan"):
        if a.baseline and job in rows:
            args = {"dedup": ["--near", "0.8"], "scan": []}[job]
            s, rss, cpu, res = run_child([a.baseline, "data", job, "--store", store, *args, "--json"])
            rows[job]["baseline"] = {"s": s, "rss_mib": rss, "cpu_s": cpu, "out": res}
            new = rows[job]["tunebench"]["out"]
            if any(new.get(k) != res.get(k) for k in SAME[job]):
                summary["warnings"].append(f"{job}: baseline found {[res.get(k) for k in SAME[job]]}, "
                                           f"this build {[new.get(k) for k in SAME[job]]}")
    return summary, rows


def plot(table, jobs, path):
    """Seconds and peak RSS against records, log-log, as an SVG (bench/svg_plot.py): a colour per job,
    Tunebench solid, the peer dashed, an older build (--baseline) dotted-grey."""
    import svg_plot

    seconds = svg_plot.Panel("wall seconds", "records", "seconds", log_y=True)
    memory = svg_plot.Panel("peak RSS", "records", "MiB", log_y=True)
    sizes = sorted(table)
    legend = []
    for i, job in enumerate(jobs):
        colour = svg_plot.COLOURS[i % len(svg_plot.COLOURS)]
        legend.append((job, colour, False))
        for side, dashed in (("tunebench", False), ("peer", True), ("baseline", True)):
            pts = [(n, table[n][job][side]) for n in sizes if side in table[n].get(job, {})]
            c = "#999" if side == "baseline" else colour
            seconds.add(f"{job} {side}", c, dashed, [(n, r["s"]) for n, r in pts])
            memory.add(f"{job} {side}", c, dashed, [(n, r["rss_mib"]) for n, r in pts])
    legend += [("solid: Tunebench", None, False), ("dashed: Python peer", None, False)]
    svg_plot.write(path, [[seconds, memory]], legend)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--jobs", default="dedup,stats,scan")
    ap.add_argument("--tunebench", default=os.path.join(ROOT, "build", "bin", "tunebench"))
    ap.add_argument("--baseline", help="an older tunebench binary whose dedup and scan run too")
    ap.add_argument("--workdir")
    ap.add_argument("--json", help="write the table as JSON here")
    ap.add_argument("--plot", help="write an SVG of seconds and peak RSS against records here")
    a = ap.parse_args()
    jobs = a.jobs.split(",")
    table, warnings = {}, []
    for n in (int(x) for x in a.sizes.split(",")):
        base = a.workdir or tempfile.gettempdir()
        os.makedirs(base, exist_ok=True)
        work = tempfile.mkdtemp(prefix=f"data-sizes-{n}-", dir=base)
        try:
            print(f"free disk under {base}: {shutil.disk_usage(base).free / 1e9:.1f} GB; {n:,} records ...",
                  file=sys.stderr, flush=True)
            summary, rows = run_size(a, n, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        table[n] = {job: {side: {k: r[side][k] for k in ("s", "rss_mib", "cpu_s")}
                          for side in ("tunebench", "baseline", "peer") if side in r}
                    for job, r in rows.items()}
        warnings += [f"{n:,}: {w}" for w in summary["warnings"]]
    print(f"{'records':>9} {'job':<6} {'tunebench s':>11} {'peer s':>8} {'ratio':>6} {'tb MiB':>7} {'peer MiB':>8}"
          + (f" {'before s':>8} {'before MiB':>10}" if a.baseline else ""))
    for n in sorted(table):
        for job in jobs:
            r = table[n].get(job)
            if not r:
                continue
            t, p = r["tunebench"], r["peer"]
            line = (f"{n:>9,} {job:<6} {t['s']:>11.2f} {p['s']:>8.2f} {p['s'] / t['s']:>6.2f} {t['rss_mib']:>7.0f} "
                    f"{p['rss_mib']:>8.0f}")
            if "baseline" in r:
                line += f" {r['baseline']['s']:>8.2f} {r['baseline']['rss_mib']:>10.0f}"
            print(line)
    for w in warnings:
        print("warning:", w)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"table": table, "warnings": warnings}, f, indent=1)
    if a.plot:
        plot(table, jobs, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())

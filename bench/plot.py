#!/usr/bin/env python3
"""Plots sinew-bench JSON results (bench/results/<N>core/*.json) as PNG files.

    python3 bench/plot.py                          # every bench/results/<N>core/*.json -> docs/img/
    python3 bench/plot.py bench/results/2core/e2e-queue.json -o /tmp/img
    python3 bench/plot.py A.json B.json --ratios wl_ --ratios nbody   # docs/img/ratios-wl_.png, ...

One PNG per (results file, benchmark): a horizontal bar per variant showing
its median metric with the min..max spread as an error bar, grouped and
coloured by variant kind (sinew, tbb, openmp, opencl, other). Files are
named bench-<results file stem>-<benchmark>.png, the stem prefixed with the
machine folder (bench/results/16core/e2e-queue.json: bench-16core-e2e-queue-
queue_handoff.png). The STREAM triad limit of
the file (machine.stream_triad_GBps), when present, is drawn as a dashed
line on plots whose unit is GB/s. Needs matplotlib:

    apt-get install -y python3-matplotlib     # or: pip install matplotlib
"""
import argparse
import glob
import json
import os
import sys


def kind(name):
    n = name.lower()
    if "opencl" in n or "pocl" in n:
        return "opencl"
    if n.startswith("sinew") or " sinew" in n:
        return "sinew"
    if "openmp" in n or " omp" in n:
        return "openmp"
    if "tbb" in n or "flow graph" in n:
        return "tbb"
    return "other"


COLOURS = {"sinew": "#1f77b4", "tbb": "#ff7f0e", "openmp": "#2ca02c", "opencl": "#9467bd", "other": "#7f7f7f"}


def plot_benchmark(plt, bench, machine, out_path):
    rows = [m for m in bench.get("measurements", []) if m.get("metric", {}).get("n", 0) > 0]
    if not rows:
        return False
    units = sorted({m["unit"] for m in rows})
    fig_h = 0.32 * len(rows) + 1.6 + 0.15 * min(5, len(bench.get("ratios", [])))
    fig, axes = plt.subplots(len(units), 1, figsize=(9, fig_h), squeeze=False)
    for ax, unit in zip(axes[:, 0], units):
        ms = [m for m in rows if m["unit"] == unit]
        names = [m["name"] for m in ms]
        med = [m["metric"]["median"] for m in ms]
        lo = [max(0.0, m["metric"]["median"] - m["metric"]["min"]) for m in ms]
        hi = [max(0.0, m["metric"]["max"] - m["metric"]["median"]) for m in ms]
        ys = list(range(len(ms)))[::-1]
        ax.barh(ys, med, xerr=[lo, hi], color=[COLOURS[kind(n)] for n in names], capsize=2)
        ax.set_yticks(ys)
        ax.set_yticklabels(names, fontsize=7)
        better = ms[0].get("better", "higher")
        ax.set_xlabel("%s (%s is better; bar = median, whiskers = min..max)" % (unit, better), fontsize=8)
        triad = machine.get("stream_triad_GBps")
        if unit == "GB/s" and triad:
            ax.axvline(triad, color="k", linestyle="--", linewidth=1)
            ax.text(triad, ys[0] + 0.5, " STREAM triad %.1f GB/s" % triad, fontsize=7, va="bottom")
    ratios = bench.get("ratios", [])
    subtitle = "\n".join("%s=%.3f (%s %s %g)" % (r["name"], r["value"],
                                               "informational; target" if r.get("informational") else "target",
                                               "<=" if r["better"] == "lower" else ">=", r["target"])
                         for r in ratios[:4] if r.get("value") is not None)
    if len(ratios) > 4:
        subtitle += "\n+%d more ratios (see the JSON)" % (len(ratios) - 4)
    title = "%s — %s, %s threads" % (bench["name"], machine.get("cpu_model", "?"), machine.get("sinew_scheduler_threads", "?"))
    fig.suptitle(title + ("\n" + subtitle if subtitle else ""), fontsize=8)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
    return True


def stem(path):
    """The results file's name without .json, after its machine folder's name (bench/results/<N>core/)."""
    name = os.path.splitext(os.path.basename(path))[0]
    folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
    return "%s-%s" % (folder, name) if folder.endswith("core") and folder[:-4].isdigit() else name


def machine_label(doc, path):
    m = doc.get("machine", {})
    return "%s threads (%s)" % (m.get("sinew_scheduler_threads", m.get("logical_cpus", "?")), stem(path))


def plot_ratios(plt, docs, pattern, out_path):
    """One PNG of the RATIO values whose name contains `pattern`, one bar per
    (ratio, results file), each file in its own colour, the target as a black
    tick: the same comparison on several machines side by side."""
    names = []
    for _, doc in docs:
        for b in doc.get("benchmarks", []):
            for r in b.get("ratios", []):
                if pattern in r["name"] and r["name"] not in names and r.get("value") is not None:
                    names.append(r["name"])
    if not names:
        return False
    width = 0.8 / len(docs)
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(names) * max(1, len(docs) / 2) + 1.5))
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b"]
    for k, (path, doc) in enumerate(docs):
        vals, targets = {}, {}
        for b in doc.get("benchmarks", []):
            for r in b.get("ratios", []):
                if r["name"] in names and r.get("value") is not None:
                    vals[r["name"]] = r["value"]
                    targets[r["name"]] = (r["target"], r["better"])
        ys = [len(names) - 1 - i + 0.4 - width * (k + 0.5) for i in range(len(names))]
        ax.barh([y for y, n in zip(ys, names) if n in vals], [vals[n] for n in names if n in vals], height=width,
                color=palette[k % len(palette)], label=machine_label(doc, path))
        for y, n in zip(ys, names):
            if n in targets:
                t, better = targets[n]
                ax.plot([t, t], [y - width / 2, y + width / 2], color="k", linewidth=2)
            if n in vals:
                ax.text(vals[n], y, " %.3f" % vals[n], va="center", fontsize=6)
    ax.set_yticks([len(names) - 1 - i for i in range(len(names))])
    info = {r["name"] for _, doc in docs for b in doc.get("benchmarks", []) for r in b.get("ratios", [])
            if r.get("informational")}
    ax.set_yticklabels([n + (" (informational)" if n in info else "") for n in names], fontsize=7)
    ax.axvline(1.0, color="grey", linewidth=0.5, linestyle=":")
    ax.set_xlabel("Sinew / peer (or / limit); black tick = target", fontsize=8)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("RATIO lines matching '%s'" % pattern, fontsize=9)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
    return True


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="Plot sinew-bench JSON results as PNG files.")
    ap.add_argument("files", nargs="*", help="JSON results (default: bench/results/<N>core/*.json)")
    ap.add_argument("-o", "--out", default=os.path.join(here, "..", "docs", "img"), help="output directory")
    ap.add_argument("--ratios", metavar="PATTERN", action="append", default=[],
                    help="instead of per-benchmark plots: one PNG per PATTERN with the RATIO values whose name "
                         "contains it, one bar per results file (e.g. 2 and 16 cores side by side), written to "
                         "OUT/ratios-<PATTERN>.png; repeatable")
    args = ap.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot.py needs matplotlib, which %s cannot import: apt-get install -y python3-matplotlib "
                 "(then run it with /usr/bin/python3), or pip install matplotlib" % sys.executable)
    files = args.files or sorted(glob.glob(os.path.join(here, "results", "*core", "*.json")))
    if not files:
        sys.exit("plot.py: no JSON results given and none in bench/results/<N>core/")
    os.makedirs(args.out, exist_ok=True)
    written = 0
    if args.ratios:
        docs = []
        for f in files:
            try:
                with open(f) as fh:
                    docs.append((f, json.load(fh)))
            except (OSError, ValueError) as e:
                sys.exit("plot.py: %s: %s" % (f, e))
        for pattern in args.ratios:
            out = os.path.join(args.out, "ratios-%s.png" % "".join(c if c.isalnum() or c in "_-" else "_" for c in pattern))
            if plot_ratios(plt, docs, pattern, out):
                print(out)
                written += 1
            else:
                print("plot.py: no RATIO line matches '%s' in the given files" % pattern, file=sys.stderr)
        if written == 0:
            sys.exit("plot.py: nothing to plot")
        return
    for f in files:
        try:
            with open(f) as fh:
                doc = json.load(fh)
        except (OSError, ValueError) as e:
            sys.exit("plot.py: %s: %s" % (f, e))
        if not str(doc.get("schema", "")).startswith("sinew-bench/"):
            print("plot.py: %s: not a sinew-bench result (schema %r), skipped" % (f, doc.get("schema")), file=sys.stderr)
            continue
        for b in doc.get("benchmarks", []):
            out = os.path.join(args.out, "bench-%s-%s.png" % (stem(f), b["name"]))
            if plot_benchmark(plt, b, doc.get("machine", {}), out):
                print(out)
                written += 1
    if written == 0:
        sys.exit("plot.py: nothing to plot (no measured variants)")


if __name__ == "__main__":
    main()

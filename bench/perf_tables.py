#!/usr/bin/env python3
"""Fills the tables of docs/performance.md from committed sinew-bench JSON results.

    python3 bench/perf_tables.py --doc docs/performance.md      # every bench/results/<N>core/ folder
    python3 bench/perf_tables.py --doc docs/performance.md \\
        --machine "2 cores" bench/results/2core --machine "16 cores" bench/results/16core \\
        --missing "16 cores" farm_grain "no result: killed by its timeout (rc=124)"

Every table of the document sits between `<!-- table:NAME -->` and
`<!-- /table:NAME -->`; this script rewrites what is between them (and
nothing else), one row per case and machine, so that every number in the
tables is a median (or min..max spread) read from a results file, or a ratio
of two of them. A machine is a label and its results: JSON files, globs, or
folders (their *.json); without --machine, every bench/results/<N>core/
folder, labelled "<N> cores" (bench/results/README.md). Where a machine's
files hold a benchmark twice, the newest run (machine.date) counts. Under
each table a note names, per machine, the files it read and their build
commits (the folder's runs.tsv, else the JSON's build_commit). A machine
whose files lack a benchmark gets a row saying which command produces it,
or the text given with --missing LABEL BENCHMARK TEXT (e.g. why a run that
was made has no result). Without --doc the tables are printed.

The ratio tables count only target RATIO lines: an informational one
(`"informational": true`, bench/README.md "Output"; in files of builds
before that field, a line the benchmarks' present rules would mark, see
legacy_informational) is listed apart with its reason, never as met.
"""
import argparse
import glob
import json
import os
import re
import sys

PENDING = "not measured yet: `bash dev-carry/run.sh e2e` on the device (bench/device_run.sh)"
MISSING = {}  # (machine label, benchmark) -> text of its row when the files lack the benchmark (--missing)


RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def build_of(path, machine):
    """The build commit of a results file: its line in the folder's runs.tsv, else the JSON's."""
    try:
        with open(os.path.join(os.path.dirname(path), "runs.tsv")) as fh:
            for line in fh:
                cols = line.rstrip("\n").split("\t")
                if len(cols) > 2 and cols[0] == os.path.basename(path) and cols[2]:
                    return cols[2].split()[0]
    except OSError:
        pass
    return machine.get("build_commit") or "?"


class Machine:
    def __init__(self, label, files):
        self.label = label
        self.files = files
        self.benches = {}  # name -> benchmark dict (the newest run wins)
        self.machine = {}
        for f in files:
            with open(f) as fh:
                doc = json.load(fh)
            if not str(doc.get("schema", "")).startswith("sinew-bench/"):
                sys.exit("perf_tables.py: %s is not a sinew-bench result" % f)
            m = doc.get("machine", {})
            for b in doc.get("benchmarks", []):
                b["_file"], b["_date"], b["_build"], b["_machine"] = f, m.get("date", ""), build_of(f, m), m
                old = self.benches.get(b["name"])
                if not old or b["_date"] >= old["_date"]:
                    self.benches[b["name"]] = b
            self.machine = m or self.machine

    def bench(self, name):
        return self.benches.get(name)

    def m(self, bench, name):
        b = self.bench(bench)
        if not b:
            return None
        for x in b.get("measurements", []):
            if x["name"] == name and x.get("metric", {}).get("n", 0) > 0:
                return x["metric"]
        return None

    def param(self, bench, key):
        b = self.bench(bench)
        return None if not b else b.get("params", {}).get(key)

    def triad(self):
        v = self.param("stream_triad", "triad_GBps")
        if v:
            return float(v)
        for b in self.benches.values():
            for n in b.get("notes", []):
                g = re.search(r"triad.*?([0-9.]+) GB/s", n)
                if b["name"] == "workloads" and g:
                    return float(g.group(1))
        return None

    def peak(self):
        v = self.param("peak_flops", "peak_gflops_float") or self.param("nbody", "peak_gflops_float")
        return float(v) if v else None

    def loaded(self, bench):
        """Cores' worth of CPU other processes used during `bench` (None if unknown)."""
        b = self.bench(bench)
        if not b or not b.get("wall_seconds"):
            return None
        return b.get("foreign_cpu_seconds", 0) / b["wall_seconds"]


def fmt(v, d=None):
    if v is None:
        return "—"
    if d is None:
        d = 3 if abs(v) < 10 else 2 if abs(v) < 100 else 1 if abs(v) < 10000 else 0
    return "%.*f" % (d, v)


def cell(metric):
    """median [min–max]"""
    if not metric:
        return "—"
    return "%s [%s–%s]" % (fmt(metric["median"]), fmt(metric["min"]), fmt(metric["max"]))


def ratio(a, b):
    if not a or not b or not b["median"]:
        return "—"
    return fmt(a["median"] / b["median"], 3)


def table(header, rows):
    # Rows of machines without results go last.
    pending = lambda r: r[1] == PENDING or r[1] in MISSING.values()
    rows = [r for r in rows if not pending(r)] + [r for r in rows if pending(r)]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def pending_row(machine, ncols, bench=None):
    return [machine.label, MISSING.get((machine.label, bench), PENDING)] + [""] * (ncols - 2)


def load_note(machines, benches):
    """Per machine: the files the rows come from, their builds, and the other processes' load."""
    parts = []
    for mc in machines:
        srcs = []
        for b in filter(None, map(mc.bench, benches)):
            src = "`%s` (build %s)" % (os.path.relpath(b["_file"], RESULTS), b["_build"])
            if src not in srcs:
                srcs.append(src)
        ls = [(b, mc.loaded(b)) for b in benches if mc.loaded(b) is not None]
        if srcs:
            parts.append("%s, %s: other processes used %s cores on average while these ran" %
                         (mc.label, ", ".join(srcs), ", ".join("%s %.2f" % (b, l) for b, l in ls)))
    return ("\n\n" + "; ".join(parts) + ".") if parts else ""


# ------------------------------------------------------------------ informational lines

def starpu_cpu_workers(bench):
    """StarPU's CPU workers from the benchmark's `starpu_workers` param ("4 cpu + 1 opencl"), or None."""
    g = re.match(r"\s*(\d+) cpu", (bench.get("params") or {}).get("starpu_workers", ""))
    return int(g.group(1)) if g else None


def multidevice_timed(bench, tag, config):
    """(variant timed for configuration `config` of workload `tag`, its weights) from a benchmark's notes."""
    timed, weights = config, ""
    for n in bench.get("notes", []):
        if not n.startswith(tag + config + ":"):
            continue
        g = re.search(r"timed as '([^']*)'", n)
        if g:
            timed = g.group(1)
        g = re.search(r"weights (.*)$", n)
        if g:
            weights = g.group(1)
    return timed, weights


def legacy_informational(r, bench):
    """Why a RATIO line of a file written before sinew-bench marked informational
    lines is informational by the rules the benchmarks apply now, or None."""
    name, info = r["name"], r.get("info", "")
    if name == "stream_triad_tbb_over_omp":
        return "both sides are peers, not Sinew"
    if name == "pipeline_overhead_vs_flow_graph":
        return "the flow graph is a second reference; the target is pipeline_overhead"
    if name in ("starpu_series", "starpu_saxpy"):
        threads = bench["_machine"].get("sinew_scheduler_threads")
        cpus = starpu_cpu_workers(bench)
        if threads and cpus is not None and threads > cpus:
            return "lopsided: Sinew on %d host workers, StarPU on %d CPU workers (the code of this run had " \
                   "no equal-workers variant)" % (threads, cpus)
        return None
    g = re.match(r"multidevice_(series|saxpy|unbalanced_(\d+))_(iterative_vs_optimum|all_vs_best_single)$", name)
    if g:
        tag = "nz %s%%: " % g.group(2) if g.group(2) else ""
        it, it_w = multidevice_timed(bench, tag, "all, iterative")
        if g.group(3) == "iterative_vs_optimum":
            opt_name = next((x["name"][len(tag):] for x in bench.get("measurements", [])
                             if x["name"].startswith(tag + "all, optimum")), None)
            for n in bench.get("notes", []):  # an optimum timed as another variant has no row of its own
                m = re.match(re.escape(tag) + r"(all, optimum \(exhaustive \d+%\)):", n)
                opt_name = opt_name or (m and m.group(1))
            if not opt_name:
                return None
            opt, opt_w = multidevice_timed(bench, tag, opt_name)
            return "both chose the same split (%s): one timed configuration" % it_w if opt == it else None
        alone = [x for x in bench.get("measurements", []) if x["name"].startswith(tag) and x["name"].endswith(" alone")
                 and x.get("metric", {}).get("n")]
        best = min(alone, key=lambda x: x["seconds"]["median"])["name"][len(tag):] if alone else None
        if best and it == best:
            return "iterative gave the whole unit to the best single device (%s): one timed configuration" % \
                best[:-len(" alone")]
        return None
    if name.startswith("numa_sim_"):
        # The layout is named in the _vs_steal line of the program only.
        vs_steal = re.sub(r"_vs_least$", "_vs_steal", name)
        if any("(auto = fine)" in x.get("info", "") for x in bench.get("ratios", []) if x["name"] == vs_steal):
            return "every placement of the tasks gives the same remote fraction for this layout (auto = fine)"
        if name.endswith("_vs_least") and info.rstrip().endswith("0.000 / 0.000"):
            return "the layout allows no remote byte: 1.0 is 0/0 (deal_vs_steal is the target)"
    return None


def informational(r, bench):
    """Why RATIO line `r` of `bench` is informational (never counted as a target met), or None for a target."""
    if "informational" in r:
        return (r.get("informational_reason") or "informational") if r["informational"] else None
    return legacy_informational(r, bench)


def ratio_cells(mc, benches):
    """(number met, number of targets, met, missed, informational) cells for the RATIO lines of `benches`."""
    met, missed, info = [], [], []
    for b in filter(None, map(mc.bench, benches)):
        for r in b.get("ratios", []):
            if r.get("value") is None:
                continue
            why = informational(r, b)
            if why:
                info.append("`%s` %s (%s)" % (r["name"], fmt(r["value"], 3), why))
            elif r.get("met"):
                met.append("`%s` %s" % (r["name"], fmt(r["value"], 3)))
            else:
                missed.append("`%s` %s (%s %g)" % (r["name"], fmt(r["value"], 3), "≤" if r["better"] == "lower" else "≥",
                                                   r["target"]))
    return len(met), len(met) + len(missed), "; ".join(met) or "—", "; ".join(missed) or "—", "; ".join(info) or "—"


# ------------------------------------------------------------------ tables

def t_limits(ms):
    rows = []
    for mc in ms:
        if not mc.bench("stream_triad") and not mc.bench("peak_flops"):
            rows.append(pending_row(mc, 8, "stream_triad"))
            continue
        rows.append([mc.label, cell(mc.m("stream_triad", "tbb::parallel_for triad")),
                     cell(mc.m("stream_triad", "openmp triad")), cell(mc.m("stream_triad", "serial triad (1 thread)")),
                     cell(mc.m("peak_flops", "float, all threads")), cell(mc.m("peak_flops", "float, 1 thread")),
                     cell(mc.m("peak_flops", "double, all threads")), cell(mc.m("peak_flops", "double, 1 thread"))])
    return table(["machine", "triad tbb GB/s", "triad OpenMP GB/s", "triad 1 thread GB/s", "float GFLOP/s all",
                  "float GFLOP/s 1 thread", "double GFLOP/s all", "double GFLOP/s 1 thread"], rows) + \
        load_note(ms, ["stream_triad", "peak_flops"])


def t_image(ms):
    rows = []
    for side in (1024, 2048, 4096, 8192):
        for mc in ms:
            if not mc.bench("image_pipeline"):
                if side == 1024:
                    rows.append(pending_row(mc, 7, "image_pipeline"))
                continue
            s = mc.m("image_pipeline", "%d^2 sinew pipeline" % side)
            f = mc.m("image_pipeline", "%d^2 tbb flow graph" % side)
            if not s and not f:
                continue
            tr = mc.triad()
            bound = tr * 1e9 / (24.0 * side * side) if tr else None  # 3 stages x (4 B read + 4 B written) per pixel
            rows.append(["%s, %d²" % (mc.label, side), cell(s), cell(f), ratio(s, f), fmt(bound),
                         fmt(100 * s["median"] / bound, 1) + "%" if s and bound else "—",
                         fmt(100 * f["median"] / bound, 1) + "%" if f and bound else "—"])
    return table(["machine, image", "Sinew images/s", "flow graph images/s", "Sinew / flow graph",
                  "bandwidth bound images/s", "Sinew % of bound", "flow graph % of bound"], rows) + \
        load_note(ms, ["image_pipeline"])


WL_CASES = [("saxpy 50M", "GB/s", 1.0), ("series 1k", None, None), ("series 10k", None, None),
            ("segmentation 100^3", "Mvoxel/s", 2e-3), ("segmentation 200^3", "Mvoxel/s", 2e-3),
            ("segmentation 400^3", "Mvoxel/s", 2e-3), ("solarize 1024^2", "Mpixel/s", 8e-3),
            ("solarize 2048^2", "Mpixel/s", 8e-3), ("solarize 4096^2", "Mpixel/s", 8e-3),
            ("solarize 8192^2", "Mpixel/s", 8e-3)]


def t_workloads(ms):
    rows = []
    for case, unit, gb_per_unit in WL_CASES:
        for mc in ms:
            if not mc.bench("workloads"):
                if case == WL_CASES[0][0]:
                    rows.append(pending_row(mc, 11, "workloads"))
                continue
            v = {k: mc.m("workloads", "%s %s" % (case, k)) for k in
                 ("sinew map", "tbb::parallel_for", "openmp parallel for", "sinew opencl leaf", "opencl direct",
                  "sinew opencl leaf, steal")}
            if not v["sinew map"]:
                continue
            tr = mc.triad()
            lim = "—"
            if gb_per_unit and tr:
                lim = fmt(100 * v["sinew map"]["median"] * gb_per_unit / tr, 1) + "%"
            rows.append(["%s, %s" % (mc.label, case.replace("^3", "³").replace("^2", "²")),
                         cell(v["sinew map"]), cell(v["tbb::parallel_for"]), cell(v["openmp parallel for"]),
                         ratio(v["sinew map"], v["tbb::parallel_for"]), ratio(v["sinew map"], v["openmp parallel for"]),
                         cell(v["sinew opencl leaf"]), cell(v["opencl direct"]),
                         ratio(v["sinew opencl leaf"], v["opencl direct"]),
                         ratio(v["sinew opencl leaf, steal"], v["opencl direct"]), lim])
    return table(["machine, case", "Sinew map", "tbb::parallel_for", "OpenMP", "Sinew / tbb", "Sinew / OpenMP",
                  "Sinew OpenCL leaf (PoCL)", "OpenCL direct (PoCL)", "leaf / direct", "leaf on steal / direct",
                  "Sinew % of triad"], rows) + \
        load_note(ms, ["workloads"])


def t_workloads_gpu(ms):
    """The OpenCL leaf against a hand-written launch on the GPU, where a file has those variants."""
    rows = []
    for case, _, _ in WL_CASES:
        for mc in ms:
            if not mc.bench("workloads_gpu"):
                continue
            leaf = mc.m("workloads_gpu", "%s sinew opencl leaf, gpu" % case)
            direct = mc.m("workloads_gpu", "%s opencl direct, gpu" % case)
            if not leaf and not direct:
                continue
            rows.append(["%s, %s" % (mc.label, case.replace("^3", "³").replace("^2", "²")),
                         cell(leaf), cell(direct), ratio(leaf, direct)])
    if not rows:
        return ("No results file has the GPU variants yet (`sinew-bench workloads_gpu` runs them where there is an "
                "OpenCL GPU).")
    return table(["machine, case", "Sinew OpenCL leaf (GPU)", "OpenCL direct (GPU)", "leaf / direct"], rows) + \
        load_note(ms, ["workloads_gpu"])


def t_nbody(ms):
    rows = []
    for mc in ms:
        if not mc.bench("nbody"):
            rows.append(pending_row(mc, 7, "nbody"))
            continue
        s = mc.m("nbody", "sinew for(map<nbody_step>)")
        t = mc.m("nbody", "tbb::parallel_for per step")
        n = int(mc.param("nbody", "bodies"))
        pk = mc.peak()
        gf = lambda x: x["median"] * n * n * 20 / 1e9 if x else None
        pct = lambda x: (fmt(gf(x), 2) + " (" + fmt(100 * gf(x) / pk, 1) + "%)") if x and pk else fmt(gf(x), 2)
        rows.append(["%s, %d bodies × %s steps" % (mc.label, n, mc.param("nbody", "steps")), cell(s), cell(t),
                     ratio(s, t), pct(s), pct(t), fmt(pk, 2)])
    return table(["machine", "Sinew for steps/s", "oneTBB loop steps/s", "Sinew / oneTBB",
                  "Sinew GFLOP/s (% of peak)", "oneTBB GFLOP/s (% of peak)", "measured float peak GFLOP/s"], rows) + \
        load_note(ms, ["nbody"])


def t_farm(ms):
    rows = []
    for grain, us in (("500ns", 0.5), ("5us", 5.0), ("50us", 50.0)):
        for mc in ms:
            if not mc.bench("farm_grain"):
                if grain == "500ns":
                    rows.append(pending_row(mc, 8, "farm_grain"))
                continue
            cores = [int(c) for c in mc.param("farm_grain", "cores").split(",")]
            for k in cores:
                s = mc.m("farm_grain", "%s sinew farm x%d" % (grain, k))
                f = mc.m("farm_grain", "%s flow graph x%d" % (grain, k))
                s1 = mc.m("farm_grain", "%s sinew farm x1" % grain)
                f1 = mc.m("farm_grain", "%s flow graph x1" % grain)
                ideal = k * 1e3 / us  # kitems/s with k cores and no overhead
                sp = lambda x, x1: "%s (%s)" % (fmt(x["median"] / x1["median"], 2), fmt(x["median"] / x1["median"] / k, 2)) \
                    if x and x1 else "—"
                rows.append(["%s, %s × %d" % (mc.label, grain.replace("us", " µs").replace("ns", " ns"), k), cell(s),
                             cell(f), ratio(s, f), sp(s, s1), sp(f, f1), fmt(ideal),
                             fmt(100 * s["median"] / ideal, 1) + "%" if s else "—"])
    return table(["machine, grain × cores", "Sinew farm kitems/s", "flow graph kitems/s", "Sinew / flow graph",
                  "Sinew speedup (efficiency)", "flow graph speedup (efficiency)", "ideal kitems/s",
                  "Sinew % of ideal"], rows) + load_note(ms, ["farm_grain"])


def t_queue(ms):
    rows = []
    for mc in ms:
        if not mc.bench("queue_handoff"):
            rows.append(pending_row(mc, 6, "queue_handoff"))
            continue
        a = mc.m("queue_handoff", "sinew::spsc_queue")
        b = mc.m("queue_handoff", "sinew::bounded_queue")
        t = mc.m("queue_handoff", "tbb::concurrent_bounded_queue")
        rows.append(["%s, %s items" % (mc.label, mc.param("queue_handoff", "items")), cell(a), cell(b), cell(t),
                     ratio(a, t), ratio(b, t)])
    return table(["machine", "sinew::spsc_queue ns/item", "sinew::bounded_queue ns/item",
                  "tbb::concurrent_bounded_queue ns/item", "spsc / tbb", "bounded / tbb"], rows) + \
        load_note(ms, ["queue_handoff"])


def t_starpu(ms):
    rows = []
    for case in ("series", "saxpy"):
        for mc in ms:
            b = mc.bench("starpu_" + case)
            if not b:
                if case == "series":
                    rows.append(pending_row(mc, 10, "starpu_" + case))
                continue
            n = b["name"]
            same = mc.m(n, "sinew balanced map, StarPU's host workers")
            every = mc.m(n, "sinew balanced map, all host workers")
            per_unit = mc.m(n, "starpu dmda, registered per unit")
            once = mc.m(n, "starpu dmda, registered once")
            threads = b["_machine"].get("sinew_scheduler_threads")
            cpus = starpu_cpu_workers(b)
            host = mc.param(n, "sinew_host_workers")
            old = mc.m(n, "sinew balanced map")  # files of the code before the equal-workers variant
            if old:
                per_unit = mc.m(n, "starpu dmda") or mc.m(n, "starpu dmda (cpu workers)")
                if threads is not None and cpus is not None and threads <= cpus:
                    same, host = old, threads
                else:
                    every = old
            size = mc.param(n, "coefficients") or mc.param(n, "elements")
            rows.append(["%s, %s %s" % (mc.label, case, size), cell(same), cell(per_unit), cell(once),
                         ratio(same, per_unit), ratio(same, once), cell(every), ratio(every, per_unit),
                         cell(mc.m(n, "starpu dmda, cpu only")),
                         "%s (all %s) / %s" % (host or "—", threads or "—", mc.param(n, "starpu_workers") or "—")])
    return table(["machine, case", "Sinew, StarPU's host workers ms/unit", "StarPU registered per unit ms/unit",
                  "StarPU registered once ms/unit", "Sinew / StarPU per unit", "Sinew / StarPU once",
                  "Sinew, all host workers ms/unit (informational)", "all workers / StarPU per unit (informational)",
                  "StarPU CPU only ms/unit (informational)", "host workers: Sinew (all) / StarPU"], rows) + \
        load_note(ms, ["starpu_series", "starpu_saxpy"])


def t_overhead(ms):
    rows = []
    for mc in ms:
        if not mc.bench("map_saxpy") and not mc.bench("pipeline_overhead"):
            rows.append(pending_row(mc, 7, "map_saxpy"))
            continue
        s = mc.m("map_saxpy", "sinew map<Saxpy>")
        t = mc.m("map_saxpy", "tbb::parallel_for")
        p = mc.m("pipeline_overhead", "sinew")
        pp = mc.m("pipeline_overhead", "tbb parallel_pipeline")
        fg = mc.m("pipeline_overhead", "tbb flow graph")
        rows.append([mc.label, cell(s), cell(t), ratio(s, t), cell(p), cell(pp), cell(fg)])
    return table(["machine", "map_saxpy Sinew GB/s", "map_saxpy tbb GB/s", "Sinew / tbb",
                  "pipeline Sinew ns/unit", "parallel_pipeline ns/unit", "flow graph ns/unit"], rows) + \
        load_note(ms, ["map_saxpy", "pipeline_overhead"])


DAG_CASES = [(shape, size) for size in ("1 float", "4 KiB", "1 MiB")
             for shape in ("diamond", "diamond farm", "fan4", "fan4 farm")] + [("keyed count", "")]


def t_dag(ms):
    rows = []
    for mc in ms:
        if not mc.bench("dag"):
            rows.append(pending_row(mc, 7, "dag"))
            continue
        for shape, size in DAG_CASES:
            case = (shape + " " + size).strip()
            fg = mc.m("dag", case + ", tbb flow graph")
            if not fg:
                continue
            unit = "ns/unit" if size == "1 float" else "units/s" if size else "records/s"
            cells = [mc.label, case, unit, fmt(fg["median"])]
            for pol in ("tbb", "steal", "deal"):
                s = mc.m("dag", case + ", sinew " + pol)
                cells.append("%s (%s)" % (fmt(s["median"]) if s else "—", ratio(s, fg)))
            rows.append(cells)
    return table(["machine", "graph, unit size", "unit", "oneTBB flow graph",
                  "Sinew tbb (ratio)", "Sinew steal (ratio)", "Sinew deal (ratio)"], rows) + \
        load_note(ms, ["dag"])


def t_stream(ms):
    """stream_records: MB/s of the one-thread loop and of `sinew run` from a file and from a pipe, with the
    paired-round ratios of the RATIO lines."""
    rows = []
    for mc in ms:
        b = mc.bench("stream_records")
        if not b:
            rows.append(pending_row(mc, 6, "stream_records"))
            continue
        ratios = {r["name"]: r for r in b.get("ratios", [])}
        for kind, label in (("lines", "text lines"), ("records64", "64-byte records")):
            cells = [mc.label, label, fmt((mc.m("stream_records", kind + " loop") or {}).get("median"))]
            for src in ("file", "stdin"):
                s = mc.m("stream_records", "%s sinew %s" % (kind, src))
                r = ratios.get("stream_%s_%s" % (kind, src))
                cells.append("%s (%s, target %s)" % (fmt(s["median"]) if s else "—",
                                                    fmt(r["value"], 3) if r else "—", fmt(r["target"], 1) if r else "—"))
            for src in ("file", "stdin"):  # the I/O floor, informational (absent from older files)
                c = mc.m("stream_records", "%s copy %s" % (kind, src))
                r = ratios.get("stream_%s_%s_copy_vs_loop" % (kind, src))
                cells.append("%s (%s)" % (fmt(c["median"]), fmt(r["value"], 3) if r else "—") if c else "—")
            rows.append(cells)
    return table(["machine", "records", "one-thread loop MB/s", "sinew run, file MB/s (ratio)",
                  "sinew run, stdin pipe MB/s (ratio)", "plain copy, file MB/s (over the loop)",
                  "plain copy, pipe MB/s (over the loop)"], rows) + load_note(ms, ["stream_records"])


def t_endpoints(ms):
    """endpoints: MB/s of the hand-written loop and of Sinew's source -> map -> sink per endpoint and
    message size, with the RATIO line (the median of the paired rounds' ratios)."""
    rows = []
    for mc in ms:
        b = mc.bench("endpoints")
        if not b:
            rows.append(pending_row(mc, 5, "endpoints"))
            continue
        ratios = {r["name"]: r for r in b.get("ratios", [])}
        for lib, name in (("zmq", "ZeroMQ"), ("mqtt", "MQTT")):
            for size, label in (("100B", "100 B"), ("64KiB", "64 KiB")):
                loop = mc.m("endpoints", "%s %s loop" % (lib, size))
                if not loop:
                    continue
                r = ratios.get("endpoints_%s_%s" % (lib, size))
                rows.append([mc.label, "%s, %s" % (name, label), cell(loop),
                             cell(mc.m("endpoints", "%s %s sinew" % (lib, size))), fmt(r["value"], 3) if r else "—"])
    return table(["machine", "endpoint, message", "hand-written loop MB/s", "Sinew MB/s",
                  "Sinew / loop (paired rounds)"], rows) + load_note(ms, ["endpoints"])


# The benchmarks of issue 7's suite, whose RATIO lines the report counts.
SUITE = ("stream_triad", "peak_flops", "map_saxpy", "workloads", "workloads_gpu", "nbody", "image_pipeline", "farm_grain",
         "queue_handoff", "starpu_series", "starpu_saxpy")


def t_ratios(ms):
    rows = []
    for mc in ms:
        n_met, n, met, missed, info = ratio_cells(mc, SUITE)
        if not n and info == "—":
            rows.append(pending_row(mc, 4, "workloads"))
            continue
        rows.append(["%s: %d of %d targets met" % (mc.label, n_met, n), met, missed, info])
    return table(["machine", "met", "missed (value, target)", "informational, not counted (why)"], rows) + \
        load_note(ms, SUITE)


def t_ratios_other(ms):
    """The RATIO lines of every benchmark outside SUITE, one row per machine and benchmark."""
    rows = []
    names = sorted({b for mc in ms for b in mc.benches if b not in SUITE and mc.bench(b).get("ratios")})
    for name in names:
        for mc in ms:
            if mc.bench(name) and mc.bench(name).get("ratios"):
                n_met, n, met, missed, info = ratio_cells(mc, [name])
                rows.append(["%s, `%s`: %d of %d" % (mc.label, name, n_met, n), met, missed, info])
    return table(["machine, benchmark: targets met", "met", "missed (value, target)",
                  "informational, not counted (why)"], rows) + load_note(ms, names)


TABLES = {"limits": t_limits, "image_pipeline": t_image, "workloads": t_workloads, "workloads_gpu": t_workloads_gpu,
          "nbody": t_nbody,
          "farm_grain": t_farm, "queue_handoff": t_queue, "starpu": t_starpu, "overhead": t_overhead,
          "ratios": t_ratios, "ratios_other": t_ratios_other,
          "dag": t_dag, "stream": t_stream, "endpoints": t_endpoints}


def main():
    ap = argparse.ArgumentParser(description="Fill docs/performance.md's tables from sinew-bench JSON results.")
    ap.add_argument("--machine", nargs="+", action="append", metavar=("LABEL", "FILE"),
                    help="a machine's label and its results: files, globs or folders (their *.json); repeat per "
                         "machine (default: every bench/results/<N>core/ folder as '<N> cores')")
    ap.add_argument("--missing", nargs=3, action="append", default=[], metavar=("LABEL", "BENCHMARK", "TEXT"),
                    help="the row text of machine LABEL when its files lack BENCHMARK (default: the 'not measured "
                         "yet' line); repeatable")
    ap.add_argument("--doc", help="rewrite the marked tables of this Markdown file in place")
    args = ap.parse_args()
    for label, bench, text in args.missing:
        MISSING[(label, bench)] = text
    if not args.machine:
        dirs = [d for d in glob.glob(os.path.join(RESULTS, "*core")) if os.path.basename(d)[:-4].isdigit()]
        args.machine = [["%s cores" % os.path.basename(d)[:-4], d]
                        for d in sorted(dirs, key=lambda d: int(os.path.basename(d)[:-4]))]
    machines = []
    for spec in args.machine:
        files = []
        for pat in spec[1:]:
            got = sorted(glob.glob(os.path.join(pat, "*.json") if os.path.isdir(pat) else pat))
            if not got:
                print("perf_tables.py: %s: no such file (the machine's rows say 'not measured yet')" % pat,
                      file=sys.stderr)
            files += got
        machines.append(Machine(spec[0], files))
    out = {name: fn(machines) for name, fn in TABLES.items()}
    if not args.doc:
        for name, text in out.items():
            print("<!-- table:%s -->\n%s\n<!-- /table:%s -->\n" % (name, text, name))
        return
    with open(args.doc) as fh:
        doc = fh.read()
    for name, text in out.items():
        pat = re.compile(r"(<!-- table:%s -->\n).*?(<!-- /table:%s -->)" % (name, name), re.S)
        if not pat.search(doc):
            continue
        doc = pat.sub(lambda m: m.group(1) + text + "\n" + m.group(2), doc)
    with open(args.doc, "w") as fh:
        fh.write(doc)
    print("perf_tables.py: rewrote the tables of %s" % args.doc)


if __name__ == "__main__":
    main()

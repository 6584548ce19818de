#!/usr/bin/python3
"""make bench-pipeline: the node schedulers (fcfs, heft, padas, pams) in
plbsim, on the paper-shaped scenario config/pipeline/edc.ini and on drawn
operation mixes (scripts/gen-pipeline.py), in one run:

  1. makespan against the window (16 to 120 instances a node), a line per
     scheduler;
  2. makespan against the estimate error (0 to 100%) at window 80, the
     mean of SEEDS seeds (each seed draws which times go up and which down);
  3. two device types (CPU + GPU, CPU + MIC): padas against pams;
  4. the schedulers' cost, microseconds of wall time a task (this machine);
  5. MIXES drawn mixes: each scheduler's makespan over the best of the four,
     median and worst;
  6. the data where it is made (config/pipeline/edc-copies.ini: each
     operation's output copied where a later task runs in another memory):
     the schedulers counting the copies, and blind to them (--blind-copies),
     with the copies made.

  7. the runtime (needs build/plb-nuclei): plb-nuclei on this machine's
     real CPU cores (cpu = 2) and an emulated GPU whose operation times are
     the real cores' measured ones over drawn speedups, each scheduler
     RUNS times (median), against plbsim on the same cluster (the cores as
     emulated PUs with their measured times); the ordering of every pair
     of schedulers that plbsim puts more than 5% apart, runtime against
     plbsim.

Then the paper's trends as targets, each said met or not. Figures only:
nothing is asserted (a timing is not a test). --json FILE writes every
run; `plb-plot --pipeline FILE` draws part 1.
Environment: BUILD (build), SEEDS (5), MIXES (20), RUNS (5), NUCLEI_PX (4096)."""
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

BUILD = os.environ.get("BUILD", "build")
SEEDS = int(os.environ.get("SEEDS", "5"))
MIXES = int(os.environ.get("MIXES", "20"))
SCHED = ["fcfs", "heft", "padas", "pams"]
EDC = "config/pipeline/edc.ini"
rows = []


def run(path, *args, part):
    out = subprocess.run([f"{BUILD}/plbsim", path, "--scheduler", "all", "--json", *args],
                         check=True, capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        r = json.loads(line)
        r.update(part=part, scenario=path, args=" ".join(args))
        rows.append(r)
        res[r["scheduler"]] = r
    return res


def table(title, keys, fn):
    print(title)
    print(f"{'':>10}" + "".join(f"{s:>10}" for s in SCHED))
    out = {}
    for k in keys:
        out[k] = fn(k)
        print(f"{k:>10}" + "".join(f"{out[k][s]:>10.3f}" for s in SCHED))
    print()
    return out


def mean_over_seeds(path, *args, part):
    acc = {s: [] for s in SCHED}
    for seed in range(1, SEEDS + 1):
        r = run(path, *args, "--seed", str(seed), part=part)
        for s in SCHED:
            acc[s].append(r[s]["makespan_s"])
    return {s: statistics.mean(v) for s, v in acc.items()}


def without(cls):
    """edc.ini without the PUs of one accelerator class (and its model and times)"""
    text = open(EDC).read().splitlines()
    out, skip = [], False
    for line in text:
        if line.startswith("emu ="):
            line = "emu = " + " ".join(w for w in line.split()[2:] if w != cls)
        if line.strip() == f"[model {cls}]":
            skip = True
        elif line.startswith("["):
            skip = False
        if skip or line.split("=")[0].strip() == cls:
            continue
        out.append(line)
    f = tempfile.NamedTemporaryFile("w", suffix=".ini", delete=False)
    f.write("\n".join(out) + "\n")
    f.close()
    return f.name


def main():
    jpath = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    print(f"plbsim's node schedulers; scenario {EDC} (771 tiles, 10,794 tasks, 14 CPU cores, "
          f"a GPU, a MIC); makespans in seconds of virtual time\n")
    w = table("1. against the window (estimate error 0)", [16, 24, 32, 48, 64, 80, 100, 120],
              lambda k: mean_over_seeds(EDC, "--window", str(k), part="window"))
    e = table(f"2. against the estimate error, window 80, mean of {SEEDS} seeds",
              [0, 0.1, 0.25, 0.5, 0.75, 1.0],
              lambda k: mean_over_seeds(EDC, "--window", "80", "--estimate-error", str(k),
                                        part="error"))
    two = {}
    for cls, name in (("mic", "cpu+gpu"), ("gpu", "cpu+mic")):
        p = without(cls)
        two[name] = mean_over_seeds(p, "--window", "80", part=name)
        os.unlink(p)
    table("3. two device types, window 80", list(two), lambda k: two[k])
    cost = {s: statistics.mean(r["sched_us_task"] for r in rows if r["scheduler"] == s)
            for s in SCHED}
    print("4. the schedulers' wall time a task, us (this machine): " +
          ", ".join(f"{s} {cost[s]:.2f}" for s in SCHED) + "\n")
    rel = {s: [] for s in SCHED}
    with tempfile.TemporaryDirectory() as d:
        for seed in range(1, MIXES + 1):
            p = f"{d}/mix{seed}.ini"
            subprocess.run([sys.executable, "scripts/gen-pipeline.py", str(seed), "-o", p], check=True)
            r = run(p, part="mix")
            best = min(r[s]["makespan_s"] for s in SCHED)
            for s in SCHED:
                rel[s].append(r[s]["makespan_s"] / best)
    print(f"5. {MIXES} drawn mixes (scripts/gen-pipeline.py 1..{MIXES}): makespan over the best "
          "scheduler's, median / worst")
    print("".join(f"{s:>8} {statistics.median(rel[s]):.3f} / {max(rel[s]):.3f}   " for s in SCHED) + "\n")

    cp = "config/pipeline/edc-copies.ini"
    aware = mean_over_seeds(cp, "--window", "80", part="copies")
    blind = mean_over_seeds(cp, "--window", "80", "--blind-copies", part="copies-blind")
    table(f"6. data where it is made ({cp}), window 80, mean of {SEEDS} seeds",
          ["counting", "blind"], lambda k: aware if k == "counting" else blind)
    moved = {s: statistics.mean(r["copy_mb"] for r in rows if r["part"] == "copies" and r["scheduler"] == s)
             for s in SCHED}
    print("   GB copied a run, counting: " + ", ".join(f"{s} {moved[s] / 1e3:.0f}" for s in SCHED) + "\n")

    runtime_part()

    def say(what, ok, fig):
        print(f"  {'met    ' if ok else 'NOT met'}  {what}: {fig}")
    print("targets (the paper's trends):")
    r80 = w[80]["heft"] / w[80]["pams"]
    say("pams ahead of heft by >= 10% at window 80", r80 >= 1.10, f"heft / pams = {r80:.3f}")
    worse = [k for k in e if k >= 0.5 and e[k]["heft"] > e[k]["fcfs"]]
    say("heft behind fcfs at estimate errors >= 50%", len(worse) == len([k for k in e if k >= 0.5]),
        "heft / fcfs = " + ", ".join(f"{e[k]['heft'] / e[k]['fcfs']:.3f} ({k:.0%})" for k in e if k >= 0.5))
    spread = max(e[k]["pams"] for k in e) / min(e[k]["pams"] for k in e)
    say("pams within 7% of itself from 0 to 100% error", spread <= 1.07,
        f"slowest / fastest = {spread:.3f}")
    pp = {k: two[k]["padas"] / two[k]["pams"] for k in two}
    say("padas within 2% of pams with two device types", all(abs(v - 1) <= 0.02 for v in pp.values()),
        ", ".join(f"{k} {v:.3f}" for k, v in pp.items()))
    say("a node's scheduling at most 20 us a task", max(cost.values()) <= 20,
        f"worst {max(cost.values()):.2f} us")
    if jpath:
        with open(jpath, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        print(f"\nevery run: {jpath}")


TILE = "512"
NUCLEI_OPS = ["gray", "deconv", "open", "recon", "threshold", "fill_holes", "area_threshold",
              "distance", "label", "sobel", "features"]


def nuclei(cfg, *args):
    """plb-nuclei's report (JSON) on cfg, verified; its makespan and report."""
    px = os.environ.get("NUCLEI_PX", "4096")
    p = subprocess.run([f"{BUILD}/plb-nuclei", "--config", cfg, "--width", px, "--height", px,
                        "--tile", TILE, "--verify", "--json", *args],
                       capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"plb-nuclei failed: {p.stderr[-500:]}")
    return json.loads(p.stdout.splitlines()[-1])


def runtime_part():
    if not os.access(f"{BUILD}/plb-nuclei", os.X_OK):
        print("7. the runtime: no build/plb-nuclei (no OpenCV in this build): not run\n")
        return
    runs = int(os.environ.get("RUNS", "5"))
    tmp = tempfile.mkdtemp()
    # the real cores' times a task, from a run on them alone
    alone = os.path.join(tmp, "alone.ini")
    with open(alone, "w") as f:
        f.write("[node a]\ncpu = 1\n")
    rep = nuclei(alone, "--scheduler", "fcfs")
    cpu_ms = {o["name"]: 1e3 * o["mean_s"]["cpu"] for o in rep["ops"] if o["ran"]["cpu"]}
    # the accelerator's speedups over a core, drawn by access pattern. An
    # emulated PU runs the real CPU operation before it waits out its own
    # time, so it can be no faster than a core here: its times are a core's
    # or longer (regular access 0.7-1x a core's speed, irregular 0.4-0.9x,
    # atomics 0.2-0.5x), and it is an extra PU the schedulers must give the
    # right operations; the features stay on the CPU
    group = {"gray": "r", "deconv": "r", "open": "r", "threshold": "r", "sobel": "r",
             "recon": "i", "fill_holes": "i", "distance": "i", "features": "-",
             "area_threshold": "a", "label": "a"}
    span = {"r": (0.7, 1), "i": (0.4, 0.9), "a": (0.2, 0.5)}
    rng = random.Random(1)
    ops = ""
    for name in NUCLEI_OPS:
        if name not in cpu_ms:
            continue
        ops += f"[op {name}]\ncpu = {cpu_ms[name]:.6g}\n"
        if group[name] != "-":
            ops += f"gpu = {cpu_ms[name] / rng.uniform(*span[group[name]]):.6g}\n"
    after = {"open": "deconv", "recon": "open", "threshold": "recon", "fill_holes": "threshold",
             "area_threshold": "fill_holes", "distance": "area_threshold",
             "label": "area_threshold", "sobel": "gray", "features": "label distance sobel"}
    gpu = "[model gpu]\nclass = gpu\ncompute = poly 0 0.001\nnoise = 0.03\n"
    real = os.path.join(tmp, "real.ini")
    with open(real, "w") as f:
        f.write("[node a]\ncpu = 1\nemu = gpu\n" + gpu + ops)
    # plbsim's cluster: the cores as emulated PUs of their measured times,
    # the dataflow as plb-nuclei's (features: 2 a tile, about its mean)
    tiles = (int(os.environ.get("NUCLEI_PX", "4096")) // int(TILE)) ** 2
    feats = max(1, round(rep["ops"][-1]["ran"]["cpu"] / tiles))
    sim_ops = ""
    for block in ops.split("[op ")[1:]:
        name = block.split("]")[0]
        sim_ops += "[op " + block
        if name in after:
            sim_ops += f"after = {after[name]}\n"
        if name == "features":
            sim_ops += f"tasks = {feats}\n"
    sim = os.path.join(tmp, "sim.ini")
    with open(sim, "w") as f:
        f.write(f"[run]\nunits = {tiles}\n[node a]\nemu = gpu cpu\n" + gpu +
                "[model cpu]\nclass = cpu\ncompute = poly 0 0.001\nnoise = 0.05\n" + sim_ops)
    simr = mean_over_seeds(sim, part="runtime-sim")
    rt = {}
    for sch in SCHED:
        ms = []
        for _ in range(runs):
            r = nuclei(real, "--scheduler", sch)
            ms.append(r["makespan_s"])
            rows.append(dict(r, part="runtime", scenario=real))
        rt[sch] = statistics.median(ms)
    print(f"7. the runtime: plb-nuclei, {tiles} tiles of {TILE}, a real core and an emulated GPU (on the other core) "
          f"(median of {runs}), against plbsim on the same cluster (mean of {SEEDS} seeds), s")
    print(f"{'':>10}" + "".join(f"{s:>10}" for s in SCHED))
    print(f"{'runtime':>10}" + "".join(f"{rt[s]:>10.3f}" for s in SCHED))
    print(f"{'plbsim':>10}" + "".join(f"{simr[s]:>10.3f}" for s in SCHED))
    agree = total = 0
    for i, a in enumerate(SCHED):
        for b in SCHED[i + 1:]:
            if max(simr[a], simr[b]) / min(simr[a], simr[b]) <= 1.05:
                continue
            total += 1
            same = (simr[a] < simr[b]) == (rt[a] < rt[b])
            agree += same
            print(f"   {a} vs {b}: plbsim {simr[a] / simr[b]:.3f}, runtime {rt[a] / rt[b]:.3f}"
                  f"{'' if same else '  (other order)'}")
    print(f"   pairs plbsim puts more than 5% apart: {total}, in the same order on the runtime: "
          f"{agree}\n")


if __name__ == "__main__":
    main()

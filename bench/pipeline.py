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

Then the paper's trends as targets, each said met or not. Figures only:
nothing is asserted (a timing is not a test). --json FILE writes every
run; `plb-plot --pipeline FILE` draws part 1.
Environment: BUILD (build), SEEDS (5), MIXES (20)."""
import json
import os
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


if __name__ == "__main__":
    main()

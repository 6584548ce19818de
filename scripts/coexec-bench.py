#!/usr/bin/env python3
"""Co-execution on one node: a scenario's PUs together against each alone.

  scripts/coexec-bench.py SCENARIO.ini... [--seeds N] [--policy NAME]
                          [--runs R] [--solve-us US] [--set KEY=VAL ...]

For each one-node scenario (the calibrated H100 node of
config/sim/h100-mm-*.ini, say), plbsim runs the whole node and each model
of its emu list alone (its couple rules dropped: nothing beside it to slow
it), seeds 1..N, with a fixed solve cost so the figures repeat; with --runs
R each figure is the R-th run, its models warmed by the runs before (as a
plb run with --models is: default 3). Prints per
scenario the mean makespans, the node's throughput over the sum of the
solo throughputs (the co-execution efficiency: 1 where the PUs add up
exactly), and the best solo's makespan over the node's (below 1: the node
ran slower than its best PU alone). The closing line holds the least of
each over the scenarios. Needs PLBSIM (default build/plbsim).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sub = __import__("subset-bench")


def models(text):
    """The distinct model names of the scenario's one node."""
    nodes = [lines for h, lines in sub.sections(text) if h and h.startswith("[node ")]
    if len(nodes) != 1:
        raise SystemExit(f"coexec-bench: a scenario of one [node] section is needed, not {len(nodes)}")
    emu = next((l.split("=", 1)[1].split(";")[0].split() for l in nodes[0] if l.startswith("emu")), [])
    return list(dict.fromkeys(emu))


def makespan(plbsim, path, a):
    cmd = [plbsim, path, "--policy", a.policy, "--solve-us", str(a.solve_us), "--json",
           "--seed", str(a.seed_now), "--runs", str(a.runs)]
    for s in a.set:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)}: {p.stderr.strip()[-300:]}")
    return json.loads(p.stdout)["makespan_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenarios", nargs="+")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--policy", default="plb-hac")
    ap.add_argument("--solve-us", type=float, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    plbsim = os.environ.get("PLBSIM", "build/plbsim")
    worst_eff, worst_best = float("inf"), float("inf")
    print(f"{'scenario':28} {'PU':10} {'makespan':>9}   (mean of seeds 1-{a.seeds}, {a.policy}, run {a.runs})")
    with tempfile.TemporaryDirectory() as tmp:
        for path in a.scenarios:
            text = open(path).read()
            names = models(text)
            if len(names) != 2:
                raise SystemExit(f"coexec-bench: {path}: two models on the node are needed, not {len(names)}")
            node = next(h[6:-1] for h, _ in sub.sections(text) if h and h.startswith("[node "))
            runs = {"all": path}
            for m in names:
                solo = os.path.join(tmp, f"{m}.ini")
                with open(solo, "w") as f:
                    f.write(sub.drop(text, {node: next(x for x in names if x != m)}))
                runs[m] = solo
            mean = {}
            for k, p in runs.items():
                t = []
                for s in range(1, a.seeds + 1):
                    a.seed_now = s
                    t.append(makespan(plbsim, p, a))
                mean[k] = statistics.mean(t)
            name = os.path.basename(path)
            for k in runs:
                print(f"{name:28} {k:10} {mean[k]:9.4f}")
            eff = (1 / mean["all"]) / sum(1 / mean[m] for m in names)
            best = min(mean[m] for m in names) / mean["all"]
            print(f"{name:28} together / sum of solos {eff:.3f}; best solo / together {best:.3f}")
            worst_eff, worst_best = min(worst_eff, eff), min(worst_best, best)
    print(f"least: together / sum of solos {worst_eff:.3f}; best solo / together {worst_best:.3f}")


if __name__ == "__main__":
    main()

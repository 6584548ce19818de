#!/usr/bin/env python3
"""A digest of what plbsim decides, for changes that must not change it
(a refactor, a faster path): one line per run, its name and a hash of its
JSON report and, for config/sim, its trace, with the measured fields left
out (wall_s, master_cpu_s, solver_ms_*). Every run is under --solve-us, so
the same build gives the same digest on any machine.

  scripts/sim-digest.py [--quick] [--jobs J] > before.txt
  ... change, rebuild ...
  scripts/sim-digest.py [--quick] --against before.txt

The runs: the robust bench's clusters (scripts/gen-cluster.py, 25 a
family, every policy: 1000 runs), every config/sim scenario under every
policy with its trace, and the 4096-PU cluster of
scripts/gen-large-scenario.sh (plb-hac, seeds 1 and 2). --quick: 3
clusters a family and no 4096-PU run. Exit 1 when --against finds a
difference (each one named) or a run fails.
"""
import argparse
import glob
import hashlib
import importlib
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
gen = importlib.import_module("gen-cluster")
MEASURED = ("wall_s", "master_cpu_s", "solver_ms")
POLICIES = ("plb-hac", "plb-hec", "hdss", "greedy", "static")


def strip(x):
    """x without the measured fields, at any depth."""
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if not k.startswith(MEASURED)}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x


def digest(obj):
    return hashlib.sha1(json.dumps(strip(obj), sort_keys=True).encode()).hexdigest()[:16]


def plbsim(args):
    exe = os.environ.get("PLBSIM", os.path.join(ROOT, "build", "plbsim"))
    p = subprocess.run([exe] + args + ["--json", "--solve-us", "100"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, cwd=ROOT)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"plbsim {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return p.returncode, p.stdout


def cluster(tmp, family, seed):
    path = os.path.join(tmp, f"{family}-{seed}.ini")
    with open(path, "w") as f:
        f.write(gen.draw(family, seed))
    rc, out = plbsim([path, "--policy", "all"])
    reps = json.loads(out)
    return [(f"{family}:{seed} {r['policy']}", f"{rc} {digest(dict(r, scenario=None))}") for r in reps]


def scenario(tmp, ini, policy):
    trace = os.path.join(tmp, f"{os.path.basename(ini)}-{policy}.trace.json")
    rc, out = plbsim([ini, "--policy", policy, "--trace", trace])
    with open(trace) as f:
        tr = json.load(f)
    return [(f"{os.path.relpath(ini, ROOT)} {policy}", f"{rc} {digest(json.loads(out))} {digest(tr)}")]


def large(tmp, seed):
    path = os.path.join(tmp, "large-4096.ini")
    if not os.path.exists(path):
        with open(path + ".tmp", "w") as f:
            subprocess.run(["bash", os.path.join(ROOT, "scripts", "gen-large-scenario.sh"), "400000000",
                            "512"], stdout=f, check=True)
        os.replace(path + ".tmp", path)
    rc, out = plbsim([path, "--policy", "plb-hac", "--seed", str(seed)])
    return [(f"large-4096 plb-hac seed {seed}", f"{rc} {digest(dict(json.loads(out), scenario=None))}")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--against", help="a digest written before: report what differs")
    a = ap.parse_args()
    per = 3 if a.quick else 25
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(a.jobs) as ex:
        # the large file is written once, before the runs that read it
        futs = [] if a.quick else [ex.submit(large, tmp, 1)]
        if futs:
            futs[0].result()
            futs.append(ex.submit(large, tmp, 2))
        futs += [ex.submit(cluster, tmp, f, s) for f in gen.FAMILIES for s in range(1, per + 1)]
        futs += [ex.submit(scenario, tmp, ini, p)
                 for ini in sorted(glob.glob(os.path.join(ROOT, "config", "sim", "*.ini")))
                 for p in POLICIES]
        lines = {}
        for fu in futs:
            for name, d in fu.result():
                lines[name] = d
    if not a.against:
        for name in sorted(lines):
            print(f"{name}\t{lines[name]}")
        return 0
    before = {}
    with open(a.against) as f:
        for ln in f:
            name, _, d = ln.rstrip("\n").partition("\t")
            before[name] = d
    diff = [n for n in sorted(set(before) | set(lines)) if before.get(n) != lines.get(n)
            and not (a.quick and n not in lines)]
    for n in diff:
        print(f"differs: {n}: {before.get(n, '(none)')} -> {lines.get(n, '(none)')}")
    print(f"{len(lines) - len(diff)} of {len(lines)} runs identical")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())

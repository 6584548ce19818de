#!/usr/bin/env python3
"""The robustness benchmark (make bench, or alone): every policy on clusters
drawn by scripts/gen-cluster.py, FAMILY:1 .. FAMILY:N for every family, in
plbsim with a fixed solve cost (--solve-us) so that the figures repeat to
the bit. Prints per family and over all clusters the median, 90th
percentile and maximum of makespan / lower bound for each policy, and on
how many clusters plb-hac is more than 1% (and 5%) behind the best other
policy, with the worst of those; writes the same figures, and every
cluster's ratios, as JSON.

  scripts/robust-bench.py [--per-family N] [--families F,F] [--json FILE]
                          [--jobs J] [--set KEY=VAL ...] [--noise-seeds K]

--noise-seeds K runs every cluster with the device noise of seeds 1..K
(plbsim --seed) and takes each policy's mean makespan and ratio over them.
With one seed (the default) "behind the best other" compares one noise
draw of plb-hac with the luckiest of four others', which on a cluster of
one PU, where every sensible plan is the same, is a lottery.

Needs PLBSIM (default build/plbsim). Exits 1 when a run fails or a report
says the coverage is wrong; the figures themselves are not judged here.
"""
import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
gen = importlib.import_module("gen-cluster")


def p90(xs):
    """The 90th percentile, interpolated between order statistics."""
    return statistics.quantiles(xs, n=10, method="inclusive")[8] if len(xs) > 1 else xs[0]


def run_one(plbsim, family, seed, tmp, solve_us, sets, noise_seeds):
    path = os.path.join(tmp, f"{family}-{seed}.ini")
    with open(path, "w") as f:
        f.write(gen.draw(family, seed))
    res = {}
    for ns in range(1, noise_seeds + 1):
        cmd = [plbsim, path, "--policy", "all", "--json", "--solve-us", str(solve_us)]
        if noise_seeds > 1:
            cmd += ["--seed", str(ns)]
        for s in sets:
            cmd += ["--set", s]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            return family, seed, None, f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-300:]}"
        reps = json.loads(p.stdout)
        bad = [r["policy"] for r in reps if not r["coverage_ok"]]
        if bad:
            return family, seed, None, f"{family}:{seed}: coverage wrong under {', '.join(bad)}"
        for r in reps:
            q = res.setdefault(r["policy"], {"ratio": 0, "makespan_s": 0,
                                             "lower_bound_s": r["lower_bound_s"],
                                             "pus": len(r["pu_units"])})
            q["ratio"] += r["ratio"] / noise_seeds
            q["makespan_s"] += r["makespan_s"] / noise_seeds
    return family, seed, res, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-family", type=int, default=25)
    ap.add_argument("--families", default=None, help="comma-separated (default: all)")
    ap.add_argument("--json", default=None, help="write the figures here")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--solve-us", type=float, default=100)
    ap.add_argument("--set", action="append", default=[], help="a balancer parameter")
    ap.add_argument("--noise-seeds", type=int, default=1,
                    help="mean over the device noise of seeds 1..K (default 1: the file's seed)")
    a = ap.parse_args()
    if a.noise_seeds < 1:
        sys.exit(f"robust-bench: --noise-seeds {a.noise_seeds}: give a count of 1 or more")
    families = a.families.split(",") if a.families else list(gen.FAMILIES)
    for f in families:
        if f not in gen.FAMILIES:
            sys.exit(f"robust-bench: unknown family '{f}'; one of {', '.join(gen.FAMILIES)}")
    plbsim = os.environ.get("PLBSIM", os.path.join(ROOT, "build", "plbsim"))

    results, errors = {}, []
    with tempfile.TemporaryDirectory(prefix="plb-robust-") as tmp, \
            ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futs = [ex.submit(run_one, plbsim, f, s, tmp, a.solve_us, a.set, a.noise_seeds)
                for f in families for s in range(1, a.per_family + 1)]
        for fu in futs:
            f, s, res, err = fu.result()
            if err:
                errors.append(err)
            else:
                results[f"{f}:{s}"] = res
    for e in errors:
        print("robust-bench:", e, file=sys.stderr)

    policies = list(next(iter(results.values())).keys()) if results else []
    others = [p for p in policies if p != "plb-hac"]

    def summary(keys):
        out = {"clusters": len(keys)}
        for p in policies:
            rs = [results[k][p]["ratio"] for k in keys]
            out[p] = {"median": statistics.median(rs), "p90": p90(rs), "max": max(rs)}
        behind = []
        for k in keys:
            best = min(results[k][p]["makespan_s"] for p in others)
            behind.append((results[k]["plb-hac"]["makespan_s"] / best - 1, k))
        out["hac_behind_1pct"] = sum(1 for b, _ in behind if b > 0.01)
        out["hac_behind_5pct"] = sum(1 for b, _ in behind if b > 0.05)
        out["hac_worst_behind"] = max(behind)[0]
        out["hac_worst_cluster"] = max(behind)[1]
        return out

    table = {}
    for f in families:
        keys = [k for k in results if k.split(":")[0] == f]
        if keys:
            table[f] = summary(keys)
    if results:
        table["all"] = summary(list(results))

    w = max(len(p) for p in policies) if policies else 7
    print(f"makespan / lower bound, {a.per_family} clusters a family, --solve-us {a.solve_us:g}"
          + (f", --set {' '.join(a.set)}" if a.set else "")
          + (f", mean over noise seeds 1-{a.noise_seeds}" if a.noise_seeds > 1 else ""))
    print(f"{'family':10s} {'policy':{w}s} {'median':>7s} {'p90':>7s} {'max':>7s}")
    for f, t in table.items():
        for p in policies:
            print(f"{f:10s} {p:{w}s} {t[p]['median']:7.3f} {t[p]['p90']:7.3f} {t[p]['max']:7.3f}")
        print(f"{f:10s} plb-hac >1% behind the best other on {t['hac_behind_1pct']} of "
              f"{t['clusters']}, >5% on {t['hac_behind_5pct']}; worst {t['hac_worst_behind']:+.1%} "
              f"({t['hac_worst_cluster']})")
    if a.json:
        with open(a.json, "w") as fo:
            json.dump({"per_family": a.per_family, "solve_us": a.solve_us, "set": a.set,
                       "noise_seeds": a.noise_seeds,
                       "summary": table, "clusters": results}, fo, indent=1)
        print(f"(figures as JSON in {a.json})")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

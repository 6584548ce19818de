#!/usr/bin/env python3
"""How plb-hac on a cluster whose PUs slow each other ([node] couple)
compares with plb-hac on the best subset of its PUs.

  scripts/subset-bench.py [--per-family N] [--family contention]
                          [--set KEY=VAL ...] [--solve-us US] [--jobs J]

For each cluster FAMILY:1..N drawn by scripts/gen-cluster.py, plbsim runs
plb-hac on the whole cluster and on subsets that leave out, node by node, the
PUs of one model named as a culprit in its couple rules: the best found
by a coordinate descent over the nodes' choices, twice round, all with a
fixed solve cost so the figures repeat. Prints per
cluster the whole cluster's makespan over the best subset's, and their
worst and median: the promise "never more than 2% behind the best plan on
a subset of the PUs", measured. --set goes to the whole cluster's runs
only (a balancer parameter under test). Needs PLBSIM (default
build/plbsim).
"""
import argparse
import concurrent.futures as cf
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
gen = __import__("gen-cluster")


def sections(text):
    """The scenario as [(header or None, [lines])]."""
    out = [(None, [])]
    for line in text.split("\n"):
        if line.startswith("["):
            out.append((line, []))
        else:
            out[-1][1].append(line)
    return out


def culprits(lines):
    """Model names a node's couple rules name as culprits."""
    names = set()
    for line in lines:
        if line.startswith("couple = "):
            for rule in line[len("couple = "):].split(";"):
                w = rule.split()
                names.update(x.split("#")[0] for x in w[4:])
    return names


def drop(text, leave):
    """The scenario without leave[node], a model name, in each node named."""
    secs = sections(text)
    used = set()
    out = []
    for head, lines in secs:
        if head and head.startswith("[node "):
            gone = {leave[head[6:-1]]} if head[6:-1] in leave else set()
            new = []
            for line in lines:
                if line.startswith("emu = "):
                    pus = [p for p in line.split()[2:] if p not in gone]
                    used.update(pus)
                    new.append("emu = " + " ".join(pus))
                elif line.startswith("couple = ") and gone:
                    rules = []
                    for rule in line[len("couple = "):].split(";"):
                        w = rule.split()
                        keep = [x for x in w[4:] if x.split("#")[0] not in gone]
                        if w[0].split("#")[0] not in gone and keep:
                            rules.append(" ".join(w[:4] + keep))
                    if rules:
                        new.append("couple = " + "; ".join(rules))
                else:
                    new.append(line)
            out.append((head, new))
        else:
            out.append((head, lines))
    text = []
    for head, lines in out:
        if head and head.startswith("[model ") and head[7:-1] not in used:
            continue
        if head:
            text.append(head)
        text += lines
    return "\n".join(text)


def makespan(plbsim, path, solve_us, sets):
    cmd = [plbsim, path, "--policy", "plb-hac", "--solve-us", str(solve_us), "--json"]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()[-300:]}")
    return json.loads(p.stdout)["makespan_s"]


def one(plbsim, family, seed, tmp, solve_us, sets):
    text = gen.draw(family, seed)
    # per node, the culprit models it can do without (never all its PUs)
    options = {}
    for h, lines in sections(text):
        if h and h.startswith("[node "):
            pus = next((l.split()[2:] for l in lines if l.startswith("emu = ")), [])
            opts = [m for m in sorted(culprits(lines)) if any(p != m for p in pus)]
            if opts:
                options[h[6:-1]] = opts
    path = os.path.join(tmp, f"{family}-{seed}.ini")
    with open(path, "w") as f:
        f.write(text)
    whole = makespan(plbsim, path, solve_us, sets)
    n = [0]

    def run(leave):
        n[0] += 1
        p = os.path.join(tmp, f"{family}-{seed}-{n[0]}.ini")
        with open(p, "w") as f:
            f.write(drop(text, leave))
        return makespan(plbsim, p, solve_us, [])

    # the best subset by coordinate descent over the nodes: each node's
    # choice (keep all, or leave out one culprit model) in turn, the
    # others held, twice round
    leave = {}
    best = run(leave)
    for _ in range(2):
        for node, opts in options.items():
            for choice in [None] + opts:
                if leave.get(node) == choice:
                    continue
                trial = dict(leave)
                if choice is None:
                    trial.pop(node, None)
                else:
                    trial[node] = choice
                t = run(trial)
                if t < best:
                    best, leave = t, trial
    return family, seed, whole, best, tuple(f"{k}:{v}" for k, v in sorted(leave.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-family", type=int, default=40)
    ap.add_argument("--family", default="contention")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--solve-us", type=float, default=100)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    if a.family not in gen.FAMILIES:
        sys.exit(f"subset-bench: unknown family '{a.family}'; one of {', '.join(gen.FAMILIES)}")
    plbsim = os.environ.get("PLBSIM", "build/plbsim")
    rows = []
    with tempfile.TemporaryDirectory() as tmp, cf.ProcessPoolExecutor(a.jobs) as ex:
        futs = [ex.submit(one, plbsim, a.family, s, tmp, a.solve_us, a.set)
                for s in range(1, a.per_family + 1)]
        for f in futs:
            rows.append(f.result())
    print(f"plb-hac on the whole cluster over plb-hac on its best subset, {a.family}:1..{a.per_family}"
          + (f", whole cluster with --set {' '.join(a.set)}" if a.set else ""))
    r = []
    for family, seed, whole, best, leave in rows:
        r.append(whole / best)
        print(f"  {family}:{seed:<4d} {whole / best:.4f}  best subset leaves out "
              + (", ".join(leave) if leave else "nothing"))
    print(f"median {statistics.median(r):.4f}, worst {max(r):.4f}, "
          f"more than 2% behind on {sum(1 for x in r if x > 1.02)} of {len(r)}")


if __name__ == "__main__":
    main()

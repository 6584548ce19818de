#!/usr/bin/python3
"""gen-pipeline.py: a randomly drawn pipeline scenario for plbsim.

    gen-pipeline.py SEED [-o FILE]

Draws, from SEED alone (the same file on every machine): one node of 4-24
CPU cores (a PU each) and one or two accelerators (a GPU, a MIC, or both);
5-16 operations in a random dataflow (each after 0-3 of the ops above it;
an op has 1 task an instance, or 2-6 for one op in four, as a feature stage
after segmentation); each op's CPU time log-uniform in 2-400 ms and its
speedup on each accelerator drawn from one of three access patterns
(regular: 4-20x; irregular: 2-8x; atomics: 0.8-2.5x), each accelerator's
own draw, so which accelerator suits an op varies; some ops (one in ten)
run on the CPU only. 100-600 instances. Every drawn figure is in the file.
Prints the file (or writes FILE)."""
import argparse
import math
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("seed", type=int)
    ap.add_argument("-o", dest="out")
    a = ap.parse_args()
    r = random.Random(a.seed)
    cores = r.randint(4, 24)
    accs = r.choice([["gpu"], ["mic"], ["gpu", "mic"], ["gpu", "mic"]])
    nops = r.randint(5, 16)
    inst = r.randint(100, 600)
    pats = {"regular": (4, 20), "irregular": (2, 8), "atomics": (0.8, 2.5)}
    out = [f"; plb pipeline scenario drawn by scripts/gen-pipeline.py {a.seed}",
           f"; {cores} CPU cores, accelerators: {' '.join(accs)}; {nops} ops, {inst} instances",
           "[run]", f"units = {inst}", f"seed = {a.seed}", "", "[node n]",
           "emu = " + " ".join(accs + ["cpu"] * cores), ""]
    for m in ["cpu"] + accs:
        out += [f"[model {m}]", f"class = {m}", "compute = poly 0 0.001",
                f"noise = {r.uniform(0.02, 0.08):.3f}", ""]
    for i in range(nops):
        cpu = math.exp(r.uniform(math.log(2), math.log(400)))
        lines = [f"[op op{i}]"]
        if i:
            after = sorted(r.sample(range(i), r.randint(0, min(3, i))))
            if after:
                lines.append("after = " + " ".join(f"op{j}" for j in after))
        if r.random() < 0.25:
            lines.append(f"tasks = {r.randint(2, 6)}")
        lines.append(f"cpu = {cpu:.3f}")
        if r.random() >= 0.1:
            for m in accs:
                pat = r.choice(list(pats))
                s = r.uniform(*pats[pat])
                lines.append(f"{m} = {cpu / s:.4f}   ; {pat}, {s:.2f}x")
        out += lines + [""]
    text = "\n".join(out)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A seeded mutation run over plb's pure code (make mutants).

Each mutant changes one operator or constant in one line of a source file
(a comparison, an arithmetic or logical operator, a constant), is built in
a scratch copy of the tree, and is run against the unit tests and the
simulator's quality guards. A mutant is killed when a test fails (or the
build does, or a test hangs past its timeout), and survives otherwise.
Prints each result, the score (killed / mutants built, known-equivalent
mutants set apart) and the survivors, and exits 0.

  scripts/mutants.py [--seed S] [--count N] [--files GLOB...] [--at FILE:LINE...] [--list]

--at runs every mutant of the named lines instead of a seeded draw (to
check that a test kills the mutants it was written for).

Mutants that cannot change behaviour are listed, with the reason, in
test/mutants-equivalent.txt (one per line: FILE :: LINE TEXT :: MUTATED
LINE TEXT :: why; "::" never occurs in C); they are run and reported but do
not count in the score. The mutants are built with AddressSanitizer, so a
mutant that reads or writes out of bounds is killed even when the result
it computes happens to pass.
"""
import argparse
import glob
import os
import random
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = ["balancer/*.c", "balancer/policies/*.c", "runtime/config/bounds.c",
         "runtime/config/coverage.c"]
# (pattern, replacement) pairs, applied at one match of the pattern
OPS = [
    (r"<=", "<"), (r">=", ">"), (r"(?<![<>=!])<(?![<=])", "<="), (r"(?<![<>=!-])>(?![>=])", ">="),
    (r"==", "!="), (r"!=", "=="), (r"&&", "||"), (r"\|\|", "&&"),
    (r"(?<=[\w)\]] )\+(?= [\w(])", "-"), (r"(?<=[\w)\]] )-(?= [\w(])", "+"),
    (r"(?<=[\w)\]] )\*(?= [\w(])", "/"), (r"(?<=[\w)\]] )/(?= [\w(])", "*"),
    (r"\+\+", "--"), (r"(?<![\w.])0(?![\w.])", "1"), (r"(?<![\w.])1(?![\w.])", "0"),
    (r"(?<![\w.])(\d+\.\d*|\d*\.\d+)(?![\w.])", None),   # a float constant: doubled
    (r"!(?=[\w(])(?!=)", ""),                              # a negation dropped
]
TESTS = ["test_alloc", "test_balancer", "test_pool", "test_busy", "test_redo", "test_hdss", "test_plb_hec",
         "test_static", "test_driver", "test_bounds", "test_coverage", "test_model", "test_plb_hac",
         "test_sim", "test_solver", "test_devmodel", "test_runtime", "test_links"]


def code_part(line):
    """The line with comments and string literals blanked (same length)."""
    out, i, n, in_str = [], 0, len(line), None
    while i < n:
        c = line[i]
        if in_str:
            out.append(" ")
            if c == "\\":
                out.append(" ")
                i += 1
            elif c == in_str:
                in_str = None
        elif c in "\"'":
            in_str = c
            out.append(" ")
        elif line.startswith("//", i) or line.startswith("/*", i):
            out.append(" " * (n - i))
            break
        else:
            out.append(c)
        i += 1
    return "".join(out)[:n]


def sites(path):
    """Every (line number, start, end, replacement) a mutant can make."""
    res, in_comment = [], False
    with open(os.path.join(ROOT, path)) as f:
        lines = f.read().split("\n")
    for no, line in enumerate(lines):
        s = line.strip()
        if in_comment:
            if "*/" in s:
                in_comment = False
            continue
        if s.startswith("/*") and "*/" not in s:
            in_comment = True
            continue
        if not s or s.startswith(("#", "*", "/*", "//")) or "PLB_ASSERT" in s:
            continue
        code = code_part(line)
        for pat, rep in OPS:
            for m in re.finditer(pat, code):
                r = rep
                if r is None:
                    r = repr(float(m.group(0)) * 2)
                res.append((no, m.start(), m.end(), r))
    return lines, res


def mutate(line, b, e, r):
    """The line with line[b:e] replaced by r."""
    return line[:b] + r + line[e:]


def run(cmd, cwd, timeout, env=None):
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout, text=True)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired:
        return 124, "timed out"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=60, help="mutants to run (default 60)")
    ap.add_argument("--files", nargs="*", default=FILES)
    ap.add_argument("--at", nargs="*", default=[], metavar="FILE:LINE",
                    help="every mutant of these lines instead of a seeded draw")
    ap.add_argument("--list", action="store_true", help="list the mutation sites and exit")
    ap.add_argument("--work", default="/tmp/plb-mutants", help="scratch copy of the tree")
    a = ap.parse_args()

    paths = sorted({os.path.relpath(p, ROOT) for g in a.files for p in glob.glob(os.path.join(ROOT, g))})
    allsites, text = [], {}
    for p in paths:
        lines, ss = sites(p)
        text[p] = lines
        allsites += [(p,) + s for s in ss]
    if a.at:
        allsites = [s for s in allsites if f"{s[0]}:{s[1] + 1}" in a.at]
        if not allsites:
            sys.exit(f"mutants: no mutation site at {' '.join(a.at)}")
    if a.list:
        for p, no, b, e, r in allsites:
            line = text[p][no]
            print(f"{p}:{no + 1}: {line[b:e]} -> {r}: {line.strip()}  =>  "
                  f"{mutate(line, b, e, r).strip()}")
        print(f"{len(allsites)} sites in {len(paths)} files")
        return 0
    equivalent = {}
    eqf = os.path.join(ROOT, "test/mutants-equivalent.txt")
    if os.path.exists(eqf):
        for line in open(eqf):
            if line.strip() and not line.startswith("#"):
                f, code, mutated, why = [x.strip() for x in line.split("::", 3)]
                equivalent[(f, code, mutated)] = why
    known = {(p, text[p][no].strip(), mutate(text[p][no], b, e, r).strip())
             for p, no, b, e, r in allsites}
    for k in equivalent:
        if k not in known and not a.at:
            print(f"mutants: {eqf}: no such mutant (the code changed?): {k[0]}: {k[2]}")
    rng = random.Random(a.seed)
    chosen = allsites if a.at else rng.sample(allsites, min(a.count, len(allsites)))

    # the scratch tree: sources copied, build output kept between runs
    work = a.work
    os.makedirs(work, exist_ok=True)
    src = work + "/src"
    shutil.rmtree(src, ignore_errors=True)
    # shutil.copy, not copy2: the sources get the time of the copy, so the
    # build kept from the last run (last touched by its last mutant) is
    # rebuilt, not taken as newer than sources edited before that
    shutil.copytree(ROOT, src, symlinks=True, copy_function=shutil.copy,
                    ignore=shutil.ignore_patterns(".git", "build", "build-*", ".devkit"))
    make = ["make", "-s", "-j2", "BUILD=" + work + "/build-asan", "CUDA=0", "MPI=0", "OPT=-O1",
            "SANITIZE=address"]
    rc, out = run(make, src, 1200)
    if rc:
        print(out[-3000:])
        sys.exit("mutants: the unmutated tree does not build")
    env_sim = dict(os.environ, PLBSIM=work + "/build-asan/plbsim")

    def verdict():
        """None when every test passes, else what failed."""
        for t in TESTS:
            rc, _ = run([work + "/build-asan/test/" + t], src, 120)
            if rc:
                return "killed by " + t
        rc, _ = run(["bash", "test/cli/quality.sh"], src, 300, env_sim)
        return "killed by quality.sh" if rc else None

    v = verdict()
    if v:
        sys.exit(f"mutants: the tree without any mutant fails: {v}")

    killed, survived, nobuild, eq_survived, eq_killed = 0, [], 0, [], 0
    t0 = time.time()
    for k, (p, no, b, e, r) in enumerate(chosen):
        line = text[p][no]
        mutated = mutate(line, b, e, r)
        key = (p, line.strip(), mutated.strip())
        lines = list(text[p])
        lines[no] = mutated
        with open(os.path.join(src, p), "w") as f:
            f.write("\n".join(lines))
        rc, out = run(make, src, 600)
        v = "no build" if rc else verdict()
        with open(os.path.join(src, p), "w") as f:
            f.write("\n".join(text[p]))
        where = f"{p}:{no + 1}: {line[b:e]} -> {r}: {line.strip()}  =>  {mutated.strip()}"
        if v == "no build":
            nobuild += 1
        elif key in equivalent:
            if v:
                eq_killed += 1
            else:
                eq_survived.append((where, equivalent[key]))
        elif v:
            killed += 1
        else:
            survived.append(where)
        print(f"[{k + 1}/{len(chosen)} {time.time() - t0:.0f}s] {v or 'SURVIVED'}: {where}",
              flush=True)
    run(make, src, 600)         # leave the scratch build unmutated
    built = killed + len(survived)
    print(f"\nmutants: seed {a.seed}, {len(chosen)} drawn from {len(allsites)} sites in "
          f"{len(paths)} files; {nobuild} did not build; "
          f"{len(eq_survived) + eq_killed} known equivalent (set apart)")
    print(f"score {killed}/{built} = {killed / built if built else float('nan'):.2f}")
    for w in survived:
        print("  survived:", w)
    for w, why in eq_survived:
        print("  equivalent:", w, "--", why)
    return 0


if __name__ == "__main__":
    sys.exit(main())

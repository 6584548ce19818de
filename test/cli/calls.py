"""The call checker of test/cli/layers.sh: within each folder of object
files given, which file calls which (a symbol one file uses that another
defines, as nm says), and every group of files that call each other in a
circle (a strongly connected set of more than one).
   python3 calls.py DIR...
prints each group and exits 1 if there is one."""
import glob, os, subprocess, sys


def calls_in(d):
    defs, uses = {}, {}
    for o in sorted(glob.glob(os.path.join(d, "*.o"))):
        f = os.path.basename(o)[:-2] + ".c"
        uses[f] = set()
        for line in subprocess.check_output(["nm", o]).decode().splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDRB":
                defs[p[2]] = f
            elif len(p) == 2 and p[0] == "U":
                uses[f].add(p[1])
    return {f: sorted({defs[s] for s in u if s in defs and defs[s] != f}) for f, u in uses.items()}


def circles(calls):
    """Tarjan's strongly connected components, those of two files or more."""
    index, low, stack, on, out = {}, {}, [], set(), []
    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in calls[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in calls:
        if v not in index:
            visit(v)
    return out


bad = 0
for d in sys.argv[1:]:
    calls = calls_in(d)
    for c in circles(calls):
        bad += 1
        print(f"{d}: {', '.join(c)} call each other in a circle"
              f" ({'; '.join(f + ' calls ' + ', '.join(g for g in calls[f] if g in c) for f in c)});"
              " move what they share into a file they all call")
sys.exit(1 if bad else 0)

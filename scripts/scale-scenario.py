#!/usr/bin/env python3
"""Write a copy of a scenario whose device times are all multiplied by a
factor: compute and transfer curves, speed-change and failure times. So a
scenario of minutes in plbsim can run in seconds on the real runtime
(plb-null), and the two ratios can be compared.

usage: scale-scenario.py IN.ini FACTOR OUT.ini"""
import re
import sys


def scale_curve(value, f):
    words = value.split()
    if words[0] == "table":
        pts = []
        for w in words[1:]:
            u, s = w.split(":")
            pts.append("%s:%.9g" % (u, float(s) * f))
        return "table " + " ".join(pts)
    if words[0] == "poly":
        return "poly " + " ".join("%.9g" % (float(c) * f) for c in words[1:])
    raise SystemExit("unknown curve: " + value)


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    src, f, dst = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    out = ["; %s with every device time x %g (scripts/scale-scenario.py)\n" % (src, f)]
    for line in open(src):
        m = re.match(r"^(\s*)(compute|transfer|change|fail)(\s*=\s*)([^;]*?)(\s*(;.*)?)$", line.rstrip("\n"))
        if m:
            key, val = m.group(2), m.group(4)
            if key in ("compute", "transfer"):
                val = scale_curve(val, f)
            elif key == "change":
                val = " ".join("%.9g:%s" % (float(t) * f, x)
                               for t, x in (w.split(":") for w in val.split()))
            else:
                val = "%.9g" % (float(val) * f)
            line = m.group(1) + key + m.group(3) + val + (m.group(5) or "") + "\n"
        out.append(line)
    open(dst, "w").write("".join(out))


main()

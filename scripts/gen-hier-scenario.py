#!/usr/bin/env python3
"""A plbsim scenario shaped like Table 1 of the hierarchical-FPM paper
(Clarke, Ilic, Lastovetsky, Sousa), for `plbsim --layout 2d`:

  scripts/gen-hier-scenario.py [--nodes Q] [--pus P] [--link-gbps G] > hier.ini

Q nodes (default 90) of P PUs (default 2): one node in six P - 1 CPU PUs
of 7 cores and a new GPU, one in three P - 1 CPU PUs and an old GPU, the
rest P CPU PUs; each node's link G Gbit/s (default 10). `--nodes 8192
--pus 8` is the 65,536-PU cluster of bench/hpart.c's last line (there a
node in four has a new GPU and one in four an old one). The devices are bench/hpart.c's: a step of the
blocked product on a slice of `a` blocks of b = 128 is 2 a b^3 flops; a
CPU PU runs 70 GFLOP/s (63 once its slice's C leaves 28 MB of cache), a
new GPU 250 GFLOP/s at full occupancy (half of it at 20 blocks) and an
old one 90 (half at 12), each falling to 15 GFLOP/s (over PCIe) once the
slice's C leaves its 3 GB or 1 GB. A model's compute curve is exact:
piecewise linear in the area, with its fall as two points. [run] units
is one step's blocks at n = 262144 (2048 x 2048, about a second), for a
1-D run of the same file (plbsim without --layout).
"""
import argparse

B = 128.0


def step_s(area, gflops):
    return 2 * area * B ** 3 / (gflops * 1e9)


def table(points):
    return "table " + " ".join(f"{a:.10g}:{t:.6g}" for a, t in points)


def cpu():
    fall = 7 * 4e6 / (B * B * 8)        # C's slice past 28 MB
    return table([(1, step_s(1, 70)), (fall, step_s(fall, 70)),
                  (fall * 1.000001, step_s(fall * 1.000001, 63)), (1e7, step_s(1e7, 63))])


def gpu(peak, half, mem):
    fall = mem / (B * B * 8)
    # below the fall 2 a b^3 (a + half) / (peak a): linear in a
    def t(a):
        return 2 * B ** 3 * (a + half) / (peak * 1e9)
    return table([(1, t(1)), (fall, t(fall)), (fall * 1.000001, step_s(fall * 1.000001, 15)),
                  (1e7, step_s(1e7, 15))])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=90)
    ap.add_argument("--pus", type=int, default=2)
    ap.add_argument("--link-gbps", type=float, default=10)
    a = ap.parse_args()
    if a.nodes < 1 or a.pus < 2:
        raise SystemExit("gen-hier-scenario: --nodes: at least 1; --pus: at least 2")
    out = [f"; plbsim scenario drawn by scripts/gen-hier-scenario.py --nodes {a.nodes} --pus {a.pus} "
           f"--link-gbps {a.link_gbps:g}",
           "; shaped like Table 1 of the hierarchical-FPM paper; for plbsim --layout 2d (a unit:",
           "; one b x b block of C updated by one pivot, b = 128: 2 b^3 flops)",
           "", "[run]", "units = 4194304", "policy = plb-hac", "seed = 1", "",
           "[network]", "latency_us = 50", ""]
    for i in range(a.nodes):
        cpus = " ".join(["cpu7"] * (a.pus - 1))
        if i % 6 == 0:
            pus = cpus + " gpu-new"
        elif i % 3 == 1:
            pus = cpus + " gpu-old"
        else:
            pus = cpus + " cpu7"
        out += [f"[node n{i:03d}]", f"emu = {pus}", f"link_gbps = {a.link_gbps:g}", ""]
    out += ["; a CPU PU of 7 cores: 70 GFLOP/s, 63 once its slice's C leaves 28 MB",
            "[model cpu7]", "class = cpu", f"compute = {cpu()}", "noise = 0.02", "",
            "; 250 GFLOP/s at full occupancy (half at 20 blocks), 15 past its 3 GB",
            "[model gpu-new]", "class = gpu", f"compute = {gpu(250, 20, 3e9)}", "noise = 0.02", "",
            "; 90 GFLOP/s at full occupancy (half at 12 blocks), 15 past its 1 GB",
            "[model gpu-old]", "class = gpu", f"compute = {gpu(90, 12, 1e9)}", "noise = 0.02"]
    print("\n".join(out))


if __name__ == "__main__":
    main()

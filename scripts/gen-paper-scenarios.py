#!/usr/bin/env python3
"""Generates config/sim/{mm,grn,kmeans}-{1..5}.ini, interference.ini, adapt-4x.ini
and failure.ini from device specs (see config/sim/README.md).

compute(x) = t0 + (x + a*xs*(1-exp(-x/xs)) + c*(x - xc*(1-exp(-x/xc)))) / R
transfer(x) = lat + x * bytes_per_unit / bw
"""
import math
import os, sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "config", "sim")

def comp(p, x):
    t = x + p["a"] * p["xs"] * (1 - math.exp(-x / p["xs"]))
    if p.get("c", 0):
        t += p["c"] * (x - p["xc"] * (1 - math.exp(-x / p["xc"])))
    return p["t0"] + t / p["R"]

def points(W):
    pts = [64, 128, 256, 512, 1024, 2048, 4096]
    x = 16384
    while x < W:
        pts.append(x)
        x *= 4
    pts.append(W)
    return pts

def fmt(v):
    return "%.0f" % v if v >= 1000 else "%.4g" % v

def table(p, W):
    return "table " + " ".join("%d:%s" % (x, fmt(comp(p, x))) for x in points(W))

def poly(p, bpu):
    return "poly %s %s" % (fmt(p["lat"]), fmt(bpu / p["bw"]))

# ---------------------------------------------------------------- devices
# Static facts (Table 1 of the paper plus the vendors' data sheets).
CPU_FACTS = {
    "i7-5930k": "Intel i7-5930K (Haswell-E, 6 cores @ 3.5 GHz, AVX2+FMA: 672 GFLOP/s FP32 peak, 15 MB L3)",
    "i7-4930k": "Intel i7-4930K (Ivy Bridge-E, 6 cores @ 3.4 GHz, AVX: 326 GFLOP/s FP32 peak, 12 MB L3)",
    "e5-2620": "Intel Xeon E5-2620 v2 (Ivy Bridge-EP, 6 cores @ 2.1 GHz, AVX: 202 GFLOP/s FP32 peak, 15 MB L3)",
}
GPU_FACTS = {
    "k5200": "NVIDIA Quadro K5200 (Kepler GK110B, 2304 cores, 12 SMX, 3.0 TFLOP/s FP32, 192 GB/s, PCIe 3 x16)",
    "gtx970": "NVIDIA GTX 970 (Maxwell GM204, 1664 cores, 13 SM, 3.5 TFLOP/s FP32, 224 GB/s, PCIe 3 x16)",
    "titan": "NVIDIA GTX Titan (Kepler GK110, 2688 cores, 14 SMX, 4.5 TFLOP/s FP32, 288 GB/s, PCIe 3 x16)",
    "k620": "NVIDIA Quadro K620 (Maxwell GM107, 384 cores, 3 SM, 0.86 TFLOP/s FP32, 29 GB/s, PCIe 2 x16)",
    "phi3120": "Intel Xeon Phi 3120 (57 cores @ 1.1 GHz, 228 threads, 2.0 TFLOP/s FP32, 240 GB/s, PCIe 2 x16)",
}
FACTS = dict(CPU_FACTS, **GPU_FACTS)
CLASS = {"i7-5930k": "cpu", "i7-4930k": "cpu", "e5-2620": "cpu", "k5200": "gpu", "gtx970": "gpu",
         "titan": "gpu", "k620": "gpu", "phi3120": "mic"}

# Link (transfer) parameters, shared by every app: latency (PCIe/offload setup plus the
# MPI/network hop folded in) and effective bandwidth.
LINK = {
    "i7-5930k": dict(lat=3e-5, bw=10e9, ltxt="30 us (MPI/network hop) + memory copy at 10 GB/s (DDR4, one thread)"),
    "i7-4930k": dict(lat=3e-5, bw=8e9, ltxt="30 us (MPI/network hop) + memory copy at 8 GB/s (DDR3, one thread)"),
    "e5-2620": dict(lat=3e-5, bw=6e9, ltxt="30 us (MPI/network hop) + memory copy at 6 GB/s (DDR3, one thread, 2.1 GHz)"),
    "k5200": dict(lat=5e-5, bw=11e9, ltxt="50 us (cudaMemcpy in+out + MPI/network hop) + PCIe 3 x16 at 11 GB/s"),
    "gtx970": dict(lat=5e-5, bw=11e9, ltxt="50 us (cudaMemcpy in+out + MPI/network hop) + PCIe 3 x16 at 11 GB/s"),
    "titan": dict(lat=5e-5, bw=10e9, ltxt="50 us (cudaMemcpy in+out + MPI/network hop) + PCIe 3 x16 at 10 GB/s (X79)"),
    "k620": dict(lat=5e-5, bw=5.5e9, ltxt="50 us (cudaMemcpy in+out + MPI/network hop) + PCIe 2 x16 at 5.5 GB/s"),
    "phi3120": dict(lat=1e-4, bw=6e9, ltxt="100 us (offload/SCIF DMA setup + MPI/network hop) + PCIe 2 x16 at 6 GB/s"),
}

# ---------------------------------------------------------------- apps
MM_FLOP = 2.0 * 16384 ** 2          # per column of B
MM_BYTES = 2 * 16384 * 4            # column of B in, column of C out
GRN_BYTES = 64                      # gene id / profile index in, best pair + score out
KM_FLOP = 2.0 * 12288 * 10000       # d = 12288, k = 10000
KM_BYTES = 12288 * 4 + 4            # the point in, its label out

def mm_dev(name, tf, t0, a, xs, noise, c=0.0, xc=0.0, why=""):
    R = tf * 1e12 / MM_FLOP * (1 + c)
    return dict(name=name, R=R, t0=t0, a=a, xs=xs, c=c, xc=xc, noise=noise, tf=tf, why=why)

MM = {
    "i7-5930k": mm_dev("i7-5930k", 0.40, 2e-4, 0.3, 32, 0.04, c=0.08, xc=256,
        why=["SGEMM (OpenBLAS, 12 threads) ~0.40 TFLOP/s on large blocks (60% of peak).",
             "t0 = 0.2 ms: waking 12 threads and packing the first panel.",
             "a = 0.3, xs = 32: blocks of a few dozen columns split unevenly over 12 threads.",
             "c = 0.08, xc = 256: beyond ~256 columns (16 MB, the L3) the B/C panels stream",
             "from DRAM; in-cache blocks run 8% faster than the 0.40 TFLOP/s asymptote."]),
    "i7-4930k": mm_dev("i7-4930k", 0.25, 2e-4, 0.3, 32, 0.045, c=0.08, xc=192,
        why=["SGEMM (OpenBLAS, AVX without FMA) ~0.25 TFLOP/s on large blocks (77% of peak).",
             "t0 = 0.2 ms thread wake-up; a = 0.3, xs = 32 as for the other CPUs;",
             "c = 0.08, xc = 192: the 12 MB L3 holds ~192 columns of 64 KiB."]),
    "e5-2620": mm_dev("e5-2620", 0.15, 3e-4, 0.3, 32, 0.05, c=0.08, xc=256,
        why=["SGEMM (OpenBLAS, AVX without FMA) ~0.15 TFLOP/s on large blocks (74% of peak).",
             "t0 = 0.3 ms (thread wake-up at 2.1 GHz); a = 0.3, xs = 32;",
             "c = 0.08, xc = 256: 15 MB L3."]),
    "k5200": mm_dev("k5200", 2.2, 1.5e-4, 1.0, 128, 0.02,
        why=["cuBLAS SGEMM ~2.2 TFLOP/s on large blocks (72% of peak).",
             "t0 = 0.15 ms: kernel launch, cuBLAS call and stream synchronisation.",
             "a = 1, xs = 128: skinny GEMMs (n below ~128 columns) leave SMX idle and use",
             "small tiles, so the first columns cost about twice the asymptotic rate."]),
    "gtx970": mm_dev("gtx970", 2.8, 1.5e-4, 1.0, 128, 0.03,
        why=["cuBLAS SGEMM ~2.8 TFLOP/s on large blocks (80% of base-clock peak).",
             "t0 = 0.15 ms launch + sync; a = 1, xs = 128 (13 SM).",
             "Noise 0.03: the consumer boost clock varies with temperature."]),
    "titan": mm_dev("titan", 3.5, 1.5e-4, 1.0, 160, 0.025,
        why=["cuBLAS SGEMM ~3.5 TFLOP/s on large blocks (78% of peak).",
             "t0 = 0.15 ms launch + sync; a = 1, xs = 160 (14 SMX need a wider block)."]),
    "k620": mm_dev("k620", 0.6, 1.5e-4, 0.6, 48, 0.025,
        why=["cuBLAS SGEMM ~0.6 TFLOP/s on large blocks (70% of peak).",
             "t0 = 0.15 ms launch + sync; a = 0.6, xs = 48: 3 SM fill early."]),
    "phi3120": mm_dev("phi3120", 0.8, 0.03, 1.0, 256, 0.04,
        why=["MKL SGEMM in offload mode ~0.8 TFLOP/s on large blocks (40% of peak).",
             "t0 = 30 ms: offload region start, thread-team wake-up, result signalling.",
             "a = 1, xs = 256: 228 in-order threads each want a tile of columns; a",
             "16384-row GEMM is wide enough past a few hundred columns, so the tail",
             "penalty saturates at about one wave (0.17 s)."]),
}

def grn_dev(name, rate, t0, a, xs, noise, why):
    return dict(name=name, R=rate, t0=t0, a=a, xs=xs, noise=noise, why=why)

GRN = {
    "i7-5930k": grn_dev("i7-5930k", 40, 2e-4, 0.5, 12, 0.05,
        ["~1 op/cycle/core on 6 cores @ 3.5 GHz (scattered histogram updates do not",
         "vectorise): 40 genes/s. t0 = 0.2 ms thread wake-up; a = 0.5, xs = 12:",
         "one gene per thread, 12 threads, so small blocks leave a tail."]),
    "i7-4930k": grn_dev("i7-4930k", 35, 2e-4, 0.5, 12, 0.05,
        ["as the i7-5930K, 3.4 GHz and ~10% lower IPC (Ivy Bridge): 35 genes/s."]),
    "e5-2620": grn_dev("e5-2620", 25, 3e-4, 0.5, 12, 0.05,
        ["as the i7-5930K at 2.1-2.6 GHz (Ivy Bridge): 25 genes/s; t0 = 0.3 ms."]),
    "k5200": grn_dev("k5200", 360, 2e-4, 0.5, 96, 0.02,
        ["Kepler emulates shared-memory atomics with lock loops: ~13% of its 1.5 Tops",
         "int32 peak, 360 genes/s (9x the i7-5930K). t0 = 0.2 ms launch + result copy;",
         "a = 0.5, xs = 96: one thread block per gene, 8 resident per SMX x 12 SMX;",
         "on average half of the last wave is idle."]),
    "gtx970": grn_dev("gtx970", 560, 2e-4, 0.5, 104, 0.03,
        ["Maxwell has native shared-memory atomics: ~17% of its 1.75 Tops int32 peak,",
         "560 genes/s (14x the i7-5930K). t0 = 0.2 ms; a = 0.5, xs = 104 (13 SM x 8)."]),
    "titan": grn_dev("titan", 480, 2e-4, 0.5, 112, 0.025,
        ["Kepler, ~13.5% of its 1.9 Tops int32 peak: 480 genes/s (12x).",
         "t0 = 0.2 ms; a = 0.5, xs = 112 (14 SMX x 8)."]),
    "k620": grn_dev("k620", 128, 2e-4, 0.5, 24, 0.025,
        ["Maxwell, ~16% of its 0.43 Tops int32 peak: 128 genes/s (3.2x).",
         "t0 = 0.2 ms; a = 0.5, xs = 24 (3 SM x 8)."]),
    "phi3120": grn_dev("phi3120", 120, 0.03, 0.5, 228, 0.04,
        ["scatter/gather is slow on KNC, so the kernel runs ~scalar: ~1 op/cycle on",
         "57 cores @ 1.1 GHz, 120 genes/s (3x). t0 = 30 ms offload start;",
         "a = 0.5, xs = 228: one gene per thread, on average half a wave idle."]),
}

def km_dev(name, gf, t0, a, xs, noise, why):
    return dict(name=name, R=gf * 1e9 / KM_FLOP, t0=t0, a=a, xs=xs, noise=noise, gf=gf, why=why)

KM = {
    "i7-5930k": km_dev("i7-5930k", 336, 2e-4, 0.2, 24, 0.04,
        ["2 loads + 2 FMA per cycle keeps ~50% of the 672 GFLOP/s peak: 336 GFLOP/s,",
         "1367 points/s. t0 = 0.2 ms thread wake-up; a = 0.2, xs = 24 (12 threads)."]),
    "i7-4930k": km_dev("i7-4930k", 179, 2e-4, 0.2, 24, 0.045,
        ["AVX (no FMA), ~55% of 326 GFLOP/s: 179 GFLOP/s, 729 points/s."]),
    "e5-2620": km_dev("e5-2620", 111, 3e-4, 0.2, 24, 0.05,
        ["AVX (no FMA), ~55% of 202 GFLOP/s: 111 GFLOP/s, 452 points/s; t0 = 0.3 ms."]),
    "k5200": km_dev("k5200", 507, 1.5e-4, 1.0, 256, 0.02,
        ["one shared-memory load per FMA: Kepler has 32 load lanes for 192 FP32 lanes",
         "per SMX, so ~1/6 of peak: 507 GFLOP/s, 2063 points/s (1.5x the i7-5930K).",
         "t0 = 0.15 ms launch + sync; a = 1, xs = 256: 64-point tiles, 4 per SMX."]),
    "gtx970": km_dev("gtx970", 875, 1.5e-4, 1.0, 256, 0.03,
        ["Maxwell: 32 load lanes for 128 FP32 lanes per SM, ~1/4 of 3.5 TFLOP/s:",
         "875 GFLOP/s, 3560 points/s. t0 = 0.15 ms; a = 1, xs = 256."]),
    "titan": km_dev("titan", 750, 1.5e-4, 1.0, 256, 0.025,
        ["Kepler, ~1/6 of 4.5 TFLOP/s: 750 GFLOP/s, 3052 points/s.",
         "t0 = 0.15 ms; a = 1, xs = 256."]),
    "k620": km_dev("k620", 215, 1.5e-4, 1.0, 64, 0.025,
        ["Maxwell, ~1/4 of 0.86 TFLOP/s: 215 GFLOP/s, 875 points/s.",
         "t0 = 0.15 ms; a = 1, xs = 64 (3 SM)."]),
    "phi3120": km_dev("phi3120", 300, 0.03, 1.0, 228, 0.04,
        ["in-order cores, one vector FMA with a memory operand per cycle at best:",
         "~15% of 2.0 TFLOP/s, 300 GFLOP/s, 1221 points/s. t0 = 30 ms offload start;",
         "a = 1, xs = 228 (one point per thread: at most a wave idle)."]),
}

# ---------------------------------------------------------------- machines
MACHINES = {  # Table 1
    "A": ["i7-5930k", "k5200"],
    "B": ["i7-5930k", "gtx970", "phi3120"],
    "C": ["e5-2620", "k620"],
    "D": ["i7-4930k", "titan"],
    "E": ["e5-2620", "k620", "phi3120"],
}
MACH_DESC = {
    "A": "i7-5930K + Quadro K5200",
    "B": "i7-5930K + GTX 970 + Xeon Phi 3120",
    "C": "Xeon E5-2620 + Quadro K620",
    "D": "i7-4930K + GTX Titan",
    "E": "Xeon E5-2620 + Quadro K620 + Xeon Phi 3120",
}

APPS = {
    "mm": dict(devs=MM, W=1048576, bpu=MM_BYTES, title="matrix multiply (MM)",
        header=[
            "Application: C = A B in single precision. A is N x N with N = 16384 (1 GiB,",
            "broadcast once to every PU, fits even the K620's 2 GB); B is N x W. The domain",
            "is B's W = 1,048,576 columns (B and C are streamed per block, 64 GiB each).",
            "One unit (column) costs 2 N^2 = 0.537 GFLOP and moves 2 N 4 B = 128 KiB",
            "(a column of B in, a column of C out). W is 16x the paper's 65,536 so that",
            "the five-machine run lasts ~45 s rather than ~3 s.",
        ]),
    "grn": dict(devs=GRN, W=140000, bpu=GRN_BYTES, title="gene-regulatory-network inference (GRN)",
        header=[
            "Application: exhaustive-search GRN inference (Borelli et al., BMC Bioinf. 2013).",
            "The domain is W = 140,000 target genes, as in the paper. For each target the",
            "kernel scores every pair of predictors from m = 2048 pre-filtered candidates",
            "(2.1M pairs) by the conditional entropy of the target over 50 discretised",
            "samples: ~250 integer ops (histogram increments, log-table lookups) per pair,",
            "~5.2e8 ops per gene, the same for every gene. The expression matrix (7 MB) is",
            "broadcast once; per gene only an index range goes in and the best pair and its",
            "score come out (~64 B), so transfer is latency only. Integer and shared-memory",
            "atomic heavy: GPUs are relatively stronger than for SGEMM (9-14x a 6-core CPU).",
        ]),
    "kmeans": dict(devs=KM, W=500000, bpu=KM_BYTES, title="k-means (one assignment pass)",
        header=[
            "Application: one k-means assignment pass over W = 500,000 points (as in the",
            "paper): d = 12,288 (64x64 RGB images, 48 KiB per point, 24.6 GB in all) and",
            "k = 10,000 centroids (491 MB, broadcast once per pass). A unit (point) costs",
            "2 d k = 0.246 GFLOP and moves 48 KiB in and a 4-byte label out (per-PU",
            "centroid partial sums are reduced once at the end of the pass, not per block).",
            "The kernel is a direct distance loop with a running argmin (not a GEMM): one",
            "load per multiply-add, so it is load/store-bound. GPUs reach only 1/6 (Kepler)",
            "to 1/4 (Maxwell) of peak while AVX CPUs keep ~50%: CPUs are relatively",
            "stronger than for SGEMM. d and k are this large because a cheap pass over",
            "500,000 points (e.g. d = 32, k = 256) would take milliseconds, not the",
            "20-300 s that a balancing test needs; transfer is thus ~1% of block time.",
        ]),
}

COMMON_METHOD = [
    "Curves (true block times, seconds, for a block of x units):",
    "  compute(x) = t0 + (x + a xs (1 - exp(-x/xs)) [+ c (x - xc (1 - exp(-x/xc)))]) / R",
    "  R: asymptotic rate (units/s) = achieved throughput / cost per unit, the achieved",
    "     throughput being an assumed fraction of the device's published peak;",
    "  t0: fixed per-block cost (thread wake-up, kernel launch + sync, offload start);",
    "  a, xs: small-block inefficiency (occupancy, tile quantisation, thread tails):",
    "     marginal cost (1+a)/R below ~xs units falling to 1/R, concave then linear;",
    "  c, xc (CPUs, MM only): mild slowdown c once a block outgrows the L3 cache.",
    "  Tabulated at log-spaced points from 64 units to W (piecewise linear between).",
    "  transfer(x) = latency + x bytes_per_unit / bandwidth (PCIe for accelerators, a",
    "  memory copy for CPUs; the ~30 us MPI/network hop is folded into the latency).",
    "  noise: 0.02-0.03 for GPUs, 0.04-0.05 for CPUs and the Xeon Phi.",
]

def rate(p, x, bpu):
    return x / (comp(p, x) + LINK[p["name"]]["lat"] + x * bpu / LINK[p["name"]]["bw"])

def est_time(devs_list, W, bpu):
    s = sum(rate(p, W / 20, bpu) for p in devs_list)
    return W / s

def model_block(app, base, mname, W, extra_lines=(), noise=None, change=None, fail=None):
    p = APPS[app]["devs"][base]
    bpu = APPS[app]["bpu"]
    L = []
    L.append("; " + FACTS[base] + ".")
    for w in p["why"]:
        if noise is not None and w.startswith("Noise"):
            continue
        L.append("; " + w)
    if app == "mm" and p.get("c"):
        L.append("; R = %.0f col/s (%.3g TFLOP/s in cache), t0 = %g s, a = %g, xs = %g, c = %g, xc = %g."
                 % (p["R"], p["R"] * MM_FLOP / 1e12, p["t0"], p["a"], p["xs"], p["c"], p["xc"]))
    else:
        L.append("; R = %.4g units/s, t0 = %g s, a = %g, xs = %g." % (p["R"], p["t0"], p["a"], p["xs"]))
    L.append("; Transfer: " + LINK[base]["ltxt"] + ", %d B per unit." % bpu)
    for e in extra_lines:
        L.append("; " + e)
    L.append("[model %s]" % mname)
    L.append("class = %s" % CLASS[base])
    L.append("compute = " + table(p, W))
    L.append("transfer = " + poly(LINK[base], bpu))
    nz = p["noise"] if noise is None else noise
    if nz:
        L.append("noise = %g" % nz)
    if change:
        L.append("change = %s" % change)
    if fail is not None:
        L.append("fail = %g" % fail)
    return L

def write(path, lines):
    for l in lines:
        assert len(l) <= 190, (path, len(l), l)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")

def app_file(app, K):
    A = APPS[app]
    W = A["W"]
    machines = "ABCDE"[:K]
    used = []
    for m in machines:
        for d in MACHINES[m]:
            if d not in used:
                used.append(d)
    pus = [A["devs"][d] for m in machines for d in MACHINES[m]]
    T = est_time(pus, W, A["bpu"])
    L = []
    L.append("; plb simulation scenario %s-%d: %s" % (app, K, A["title"]))
    L.append("; on machine%s %s of the PLB-HAC paper (Sant'Ana, Cordeiro, de Camargo,"
             % ("s" if K > 1 else "", ", ".join(machines)))
    L.append("; Euro-Par 2019, Table 1), each node listing its PUs as in Table 1: one PU for")
    L.append("; the whole multi-core CPU, its GPU(s), its Xeon Phi.")
    for m in machines:
        L.append(";   %s: %s" % (m, MACH_DESC[m]))
    L.append(";")
    for h in A["header"]:
        L.append("; " + h)
    L.append(";")
    for h in COMMON_METHOD:
        L.append("; " + h)
    L.append(";")
    L.append("; Estimated run time: %.0f s (W / sum of the PUs' rates at blocks of W/20)." % T)
    L.append("; Tables computed from the formula with the parameters given above each model.")
    L.append("")
    L.append("[run]")
    L.append("units = %d" % W)
    L.append("policy = plb-hac")
    L.append("seed = 1")
    L.append("")
    L.append("[network]")
    if K == 1:
        L.append("latency_us = 10         ; one node: master and worker share the machine")
    else:
        L.append("latency_us = 50         ; one-way control message latency (MPI over Ethernet)")
    L.append("fail_detect_ms = 1000")
    L.append("")
    for m in machines:
        L.append("[node %s]" % m)
        L.append("emu = " + " ".join(MACHINES[m]))
        L.append("")
    for d in used:
        L += model_block(app, d, d, W)
        L.append("")
    write(os.path.join(OUT, "%s-%d.ini" % (app, K)), L[:-1])
    return T

def mm_rate_at(d, x):
    return rate(MM[d], x, MM_BYTES)

def special_files():
    res = {}
    bpu = MM_BYTES
    # ---------------- interference: A (i7 + k5200-contended), B (i7 + gtx970)
    rA = {d: mm_rate_at(d, 100000) for d in MM}
    base = rA["i7-5930k"] * 2 + rA["k5200"] + rA["gtx970"]
    after = rA["i7-5930k"] * 2 + rA["k5200"] / 2.1 + rA["gtx970"]
    W = int(round((base * 142 + after * (300 - 142)) / 1e5) * 1e5)
    T = 142 + (W - base * 142) / after
    L = [
        "; plb simulation scenario: interference, after Fig. 6 of the PLB-HAC paper (Euro-Par",
        "; 2019, Sec. 5.4). Machines A and B, one CPU and one GPU each, run MM; at t = 142 s a",
        "; competing CUDA application (a GRN inference) starts on GPU A and shares its SMX:",
        "; in the paper GPU A's block size fell from 2500 KB to 1188 KB within 38 s, i.e.",
        "; GPU A became ~2.1x slower, modelled as `change = 142:2.1` on its own model",
        "; (k5200-contended: the k5200 curves plus the change). The paper's second case,",
        "; a render application on GPU A (block 2500 KB -> 320 KB), is ~8x: use",
        "; `change = 142:8.0` for it.",
        ";",
        "; MM curves as in mm-*.ini (N = 16384, a unit is a column of B: 0.537 GFLOP and",
        "; 128 KiB moved); see mm-1.ini and README.md for the derivation. The Xeon Phi of",
        "; machine B is left out, as in the paper's experiment.",
        "; W = %d columns: ~142 s at full speed, then the rest at the contended rate," % W,
        "; estimated run time %.0f s (rates at blocks of 100,000 columns)." % T,
        "",
        "[run]",
        "units = %d" % W,
        "policy = plb-hac",
        "seed = 1",
        "",
        "[network]",
        "latency_us = 50",
        "fail_detect_ms = 1000",
        "",
        "[node A]",
        "emu = i7-5930k k5200-contended",
        "",
        "[node B]",
        "emu = i7-5930k gtx970",
        "",
    ]
    L += model_block("mm", "i7-5930k", "i7-5930k", W) + [""]
    L += model_block("mm", "k5200", "k5200-contended", W,
                     extra_lines=["Contended from t = 142 s: every block is 2.1x slower (render case: 8.0)."],
                     change="142:2.1") + [""]
    L += model_block("mm", "gtx970", "gtx970", W)
    write(os.path.join(OUT, "interference.ini"), L)
    res["interference"] = (W, T)

    # ---------------- adapt-4x: A, B, C; gtx970 on B 4x slower at 40% of the run
    W = 1048576
    pus = ["i7-5930k", "k5200", "i7-5930k", "gtx970", "phi3120", "e5-2620", "k620"]
    r = {d: mm_rate_at(d, W / 20) for d in MM}
    base = sum(r[d] for d in pus)
    after = base - r["gtx970"] + r["gtx970"] / 4
    # T0 = 0.4 S;  base*T0 + after*(S - T0) = W
    S = W / (0.4 * base + 0.6 * after)
    T0 = round(0.4 * S)
    S = T0 + (W - base * T0) / after
    L = [
        "; plb simulation scenario: adaptation to a 4x slowdown. Three-machine MM cluster",
        "; (machines A, B, C of the PLB-HAC paper, Table 1; curves as in mm-3.ini, see",
        "; mm-1.ini and README.md for the derivation). At t = %d s, about 40%% of the" % T0,
        "; run, the GTX 970 of machine B becomes 4x slower (e.g. another job takes it",
        "; over), modelled on its own model gtx970-slowed with `change = %d:4.0` and no" % T0,
        "; noise, so the balancer's adaptation can be measured cleanly.",
        "; W = %d columns; estimated run time %.0f s (%.0f s with no slowdown)." % (W, S, W / base),
        "",
        "[run]",
        "units = %d" % W,
        "policy = plb-hac",
        "seed = 1",
        "",
        "[network]",
        "latency_us = 50",
        "fail_detect_ms = 1000",
        "",
        "[node A]",
        "emu = i7-5930k k5200",
        "",
        "[node B]",
        "emu = i7-5930k gtx970-slowed phi3120",
        "",
        "[node C]",
        "emu = e5-2620 k620",
        "",
    ]
    for d in ["i7-5930k", "k5200"]:
        L += model_block("mm", d, d, W) + [""]
    L += model_block("mm", "gtx970", "gtx970-slowed", W,
                     extra_lines=["gtx970-slowed: the gtx970 curves with no noise, 4x slower from",
                                  "t = %d s (~40%% of the run)." % T0],
                     noise=0, change="%d:4.0" % T0) + [""]
    for d in ["phi3120", "e5-2620", "k620"]:
        L += model_block("mm", d, d, W) + [""]
    write(os.path.join(OUT, "adapt-4x.ini"), L[:-1])
    res["adapt-4x"] = (W, S, T0)

    # ---------------- failure: five machines; titan fails at ~30%, E's CPU at ~60%
    W = 1048576
    pus = [d for m in "ABCDE" for d in MACHINES[m]]
    base = sum(r[d] for d in pus)
    a1 = base - r["titan"]
    a2 = a1 - r["e5-2620"]
    # T1 = 0.3 S, T2 = 0.6 S: base*0.3S + a1*0.3S + a2*0.4S = W
    S = W / (0.3 * base + 0.3 * a1 + 0.4 * a2)
    T1 = round(0.3 * S)
    T2 = round(0.6 * S)
    S = T2 + (W - base * T1 - a1 * (T2 - T1)) / a2
    L = [
        "; plb simulation scenario: failures. The five-machine MM cluster of the PLB-HAC",
        "; paper (Table 1; curves as in mm-5.ini, see mm-1.ini and README.md for the",
        "; derivation). The GTX Titan of machine D (model titan-failing) dies at",
        "; t = %d s (~30%% of the run) and the CPU of machine E (model e5-2620-failing)" % T1,
        "; at t = %d s (~60%%); their outstanding blocks must go back to the pool and be" % T2,
        "; done by the others, and no unit may be lost or done twice.",
        "; W = %d columns; estimated run time %.0f s (%.0f s with no failure)." % (W, S, W / base),
        "",
        "[run]",
        "units = %d" % W,
        "policy = plb-hac",
        "seed = 1",
        "",
        "[network]",
        "latency_us = 50",
        "fail_detect_ms = 1000   ; how long the master takes to notice a dead PU",
        "",
        "[node A]", "emu = i7-5930k k5200", "",
        "[node B]", "emu = i7-5930k gtx970 phi3120", "",
        "[node C]", "emu = e5-2620 k620", "",
        "[node D]", "emu = i7-4930k titan-failing", "",
        "[node E]", "emu = e5-2620-failing k620 phi3120", "",
    ]
    for d in ["i7-5930k", "k5200", "gtx970", "phi3120", "e5-2620", "k620", "i7-4930k"]:
        L += model_block("mm", d, d, W) + [""]
    L += model_block("mm", "titan", "titan-failing", W,
                     extra_lines=["Fails at t = %d s." % T1], fail=T1) + [""]
    L += model_block("mm", "e5-2620", "e5-2620-failing", W,
                     extra_lines=["Fails at t = %d s." % T2], fail=T2)
    write(os.path.join(OUT, "failure.ini"), L)
    res["failure"] = (W, S, T1, T2)
    return res

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for app in APPS:
        for K in range(1, 6):
            T = app_file(app, K)
            print("%s-%d W=%d est %.1f s" % (app, K, APPS[app]["W"], T))
    print(special_files())

#!/usr/bin/env python3
"""Write a randomly drawn plbsim scenario (a cluster nobody tuned for).

  scripts/gen-cluster.py FAMILY:SEED [> scenario.ini]
  scripts/gen-cluster.py --families

The same FAMILY:SEED gives the same file on every machine (Python's
random.Random seeded with the string). Every drawn figure goes into the
file: each model's curve as a table or polynomial, with the parameters it
was computed from in a comment above it, so a reader can see what was
drawn and recompute it.

Devices (rates in units/s at large blocks; a unit is abstract):
  cpu      200-3000 units/s, 0.05-0.5 ms per block (waking threads), blocks
           of a few dozen units run their threads unevenly
  gpu      3-30x a CPU of its cluster, 0.05-0.3 ms per block (launch and
           sync), blocks below 64-2048 units leave the device part idle
  offload  1-3x a CPU, 20 ms-3 s per block (offload start: a coprocessor
           or a remote accelerator), a few hundred units to fill it
The block time is t0 + (x + a xs (1 - exp(-x/xs))) / R: past xs units
the fill costs a xs / R a block more than the units alone, which where
units are heavy (a slow rate, a wide xs) is far more than t0; in the
short family t0 + a xs / R is drawn as its 1-20 ms. With a
performance cliff (the block outgrows device memory or a cache) the time
per unit beyond the size xc is m times larger (m 2.5-6). The transfer is a
latency (10 us-1 ms) plus a cost per unit drawn as 0.1% to 300% of the
compute cost per unit (negligible to dominant). Noise 0-8%: the relative
sd of the device's speed over pieces of 0.05-2 s of the run (noise_time),
each piece drawn once for every policy, so a block many pieces long
averages them, and two policies running on one device at one time meet the
same speed: what a device's speed does over a second does not average
away within it, as independent draws per block would have it (the
spread of a real kernel's time against its length: `OPENBLAS_NUM_THREADS=1
build/bench/noise_spread`, figures in docs/FIGURES.md).

Families: see FAMILIES below; "mixed" draws everything at once. The
contention and link families draw their couplings and links from streams
of their own after the rest, so what they share with mixed is drawn the
same way.
"""
import math
import random
import sys

FAMILIES = {
    "mixed": "2-10 machines of several CPU, GPU and offload generations, any transfer cost, "
             "noise 0-8%, sometimes a speed change (that may come back) or a failure",
    "cliff": "mixed clusters whose GPUs slow 2.5-6x per unit above a block size",
    "slowdown": "a GPU turns 2-6x slower at 20-70% of the run; half of them come back",
    "offload": "1-4 PUs with 20 ms-3 s of start-up per block",
    "short": "runs of 1-5 s with 1-20 ms per block on every PU",
    "failure": "1-3 PUs die at 20-80% of the run",
    "single": "one PU, or one machine (a CPU and 1-4 accelerators)",
    "large": "100-1000 PUs on 25-250 machines",
    "contention": "2-6 machines of a CPU and 1-3 accelerators that slow each other "
                  "(an accelerator's transfer 1.05-3x slower while its CPU computes, or "
                  "its compute by a quarter to 4x of what the CPU adds, sometimes the "
                  "CPU 1.05-1.5x while an accelerator computes)",
    "link": "mixed clusters whose blocks' bytes cross the master's link (0.2-10 Gbit/s) "
            "and the nodes' (1-10 Gbit/s, or not limited): the bytes alone need 0.3-3x "
            "the compute's time",
}


def table(points):
    return "table " + " ".join(f"{x:.5g}:{t:.5g}" for x, t in points)


class Model:
    def __init__(self, name, kind, R, t0, a, xs, noise, xfer_per_unit, lat, cliff=None):
        self.name, self.kind, self.R, self.t0 = name, kind, R, t0
        self.a, self.xs, self.noise = a, xs, noise
        self.xfer_per_unit, self.lat, self.cliff = xfer_per_unit, lat, cliff
        self.change, self.fail = None, None
        self.noise_time = 0.0

    def compute(self, x):
        t = self.t0 + (x + self.a * self.xs * (1 - math.exp(-x / self.xs))) / self.R
        if self.cliff and x > self.cliff[0]:
            t += (self.cliff[1] - 1) * (x - self.cliff[0]) / self.R
        return t

    def lines(self, W):
        """The model's section, tabulated at log-spaced sizes from 1 to 2W
        (and on both sides of a cliff); under 200 characters a line."""
        step = 8
        while True:
            xs = []
            x = 1.0
            while x < 2 * W:
                xs.append(x)
                x *= step
            xs.append(2.0 * W)
            if self.cliff:
                xs += [self.cliff[0], self.cliff[0] * 1.05]
            xs = sorted(set(float(f"{v:.5g}") for v in xs))
            if len("compute = " + table([(v, self.compute(v)) for v in xs])) < 200:
                break
            step *= 2
        out = [f"; {self.kind}: R = {self.R:.4g} units/s, t0 = {self.t0:.3g} s, "
               f"a = {self.a:.3g}, xs = {self.xs:.4g}"
               + (f", cliff: x {self.cliff[1]:.3g} per unit above {self.cliff[0]:.4g} units"
                  if self.cliff else "")]
        out.append(f"; transfer {self.lat * 1e6:.0f} us + {self.xfer_per_unit:.3g} s per unit, "
                   f"noise {self.noise:.3f} per piece of {self.noise_time:.3g} s of the run")
        out.append(f"[model {self.name}]")
        out.append(f"class = {self.kind if self.kind != 'offload' else 'mic'}")
        out.append("compute = " + table([(v, self.compute(v)) for v in xs]))
        out.append(f"transfer = poly {self.lat:.4g} {self.xfer_per_unit:.4g}")
        out.append(f"noise = {self.noise:.3f}")
        out.append(f"noise_time = {self.noise_time:.3g}")
        if self.change:
            out.append("change = " + " ".join(f"{t:.4g}:{f:.4g}" for t, f in self.change))
        if self.fail is not None:
            out.append(f"fail = {self.fail:.4g}")
        for line in out:
            assert len(line) < 200, line
        return out


def draw(family, seed):
    rng = random.Random(f"{family}:{seed}")
    U = rng.uniform

    def logu(lo, hi):
        return math.exp(U(math.log(lo), math.log(hi)))

    # How long a device's speed stays put (its noise's pieces): drawn from
    # a stream of its own, so the other draws are those of before.
    nrng = random.Random(f"{family}:{seed}:noise_time")

    def timed(m):
        m.noise_time = math.exp(nrng.uniform(math.log(0.05), math.log(2)))
        return m

    cpu_rate = logu(200, 3000)
    xfer_scale = logu(0.001, 3)          # transfer cost against compute, per unit

    def cpu(name):
        R = cpu_rate * logu(0.3, 1.5)
        return timed(Model(name, "cpu", R, logu(5e-5, 5e-4), U(0.1, 0.5), logu(16, 64),
                     U(0, 0.08), xfer_scale * logu(0.3, 3) / R / 4, logu(1e-5, 1e-4)))

    def gpu(name):
        R = cpu_rate * logu(3, 30)
        return timed(Model(name, "gpu", R, logu(5e-5, 3e-4), U(0.5, 2), logu(64, 2048),
                     U(0, 0.08), xfer_scale * logu(0.3, 3) / R, logu(2e-5, 1e-3)))

    def offload(name):
        R = cpu_rate * logu(1, 3)
        return timed(Model(name, "offload", R, logu(0.02, 3), U(0.5, 2), logu(128, 1024),
                     U(0, 0.08), xfer_scale * logu(0.3, 3) / R, logu(1e-4, 1e-3)))

    # device generations of this cluster, then machines built from them
    ncpu_t, ngpu_t = rng.randint(1, 3), rng.randint(1, 4)
    types = [cpu(f"cpu{i}") for i in range(ncpu_t)] + [gpu(f"gpu{i}") for i in range(ngpu_t)]
    if family == "offload" or (family in ("mixed", "large") and rng.random() < 0.3):
        types.append(offload("offload0"))
    if family == "short":
        # a block's cost beyond its units, t0 + a xs / R at large blocks,
        # is the family's 1-20 ms: the fill takes at most half of it (a
        # device that fills only with blocks of a sizeable part of a short
        # run is no device of this family)
        for m in types:
            c = logu(1e-3, 2e-2)
            fill = min(m.a * m.xs / m.R, c / 2)
            m.xs = fill * m.R / m.a
            m.t0 = c - fill
    if family == "cliff":
        for m in types:
            if m.kind == "gpu":
                m.cliff = [None, U(2.5, 6)]
    cpus = [m for m in types if m.kind == "cpu"]
    accs = [m for m in types if m.kind != "cpu"]

    if family == "contention":
        # a CPU on every machine, and transfers that cost something
        nmach = rng.randint(2, 6)
    elif family == "single":
        nmach = 1
    elif family == "large":
        nmach = rng.randint(25, 250)
    else:
        nmach = rng.randint(2, 10)
    machines = []
    for i in range(nmach):
        if family == "contention":
            pus = [rng.choice(cpus)] + [rng.choice(accs) for _ in range(rng.randint(1, 3))]
            machines.append(pus)
            continue
        pus = [rng.choice(cpus)] * rng.choice([1, 1, 2])
        pus += [rng.choice(accs) for _ in range(rng.randint(0 if family != "single" else 1,
                                                            4 if family != "large" else 7))]
        machines.append(pus)
    if family == "single" and rng.random() < 0.5:
        machines = [[rng.choice(types)]]
    if family == "offload":
        k = rng.randint(1, 4)
        for j in range(k):
            machines[rng.randrange(len(machines))].append(offload(f"offload{j + 1}"))

    # each PU gets its own model section where it changes or fails
    pus = [(mi, k) for mi, m in enumerate(machines) for k in range(len(m))]
    rate = sum(m.R for mach in machines for m in mach)
    T = logu(1, 5) if family == "short" else logu(10, 100)
    W = max(64, int(T * rate))
    if family == "cliff":
        for m in types:
            if m.cliff:
                m.cliff[0] = logu(W / 500, W / 20)

    def own(mi, k, tag):
        m = machines[mi][k]
        c = Model(f"{m.name}-{tag}{mi}-{k}", m.kind, m.R, m.t0, m.a, m.xs, m.noise,
                  m.xfer_per_unit, m.lat, list(m.cliff) if m.cliff else None)
        c.noise_time = m.noise_time
        machines[mi][k] = c
        return c

    gpus = [(mi, k) for mi, k in pus if machines[mi][k].kind == "gpu"]
    if family == "slowdown" or (family == "mixed" and rng.random() < 0.3):
        for mi, k in rng.sample(gpus or pus, min(len(gpus or pus), rng.randint(1, 2))):
            c = own(mi, k, "slow")
            t1 = T * U(0.2, 0.7)
            c.change = [(t1, U(2, 6))]
            if rng.random() < 0.5:
                c.change.append((t1 + T * U(0.1, 0.3), 1))
    if len(pus) > 1 and (family == "failure" or (family == "mixed" and rng.random() < 0.2)):
        for mi, k in rng.sample(pus, min(len(pus) - 1, rng.randint(1, 3))):
            own(mi, k, "dies").fail = T * U(0.2, 0.8)

    # couplings: each accelerator slowed while its machine's CPU computes,
    # sometimes the CPU while an accelerator does (its feeding core)
    couple = {}
    if family == "contention":
        crng = random.Random(f"{family}:{seed}:couple")
        for mi, mach in enumerate(machines):
            rules = []
            seen_m = set()
            # the CPU adds r of what its accelerators do: slowing them by
            # f* = 1 / (1 - r) costs that much; a compute rule's excess
            # over 1 is drawn within 4x of f*'s either way, so that some
            # CPUs are worth keeping and others not
            r = mach[0].R / sum(m.R for m in mach[1:])
            for m in mach[1:]:
                if m.name in seen_m:
                    continue
                seen_m.add(m.name)
                stage = crng.choice(["transfer", "transfer", "compute"])
                if stage == "compute":
                    f = 1 + r / (1 - min(r, 0.5)) * math.exp(crng.uniform(math.log(0.25), math.log(4)))
                else:
                    f = math.exp(crng.uniform(math.log(1.05), math.log(3)))
                rules.append(f"{m.name} {stage} {f:.3g} while {mach[0].name}")
            if crng.random() < 0.4:
                f = math.exp(crng.uniform(math.log(1.05), math.log(1.5)))
                accs_here = sorted(set(m.name for m in mach[1:]))
                rules.append(f"{mach[0].name} compute {f:.3g} while " + " ".join(accs_here))
            couple[mi] = "; ".join(rules)
    links = None
    if family == "link":
        lrng = random.Random(f"{family}:{seed}:link")
        master = math.exp(lrng.uniform(math.log(0.2), math.log(10)))
        nodes = [math.exp(lrng.uniform(math.log(1), math.log(10))) if lrng.random() < 0.6 else 0
                 for _ in machines]
        # the bytes alone need rho times the compute's time over the
        # slower of the master's link and the nodes' together
        bw = min(master, sum(b if b else math.inf for b in nodes)) * 1e9 / 8
        rho = math.exp(lrng.uniform(math.log(0.3), math.log(3)))
        in_b = rho * T * bw / W
        out_b = in_b * math.exp(lrng.uniform(math.log(0.05), math.log(1)))
        links = (master, nodes, in_b, out_b, rho)

    out = [f"; plbsim scenario drawn by scripts/gen-cluster.py {family}:{seed}",
           f"; {FAMILIES[family]}",
           f"; {len(pus)} PUs on {len(machines)} machines, W = {W} units, "
           f"about {T:.3g} s at large-block rates",
           "", "[run]", f"units = {W}", "policy = plb-hac", "seed = 1"]
    if links:
        out += [f"; the bytes alone need {links[4]:.3g}x the compute's time",
                "pipeline = 2", f"in_bytes = {links[2]:.5g}", f"out_bytes = {links[3]:.5g}"]
    out += ["", "[network]", "latency_us = 50",
            f"fail_detect_ms = {max(1, min(1000, T * 10)):.0f}"]
    if links:
        out.append(f"link_gbps = {links[0]:.4g}")
    out.append("")
    for mi, mach in enumerate(machines):
        out += [f"[node m{mi:03d}]", "emu = " + " ".join(m.name for m in mach)]
        if links and links[1][mi]:
            out.append(f"link_gbps = {links[1][mi]:.4g}")
        if couple.get(mi):
            out.append(f"couple = {couple[mi]}")
        out.append("")
    seen = set()
    for mach in machines:
        for m in mach:
            if m.name not in seen:
                seen.add(m.name)
                out += m.lines(W) + [""]
    return "\n".join(out)


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--families":
        for f, what in FAMILIES.items():
            print(f"{f:10s} {what}")
        return 0
    if len(sys.argv) != 2 or ":" not in sys.argv[1]:
        sys.stderr.write("usage: gen-cluster.py FAMILY:SEED   (families: "
                         + ", ".join(FAMILIES) + "; --families describes them)\n")
        return 2
    family, seed = sys.argv[1].split(":", 1)
    if family not in FAMILIES:
        sys.stderr.write(f"gen-cluster.py: unknown family '{family}'; one of "
                         + ", ".join(FAMILIES) + "\n")
        return 2
    if not seed.isdigit():
        sys.stderr.write(f"gen-cluster.py: seed '{seed}' is not a non-negative integer\n")
        return 2
    sys.stdout.write(draw(family, int(seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

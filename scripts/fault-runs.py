#!/usr/bin/env python3
"""Fault injection: plb-mm --verify under mpirun --enable-recovery, each run
with a random fault at a random time, and what came of it.

    scripts/fault-runs.py [--runs N] [--seed S] [--build DIR] [--keep DIR]

Each run is 3 ranks (a master, workers a and b, four emulated PUs that run
the real kernel; a run of about 4 s, [network] peer_timeout_s = 1) and one
fault drawn from (times from the end of plb_init: its trace file is there):
  kill     worker rank 2 killed (kill -9) 0.3-2.5 s into the run
  stop     worker rank 2 stopped (kill -STOP) 0.3-2.5 s in, resumed 0.3-3 s
           later (shorter than the timeout: only late; longer: taken out)
  pu       an emulated PU dies at 0.3-2 s of the run (its model's fail time)
  kernel   an emulated PU's kernel fails on its first or second block (its
           model's fail_block): the block goes to another PU
  none     no fault
A run passes when the job ends by itself within 60 s, plb-mm verifies C
(Freivalds' test), every unit came back exactly once (coverage ok), and
a worker killed, or stopped for longer than the timeout, was taken out
(a PU whose kernel failed: that PU).
Prints one line per run and the totals: runs verified, units lost or done
twice (a coverage failure), runs hung, and the time from each kill or stop
to the master's taking the rank out. Exit status 1 if any run failed.
"""
import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 1.0           # [network] peer_timeout_s of the runs
N = 1024                # plb-mm's order: 1024 columns


def config(fault, rng):
    fail = ""
    if fault == "pu":
        fail = "fail = %.2f\n" % rng.uniform(0.3, 2.0)
    elif fault == "kernel":
        fail = "fail_block = %d\n" % rng.randint(1, 2)
    return ("[run]\nunits = 1\npipeline = 2\n[network]\npeer_timeout_s = %g\n"
            "[node a]\nemu = e f\n[node b]\nemu = e e\n"
            "[model e]\nclass = gpu\ncompute = poly 0.005 1.5e-2\n"
            "[model f]\nclass = gpu\ncompute = poly 0.005 1.5e-2\n%s" % (TIMEOUT, fail))


def descendants(pid):
    out = []
    try:
        kids = subprocess.run(["pgrep", "-P", str(pid)], stdout=subprocess.PIPE, text=True).stdout.split()
    except OSError:
        return out
    for k in kids:
        out.append(int(k))
        out += descendants(int(k))
    return out


def rank_pid(job, rank):
    for p in descendants(job):
        try:
            env = open("/proc/%d/environ" % p, "rb").read().split(b"\0")
        except OSError:
            continue
        if b"OMPI_COMM_WORLD_RANK=%d" % rank in env:
            return p
    return None


def one(i, fault, rng, build, tmp):
    ini = os.path.join(tmp, "f%d.ini" % i)
    with open(ini, "w") as f:
        f.write(config(fault, rng))
    out, err = os.path.join(tmp, "out%d" % i), os.path.join(tmp, "err%d" % i)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "--enable-recovery", "-np", "3",
           os.path.join(build, "plb-mm"), "--config", ini, "--n", str(N), "--prec", "single",
           "--verify", "--seed", str(i + 1), "--trace", os.path.join(tmp, "trace%d.json" % i)]
    with open(out, "w") as fo, open(err, "w") as fe:
        job = subprocess.Popen(cmd, stdout=fo, stderr=fe, env=env)
    t0 = time.monotonic()
    r2 = None
    trace = os.path.join(tmp, "trace%d.json" % i)
    # the handshake is over once the master has opened its trace
    while (r2 is None or not os.path.exists(trace)) and time.monotonic() - t0 < 20 and job.poll() is None:
        r2 = r2 or rank_pid(job.pid, 2)
        time.sleep(0.02)
    t0 = time.monotonic()
    at = rng.uniform(0.3, 2.5)
    hold = rng.uniform(0.3, 3.0)
    detect = None
    hit = None
    if fault in ("kill", "stop") and r2:
        time.sleep(max(0, t0 + at - time.monotonic()))
        os.kill(r2, signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
        hit = time.monotonic()
    resumed = False
    while job.poll() is None and time.monotonic() - t0 < 60:
        now = time.monotonic()
        if hit and detect is None and "taken out of the run" in open(err).read():
            detect = now - hit
        if fault == "stop" and hit and not resumed and now - hit >= hold:
            os.kill(r2, signal.SIGCONT)
            resumed = True
        time.sleep(0.05)
    hung = job.poll() is None
    if hung:
        for p in descendants(job.pid):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        job.kill()
    job.wait()
    if fault == "stop" and hit and not resumed:
        try:
            os.kill(r2, signal.SIGCONT)
        except OSError:
            pass
    text, log = open(out).read(), open(err).read()
    if hit and detect is None and "taken out of the run" in log:
        detect = time.monotonic() - hit     # seen only at the end: an upper bound
    verified = "verify (Freivalds, 8 vectors): ok" in log + text
    covered = re.search(r"%d of %d done, coverage ok" % (N, N), text) is not None
    taken = "ranks lost     1: rank 2" in text
    must_take = fault == "kill" or (fault == "stop" and hold > TIMEOUT * 1.2)
    may_take = fault == "stop"
    pu_out = fault != "kernel" or ("PUs lost       1" in text and "a.f#1 failed block" in log)
    ok = (not hung and verified and covered and job.returncode == 0 and pu_out and
          (taken or not must_take) and (not taken or must_take or may_take))
    what = {"kill": "killed at %.1f s" % at, "stop": "stopped at %.1f s for %.1f s" % (at, hold),
            "pu": "an emulated PU dies", "kernel": "a kernel fails", "none": "no fault"}[fault]
    print("run %2d: %-28s %s%s%s%s" % (
        i + 1, what, "ok" if ok else "FAILED",
        "" if verified else ", not verified", "" if covered else ", coverage FAILED",
        (", taken out %.2f s after" % detect if detect is not None else "") +
        (", hung" if hung else "")), flush=True)
    if not ok:
        print("  exit %s; stderr: %s" % (job.returncode, log.strip()[-600:]))
    return ok, verified, covered, hung, detect


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", default=os.environ.get("BUILD", os.path.join(ROOT, "build")))
    ap.add_argument("--keep", help="keep the runs' configs and output in this folder")
    a = ap.parse_args()
    if a.runs < 1:
        ap.error("--runs %d: give 1 or more" % a.runs)
    rng = random.Random(a.seed)
    faults = ["kill", "stop", "pu", "kernel", "none"]
    res = []
    with tempfile.TemporaryDirectory(prefix="plb-faults-") as tmp:
        where = a.keep or tmp
        os.makedirs(where, exist_ok=True)
        for i in range(a.runs):
            fault = faults[i % len(faults)] if i < len(faults) else rng.choice(faults)
            res.append(one(i, fault, rng, a.build, where))
    ok = sum(r[0] for r in res)
    det = sorted(r[4] for r in res if r[4] is not None)
    print("%d runs: %d passed, %d verified, %d with units lost or done twice, %d hung"
          % (len(res), ok, sum(r[1] for r in res), sum(not r[2] for r in res), sum(r[3] for r in res)))
    if det:
        print("rank taken out after the kill or stop: %.2f s to %.2f s (median %.2f s; peer_timeout_s = %g)"
              % (det[0], det[-1], det[len(det) // 2], TIMEOUT))
    return 0 if ok == len(res) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Checks a plb trace (--trace FILE) against the trace-event format and
against the run's own report (its JSON: plbsim --json, an app's --json).

    python3 test/cli/check_trace.py TRACE.json REPORT.json [--runs K]

The format (what Perfetto and chrome://tracing need): one JSON object with
a "traceEvents" array; every event has ph, name, pid and tid; every event
but metadata ("M") has a number ts >= 0; a complete event ("X") a dur >= 0;
a counter ("C") numeric args. plb's layout (docs/TRACE.md): every PU of
the report has a named thread; a thread's slices do not overlap; the
block slices are the report's blocks less those returned by lost PUs
(and less at most one per late block run again, whose other copy may
still run when the run ends), in the last of K run slices; the counter of units done ends
at the report's units. Prints what is wrong; exit status 1 if anything is.
"""
import json
import sys


def check(trace_path, report_path, runs=1):
    bad = []
    with open(trace_path) as f:
        doc = json.load(f)
    with open(report_path) as f:
        text = f.read()
    try:
        rep = json.loads(text)          # plbsim --json: one object
    except ValueError:                  # an app: its last JSON line
        rep = [json.loads(l) for l in text.splitlines() if l.startswith("{")][-1]
    ev = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(ev, list) or not ev:
        return ["no traceEvents array"]
    names = {}
    slices = {}
    for i, e in enumerate(ev):
        for k in ("ph", "name", "pid", "tid"):
            if k not in e:
                bad.append("event %d has no %s: %s" % (i, k, e))
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            bad.append("event %d: pid and tid are not integers" % i)
        ph = e.get("ph")
        if ph == "M":
            if e.get("name") == "thread_name":
                names[(e["pid"], e["tid"])] = e["args"]["name"]
            continue
        ts = e.get("ts")
        if not isinstance(ts, (int, float)) or ts < 0:
            bad.append("event %d: ts %r is not a number >= 0" % (i, ts))
            continue
        if ph == "X":
            d = e.get("dur")
            if not isinstance(d, (int, float)) or d < 0:
                bad.append("event %d: dur %r is not a number >= 0" % (i, d))
                continue
            slices.setdefault((e["pid"], e["tid"]), []).append((ts, ts + d, e))
        elif ph == "C":
            if not e.get("args") or not all(isinstance(v, (int, float)) for v in e["args"].values()):
                bad.append("event %d: a counter without numeric args" % i)
        elif ph != "i":
            bad.append("event %d: phase %r, which plb does not write" % (i, ph))
    for key, sl in slices.items():
        sl.sort(key=lambda s: s[0])
        for a, b in zip(sl, sl[1:]):
            if b[0] < a[1] - 1e-3:      # microseconds, as written
                bad.append("thread %s (%s): slices overlap at %.3f us" % (key, names.get(key), b[0]))
                break
    pus = set(rep["pus"])
    missing = pus - set(names.values())
    if missing:
        bad.append("PUs without a thread: %s" % sorted(missing)[:5])
    starts = sorted(s[0] for sl in slices.values() for s in sl if s[2].get("cat") == "run")
    if len(starts) != runs:
        bad.append("%d run slices, expected %d" % (len(starts), runs))
    # the report is the last run's: its blocks start after that run did
    t0 = starts[-1] if starts else 0
    blocks = [s for sl in slices.values() for s in sl
              if s[2].get("cat", "").startswith("block") and s[0] >= t0]
    want = rep["blocks"] - rep["returned_blocks"]
    if not want - rep["redo_blocks"] <= len(blocks) <= want:
        bad.append("%d block slices; the report has %d blocks, %d returned, %d run again"
                   % (len(blocks), rep["blocks"], rep["returned_blocks"], rep["redo_blocks"]))
    units = sum(s[2]["args"]["units"] for s in blocks if "dropped" not in s[2]["cat"])
    if units != rep["units"]:
        bad.append("block slices (not dropped) hold %d units; the run had %d" % (units, rep["units"]))
    counts = [e for e in ev if e.get("ph") == "C" and e.get("name") == "units done"]
    if not counts or counts[-1]["args"]["units"] != rep["units"]:
        bad.append("the counter of units done ends at %s, not %d"
                   % (counts[-1]["args"]["units"] if counts else None, rep["units"]))
    models = [e for e in ev if e.get("ph") == "i" and e.get("name") == "model"]
    for m in models:
        a = m["args"]
        if len(a["curve_units"]) != len(a["curve_s"]) or len(a["sample_units"]) != len(a["sample_exec_s"]):
            bad.append("a model event with arrays of unequal length")
            break
    return bad


if __name__ == "__main__":
    args = sys.argv[1:]
    runs = 1
    if "--runs" in args:
        i = args.index("--runs")
        runs = int(args[i + 1])
        del args[i:i + 2]
    problems = check(args[0], args[1], runs)
    for p in problems:
        print("trace %s: %s" % (args[0], p))
    sys.exit(1 if problems else 0)

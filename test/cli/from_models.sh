# plbsim --from-models: a real run's models file (plb-bs on the CPU and
# two emulated PUs, in one process) and its config become a scenario:
# every PU with a record an emulated PU of its class, its curve
# tabulated from its fitted model (non-decreasing, near its own samples),
# which plbsim then runs under every policy; what the file lacks is said
# (the domain's size: --units), a file of several kinds of run needs
# --kind, and a missing or broken file names itself.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
printf '[run]\nunits = 1\n[node a]\ncpu = 1\nemu = g m\n[model g]\nclass = gpu\ncompute = poly 0.002 2e-8\n[model m]\nclass = mic\ncompute = poly 0.01 5e-8\n' >"$TMP/c.ini"
check "plb-bs --models: runs" one_run "$BUILD/plb-bs" --config "$TMP/c.ini" --models "$TMP/m.txt" --n 2000000 --runs 2
"$PLBSIM" "$TMP/c.ini" --from-models "$TMP/m.txt" >"$TMP/s.ini" 2>"$TMP/e"; rc=$?
check "no --units, the config's units = 1: refused (got $rc)" test $rc = 1
check "... saying the size is the app's, and --units" grep -q "the app's job gave the size; accepted: --units W" "$TMP/e"
"$PLBSIM" "$TMP/c.ini" --from-models "$TMP/m.txt" --units 2000000 >"$TMP/s.ini" 2>"$TMP/e"; rc=$?
check "--units 2000000: a scenario (got $rc: $(cat "$TMP/e"))" test $rc = 0
check "... every PU an emulated PU" grep -q "^emu = .*a.cpu .*a.g_1 .*a.m_1$" "$TMP/s.ini"
check "... of its class" python3 - "$TMP/s.ini" "$TMP/m.txt" <<'PY'
import math, re, sys
text = open(sys.argv[1]).read()
models = re.findall(r"\[model (\S+)\]\n; (\S+) on \S+ \((\S+)\), \d+ samples\n(?:;.*\n)?class = (\w+)\ncompute = table (.*)\n", text)
assert len(models) == 3, models
want = {"cpu:1": "cpu", "emu:g": "gpu", "emu:m": "mic"}
# each PU's samples, by its name
samples, cur = {}, None
for line in open(sys.argv[2]):
    if line.startswith("pu "):
        cur = line.split()[2]
        samples[cur] = []
    elif cur and line[0].isdigit():
        u, e, x = map(float, line.split())
        samples[cur].append((u, e + x))
for name, pu, dev, cls, table in models:
    assert want[dev] == cls, (pu, dev, cls)
    pts = [tuple(map(float, p.split(":"))) for p in table.split()]
    assert all(b[0] > a[0] and b[1] >= a[1] for a, b in zip(pts, pts[1:])), pts
    assert pts[-1][0] == 2000000 and all(s > 0 for _, s in pts), pts
    # the curve near its own samples: the median ratio within 2x
    def at(u):
        for (u0, s0), (u1, s1) in zip(pts, pts[1:]):
            if u0 <= u <= u1:
                return s0 + (s1 - s0) * (u - u0) / (u1 - u0)
        return pts[-1][1]
    r = sorted(at(u) / t for u, t in samples[pu] if t > 0)
    assert 0.5 <= r[len(r) // 2] <= 2, (pu, r)
PY
"$PLBSIM" "$TMP/s.ini" --policy all >"$TMP/o" 2>&1; rc=$?
check "plbsim runs the scenario under every policy (got $rc)" test $rc = 0
check "... every unit once" test "$(grep -c ' ok$' "$TMP/o")" = 5
# a second kind of run in the same file: --kind chooses
check "plb-bs single --models: runs" one_run "$BUILD/plb-bs" --config "$TMP/c.ini" --models "$TMP/m.txt" --n 200000 --prec single
"$PLBSIM" "$TMP/c.ini" --from-models "$TMP/m.txt" --units 2000000 >/dev/null 2>"$TMP/e"; rc=$?
check "two kinds, no --kind: refused (got $rc)" test $rc = 1
check "... listing them" eval 'grep -q "prec=single" "$TMP/e" && grep -q "prec=double" "$TMP/e"'
"$PLBSIM" "$TMP/c.ini" --from-models "$TMP/m.txt" --units 2000000 --kind prec=single >"$TMP/s1.ini" 2>"$TMP/e"; rc=$?
check "--kind prec=single: a scenario (got $rc)" test $rc = 0
check "... of that kind" grep -q "kind of run: bs in=0 out=8 sig=prec=single" "$TMP/s1.ini"
"$PLBSIM" "$TMP/c.ini" --from-models "$TMP/none.txt" --units 10 >/dev/null 2>"$TMP/e"; rc=$?
check "a missing models file: exit 1 (got $rc)" test $rc = 1
check "... named" grep -q "none.txt: cannot read it" "$TMP/e"
printf 'plb-models 1\npu h a.cpu cpu:1 kernel=bs in=0 out=16 cliff=inf samples=2 sig=\n5 0.1 0\n' >"$TMP/bad.txt"
"$PLBSIM" "$TMP/c.ini" --from-models "$TMP/bad.txt" --units 10 >/dev/null 2>"$TMP/e"; rc=$?
check "a cut models file: exit 1 (got $rc)" test $rc = 1
check "... naming file:line" grep -q "bad.txt:3: the file ends within a record" "$TMP/e"
"$PLBSIM" "$TMP/c.ini" --units 10 >/dev/null 2>&1; rc=$?
check "--units without --from-models: exit 2 (got $rc)" test $rc = 2
finish

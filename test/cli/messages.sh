# Messages a user meets: plbsim names the PUs it lost and when, and shows
# them lost rather than 0% idle; a job so small that fixed costs are most
# of it gets a hint, a large one none; an invalid PLB_LOG is said (once)
# with what is accepted; a mistyped app option names the nearest.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
"$PLBSIM" config/sim/failure.ini >"$TMP/o" 2>&1
check "plbsim: the lost PUs named, with when" \
	grep -q "PUs lost       2: D.titan-failing#1 at 17.000 s, E.e5-2620-failing#1 at 35.000 s" "$TMP/o"
check "plbsim: a lost PU's row says lost" grep -q "^  D.titan-failing#1  *lost .*(lost at 17.000 s" "$TMP/o"
check "plbsim: a large run, no hint" eval '! grep -q "hint" "$TMP/o"'
printf '[run]\nunits = 100\n[node a]\nemu = e e\n[model e]\nclass = gpu\ncompute = poly 0.00001 1e-9\n' >"$TMP/s.ini"
one_run "$BUILD/plb-null" --config "$TMP/s.ini"
check "a tiny job: the hint" grep -q "^  hint  *the run took [0-9]*x its bound: a job this small is mostly fixed costs" "$TMP/out"
PLB_LOG=verbose one_run "$BUILD/plb-null" --config "$TMP/s.ini"
check "PLB_LOG=verbose: said, with what is accepted" \
	grep -q "PLB_LOG=verbose: not a level, kept at warn; accepted: error, warn, info, debug" "$TMP/out"
check "... once" test "$(grep -c "PLB_LOG=verbose" "$TMP/out")" = 1
"$BUILD/plb-mm" --config "$TMP/s.ini" --nn 64 >"$TMP/o" 2>&1; rc=$?
check "plb-mm --nn: exit 2 (got $rc)" test $rc = 2
check "... did you mean --n" grep -q -- "--nn: unknown option; did you mean --n?" "$TMP/o"
"$BUILD/plb-mm" --config "$TMP/s.ini" --polcy greedy >"$TMP/o" 2>&1
check "plb-mm --polcy: did you mean --policy" grep -q -- "--polcy: unknown option; did you mean --policy?" "$TMP/o"
finish

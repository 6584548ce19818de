# The progress line: on a terminal (here a pseudo-terminal from script(1)),
# a run past a second shows one line on stderr, updated in place (\r, then
# cleared before the report), with the percent of units, the time, the time
# left and the blocks; nothing for a shorter run, off a terminal, or with
# --quiet; --progress shows it off a terminal too (mpirun's case, a batch
# log), as plain lines (every 5 s, no carriage return or terminal
# escape). A log line in a run clears it first.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
# two emulated PUs, 2 s of work: a run of about a second
printf '[run]\nunits = 400000\n[node a]\nemu = e e\n[model e]\nclass = gpu\ncompute = poly 0.002 5e-6\n' >"$TMP/p.ini"
line='plb: run 1: *[0-9.]*% of 400000 units, [0-9.]* s, about [0-9.]* s left, [0-9]* blocks'
tty() { timeout 120 script -qec "$*" /dev/null >"$TMP/out" 2>&1; }

check "on a terminal: runs" tty "$BUILD/plb-null" --config "$TMP/p.ini"
check "on a terminal: the progress line" grep -aq "$line" "$TMP/out"
check "on a terminal: updated in place, cleared before the report" \
	grep -aq $'\r\033\\[K.*policy plb-hac on' "$TMP/out"
check "--quiet: runs" tty "$BUILD/plb-null" --config "$TMP/p.ini" --quiet
check "--quiet: no progress line" eval '! grep -aq "plb: run" "$TMP/out"'
check "a short run: runs" tty "$BUILD/plb-null" --config "$TMP/p.ini" --units 20000
check "a short run: no progress line" eval '! grep -aq "plb: run" "$TMP/out"'
check "off a terminal: runs" one_run "$BUILD/plb-null" --config "$TMP/p.ini"
check "off a terminal: no progress line" eval '! grep -aq "plb: run" "$TMP/out"'
check "--progress off a terminal: runs" one_run "$BUILD/plb-null" --config "$TMP/p.ini" --progress
check "--progress off a terminal: the line" grep -aq "$line" "$TMP/out"
check "--progress off a terminal: plain lines, no carriage return or escape" \
	eval '! grep -aq $'"'"'[\r\033]'"'"' "$TMP/out"'
# a log line in a run (a PU lost at 1.3 s, noticed a second later) clears
# the progress line first, so it starts at the left edge rather than after
# the line's text
printf '[model g]\nclass = gpu\ncompute = poly 0.002 5e-6\nfail = 1.3\n' >>"$TMP/p.ini"
sed -i 's/^emu = e e$/emu = e g/' "$TMP/p.ini"
check "a log line in a run: runs" tty "$BUILD/plb-null" --config "$TMP/p.ini" --units 800000
check "a log line in a run: the progress line" grep -aq "${line/400000/800000}" "$TMP/out"
check "a log line in a run: logged" grep -aq "PU a.g#1 is out of the run" "$TMP/out"
check "a log line in a run: the progress line cleared before it" \
	grep -aq $'\r\033\\[K\\[[^]]*\\] master: warning: PU a.g#1 is out of the run' "$TMP/out"
finish

# A bad scenario file is refused with exit 1 and a message naming
# file:line and the key, for each kind of mistake the format forbids.
. test/cli/lib.bash

good_model='[model g]
class = gpu
compute = table 64:0.01 1024:0.1'

# expect NAME LINE PATTERN CONTENT: plbsim must fail, and its message must
# contain "FILE:LINE:" and PATTERN
expect() {
	local name=$1 line=$2 pat=$3 f="$TMP/$1.ini"
	printf '%s\n' "$4" > "$f"
	local out rc
	out=$("$PLBSIM" "$f" 2>&1); rc=$?
	check "$name: exit 1 (got $rc)" [ "$rc" -eq 1 ]
	check "$name: names $f:$line (got: $out)" grep -q "$f:$line:" <<<"$out"
	check "$name: mentions '$pat' (got: $out)" grep -qi -- "$pat" <<<"$out"
}

expect unknown_key 3 "colour" "[run]
units = 100
colour = blue
[node a]
emu = g
$good_model"

expect unknown_section 3 "nodes" "[run]
units = 100
[nodes a]
emu = g
$good_model"

expect empty_table 7 "compute" "[run]
units = 100
[node a]
emu = g
[model g]
class = gpu
compute = table"

expect unsorted_table 7 "compute" "[run]
units = 100
[node a]
emu = g
[model g]
class = gpu
compute = table 1024:0.1 64:0.01"

expect negative_table 7 "compute" "[run]
units = 100
[node a]
emu = g
[model g]
class = gpu
compute = table 64:-0.01 1024:0.1"

expect decreasing_table 7 "must not decrease" "[run]
units = 100
[node a]
emu = g
[model g]
class = gpu
compute = table 64:0.02 1024:0.01"

expect undefined_model 4 "nope" "[run]
units = 100
[node a]
emu = g nope
$good_model"

# a model no node uses: a warning (one library of models for several
# configs), and the run goes on
printf '%s\n' "[run]
units = 100
[node a]
emu = g
$good_model
[model h]
class = cpu
compute = poly 0 1e-3" >"$TMP/unused.ini"
out=$("$PLBSIM" "$TMP/unused.ini" 2>&1); rc=$?
check "unused_model: runs (got $rc: $out)" [ "$rc" -eq 0 ]
check "unused_model: warns, naming $TMP/unused.ini:8 (got: $out)" grep -q "warning: $TMP/unused.ini:8: \[model h\]: no node's emu list names it" <<<"$out"

expect bad_number 2 "units" "[run]
units = lots
[node a]
emu = g
$good_model"

expect bad_class 6 "class" "[run]
units = 100
[node a]
emu = g
[model g]
class = fpga
compute = poly 0 1"

expect bad_param 4 "min_block" "[run]
units = 100
[balancer]
min_block = -5
[node a]
emu = g
$good_model"

# no [run] units: a config for an app may leave W to the job, plbsim may not
printf '[node a]\nemu = g\n%s\n' "$good_model" >"$TMP/no_units.ini"
out=$("$PLBSIM" "$TMP/no_units.ini" 2>&1); rc=$?
check "no units: exit 1 (got $rc)" [ "$rc" -eq 1 ]
check "no units: names the file and key (got: $out)" grep -q "no_units.ini: \[run\] units: missing" <<<"$out"

# a missing file is an I/O error naming the path
out=$("$PLBSIM" "$TMP/absent.ini" 2>&1); rc=$?
check "missing file: exit 1" [ "$rc" -eq 1 ]
check "missing file: names it (got: $out)" grep -q "absent.ini" <<<"$out"

# not a text file, or a line past 1 MiB: refused at once, not read forever
out=$(timeout 20 "$PLBSIM" /dev/zero 2>&1); rc=$?
check "/dev/zero: exit 1 (got $rc)" [ "$rc" -eq 1 ]
check "/dev/zero: a NUL byte at line 1 (got: $out)" grep -q "/dev/zero:1: a NUL byte" <<<"$out"
{ printf '[run]\nunits = 100\n; '; head -c 1100000 /dev/zero | tr '\0' a; printf '\n'; } >"$TMP/long.ini"
out=$(timeout 20 "$PLBSIM" "$TMP/long.ini" 2>&1); rc=$?
check "a 1.1 MB line: exit 1 (got $rc)" [ "$rc" -eq 1 ]
check "a 1.1 MB line: named (got: $out)" grep -q "long.ini:3: a line longer than" <<<"$out"

# numbers: decimal, exact, times that a device could take
expect hex_units 2 "not a number" "[run]
units = 0x10
[node a]
emu = g
$good_model"
expect inexact_units 2 "not held exactly" "[run]
units = 9007199254740993
[node a]
emu = g
$good_model"
expect negative_poly 7 "negative" "[run]
units = 100
[node a]
emu = g
[model g]
class = gpu
compute = poly -0.001 1e-6"
expect huge_poly 7 "out of range" "[run]
units = 100
[node a]
emu = g
[model g]
class = gpu
compute = poly 1e19"
# a mistyped key: the nearest named, and the whole list
expect typo_key 3 "polcy: unknown key; did you mean policy? accepted in this section: units, policy" "[run]
units = 100
polcy = greedy
[node a]
emu = g
$good_model"
expect typo_param 4 "solvr: unknown key; did you mean solver? accepted in \[balancer\]: .*greedy_block$" "[run]
units = 100
[balancer]
solvr = 1
[node a]
emu = g
$good_model"
# pipelines: [op] sections and the [run] keys that go with them
pipe_head="[run]
units = 10
[node a]
emu = g
$good_model"
expect op_after_unknown 10 "'Nope' is no \[op\] section" "$pipe_head
[op A]
gpu = 1
after = Nope"
expect op_after_later 10 "'B' is not above this op" "$pipe_head
[op A]
gpu = 1
after = B
[op B]
gpu = 1"
expect op_no_time 8 "no time on any class" "$pipe_head
[op A]
tasks = 2"
expect op_bad_time 10 "\[op A\] cpu" "$pipe_head
[op A]
gpu = 1
cpu = 0"
expect op_bad_tasks 10 "\[op A\] tasks" "$pipe_head
[op A]
gpu = 1
tasks = -1"
expect op_duplicate 10 "duplicate op (first on line 8)" "$pipe_head
[op A]
gpu = 1
[op A]
gpu = 1"
expect op_bad_scheduler 3 "fcfs | heft | padas | pams" "[run]
units = 10
scheduler = random
[node a]
emu = g
$good_model
[op A]
gpu = 1"
expect op_bad_window 3 "window" "[run]
units = 10
window = 0
[node a]
emu = g
$good_model
[op A]
gpu = 1"
# a directory where the file should be: said so, by plbsim and by an app
mkdir "$TMP/adir"
out=$("$PLBSIM" "$TMP/adir" 2>&1); rc=$?
check "a directory to plbsim: exit 1 (got $rc)" [ "$rc" -eq 1 ]
check "a directory to plbsim: says so (got: $out)" grep -q "adir.*Is a directory" <<<"$out"
out=$("${BUILD:-build}/plb-null" --config "$TMP/adir" 2>&1); rc=$?
check "a directory to an app: fails (got $rc)" [ "$rc" -ne 0 ]
check "a directory to an app: says so (got: $out)" grep -q "adir: cannot read: Is a directory" <<<"$out"
finish

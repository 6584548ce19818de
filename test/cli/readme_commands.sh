# Every command block of README.md runs as written, in README order, in
# one shell (as a user pastes them: the `export` block carries over), from
# a scratch folder that sees the tree's build/, config/ and scripts/, each
# block under a time limit: blocks of commands (their first word a program
# of the tree, make, mpirun, export...), not of output or config. A block
# marked `<!-- readme-test: skip: WHY -->` is left out, saying why; so are
# the mpirun blocks in a build without MPI (make MPI=0).
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
root=$PWD
mkdir "$TMP/w"
ln -s "$root/$BUILD" "$TMP/w/build"
for d in config scripts; do ln -s "$root/$d" "$TMP/w/$d"; done
python3 - README.md "$TMP/blocks" <<'PY'
import json, re, sys
lines = open(sys.argv[1]).read().split("\n")
words = ("build/", "scripts/", "./", "make", "mpirun", "export", "cmake", "cc ", "plb")
blocks, i, fence = [], 0, False
while i < len(lines):
    l = lines[i]
    if l.lstrip().startswith("```"):
        fence = not fence
    if fence or not re.match(r"^ {4,}\S", l) or (i and lines[i - 1].strip()):
        i += 1
        continue
    ind = len(l) - len(l.lstrip())
    body = []
    while i < len(lines) and (lines[i].startswith(" " * ind) or not lines[i].strip()):
        body.append(lines[i][ind:])
        i += 1
    while body and not body[-1].strip():
        body.pop()
    # the marker: the nearest non-blank line above the block
    j = i - len(body) - 2
    while j >= 0 and not lines[j].strip():
        j -= 1
    m = re.match(r"<!-- readme-test: skip: (.*) -->", lines[j].strip()) if j >= 0 else None
    first = body[0].lstrip()
    if first.startswith(words):
        blocks.append({"line": i - len(body) + 1, "text": "\n".join(body),
                       "skip": m.group(1) if m else None})
json.dump(blocks, open(sys.argv[2], "w"))
PY
check "README.md has command blocks" test -s "$TMP/blocks"
n=$(python3 -c "import json; print(len(json.load(open('$TMP/blocks'))))" )
check "... at least 8 to run (got $n)" test "$n" -ge 8
ran=0
for k in $(seq 0 $((n - 1))); do
	python3 -c "
import json, sys
b = json.load(open('$TMP/blocks'))[$k]
open('$TMP/b.sh', 'w').write(b['text'] + '\n')
print(b['line'], b['skip'] or '')" >"$TMP/meta"
	read -r line why <"$TMP/meta"
	if [ -n "$why" ]; then
		echo "README.md:$line: skipped: $why"
		continue
	fi
	if [ "${MPI:-1}" = 0 ] && grep -q mpirun "$TMP/b.sh"; then
		echo "README.md:$line: skipped: an mpirun block in a build without MPI"
		continue
	fi
	# in this shell, so that an export carries to the next block
	t0=$(date +%s)
	(cd "$TMP/w" && timeout $((120 * SLOW)) bash -e "$TMP/b.sh") >"$TMP/out" 2>&1; rc=$?
	echo "README.md:$line: ran in $(( $(date +%s) - t0 )) s: $(head -n 1 "$TMP/b.sh" | cut -c1-60)"
	if [ $rc != 0 ]; then
		echo "FAIL: README.md:$line: exit $rc:"
		sed 's/^/    /' "$TMP/b.sh"
		tail -n 15 "$TMP/out" | sed 's/^/  | /'
		fails=$((fails + 1))
	fi
	grep -q '^export ' "$TMP/b.sh" && . "$TMP/b.sh"
	ran=$((ran + 1))
done
least=6
[ "${MPI:-1}" = 0 ] && least=3
check "ran at least $least blocks (got $ran)" test $ran -ge $least
finish

# The docs quote a balancer parameter's default as `name` (VALUE), or
# (VALUE%) for a fraction: every such quote in README.md and the reference
# docs (docs/*.md but FIGURES.md and TESTING.md, which log experiments at
# other settings) is the default plbsim --params gives, so a changed
# default cannot leave a page behind. README's table itself is
# readme_params.sh's. The checker is shown to catch a wrong quote.
. test/cli/lib.bash
"$PLBSIM" --params | awk 'NR > 1 {print $1, $2}' >"$TMP/params"
check "plbsim --params lists the parameters" [ "$(wc -l <"$TMP/params")" -gt 10 ]
quotes() {      # quotes FILE...: "file:line name value" for each `name` (VALUE[%])
	python3 - "$TMP/params" "$@" <<'PY'
import re, sys
params = dict(l.split() for l in open(sys.argv[1]))
for path in sys.argv[2:]:
    text = open(path).read()
    # a quote may be wrapped: `name` at a line's end, (value) on the next
    for m in re.finditer(r"`(\w+)`\s+\(([-+0-9.e]+)(%?)\)", text):
        if m.group(1) in params:
            n = text.count("\n", 0, m.start()) + 1
            v = float(m.group(2)) / (100 if m.group(3) else 1)
            ok = abs(v - float(params[m.group(1)])) <= 1e-9 * max(1, abs(v))
            print(f"{path}:{n} {m.group(1)} {m.group(2)}{m.group(3)} {'ok' if ok else 'WRONG: the default is ' + params[m.group(1)]}")
PY
}
docs=$(ls README.md docs/*.md | grep -v -e FIGURES.md -e TESTING.md)
# shellcheck disable=SC2086
quotes $docs >"$TMP/q"
cat "$TMP/q"
check "the docs quote defaults (got $(wc -l <"$TMP/q"))" [ "$(wc -l <"$TMP/q")" -ge 5 ]
check "every quoted default is plbsim's" eval '! grep -q WRONG "$TMP/q"'
printf 'a fit is trusted up to `max_growth` (16) times, `step_fraction`\n  (25%%)\n' >"$TMP/bad.md"
quotes "$TMP/bad.md" >"$TMP/qb"
check "a wrong quote is caught" grep -q "max_growth 16 WRONG: the default is 4" "$TMP/qb"
check "... and a right one in percent passes" grep -q "step_fraction 25% ok" "$TMP/qb"
finish

# README.md's balancer parameter table is the one plbsim --params gives
# (scripts/params-table.sh prints it): no parameter, default, range or
# meaning drifts from the code.
. test/cli/lib.bash
want=$(bash scripts/params-table.sh "$PLBSIM")
have=$(sed -n '/^| parameter | default /,/^$/p' README.md | sed '/^$/d')
check "plbsim --params has rows" [ "$(wc -l <<<"$want")" -gt 10 ]
if ! diff <(printf '%s\n' "$have") <(printf '%s\n' "$want") >"$TMP/diff"; then
	cat "$TMP/diff"
	check "README's parameter table matches plbsim --params (bash scripts/params-table.sh prints it)" false
fi
finish

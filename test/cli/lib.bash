# Shared by the test/cli scripts: a scratch directory and assertions.
set -u
PLBSIM=${PLBSIM:-build/plbsim}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
check() {       # check DESCRIPTION COMMAND...: the command must succeed
	local what=$1; shift
	if ! "$@"; then echo "FAIL: $what"; fails=$((fails + 1)); fi
}
finish() { [ "$fails" -eq 0 ]; exit $?; }

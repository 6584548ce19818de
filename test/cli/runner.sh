# test/run.sh, the runner itself, on fake cmocka programs: every kind of
# result counts as it should, a crash or a missing plan fails, a build
# with no test programs fails, a program the build should have made and
# did not fails, TEST_STRICT_SKIPS=1 fails a skip whose reason is not a
# part the build lacks, and the closing line is always there.
. test/cli/lib.bash
cat >"$TMP/fake.c" <<'C'
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
static void good(void **s) { (void)s; }
static void bad(void **s) { (void)s; if (getenv("BAD")) fail_msg("bad"); }
static void skipped(void **s)
{
	(void)s;
	if (!getenv("MUTE"))
		printf("skipped: %s\n", getenv("WHY") ? getenv("WHY") : "no such device here");
	skip();
}
static void crash(void **s) { (void)s; if (getenv("CRASH")) abort(); }
int main(void)
{
	if (getenv("NOPLAN"))
		return 0;
	const struct CMUnitTest t[] = {cmocka_unit_test(good), cmocka_unit_test(bad),
				       cmocka_unit_test(skipped), cmocka_unit_test(crash),
				       cmocka_unit_test(good)};
	return cmocka_run_group_tests(t, NULL, NULL);
}
C
mkdir -p "$TMP/b/test" "$TMP/cli" "$TMP/empty/test"
check "fake test compiles" cc -o "$TMP/b/test/test_fake" "$TMP/fake.c" -lcmocka
printf 'exit 0\n' >"$TMP/cli/pass.sh"
printf 'echo not here; exit 77\n' >"$TMP/cli/skip.sh"

run() {         # run ENV...: the runner on the fakes; output in $TMP/r, status in $rc
	env -u TEST_STRICT_SKIPS -u TEST_PROGRAMS -u MPI -u HAVE_CUDA "$@" BUILD="$TMP/b" TEST_CLI="$TMP/cli" bash test/run.sh >"$TMP/r" 2>&1; rc=$?
}
last() { tail -n 1 "$TMP/r"; }

# expect WHAT RC LAST: the last run's exit status and closing line
expect() { check "$1: exit $2 (got $rc)" [ "$rc" -eq "$2" ]; check "$1: '$3' (got '$(last)')" [ "$(last)" = "$3" ]; }

run
expect "all good" 0 "5 passed, 0 failed, 2 skipped"
check "a skip's reason is shown" grep -q "skipped: no such device here" "$TMP/r"
run BAD=1
expect "a failure" 1 "4 passed, 1 failed, 2 skipped"
check "a failure: names the program" grep -q "^failed: test_fake" "$TMP/r"
run CRASH=1
expect "a crash: missing results fail" 1 "3 passed, 2 failed, 2 skipped"
check "a crash: says so" grep -q "test_fake: .*(3 of 5 results" "$TMP/r"
run NOPLAN=1
expect "no plan" 1 "1 passed, 1 failed, 1 skipped"
printf 'exit 3\n' >"$TMP/cli/broken.sh"
run
expect "a failing script" 1 "5 passed, 1 failed, 2 skipped"
rm "$TMP/cli/broken.sh"

run TEST_PROGRAMS="test_fake test_gone"
expect "a program not built" 1 "5 passed, 1 failed, 2 skipped"
check "a program not built: named" grep -q "test_gone: FAILED (the build should have made" "$TMP/r"

# strict skips: only for a part the build lacks, and saying so
run TEST_STRICT_SKIPS=1
expect "strict: a skip for no reason the runner knows" 1 "5 passed, 2 failed, 0 skipped"
printf 'echo no MPI in this build; exit 77\n' >"$TMP/cli/skip.sh"
run TEST_STRICT_SKIPS=1 WHY="no CUDA in this build" MPI=0 HAVE_CUDA=0
expect "strict: no MPI, no CUDA, where so" 0 "5 passed, 0 failed, 2 skipped"
run TEST_STRICT_SKIPS=1 WHY="no CUDA in this build" MPI=1 HAVE_CUDA=1
expect "strict: no MPI, no CUDA, where the build has them" 1 "5 passed, 2 failed, 0 skipped"
check "strict: says why" grep -q "strict skips: not a part this build lacks: no CUDA in this build" "$TMP/r"
run TEST_STRICT_SKIPS=1 MUTE=1 MPI=0
expect "strict: a skip without a reason" 1 "5 passed, 1 failed, 1 skipped"
run MUTE=1 WHY=anything MPI=1
expect "not strict: any skip" 0 "5 passed, 0 failed, 2 skipped"

env -u TEST_STRICT_SKIPS -u TEST_PROGRAMS BUILD="$TMP/empty" TEST_CLI="$TMP/cli" bash test/run.sh >"$TMP/r" 2>&1; rc=$?
expect "nothing built" 1 "1 passed, 1 failed, 1 skipped"
check "nothing built: says so" grep -q "no test programs in $TMP/empty/test" "$TMP/r"
finish

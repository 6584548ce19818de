#!/usr/bin/env bash
# make fuzz: the config and scenario parser under libFuzzer (Debian's clang)
# with AddressSanitizer and UBSan, from a corpus of config/ and test/data/.
#
#   scripts/fuzz.sh [SECONDS]     (default 60; FUZZ_RUNS=N: N inputs instead)
#
# Builds $BUILD/fuzz/config_fuzz from the parser's sources, runs it, and
# prints libFuzzer's count of executions. Exit status: 0 when nothing was
# found; 1 with the crashing input saved in $BUILD/fuzz/ (libFuzzer says
# where); 2 when clang cannot build a fuzzer here.
set -uo pipefail
BUILD=${BUILD:-build}
secs=${1:-60}
out=$BUILD/fuzz
mkdir -p "$out/corpus"
src=(test/fuzz/config_fuzz.c runtime/config/*.c balancer/*.c balancer/policies/*.c balancer/base/*.c)
if ! clang -O1 -g -std=c11 -D_POSIX_C_SOURCE=200809L -Iinclude -I. \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	"${src[@]}" -linih -lcjson -lnlopt -llapacke -llapack -lblas -lm -o "$out/config_fuzz" 2>"$out/build.log"; then
	echo "fuzz: clang cannot build the fuzzer here:"; tail -5 "$out/build.log"
	exit 2
fi
cp config/*.ini config/sim/*.ini test/data/*.ini "$out/corpus/" 2>/dev/null
limit=(-max_total_time="$secs")
[ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
cd "$out" || exit 2
ASAN_OPTIONS=detect_leaks=1 ./config_fuzz "${limit[@]}" -max_len=4096 -timeout=10 \
	-print_final_stats=1 corpus >run.log 2>&1
rc=$?
grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" run.log
if [ $rc -ne 0 ]; then
	tail -30 run.log
	exit 1
fi
echo "fuzz: nothing found ($(sed -n 's/^stat::number_of_executed_units: *//p' run.log) inputs)"

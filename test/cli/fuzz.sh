# A short fuzz run of the config and scenario parser (make fuzz runs it
# for a minute): 100,000 inputs from config/'s files, each loaded or refused
# with a message naming the file; no crash, leak or sanitizer report.
. "$(dirname "$0")/lib.bash"
B=${BUILD:-build}
check "100,000 fuzzed config files" env BUILD="$B" FUZZ_RUNS=100000 bash scripts/fuzz.sh
finish

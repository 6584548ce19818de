# The fault-injection harness (scripts/fault-runs.py; make faults runs 100):
# ten runs of plb-mm --verify under mpirun --enable-recovery, each with a
# worker killed or stopped, an emulated PU dying, or nothing, at a drawn
# time: every run verified, no unit lost or done twice, none hung.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
need_mpi
check "ten fault runs" python3 scripts/fault-runs.py --runs 10 --build "$BUILD"
finish

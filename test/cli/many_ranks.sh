# 64 worker ranks on this machine (mpirun -np 65, oversubscribed): the
# master serves them all, every unit is done exactly once, every rank's
# PU gets work, none is taken for lost while 65 processes share the cores.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
need_mpi
{
	printf '[run]\nunits = 1500000\npipeline = 2\n'
	kinds=(c g)
	for i in $(seq 0 63); do printf '[node n%d]\nemu = %s\n' "$i" "${kinds[i % 2]}"; done
	printf '[model c]\nclass = cpu\ncompute = poly 0.001 4e-5\nnoise = 0.03\n'
	printf '[model g]\nclass = gpu\ncompute = poly 0.003 1e-5\ntransfer = poly 1e-4 2e-7\n'
} >"$TMP/w64.ini"
mpi_run 65 "$BUILD/plb-null" --config "$TMP/w64.ini"
check "64 ranks: exit 0" [ $? = 0 ]
check "64 ranks: every unit done once" grep -q "1500000 of 1500000 done, coverage ok" "$TMP/out"
check "64 ranks: no rank lost" eval '! grep -q "ranks lost" "$TMP/out"'
n=$(grep -cE "^  n[0-9]+\.[cg]#1 +[0-9.]+% +[1-9][0-9]*$" "$TMP/out")
check "64 ranks: 64 PUs did work (got $n)" [ "$n" = 64 ]
finish

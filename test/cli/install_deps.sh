# scripts/install-deps.sh counts a library as there when the compiler finds
# its header, even where dpkg does not list it (a devkit, an environment
# module), and names what is missing when it is not found at all; a
# reference BLAS is worth a warning where it cannot install OpenBLAS.
. test/cli/lib.bash
S=scripts/install-deps.sh
mkdir -p "$TMP/bin"
printf '#!/bin/sh\nexit 1\n' > "$TMP/bin/dpkg-query"   # dpkg knows no package
chmod +x "$TMP/bin/dpkg-query"

# the BLAS the loader finds (ldconfig -p): an optimised one, by its symbols
blas() {        # blas SYMBOL: a libblas.so.3 that exports SYMBOL, and an ldconfig that finds it
	printf 'void %s(void) {}\nvoid dgemm_(void) {}\n' "$1" >"$TMP/blas.c"
	cc -shared -fPIC -o "$TMP/libblas.so.3" "$TMP/blas.c"
	printf '#!/bin/sh\necho "\tlibblas.so.3 (libc6,x86-64) => %s"\n' "$TMP/libblas.so.3" >"$TMP/bin/ldconfig"
	chmod +x "$TMP/bin/ldconfig"
}
blas openblas_set_num_threads
out=$(PATH="$TMP/bin:$PATH" PLB_NO_INSTALL=1 MPI=0 bash $S 2>&1); rc=$?
check "headers found by the compiler count as installed (rc $rc: $out)" [ $rc = 0 -a -z "$out" ]

out=$(PATH="$TMP/bin:$PATH" PLB_NO_INSTALL=1 MPI=0 CC="cc -nostdinc" bash $S 2>&1); rc=$?
check "headers not found: exit 1 (got $rc)" [ $rc = 1 ]
check "names the missing packages" grep -q "libcmocka-dev" <<<"$out"
check "says how to install them" grep -q "apt-get install" <<<"$out"
check "does not name what the compiler found (cc, make)" bash -c "! grep -q build-essential <<<'$out'"

blas dgemv_     # Netlib's: nothing but BLAS
out=$(PATH="$TMP/bin:$PATH" PLB_NO_INSTALL=1 MPI=0 bash $S 2>&1); rc=$?
check "a reference BLAS: still exit 0 (got $rc)" [ $rc = 0 ]
check "a reference BLAS: a warning that names it and says what to install" \
	grep -q "warning: $TMP/libblas.so.3 is a reference BLAS: the CPU kernels will be 10-30x slower; install libopenblas-dev" <<<"$out"
finish

# make install into a scratch prefix, then the task API example in README.md
# built from outside the tree as the README says (pkg-config, warnings as
# errors), against the shared library and the static one, and run over
# every unit: under mpirun, or in one process in a build without MPI; the
# same with CMake (find_package(plb)); the example's strict options.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
P=$TMP/prefix
# the build's own settings, so that make finds everything up to date
check "make install PREFIX=$P" make -s --no-print-directory BUILD="$BUILD" MPI="${MPI:-1}" \
	CUDA="${HAVE_CUDA:-0}" SANITIZE="${SANITIZE:-}" PREFIX="$P" install >"$TMP/install.out"
abi=$(sed -n 's/^#define PLB_ABI \([0-9]*\)$/\1/p' include/plb.h)
minor=$(sed -n 's/^#define PLB_VERSION_MINOR \([0-9]*\)$/\1/p' include/plb.h)
check "plb.h says its ABI (got '$abi')" [ -n "$abi" ]
for f in lib/libplb.so "lib/libplb.so.$abi" lib/libplb.a include/plb.h include/plb_errors.h \
	lib/pkgconfig/plb.pc lib/cmake/plb/plbConfig.cmake lib/cmake/plb/plbConfigVersion.cmake bin/plbsim bin/plb-plot bin/plb-mm bin/plb-null bin/plb-bs bin/plb-kmeans \
	bin/plb-grn share/plb/config/demo.ini share/doc/plb/README.md share/doc/plb/docs/API.md \
	share/doc/plb/LICENSE share/doc/plb/CHANGELOG.md; do
	check "installed: $f" test -e "$P/$f"
done
# the installed README's links into docs/ lead somewhere
for l in $(grep -o '](docs/[A-Za-z_]*\.md)' "$P/share/doc/plb/README.md" | sed 's/^](\(.*\))$/\1/' | sort -u); do
	check "installed README's link $l" test -e "$P/share/doc/plb/$l"
done
check "installed plbsim runs" "$P/bin/plbsim" --help >/dev/null
check "installed plb-null runs" "$P/bin/plb-null" --help >/dev/null

# What an app sees: the task API and nothing else.
exported=$(nm -D --defined-only "$P/lib/libplb.so" | awk '{print $3}')
check "libplb.so exports plb_ functions (got: $(wc -w <<<"$exported"))" grep -q '^plb_run$' <<<"$exported"
other=$(grep -v '^plb_[a-z]' <<<"$exported")
# a build for make coverage (gcc --coverage) carries libgcov, whose own
# symbols it exports too: those are left out
if grep -q '^__gcov_' <<<"$exported"; then
	gcov=$(nm -g --defined-only "$(cc -print-file-name=libgcov.a)" | awk 'NF == 3 {print $3}')
	other=$(grep -vxF -f <(printf '%s\n' $gcov) <<<"$other")
fi
other=$(echo $other)    # one line
check "libplb.so exports nothing else (got: $other)" [ -z "$other" ]
check "libplb.so needs no CUDA runtime" eval '! readelf -d "$P/lib/libplb.so" | grep NEEDED | grep -q cudart'
check "libplb.so's soname is its ABI" eval 'readelf -d "$P/lib/libplb.so" | grep SONAME | grep -q "libplb.so.$abi\]"'

export PKG_CONFIG_PATH=$P/lib/pkgconfig
cflags=$(pkg-config --cflags plb | xargs)
check "pkg-config: public compile flags only (got '$cflags')" [ "$cflags" = "-I$P/include" ]

python3 - "$TMP/square.c" <<'PY'
import sys
s = open("README.md").read()
a = s.index("```c\n") + 5
open(sys.argv[1], "w").write(s[a:s.index("```", a)])
PY
cd "$TMP" || exit 1     # from outside the tree
san=${SANITIZE:+-fsanitize=$SANITIZE}
# shellcheck disable=SC2046,SC2086
check "README example builds with pkg-config" cc -Werror $san -o square square.c $(pkg-config --cflags --libs plb)
check "README example needs no CUDA runtime" eval '! ldd square | grep -q cudart'
static_libs=$(pkg-config --static --libs plb | sed "s| -lplb | $P/lib/libplb.a |; s|^-lplb |$P/lib/libplb.a |")
# shellcheck disable=SC2086
check "README example builds against libplb.a" cc -Werror $san -o square-static square.c -I"$P/include" $static_libs
check "libplb.a linked in: no libplb.so needed" eval '! ldd square-static | grep -q libplb'

printf '[run]\nunits = 1\n[node a]\ncpu = 1\nemu = e\n[model e]\nclass = gpu\ncompute = poly 0.001 1e-8\n' >sq.ini
export LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
launch=()
if have_mpirun; then
	launch=(mpirun --oversubscribe --bind-to none -x LD_LIBRARY_PATH -np 2)
elif [ "${MPI:-1}" != 0 ]; then
	finish
fi
for prog in square square-static; do
	# stdout and stderr apart (mpirun forwards them in 1 KiB chunks:
	# merged, a line of one can be cut by the other), then together
	check "$prog runs" timeout 120 "${launch[@]}" "./$prog" --config sq.ini >out 2>err
	cat err >>out
	check "$prog: every unit done" grep -q "1048576 of 1048576 done, coverage ok" out
done
# the same example with CMake: find_package(plb), plb::plb and
# plb::plb_static
if command -v cmake >/dev/null; then
	mkdir -p cm && cp square.c cm/
	cat >cm/CMakeLists.txt <<CM
cmake_minimum_required(VERSION 3.13)
project(square C)
find_package(plb 0.$minor REQUIRED)
add_executable(square square.c)
target_link_libraries(square PRIVATE plb::plb)
add_executable(square-static square.c)
target_link_libraries(square-static PRIVATE plb::plb_static)
CM
	check "CMake: find_package(plb) configures" cmake -S cm -B cm/build -DCMAKE_PREFIX_PATH="$P" \
		-DCMAKE_C_FLAGS="-Werror $san" >cm.log 2>&1
	check "CMake: the example builds, shared and static" cmake --build cm/build >>cm.log 2>&1
	check "CMake: shared: links libplb.so" eval 'ldd cm/build/square | grep -q "libplb.so.$abi"'
	check "CMake: static: no libplb.so needed" eval '! ldd cm/build/square-static | grep -q libplb'
	check "CMake: it runs" timeout 120 "${launch[@]}" cm/build/square-static --config sq.ini >out 2>&1
	check "CMake: every unit done" grep -q "1048576 of 1048576 done, coverage ok" out
	cat >cm/CMakeLists.txt <<CM
cmake_minimum_required(VERSION 3.13)
project(square C)
find_package(plb 0.$((minor - 1)) REQUIRED)
CM
	check "CMake: another minor version is refused (before 1.0 it may break)" \
		eval '! cmake -S cm -B cm/build2 -DCMAKE_PREFIX_PATH="$P" >cm2.log 2>&1'
	check "... saying so" grep -q "plbConfig.cmake, version: 0.$minor" cm2.log
	[ $fails = 0 ] || cat cm.log
else
	echo "FAIL: no cmake on PATH (make installs it: scripts/install-deps.sh)"
	fails=$((fails + 1))
fi
# the example parses strictly: a typo is refused with the nearest option,
# --help prints plb's options and exits 0
./square --config sq.ini --polcy greedy >out 2>&1; rc=$?
check "square --polcy: exit 2 (got $rc)" test $rc = 2
check "... did you mean --policy" grep -q -- "--polcy: unknown option; did you mean --policy?" out
./square --help >out 2>&1; rc=$?
check "square --help: exit 0 (got $rc)" test $rc = 0
check "... plb's options" grep -q -- "--config FILE" out
finish

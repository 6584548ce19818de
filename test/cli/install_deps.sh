# scripts/install-deps.sh counts a library as there when the compiler finds
# its header, even where dpkg does not list it (a devkit, an environment
# module), and names what is missing when it is not found at all.
. test/cli/lib.bash
S=scripts/install-deps.sh
mkdir -p "$TMP/bin"
printf '#!/bin/sh\nexit 1\n' > "$TMP/bin/dpkg-query"   # dpkg knows no package
chmod +x "$TMP/bin/dpkg-query"

out=$(PATH="$TMP/bin:$PATH" PLB_NO_INSTALL=1 MPI=0 bash $S 2>&1); rc=$?
check "headers found by the compiler count as installed (rc $rc: $out)" [ $rc = 0 -a -z "$out" ]

out=$(PATH="$TMP/bin:$PATH" PLB_NO_INSTALL=1 MPI=0 CC="cc -nostdinc" bash $S 2>&1); rc=$?
check "headers not found: exit 1 (got $rc)" [ $rc = 1 ]
check "names the missing packages" grep -q "libcmocka-dev" <<<"$out"
check "says how to install them" grep -q "apt-get install" <<<"$out"
check "does not name what the compiler found (cc, make)" bash -c "! grep -q build-essential <<<'$out'"
finish

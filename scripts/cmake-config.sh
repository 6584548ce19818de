#!/usr/bin/env bash
# Writes plb's CMake package (make install runs it): DIR/plbConfig.cmake,
# which find_package(plb) reads and which defines plb::plb (libplb.so) and
# plb::plb_static (libplb.a with the libraries it needs), and
# DIR/plbConfigVersion.cmake (before 1.0 only the same minor version is
# compatible: a minor version may break the API; CHANGELOG.md).
#   cmake-config.sh DIR VERSION ABI LIBDIR INCLUDEDIR PRIVATE-LINK-FLAGS...
set -euo pipefail
dir=$1 version=$2 abi=$3 libdir=$4 includedir=$5
shift 5
minor=$(cut -d. -f2 <<<"$version")
libs=""
for f in "$@"; do libs+="${libs:+;}$f"; done
mkdir -p "$dir"
cat >"$dir/plbConfig.cmake" <<CM
# plb $version's CMake package, written by make install:
#   find_package(plb $version REQUIRED)
#   target_link_libraries(app PRIVATE plb::plb)          # libplb.so
#   target_link_libraries(app PRIVATE plb::plb_static)   # libplb.a
if(TARGET plb::plb)
  return()
endif()
set(plb_VERSION $version)
set(plb_INCLUDE_DIRS "$includedir")
add_library(plb::plb SHARED IMPORTED)
set_target_properties(plb::plb PROPERTIES
  IMPORTED_LOCATION "$libdir/libplb.so.$abi"
  IMPORTED_SONAME "libplb.so.$abi"
  INTERFACE_INCLUDE_DIRECTORIES "$includedir")
add_library(plb::plb_static STATIC IMPORTED)
set_target_properties(plb::plb_static PROPERTIES
  IMPORTED_LOCATION "$libdir/libplb.a"
  INTERFACE_INCLUDE_DIRECTORIES "$includedir"
  INTERFACE_LINK_LIBRARIES "$libs")
set(plb_FOUND TRUE)
CM
cat >"$dir/plbConfigVersion.cmake" <<CM
set(PACKAGE_VERSION $version)
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif(PACKAGE_FIND_VERSION_MAJOR EQUAL 0 AND NOT PACKAGE_FIND_VERSION_MINOR EQUAL $minor)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
CM

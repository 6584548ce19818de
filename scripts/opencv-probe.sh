#!/bin/sh
# Finds what plb-nuclei's OpenCV operations build with, for the Makefile.
#
#   scripts/opencv-probe.sh CXX
#
# Prints "ok" when OpenCV's core and imgproc headers (opencv4/opencv2/...)
# and libraries are there and a C++ program that uses them compiles and
# links with CXX (CPATH and LIBRARY_PATH count); otherwise "none: REASON".
cxx=${1:-c++}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

if ! command -v "$cxx" >/dev/null 2>&1; then
	echo "none: no C++ compiler ($cxx; Debian: g++)"
	exit 0
fi
cat > "$tmp/probe.cpp" <<'CPP'
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
int main()
{
	cv::Mat a = cv::Mat::zeros(8, 8, CV_8U), l;
	return cv::connectedComponents(a, l, 8, CV_32S) != 1;
}
CPP
if ! $cxx -I/usr/include/opencv4 "$tmp/probe.cpp" -o "$tmp/probe" -lopencv_imgproc -lopencv_core 2>"$tmp/err"; then
	echo "none: a program using OpenCV's imgproc does not build with $cxx (Debian: libopencv-imgproc-dev): $(head -n 1 "$tmp/err")"
	exit 0
fi
echo ok

#!/usr/bin/env bash
# build_failed.sh — one failure in the summary of make test, asan or valgrind when make
# could not build every program (the Makefile adds this script to the run then): a
# program left by an earlier build would otherwise run, and pass, in place of the one
# that did not build.
echo "the build failed: the compiler's errors are above the test results"
exit 1

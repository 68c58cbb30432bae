#!/bin/sh
# valgrind.sh -- stands in for build/tokvec in the end-to-end tests under
# `make valgrind`: runs $TOKVEC_REAL_BINARY under memcheck. Any memory error
# or definite leak makes the process exit 99, which every test that checks
# the server's exit status (clean SIGTERM -> 0) reports as a failure; the
# full report goes to $VALGRIND_LOG_DIR/tokvec.<pid>.log.
# --fair-sched=yes: valgrind runs one thread at a time, and its default lock
# lets a busy worker keep it -- the MHD thread then waited ~6 s for its turn
# while a slow job ran, so the tests that watch a job sit in the queue never
# saw it there (a /metrics read spanned the whole burst).
: "${TOKVEC_REAL_BINARY:?set TOKVEC_REAL_BINARY to the tokvec binary}"
: "${VALGRIND_LOG_DIR:=build/valgrind}"
mkdir -p "$VALGRIND_LOG_DIR"
# Not settings: the server would warn about TOKVEC_* names it does not
# know, and the tests that count its stderr lines would see two more.
bin=$TOKVEC_REAL_BINARY
unset TOKVEC_REAL_BINARY TOKVEC_TEST_TIME_SCALE
exec valgrind --tool=memcheck --fair-sched=yes --error-exitcode=99 --leak-check=full \
  --errors-for-leak-kinds=definite --show-leak-kinds=definite \
  --track-fds=no --log-file="$VALGRIND_LOG_DIR/tokvec.%p.log" \
  "$bin" "$@"

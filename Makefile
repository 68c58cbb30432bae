# tokvec -- build, test, run. Settings first; `make help` lists the targets.
#
# The core library (core/, headers in include/) is built into libtokvec.a;
# the one binary, build/tokvec, adds server/ (CLI, HTTP, pool, config).
# Every tests/test_<module>.c is its own cmocka program.

CC        ?= cc
BUILD     ?= build
OPT       ?= -O2
# Exactness of the torch-compatible init depends on these: never fuse what
# the spec does not fuse, never -ffast-math.
FPFLAGS   := -ffp-contract=off -fno-fast-math
WARN      := -Wall -Wextra $(if $(CI),-Werror)
CFLAGS    ?= $(OPT) -g
CFLAGS    += -std=c11 -D_GNU_SOURCE -pthread $(FPFLAGS) $(WARN) -MMD -MP \
             -Iinclude -Iserver $(SANFLAGS)
LDFLAGS   += -pthread $(SANFLAGS)
LIBS      := -lmicrohttpd -ljansson -lnettle -lm
TEST_LIBS := -lcmocka

# Debian packages: build, tests (numpy for the end-to-end checks, promtool
# from prometheus to check /metrics and deploy/prometheus/: 19 MB, ~12 s;
# on a machine with systemd the package also starts a Prometheus on :9090;
# python3-torch, which loads the "torch" encoding and is the reference of
# the torch-exact checks: 148 MB download, 608 MB installed, ~1 min once),
# sanitizers.
DEB_BUILD := gcc libc6-dev make pkg-config libmicrohttpd-dev libjansson-dev \
             nettle-dev
DEB_TEST  := libcmocka-dev python3 python3-numpy nodejs prometheus \
             python3-torch
SAN       := -fsanitize=address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=undefined

PYTHON    ?= /usr/bin/python3

DEFAULT_TABLE := data/gpt2-256.safetensors
GOLDEN        := tests/golden/torch_init

CORE_SRC   := $(sort $(wildcard core/*.c))
SERVER_SRC := $(sort $(wildcard server/*.c))
TEST_SRC   := $(sort $(wildcard tests/test_*.c))
CORE_OBJ   := $(CORE_SRC:%.c=$(BUILD)/%.o)
# docs/openapi.json is compiled in, served at GET /openapi.json.
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/openapi.o
# Everything of the server but main(), so tests can link it.
SERVER_LIB := $(filter-out $(BUILD)/server/main.o,$(SERVER_OBJ))
TESTS      := $(TEST_SRC:tests/%.c=$(BUILD)/%)
TOOLS      := $(patsubst %.c,$(BUILD)/%,$(wildcard tools/*.c bench/*.c))

.PHONY: all deps test-deps test unit e2e sanitize sanitize-test run \
        float-random valgrind \
        check-floats clean help
.DEFAULT_GOAL := all

all: deps $(BUILD)/tokvec

help:
	@echo "make [all]        build $(BUILD)/tokvec (installs missing deps as root)"
	@echo "make run          build, create $(DEFAULT_TABLE), serve it"
	@echo "make test         unit + end-to-end tests, then again under ASan+UBSan"
	@echo "make sanitize     ASan+UBSan build in build-san/"
	@echo "make bench        benchmarks (not part of test)"
	@echo "make valgrind     end-to-end suite with the server under memcheck"
	@echo "make check-floats all 2^32 float32 patterns through the formatter and narrowing"
	@echo "make clean"

deps:
	@tools/deps.sh $(DEB_BUILD)

test-deps: deps
	@tools/deps.sh $(DEB_TEST)

$(BUILD)/libtokvec.a: $(CORE_OBJ)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

$(BUILD)/tokvec: $(SERVER_OBJ) $(BUILD)/libtokvec.a
	$(CC) $(LDFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LIBS)

$(BUILD)/gen/openapi.c: docs/openapi.json
	@mkdir -p $(@D)
	@{ echo '/* Generated from docs/openapi.json by the Makefile. */'; \
	   echo 'const char tv_openapi_json[] = {'; \
	   od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	   echo '0};'; \
	   echo 'const unsigned long tv_openapi_len = sizeof tv_openapi_json - 1;'; \
	 } > $@

$(BUILD)/gen/openapi.o: $(BUILD)/gen/openapi.c
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

# A test named after a core module links the core alone; others (server
# modules) link the server objects too.
CORE_TESTS   := $(filter $(patsubst core/%.c,$(BUILD)/test_%,$(CORE_SRC)),$(TESTS))
SERVER_TESTS := $(filter-out $(CORE_TESTS),$(TESTS))
$(CORE_TESTS): $(BUILD)/test_%: tests/test_%.c $(BUILD)/libtokvec.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LIBS) $(TEST_LIBS)
$(SERVER_TESTS): $(BUILD)/test_%: tests/test_%.c $(SERVER_LIB) $(BUILD)/libtokvec.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LIBS) $(TEST_LIBS)

$(BUILD)/tools/%: tools/%.c $(SERVER_LIB) $(BUILD)/libtokvec.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LIBS)
$(BUILD)/bench/%: bench/%.c $(SERVER_LIB) $(BUILD)/libtokvec.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LIBS)

# --- tests -----------------------------------------------------------------
# Unit tests run from the top directory (they read $(GOLDEN)).
unit: test-deps $(TESTS)
	@set -e; for t in $(TESTS); do echo "== $$t"; $$t; done

# End-to-end: the real binary on a loopback port (tests/e2e/);
# test_torchsave.py runs $(BUILD)/tools/torchsave.
E2E_TOOLS := $(BUILD)/tools/torchsave
e2e: test-deps $(BUILD)/tokvec $(E2E_TOOLS)
	@set -e; for t in $(sort $(wildcard tests/e2e/test_*.py)); do \
	  echo "== $$t"; $(PYTHON) $$t --binary $(BUILD)/tokvec; done

# The end-to-end suite with the server under valgrind memcheck (slow: ~20x;
# deadlines scaled). Fails on any memcheck error or definite leak in any
# server process (but the one the SIGBUS test kills mid-request on purpose);
# reports are in $(BUILD)/valgrind/. The hostile-client
# suite is left to ASan (make sanitize-test): 1100 connections and 16 MiB
# replies under memcheck take far longer than they prove.
VALGRIND_E2E := $(filter-out tests/e2e/test_hostile.py,$(sort $(wildcard tests/e2e/test_*.py)))
valgrind: test-deps $(BUILD)/tokvec $(E2E_TOOLS)
	@tools/deps.sh valgrind
	@rm -rf $(BUILD)/valgrind; set -e; for t in $(VALGRIND_E2E); do \
	  echo "== valgrind $$t"; \
	  TOKVEC_REAL_BINARY=$(BUILD)/tokvec VALGRIND_LOG_DIR=$(BUILD)/valgrind \
	  TOKVEC_TEST_TIME_SCALE=10 \
	  $(PYTHON) $$t --binary tests/e2e/valgrind.sh; done
	@n=$$(ls $(BUILD)/valgrind | wc -l); \
	 bus=$$(grep -l "default action of signal 7 (SIGBUS)" $(BUILD)/valgrind/*.log || true); \
	 bad=$$(grep -L "ERROR SUMMARY: 0 errors" $(BUILD)/valgrind/*.log | grep -vxF "$$bus" || true); \
	 [ -z "$$bus" ] || echo "valgrind: $$(echo "$$bus" | wc -l) process(es) killed by the SIGBUS test on purpose (leaks of the request it died in not counted)"; \
	 if [ -n "$$bad" ]; then for f in $$bad; do echo "== $$f"; \
	   grep -A30 -m1 "^==[0-9]*== [A-Z]" $$f | head -60; done; \
	   echo "valgrind: errors in $$(echo "$$bad" | wc -l) of $$n processes"; exit 1; fi; \
	 echo "valgrind: $$n tokvec processes, 0 errors, no definite leaks"

# A randomized check of the float formatter: 10 million bit patterns round
# trip exactly and are the shortest (all 2^32: make check-floats); and all
# 2^32 patterns through the bulk float16/bfloat16 narrowing (~15 s).
float-random: $(BUILD)/tools/check_floats
	$(BUILD)/tools/check_floats --random 10000000
	$(BUILD)/tools/check_floats --narrow

test: unit e2e float-random sanitize-test

sanitize: test-deps
	@$(MAKE) --no-print-directory BUILD=build-san OPT=-O1 SANFLAGS="$(SAN)" \
	  build-san/tokvec $(TESTS:$(BUILD)/%=build-san/%)

sanitize-test: sanitize
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	 $(MAKE) --no-print-directory BUILD=build-san SANFLAGS="$(SAN)" OPT=-O1 \
	  unit e2e

# --- running ---------------------------------------------------------------
$(DEFAULT_TABLE): | $(BUILD)/tokvec
	@mkdir -p $(@D)
	$(BUILD)/tokvec init --vocab 50257 --dim 256 --context 1024 \
	  --positional learned --seed 123 -o $@

run: all $(DEFAULT_TABLE)
	$(BUILD)/tokvec serve --table $(DEFAULT_TABLE)

# --- benchmarks and long checks (not part of test) -------------------------
check-floats: $(BUILD)/tools/check_floats
	$(BUILD)/tools/check_floats --all
	$(BUILD)/tools/check_floats --narrow

clean:
	rm -rf build build-san

# Container/deployment and benchmark targets live beside their files.
-include deploy/deploy.mk bench/bench.mk tests/fuzz/fuzz.mk

-include $(CORE_OBJ:.o=.d) $(SERVER_OBJ:.o=.d) $(TESTS:=.d)

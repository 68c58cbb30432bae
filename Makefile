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
# The source folders, one per layer (docs/architecture.md): a header is
# found by its name from any of them.
CORE_DIRS   := core core/table core/tokenizer
SERVER_DIRS := server/http server/routes server/runtime server/cli
SRC_INC     := -Iinclude $(addprefix -I,$(CORE_DIRS) $(SERVER_DIRS))
CFLAGS    += -std=c11 -D_GNU_SOURCE -pthread $(FPFLAGS) $(WARN) -MMD -MP \
             $(SRC_INC) -I$(BUILD)/gen $(SANFLAGS)
LDFLAGS   += -pthread $(SANFLAGS)
LIBS      := -lmicrohttpd -ljansson -luv -lnettle -lm
TEST_LIBS := -lcmocka

# Debian packages: build, tests (numpy for the end-to-end checks, promtool
# from prometheus to check /metrics and deploy/prometheus/: 19 MB, ~12 s;
# on a machine with systemd the package also starts a Prometheus on :9090;
# python3-torch, which loads the "torch" encoding and is the reference of
# the torch-exact checks: 148 MB download, 608 MB installed, ~1 min once),
# sanitizers.
DEB_BUILD := gcc libc6-dev make pkg-config libmicrohttpd-dev libjansson-dev \
             libuv1-dev \
             nettle-dev unicode-data
DEB_TEST  := libcmocka-dev python3 python3-numpy python3-httpx python3-yaml \
             nodejs curl \
             prometheus python3-torch
SAN       := -fsanitize=address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=undefined

PYTHON    ?= /usr/bin/python3

# Build lines are short ("CC core/table/table.c"); V=1 prints whole commands,
# QUIET=1 (what make test sets) none. Warnings and errors always show.
ifeq ($(V),1)
Q   :=
SAY := @:
else
Q   := @
SAY := $(if $(QUIET),@:,@printf '  %-4s %s\n')
endif

# Test suites run through tests/run.py: one line each, the whole output in
# $(BUILD)/test-logs/, a failing suite's output printed (passing lines
# left out), then "N passed, N failed"; make test sums every run at the end.
# TEST_JOBS suites at a time (the unit programs and the e2e suites use free
# ports and their own temporary directories); TEST_JOBS=1 runs one by one.
SUMMARY   := build/test-summary.txt
TEST_JOBS ?= 3
RUN_TESTS  = $(PYTHON) tests/run.py --summary $(SUMMARY) \
             --logs $(BUILD)/test-logs -j $(TEST_JOBS) --title

DEFAULT_TABLE := data/gpt2-256.safetensors
# make run TABLE=FILE PORT=N HOST=ADDR: what to serve, where (empty: the
# server's own defaults, i.e. its TOKVEC_* variables, then 127.0.0.1:8080).
TABLE         := $(or $(TABLE),$(DEFAULT_TABLE))
PORT          ?=
HOST          ?=
# OpenAI's GPT-2 tokenizer (encoder.json + vocab.bpe), fetched by make data.
TOKENIZER_DIR := data/gpt2
# The data directory compiled into tokvec (server/cli/datadir.c): every
# command's default tokenizer is DATA_DIR/gpt2 when it is there (after
# --tokenizer and TOKVEC_TOKENIZER). This checkout's data/ (make data
# fills it) for a local build; the image builds with DATA_DIR=/data.
DATA_DIR      ?= $(CURDIR)/data
# make run's tokenizer: GPT-2's beside the default table (another TABLE
# has its own vocabulary: give TOKENIZER=FILE); TOKENIZER= for ids only
TOKENIZER ?= $(if $(filter $(DEFAULT_TABLE),$(TABLE)),$(TOKENIZER_DIR))
# npm and node: Debian's packages where the commands are missing.
NPM_DEPS       = command -v node >/dev/null || tools/deps.sh nodejs; \
                 command -v npm >/dev/null || tools/deps.sh npm
GOLDEN        := tests/golden/torch_init

CORE_SRC   := $(sort $(foreach d,$(CORE_DIRS),$(wildcard $(d)/*.c)))
SERVER_SRC := $(sort $(foreach d,$(SERVER_DIRS),$(wildcard $(d)/*.c)))
TEST_SRC   := $(sort $(wildcard tests/test_*.c))
CORE_OBJ   := $(CORE_SRC:%.c=$(BUILD)/%.o)
# docs/openapi.json is compiled in, served at GET /openapi.json; so are the
# files of docs/playground/ (GET /, /docs, /static/NAME: server/routes/pages.c).
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/openapi.o \
              $(BUILD)/gen/pages_data.o
PAGE_FILES := $(sort $(wildcard docs/playground/*.html \
                docs/playground/*.js docs/playground/*.css))
# Everything of the server but main(), so tests can link it.
SERVER_LIB := $(filter-out $(BUILD)/server/cli/main.o,$(SERVER_OBJ))
TESTS      := $(TEST_SRC:tests/%.c=$(BUILD)/%)
TOOLS      := $(patsubst %.c,$(BUILD)/%,$(wildcard tools/*.c bench/*.c))

.PHONY: all deps test-deps test test-suites unit e2e suites sanitize \
        sanitize-test run lint data check-all check-long check-long-suites \
        oracle-deps tokenizer-oracle tokenizer-oracle-all unigram-oracle \
        tokenizer-oracle-added-all browser-test \
        float-random valgrind \
        check-floats check-floats-slice coverage clean help
# Phony targets that are steps of others, not meant to be typed: every
# other phony target of the Makefiles is listed by `make help`
# (tests/e2e/test_readme.py checks it).
HELP_HIDDEN := test-suites suites check-long-suites image-data fuzz-build
.DEFAULT_GOAL := all

all: deps $(BUILD)/tokvec

# Each included .mk file adds its own targets to the list (help::).
help::
	@echo "make [all]        build $(BUILD)/tokvec (installs missing deps as root)"
	@echo "make run          build, make data, serve the default table"
	@echo "                  (TABLE=FILE PORT=N HOST=ADDR: serve FILE there)"
	@echo "make data         $(DEFAULT_TABLE) + GPT-2 tokenizer in $(TOKENIZER_DIR)/"
	@echo "make test         unit + end-to-end tests, TEST_JOBS=$(TEST_JOBS) suites at a time"
	@echo "make unit         the unit tests alone; make e2e the end-to-end suites alone"
	@echo "make check-all    everything CI runs (.ci/run): test, check-long, lint,"
	@echo "                  browser-test, fuzz, soak, valgrind, coverage and the"
	@echo "                  container targets (root, ~1 hour on 2 cores)"
	@echo "make check-long   the ASan+UBSan rerun (sanitize-test), float-random,"
	@echo "                  tokenizer-oracle-all"
	@echo "make deps         install the Debian packages the build needs (root)"
	@echo "make test-deps    install the Debian packages the tests need (root)"
	@echo "make sanitize     ASan+UBSan build in build-san/"
	@echo "make sanitize-test  unit + end-to-end tests on that build, leak-checked"
	@echo "make float-random 10 million random floats through the formatter,"
	@echo "                  all 2^32 through float16/bfloat16 narrowing"
	@echo "make check-floats all 2^32 float32 patterns through the formatter and narrowing"
	@echo "make check-floats-slice  a stratified slice of it (~4 minutes)"
	@echo "make tokenizer-oracle  tokvec's ids against npm tiktoken and HF tokenizers"
	@echo "                  (BPE, WordPiece, Unigram, SentencePiece BPE)"
	@echo "make tokenizer-oracle-all  that, plus every code point for cl100k, o200k,"
	@echo "                  WordPiece and Unigram"
	@echo "make tokenizer-oracle-added-all  every code point beside added"
	@echo "                  tokens of every option (bge; ~20 minutes)"
	@echo "make unigram-oracle  only its SentencePiece (Unigram, BPE) part"
	@echo "make oracle-deps  install the oracles' pinned npm packages"
	@echo "make lint         cppcheck, clang-tidy, 80 columns, no assignment in"
	@echo "                  a condition, clang-format (tools/lint.sh)"
	@echo "make browser-test the page at / and /docs in headless Chromium"
	@echo "make valgrind     end-to-end suite with the server under memcheck"
	@echo "make coverage     unit + end-to-end on a gcov build: NN% per file, totals"
	@echo "make bench        benchmarks (not part of test)"
	@echo "make bench-similar  POST /similar timings alone (~1 min)"
	@echo "make clean"
	@echo "make help         this list"

deps:
	@tools/deps.sh $(DEB_BUILD)

test-deps: deps
	@tools/deps.sh $(DEB_TEST)

$(BUILD)/libtokvec.a: $(CORE_OBJ)
	@mkdir -p $(@D)
	$(SAY) AR $@
	$(Q)$(AR) rcs $@ $^

$(BUILD)/tokvec: $(SERVER_OBJ) $(BUILD)/libtokvec.a
	$(SAY) LD $@
	$(Q)$(CC) $(LDFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LIBS)

$(BUILD)/gen/openapi.c: docs/openapi.json
	@mkdir -p $(@D)
	@{ echo '/* Generated from docs/openapi.json by the Makefile. */'; \
	   echo 'const char tv_openapi_json[] = {'; \
	   od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	   echo '0};'; \
	   echo 'const unsigned long tv_openapi_len = sizeof tv_openapi_json - 1;'; \
	 } > $@

$(BUILD)/gen/openapi.o: $(BUILD)/gen/openapi.c
	$(SAY) CC $<
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

# The tokenizer's Unicode classes, from Debian's unicode-data (the UCD).
UCD_DIR ?= /usr/share/unicode
$(BUILD)/gen/tok_ucd.h: tools/gen_ucd.awk
	@mkdir -p $(@D)
	awk -f tools/gen_ucd.awk $(UCD_DIR)/PropList.txt \
	  $(UCD_DIR)/UnicodeData.txt > $@.tmp && mv $@.tmp $@
$(BUILD)/core/tokenizer/tok_split.o: $(BUILD)/gen/tok_ucd.h
# Grapheme cluster classes (precompiled.c), from the same package.
$(BUILD)/gen/tok_gcb.h: tools/gen_gcb.awk
	@mkdir -p $(@D)
	awk -f tools/gen_gcb.awk $(UCD_DIR)/auxiliary/GraphemeBreakProperty.txt \
	  $(UCD_DIR)/emoji/emoji-data.txt > $@.tmp && mv $@.tmp $@
$(BUILD)/core/tokenizer/precompiled.o: $(BUILD)/gen/tok_gcb.h
$(BUILD)/test_precompiled: $(BUILD)/gen/tok_gcb.h
# Hugging Face's Unicode data (normalize.c, pretok.c): the same UCD limited
# to the Unicode versions of the Rust crates HF uses, plus the measured
# differences in tools/hf_ucd_extra.txt (see tools/gen_hfucd.awk).
HF_UCD := DerivedAge.txt PropList.txt DerivedCoreProperties.txt \
          DerivedNormalizationProps.txt \
          SpecialCasing.txt UnicodeData.txt
$(BUILD)/gen/tok_hfucd.h: tools/gen_hfucd.awk tools/hf_ucd_extra.txt
	@mkdir -p $(@D)
	awk -v CAT_AGE=8.0 -v NORM_AGE=9.0 -f tools/gen_hfucd.awk \
	  $(addprefix $(UCD_DIR)/,$(HF_UCD)) tools/hf_ucd_extra.txt \
	  > $@.tmp && mv $@.tmp $@
$(BUILD)/core/tokenizer/normalize.o: $(BUILD)/gen/tok_hfucd.h

# One byte array per file (NUL-terminated, the NUL not counted) and a
# table of {name, bytes, length}; the directory is a prerequisite so that
# adding or removing a file regenerates it.
$(BUILD)/gen/pages_data.c: $(PAGE_FILES) $(wildcard docs/playground) Makefile
	@mkdir -p $(@D)
	@{ echo '/* Generated from docs/playground/ by the Makefile. */'; \
	   i=0; for f in $(PAGE_FILES); do \
	     echo "static const unsigned char f$$i[] = {"; \
	     od -An -v -tx1 $$f | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	     echo '0};'; i=$$((i+1)); done; \
	   echo 'typedef struct tv_page_file {'; \
	   echo '    const char *name;'; \
	   echo '    const unsigned char *data;'; \
	   echo '    unsigned long len;'; \
	   echo '} tv_page_file;'; \
	   echo 'const tv_page_file tv_page_files[] = {'; \
	   i=0; for f in $(PAGE_FILES); do \
	     echo "    {\"$${f##*/}\", f$$i, sizeof f$$i - 1},"; \
	     i=$$((i+1)); done; \
	   echo '    {0, 0, 0}};'; \
	   echo 'const unsigned long tv_page_nfiles ='; \
	   echo '    sizeof tv_page_files / sizeof tv_page_files[0] - 1;'; \
	 } > $@

$(BUILD)/gen/pages_data.o: $(BUILD)/gen/pages_data.c
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/server/cli/datadir.o: CFLAGS += -DTOKVEC_DATA_DIR='"$(DATA_DIR)"'
$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(SAY) CC $<
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

# A test named after a core module links the core alone; others (server
# modules) link the server objects too.
CORE_TESTS   := $(filter $(patsubst %.c,$(BUILD)/test_%,$(notdir $(CORE_SRC))),\
                  $(TESTS))
SERVER_TESTS := $(filter-out $(CORE_TESTS),$(TESTS))
$(CORE_TESTS): $(BUILD)/test_%: tests/test_%.c $(BUILD)/libtokvec.a
	$(SAY) CC $@
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LIBS) $(TEST_LIBS)
$(SERVER_TESTS): $(BUILD)/test_%: tests/test_%.c $(SERVER_LIB) $(BUILD)/libtokvec.a
	$(SAY) CC $@
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LIBS) $(TEST_LIBS)

$(BUILD)/tools/%: tools/%.c $(SERVER_LIB) $(BUILD)/libtokvec.a
	@mkdir -p $(@D)
	$(SAY) CC $@
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LIBS)
$(BUILD)/bench/%: bench/%.c $(SERVER_LIB) $(BUILD)/libtokvec.a
	@mkdir -p $(@D)
	$(SAY) CC $@
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LIBS)

# --- tests -----------------------------------------------------------------
# Unit tests run from the top directory (they read $(GOLDEN)).
unit: test-deps data $(TESTS)
	@$(RUN_TESTS) "unit ($(BUILD))" $(TESTS)

# End-to-end: the real binary on a loopback port (tests/e2e/).
E2E := $(sort $(wildcard tests/e2e/test_*.py))
# The longest suite runs as two processes side by side (--part 1, 2).
E2E_SPLIT := tests/e2e/test_hostile.py
E2E_CMDS = $(foreach t,$(filter-out $(E2E_SPLIT),$(E2E)),\
             "$(PYTHON) $(t) --binary $(BUILD)/tokvec") \
           $(foreach t,$(E2E_SPLIT),$(foreach p,1 2,\
             "$(PYTHON) $(t) --binary $(BUILD)/tokvec --part $(p)"))
# test_torchsave.py runs $(BUILD)/tools/torchsave, test_ceiling.py
# $(BUILD)/bench/ceiling.
E2E_TOOLS := $(BUILD)/tools/torchsave $(BUILD)/bench/ceiling
e2e: test-deps data $(BUILD)/tokvec $(E2E_TOOLS)
	@$(RUN_TESTS) "end-to-end ($(BUILD))" $(E2E_CMDS)

# make test's oracle (tests/oracle/test_oracle.py, one suite, about a
# minute): every tokenizer family against tiktoken and HF tokenizers on
# the built-in texts, and added tokens of every option on each HF family;
# its npm packages and files are tokenizer-oracle's (below), in
# $(BUILD)/oracle.
ORACLE_FAST_DEPS := $(addprefix $(BUILD)/oracle/,.installed \
  cl100k_base.tiktoken o200k_base.tiktoken wp-trained.json gpt2-hf.json \
  spm-test_model.json spm-debian-bpe-llama.json)
ORACLE_FAST = $(PYTHON) tests/oracle/test_oracle.py --binary $(BUILD)/tokvec \
  --oracle $(BUILD)/oracle --gpt2 $(TOKENIZER_DIR)
# Both in one run, so that short suites fill the time of the long ones
# (the end-to-end suites, longer, first when no earlier run timed them).
suites: test-deps data $(TESTS) $(BUILD)/tokvec $(E2E_TOOLS) $(ORACLE_FAST_DEPS)
	@$(RUN_TESTS) "unit + end-to-end ($(BUILD))" $(E2E_CMDS) $(TESTS) \
	  "$(ORACLE_FAST)"

# The static-model tests' reference ids (tests/e2e/test_static_models.py):
# tests/e2e/static_ref.py lists every text (and its Model2Vec cuts) the
# tests need ids of; tests/oracle/hf/sentence-ids.js encodes them with the
# npm tokenizers of tokenizer-oracle ($(BUILD)/oracle); the answer, with
# the SHA-256 of each tokenizer.json, is committed (the tests need no node).
.PHONY: sentence-ids
SENTENCE_IDS := tests/data/model2vec-rs/hf-ids.json
help::
	@echo "make sentence-ids rewrite $(SENTENCE_IDS): HF tokenizers'"
	@echo "                  ids of the static-model tests' texts (npm tokenizers)"
sentence-ids: $(BUILD)/oracle/.installed
	$(PYTHON) tests/e2e/static_ref.py --requests | \
	  NODE_PATH=$(BUILD)/oracle/node_modules \
	  node tests/oracle/hf/sentence-ids.js > $(SENTENCE_IDS).tmp
	mv $(SENTENCE_IDS).tmp $(SENTENCE_IDS)

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
	  TOKVEC_REAL_BINARY=$(abspath $(BUILD)/tokvec) \
	  VALGRIND_LOG_DIR=$(abspath $(BUILD)/valgrind) \
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
	@$(RUN_TESTS) "floats ($(BUILD))" \
	  "$(BUILD)/tools/check_floats --random 10000000" \
	  "$(BUILD)/tools/check_floats --narrow"

# Every suite runs even after a failure (-k); the last line is the sum.
# make test: the unit and end-to-end suites (a few minutes); make
# check-long: the long ones (ASan+UBSan rerun, oracles, random floats).
test:
	@mkdir -p $(dir $(SUMMARY)); rm -f $(SUMMARY)
	@$(MAKE) --no-print-directory -k QUIET=1 test-suites; rc=$$?; \
	 $(PYTHON) tests/run.py --summary $(SUMMARY) --total \
	   $$([ $$rc -eq 0 ] || echo --steps-failed) || rc=1; exit $$rc

test-suites: suites

check-long:
	@mkdir -p $(dir $(SUMMARY)); rm -f $(SUMMARY)
	@$(MAKE) --no-print-directory -k QUIET=1 check-long-suites; rc=$$?; \
	 $(PYTHON) tests/run.py --summary $(SUMMARY) --total \
	   $$([ $$rc -eq 0 ] || echo --steps-failed) || rc=1; exit $$rc

check-long-suites: float-random tokenizer-oracle-all sanitize-test

# Everything CI runs, in its order, stopping at the first failure (root:
# it installs clang for the fuzzers, podman for the container targets).
CHECK_FUZZ_SECONDS ?= 60
CHECK_SOAK_SECONDS ?= 60
check-all:
	$(MAKE) --no-print-directory test
	$(MAKE) --no-print-directory check-long
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory browser-test
	tools/deps.sh clang libclang-rt-14-dev
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS) \
	  FUZZ_SEED=1
	$(MAKE) --no-print-directory soak SOAK_SECONDS=$(CHECK_SOAK_SECONDS)
	$(MAKE) --no-print-directory valgrind
	$(MAKE) --no-print-directory coverage
	$(MAKE) --no-print-directory container-test
	$(MAKE) --no-print-directory deploy-check
	$(MAKE) --no-print-directory compose-test

# The page (GET /, /docs) in Debian's headless Chromium, driven by the npm
# package playwright-core pinned in tests/browser/package-lock.json (npm ci
# checks its sha512; it downloads no browser), against servers with GPT-2's
# tokenizer ($(TOKENIZER_DIR), make data), with --api-key, and with --model
# (tests/data/model2vec-rs: the sentences mode). Screenshots
# at 360 and 1920 px go to $(BUILD)/browser/; docs/playground.png is the
# 1920 one.
BROWSER_DIR := tests/browser
$(BROWSER_DIR)/node_modules/.package-lock.json: $(BROWSER_DIR)/package-lock.json
	cd $(BROWSER_DIR) && npm ci --ignore-scripts --no-audit --no-fund
browser-test: test-deps data $(BUILD)/tokvec \
              $(BROWSER_DIR)/node_modules/.package-lock.json
	@tools/deps.sh chromium
	TOKVEC_BINARY=$(BUILD)/tokvec SHOTS=$(BUILD)/browser \
	  TOKENIZER=$(TOKENIZER_DIR) node --test $(BROWSER_DIR)/

sanitize: test-deps
	@$(MAKE) --no-print-directory BUILD=build-san OPT=-O1 SANFLAGS="$(SAN)" \
	  build-san/tokvec $(TESTS:$(BUILD)/%=build-san/%)

sanitize-test: sanitize
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	 $(MAKE) --no-print-directory BUILD=build-san SANFLAGS="$(SAN)" OPT=-O1 \
	  suites

# --- lint ------------------------------------------------------------------
# tools/lint.sh: cppcheck, clang-tidy (.clang-tidy), tools/lint_c.py (80
# columns, no assignment in a condition) must find nothing, and clang-format
# (.clang-format) must change no line (LINT_FORMAT=report: count only).
DEB_LINT     := cppcheck clang-tidy clang-format python3
LINT_FILES   := $(sort $(foreach d,$(CORE_DIRS) $(SERVER_DIRS),\
                  $(wildcard $(d)/*.c $(d)/*.h)) \
                  $(wildcard include/*.h tests/*.c tests/*.h tools/*.c \
                  bench/*.c tests/fuzz/*.c tests/fuzz/*.h))
# Files checked and reported but not failing (none: every file must pass).
LINT_PENDING :=
lint: deps $(BUILD)/gen/tok_ucd.h $(BUILD)/gen/tok_gcb.h \
      $(BUILD)/gen/tok_hfucd.h
	@tools/deps.sh $(DEB_LINT)
	@LINT_FILES="$(LINT_FILES)" LINT_PENDING="$(LINT_PENDING)" \
	 LINT_CPPFLAGS="$(SRC_INC) -I$(BUILD)/gen" \
	 LINT_CACHE="$(BUILD)/lint-cache" \
	 PYTHON="$(PYTHON)" tools/lint.sh

# --- running ---------------------------------------------------------------
$(DEFAULT_TABLE): | $(BUILD)/tokvec
	@mkdir -p $(@D)
	$(BUILD)/tokvec init --vocab 50257 --dim 256 --context 1024 \
	  --positional learned --seed 123 -o $@

$(TOKENIZER_DIR)/encoder.json:
	@$(NPM_DEPS)
	tools/fetch_gpt2.sh $(TOKENIZER_DIR)

data: $(DEFAULT_TABLE) $(TOKENIZER_DIR)/encoder.json

# The default table is made when missing; another TABLE must exist.
run: all data $(filter $(DEFAULT_TABLE),$(TABLE))
	$(BUILD)/tokvec serve --table $(TABLE)$(if $(TOKENIZER), --tokenizer \
	  $(TOKENIZER))$(if \
	  $(PORT), --port $(PORT))$(if \
	  $(HOST), --host $(HOST))

# --- benchmarks and long checks (not part of test) -------------------------
check-floats: $(BUILD)/tools/check_floats
	$(BUILD)/tools/check_floats --all
	$(BUILD)/tools/check_floats --narrow

# A stratified slice of check-floats (~4 minutes of two cores in all, 460
# CPU seconds): one pattern of every 64 (the low bits cycling) and every
# pattern of the binades at the edges of the formatter's code paths, all
# checks; then the whole fast path's range, both signs, against the
# reference bytes.
check-floats-slice: $(BUILD)/tools/check_floats
	$(BUILD)/tools/check_floats --slice 64
	$(BUILD)/tools/check_floats --diff 0x38d1b718 0x4a000000
	$(BUILD)/tools/check_floats --diff 0xb8d1b718 0xca000000

# --- tokenizer exactness: tiktoken (npm, the Rust core as WASM) and
# Hugging Face tokenizers (npm, the Rust library as a native module) ------
# Pinned by tests/oracle/package-lock.json (npm ci checks the integrity
# hashes), installed into $(ORACLE)/ (ignored). tokenizer-oracle (a few
# minutes; tokenizer-oracle-all is part of make check-long): corpora for gpt2, cl100k_base and o200k_base,
# and every Unicode scalar value in four contexts for gpt2; WordPiece
# (tests/oracle/hf.js): ids with and without add_special_tokens and
# offsets for bge (tests/data/bge), also with each of its BertNormalizer
# flags changed (hf.js --bert-variants), and for a WordPiece tokenizer
# trained on this machine's Debian texts; Unigram (SentencePiece) the same way:
# model2vec's Unigram fixture (tests/data/unigram/, BertNormalizer, Replace,
# Strip, Metaspace), SentencePiece's test model converted by
# tools/spm2json.py, and a Unigram with byte fallback trained by Debian's
# spm_train (tests/data/unigram/debian-unigram.json, see README there)
# and a small pipeline of every stage kind (tests/data/unigram/seq.json),
# the last two also with each Metaspace prepend_scheme and split; BPE
# without ByteLevel: a SentencePiece BPE trained the same way
# (tests/data/bpe-spm/, README there) in SpmConverter's and Llama's
# layouts, and a BPE with affixes and fuse_unk; on the same corpora
# and Unicode edge cases; added tokens of every option (lstrip, rstrip,
# single_word, normalized, special; also with HF's encode_special_tokens)
# appended to bge, two Unigrams, the SentencePiece BPE and GPT-2's BPE as
# HF's byte-level tokenizer.json (ids only: its offsets are tokvec's own).
# tokenizer-oracle-all adds the exhaustive checks for cl100k_base,
# o200k_base, bge and the Unigrams (every scalar value in three contexts)
# tokenizer-oracle-added-all: every scalar value beside bge's added tokens
# (~20 minutes here; not in check-all, whose time CI bounds: run it when
# the added-token matcher or the \w table changes).
ORACLE      := $(BUILD)/oracle
ORACLE_NODE := NODE_PATH=$(ORACLE)/node_modules node tests/oracle/oracle.js
ORACLE_HF   := NODE_PATH=$(ORACLE)/node_modules node tests/oracle/hf.js
HF_BGE      := tests/data/bge/tokenizer.json
HF_UNI_MS   := tests/data/unigram/debian-unigram.json \
  tests/data/unigram/seq.json
# Added tokens of every option (hf.js --added-variant) on each family.
HF_ADDED    := $(HF_BGE) tests/data/unigram/model2vec-vocab-quantized.json \
  tests/data/unigram/seq.json tests/data/bpe-spm/debian-bpe.json
HF_UNI      := tests/data/unigram/model2vec-vocab-quantized.json \
  $(ORACLE)/spm-test_model.json $(HF_UNI_MS) \
  tests/data/bpe-spm/debian-bpe.json $(ORACLE)/spm-debian-bpe-llama.json \
  tests/data/bpe-spm/affix.json
# The WordPiece trained by HF's trainer on Debian's license texts.
HF_TRAIN    := /usr/share/common-licenses/* \
  $(wildcard /usr/share/doc/*/copyright)
ORACLE_CORPUS := /usr/share/common-licenses/* tests/data/*.txt \
  $(wildcard /usr/share/doc/[a-f]*/changelog.Debian.gz) \
  $(wildcard /usr/share/man/man1/[a-c]*.1.gz)
$(ORACLE)/.installed: tests/oracle/package.json tests/oracle/package-lock.json
	@$(NPM_DEPS)
	@mkdir -p $(ORACLE)
	cp tests/oracle/package.json tests/oracle/package-lock.json $(ORACLE)/
	cd $(ORACLE) && npm ci --no-audit --no-fund --silent
	@touch $@
oracle-deps: $(ORACLE)/.installed
$(ORACLE)/%.tiktoken: $(ORACLE)/.installed
	$(ORACLE_NODE) tiktoken-file $* $@
$(ORACLE)/gpt2-hf.json: $(ORACLE)/.installed $(TOKENIZER_DIR)/encoder.json
	$(ORACLE_HF) bytelevel --out $@ $(TOKENIZER_DIR)/encoder.json \
	  $(TOKENIZER_DIR)/vocab.bpe
$(ORACLE)/wp-trained.json: $(ORACLE)/.installed tests/oracle/hf.js
	$(ORACLE_HF) train --out $@ $(HF_TRAIN)
$(ORACLE)/spm-test_model.json: tests/data/sentencepiece/test_model.model \
                               tools/spm2json.py
	@mkdir -p $(@D)
	$(PYTHON) tools/spm2json.py $< > $@.tmp && mv $@.tmp $@
$(ORACLE)/spm-debian-bpe-llama.json: tests/data/bpe-spm/debian-bpe.model \
                                     tools/spm2json.py
	@mkdir -p $(@D)
	$(PYTHON) tools/spm2json.py --template bos --llama $< > $@.tmp
	@mv $@.tmp $@

tokenizer-oracle: $(BUILD)/tokvec data $(ORACLE)/cl100k_base.tiktoken \
                  $(ORACLE)/gpt2-hf.json \
                  $(ORACLE)/o200k_base.tiktoken $(ORACLE)/wp-trained.json \
                  $(ORACLE)/spm-test_model.json \
                  $(ORACLE)/spm-debian-bpe-llama.json
	@$(ORACLE_NODE) corpus --tokvec $(BUILD)/tokvec --encoding gpt2 \
	  --tokenizer $(TOKENIZER_DIR) $(ORACLE_CORPUS)
	@set -e; for e in cl100k_base o200k_base; do \
	  $(ORACLE_NODE) corpus --tokvec $(BUILD)/tokvec --encoding $$e \
	    --tokenizer $(ORACLE)/$$e.tiktoken $(ORACLE_CORPUS); done
	$(ORACLE_NODE) exhaustive --tokvec $(BUILD)/tokvec --encoding gpt2 \
	  --tokenizer $(TOKENIZER_DIR)
	@set -e; for t in $(HF_BGE) $(ORACLE)/wp-trained.json; do \
	  $(ORACLE_HF) check --tokvec $(BUILD)/tokvec --tokenizer $$t \
	    $(ORACLE_CORPUS); done
	$(ORACLE_HF) check --bert-variants 1 --tokvec $(BUILD)/tokvec \
	  --tokenizer $(HF_BGE)
	@set -e; for t in $(HF_ADDED); do \
	  $(ORACLE_HF) check --added-variant 1 --tokvec $(BUILD)/tokvec \
	    --tokenizer $$t; done
	$(ORACLE_HF) check --added-variant 1 --ids-only 1 \
	  --tokvec $(BUILD)/tokvec --tokenizer $(ORACLE)/gpt2-hf.json
	@$(MAKE) --no-print-directory unigram-oracle

# The SentencePiece part of tokenizer-oracle alone (Unigram, and BPE
# without ByteLevel).
unigram-oracle: $(BUILD)/tokvec $(ORACLE)/.installed \
                $(ORACLE)/spm-test_model.json $(ORACLE)/spm-debian-bpe-llama.json
	@set -e; for t in $(HF_UNI); do \
	  $(ORACLE_HF) check --tokvec $(BUILD)/tokvec --tokenizer $$t \
	    $(ORACLE_CORPUS); done
	@set -e; for t in $(HF_UNI_MS); do \
	  $(ORACLE_HF) check --metaspace-variants 1 --tokvec $(BUILD)/tokvec \
	    --tokenizer $$t $(ORACLE_CORPUS); done

tokenizer-oracle-added-all: $(BUILD)/tokvec $(ORACLE)/.installed
	$(ORACLE_HF) check --added-variant 1 --exhaustive 1 \
	  --tokvec $(BUILD)/tokvec --tokenizer $(HF_BGE)

tokenizer-oracle-all: tokenizer-oracle
	@set -e; for e in cl100k_base o200k_base; do \
	  $(ORACLE_NODE) exhaustive --tokvec $(BUILD)/tokvec --encoding $$e \
	    --tokenizer $(ORACLE)/$$e.tiktoken; done
	@set -e; for t in $(HF_BGE) $(HF_UNI); do \
	  $(ORACLE_HF) check --exhaustive 1 --tokvec $(BUILD)/tokvec \
	    --tokenizer $$t; done

# --- coverage -----------------------------------------------------------------
# gcc -O0 --coverage in build-cov/, the unit and end-to-end suites, then
# Debian's lcov with branch coverage: one line per C file of core/ and
# server/ (`NN% path`) and `coverage: N% lines, M% branches`. Generated
# tables (build/gen) are left out. Slow (~5 min): in .ci/run, not in test.
COV_BUILD := build-cov
# The suites of make test on the coverage build: unit, end-to-end, and the
# fast oracle (its npm packages and files from $(BUILD)/oracle).
coverage: test-deps data $(ORACLE_FAST_DEPS)
	@tools/deps.sh lcov
	@rm -rf $(COV_BUILD)
	-@$(MAKE) --no-print-directory BUILD=$(COV_BUILD) OPT=-O0 \
	  SANFLAGS=--coverage QUIET=1 TEST_JOBS=1 unit e2e
	-@$(PYTHON) tests/oracle/test_oracle.py --binary $(COV_BUILD)/tokvec \
	  --oracle $(BUILD)/oracle --gpt2 $(TOKENIZER_DIR) 2>&1 | tail -1
	@lcov --quiet --capture --directory $(COV_BUILD) \
	  --rc lcov_branch_coverage=1 --output-file $(COV_BUILD)/all.info \
	  2>/dev/null
	@lcov --quiet --rc lcov_branch_coverage=1 \
	  --extract $(COV_BUILD)/all.info '$(CURDIR)/core/*' \
	  '$(CURDIR)/server/*' --output-file $(COV_BUILD)/cov.info 2>/dev/null
	@$(PYTHON) tools/coverage.py $(COV_BUILD)/cov.info

clean:
	rm -rf build build-san build-cov

# Container/deployment and benchmark targets live beside their files.
-include deploy/deploy.mk bench/bench.mk tests/fuzz/fuzz.mk

-include $(CORE_OBJ:.o=.d) $(SERVER_OBJ:.o=.d) $(TESTS:=.d)

# tests/fuzz/fuzz.mk -- fuzzing (libFuzzer, clang), regression replay and
# the soak test. Included by the top Makefile.
#
#   make fuzz            build the targets, replay the corpora and
#                        regressions, then fuzz each target FUZZ_SECONDS
#                        (default 60) one after the other
#   make fuzz-regress    build and replay tests/fuzz/corpus/<target>/ and
#                        tests/fuzz/regress/<target>/ once (a few seconds)
#   make fuzz-merge      fold what fuzzing found (build-fuzz/corpus/) into
#                        the checked-in corpora, minimized
#   make soak            mixed load for SOAK_SECONDS (default 600), checked
#                        bit-exact against numpy; RSS and error counts;
#                        4 clients looping 32 x 1024-token JSON requests
#                        beside a 1-token prober (its p99 is bounded);
#                        then the same load for SOAK_SECONDS beside
#                        attackers (slow readers, abandoned jobs, nested
#                        bodies, smuggling, tricklers): the normal
#                        clients' p99 must stay under SOAK_P99_MS
#
# The targets and the sources they test are compiled with clang and
# -fsanitize=fuzzer,address,undefined into $(FUZZ_BUILD)/ (never mixed with
# the gcc objects in $(BUILD)/). New corpus entries go to
# $(FUZZ_BUILD)/corpus/<target>/; crashes to $(FUZZ_BUILD)/artifacts/.

FUZZ_CC      ?= $(shell command -v clang-14 || command -v clang)
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
# 0 = a random seed per run (libFuzzer's default). .ci/run fixes one so that
# a CI failure replays the same way; longer runs by hand should not.
FUZZ_SEED    ?= 0
# ids: the fast JSON id parser against jansson, differential (fuzz_ids.c)
# tokload: the tokenizer-file loaders (.tiktoken, tokenizer.json,
# encoder.json + vocab.bpe); tokenc: the encoder on arbitrary bytes with
# data/gpt2 (make data), differential heap/quadratic merge
# similar: the body of POST /similar on every kind of table (fuzz_similar.c)
# embed: the replies of POST /embed and GET /tokens/{id}: route, options,
# encoding and table kind together, written into buffers of exactly the
# planned size (fuzz_embed.c)
# unigram: tokenizer.json of the SentencePiece family (Unigram, BPE
# without ByteLevel, their pipelines) and a text (fuzz_unigram.c)
# wordpiece: a tokenizer.json of the WordPiece family (normalizers,
# pre-tokenizers, post-processors, decoders) and a text (fuzz_wordpiece.c)
FUZZ_TARGETS := request table config ids tokload tokenc similar embed \
                unigram wordpiece
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
                -fno-omit-frame-pointer
FUZZ_CFLAGS  := -O1 -g -std=c11 -D_GNU_SOURCE -pthread $(FPFLAGS) \
                $(SRC_INC) -I$(BUILD)/gen -MMD -MP $(FUZZ_SAN)
FUZZ_LIB_SRC := $(CORE_SRC) server/routes/request.c \
                server/routes/request_fast.c server/routes/request_prescan.c \
                server/routes/request_types.c \
                server/routes/encode.c server/routes/negotiate.c \
                server/routes/torchsave.c \
                server/routes/npz.c server/routes/zipfmt.c \
                server/runtime/config.c server/runtime/config_value.c \
                server/runtime/suggest.c server/runtime/log.c \
                server/runtime/metrics.c server/runtime/routes.c \
                server/runtime/alloc.c
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.c=$(FUZZ_BUILD)/%.o)
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
# Per-target libFuzzer options: input size bound, and dictionaries.
FUZZ_OPTS_request := -max_len=8192 -dict=tests/fuzz/request.dict
FUZZ_OPTS_table   := -max_len=16384 -dict=tests/fuzz/table.dict
FUZZ_OPTS_config  := -max_len=4096 -dict=tests/fuzz/config.dict
FUZZ_OPTS_ids     := -max_len=8192 -dict=tests/fuzz/ids.dict
FUZZ_OPTS_tokload := -max_len=16384 -dict=tests/fuzz/tokload.dict
FUZZ_OPTS_tokenc  := -max_len=65536 -dict=tests/fuzz/tokenc.dict
FUZZ_OPTS_similar := -max_len=4096 -dict=tests/fuzz/similar.dict
FUZZ_OPTS_embed   := -max_len=4096 -dict=tests/fuzz/embed.dict
FUZZ_OPTS_unigram := -max_len=16384
FUZZ_OPTS_wordpiece := -max_len=8192 -dict=tests/fuzz/wordpiece.dict
FUZZ_COMMON   = -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
                -print_final_stats=1

SOAK_SECONDS ?= 600
SOAK_THREADS ?= 6
SOAK_P99_MS  ?= 1000

.PHONY: fuzz fuzz-build fuzz-regress fuzz-merge soak
# Objects are not intermediates: keep them between runs.
.SECONDARY: $(FUZZ_LIB_OBJ)
-include $(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_BINS:=.d)

$(FUZZ_BUILD)/core/tokenizer/tok_split.o: $(BUILD)/gen/tok_ucd.h
$(FUZZ_BUILD)/core/tokenizer/precompiled.o: $(BUILD)/gen/tok_gcb.h
$(FUZZ_BUILD)/core/tokenizer/normalize.o: $(BUILD)/gen/tok_hfucd.h
$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJ)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $(filter %.c %.o,$^) $(LIBS)

# Every target links server/routes/pages.c and the pool it submits jobs to
# (metrics.c, for its route names and labels, reads the pool's gauges). The
# compiled-in pages come from $(BUILD)/gen/pages_data.c, but for
# fuzz_similar, whose fuzz_similar.c defines them as none.
FUZZ_SIMILAR_OBJ := $(FUZZ_BUILD)/server/routes/pages.o \
                    $(FUZZ_BUILD)/server/runtime/pool.o
FUZZ_PAGES_OBJ   := $(FUZZ_BUILD)/gen/pages_data.o
.SECONDARY: $(FUZZ_SIMILAR_OBJ) $(FUZZ_PAGES_OBJ)
$(FUZZ_BINS): $(FUZZ_SIMILAR_OBJ)
$(filter-out $(FUZZ_BUILD)/fuzz_similar,$(FUZZ_BINS)): $(FUZZ_PAGES_OBJ)
$(FUZZ_PAGES_OBJ): $(BUILD)/gen/pages_data.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

# fuzz_similar and fuzz_embed pick their table among one of every kind
# (tests/fuzz/table_kinds.c); fuzz_embed writes replies with the server's
# embed_plan.c, and tokenizes texts through embed_text.c and text.c.
FUZZ_KINDS_OBJ := $(FUZZ_BUILD)/tests/fuzz/table_kinds.o
FUZZ_EMBED_OBJ := $(FUZZ_BUILD)/server/routes/embed_plan.o \
                  $(FUZZ_BUILD)/server/routes/embed_text.o \
                  $(FUZZ_BUILD)/server/routes/text.o
.SECONDARY: $(FUZZ_KINDS_OBJ) $(FUZZ_EMBED_OBJ)
-include $(FUZZ_KINDS_OBJ:.o=.d) $(FUZZ_EMBED_OBJ:.o=.d)
$(FUZZ_BUILD)/fuzz_similar $(FUZZ_BUILD)/fuzz_embed: $(FUZZ_KINDS_OBJ)
$(FUZZ_BUILD)/fuzz_embed: $(FUZZ_EMBED_OBJ)

help::
	@echo "make fuzz         libFuzzer targets (clang): replay, then FUZZ_SECONDS each"
	@echo "make fuzz-regress replay the fuzz corpora and regressions once"
	@echo "make fuzz-merge   fold what fuzzing found into tests/fuzz/corpus/"
	@echo "make soak         SOAK_SECONDS of mixed load, then beside attackers"

fuzz-build: $(FUZZ_BINS)

# Each input once: the checked-in corpus and every regression input. Fails
# on the first crash, leak or sanitizer report.
fuzz-regress: fuzz-build data
	@set -e; for t in $(FUZZ_TARGETS); do \
	  files=$$(find tests/fuzz/corpus/$$t tests/fuzz/regress/$$t \
	           -type f 2>/dev/null | sort); \
	  n=$$(echo "$$files" | grep -c . || true); \
	  echo "== fuzz-regress $$t: $$n inputs"; \
	  [ "$$n" -gt 0 ] || continue; \
	  echo "$$files" | xargs $(FUZZ_BUILD)/fuzz_$$t -runs=1 \
	    -rss_limit_mb=2048 -malloc_limit_mb=1024 2>$(FUZZ_BUILD)/regress_$$t.log \
	    || { tail -40 $(FUZZ_BUILD)/regress_$$t.log; exit 1; }; \
	done

# One target's run; $(1) is its name.
define fuzz_one
mkdir -p $(FUZZ_BUILD)/corpus/$(1) $(FUZZ_BUILD)/artifacts/$(1); \
echo "== fuzz $(1) for $(FUZZ_SECONDS) s"; \
$(FUZZ_BUILD)/fuzz_$(1) $(FUZZ_BUILD)/corpus/$(1) tests/fuzz/corpus/$(1) \
  $(FUZZ_OPTS_$(1)) $(FUZZ_COMMON) -max_total_time=$(FUZZ_SECONDS) \
  -seed=$(FUZZ_SEED) \
  -artifact_prefix=$(FUZZ_BUILD)/artifacts/$(1)/ \
  2>$(FUZZ_BUILD)/fuzz_$(1).log \
  || { tail -60 $(FUZZ_BUILD)/fuzz_$(1).log; exit 1; }; \
grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss)' \
  $(FUZZ_BUILD)/fuzz_$(1).log | sed 's/^/   $(1) /'
endef

fuzz: fuzz-regress
	@set -e; $(foreach t,$(FUZZ_TARGETS),$(call fuzz_one,$(t));)

# Adds to tests/fuzz/corpus/<t>/ only the found inputs that add coverage
# (libFuzzer -merge=1 keeps what the first directory holds).
fuzz-merge: fuzz-build
	@set -e; $(foreach t,$(FUZZ_TARGETS), \
	  mkdir -p $(FUZZ_BUILD)/corpus/$(t); \
	  $(FUZZ_BUILD)/fuzz_$(t) -merge=1 $(FUZZ_OPTS_$(t)) \
	    tests/fuzz/corpus/$(t) $(FUZZ_BUILD)/corpus/$(t) 2>/dev/null; \
	  echo "$(t): $$(ls tests/fuzz/corpus/$(t) | wc -l) corpus files";)

soak: $(BUILD)/tokvec
	$(PYTHON) tools/soak.py --binary $(BUILD)/tokvec \
	  --seconds $(SOAK_SECONDS) --threads $(SOAK_THREADS) --large 4
	$(PYTHON) tools/soak.py --binary $(BUILD)/tokvec --hostile \
	  --seconds $(SOAK_SECONDS) --threads $(SOAK_THREADS) \
	  --p99-ms $(SOAK_P99_MS)

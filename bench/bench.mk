# bench.mk -- `make bench`: benchmarks, never part of `make test`.
# Included by the top Makefile (BUILD, DEFAULT_TABLE, PYTHON are set there).
# bench/run.sh installs what it needs (wrk, nginx-light, gnuplot-nox, the
# peer's python3-torch/fastapi/uvicorn) when run as root; bench/loadbench.py
# writes bench/results/latest.md, latest.json and the PNG plots.
#   make bench BENCH_QUICK=1            ~1 s a point, fewer sweep points
#   make bench BENCH_ONLY=main,startup  some sections only
#   make bench-similar                  POST /similar's timings alone
BENCH_BINS := $(BUILD)/bench/embedbench $(BUILD)/bench/httpload \
              $(BUILD)/bench/idbench $(BUILD)/bench/quantbench \
              $(BUILD)/bench/similarbench $(BUILD)/bench/ceiling \
              $(if $(wildcard bench/floatbench.c),$(BUILD)/bench/floatbench)
.PHONY: bench bench-tokenize bench-wordpiece bench-unigram bench-similar \
        bench-specials \
        bench-sentences
help::
	@echo "make bench-sentences /v1/embeddings against a Node server (~4 min)"
	@echo "make bench-tokenize  tokvec tokenize against tiktoken, gpt-tokenizer"
	@echo "make bench-wordpiece tokvec tokenize (bge WordPiece) against HF tokenizers"
	@echo "make bench-unigram   only its Unigram part (BEFORE=tokvec: add its rows)"
	@echo "make bench-specials  special tokens at scale (~10 s)"
bench: all data $(BENCH_BINS) bench-tokenize
	@BUILD=$(BUILD) PYTHON=$(PYTHON) TABLE=$(DEFAULT_TABLE) \
	  BENCH_QUICK=$(BENCH_QUICK) BENCH_ONLY=$(BENCH_ONLY) bench/run.sh

# httpload: the HTTP load generator for Unix sockets (wrk has none), a
# client only, so it links none of the server.
$(BUILD)/bench/httpload: bench/httpload.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<

# ceiling: the loopback ceiling for large replies (one reused buffer,
# send on the socket), a server only, so it links none of tokvec either.
$(BUILD)/bench/ceiling: bench/ceiling.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<

# tokvec tokenize against npm tiktoken and gpt-tokenizer on ~10 MB of
# mixed-language text, whole processes (bench/tokbench.sh).
bench-tokenize: $(BUILD)/tokvec data $(ORACLE)/.installed
	@BUILD=$(BUILD) ORACLE=$(ORACLE) TOKENIZER=$(TOKENIZER_DIR) \
	  BEFORE=$(or $(BEFORE),$(BENCH_BASELINE)) bench/tokbench.sh

# tokvec tokenize --jsonl with bge's WordPiece against Hugging Face
# tokenizers' encodeBatch on ~10 MB of JSON lines and one 10 MB word
# (bench/wpbench.sh; after bench-tokenize, which makes the text).
bench-wordpiece: $(BUILD)/tokvec $(ORACLE)/.installed $(ORACLE)/spm-test_model.json
	@BUILD=$(BUILD) ORACLE=$(ORACLE) bench/wpbench.sh

# Its Unigram part alone (model2vec's, SentencePiece's test model, the
# Debian-trained one; the lines, the long word and a run of unknown
# characters); BEFORE=path/to/tokvec adds that binary's rows.
BEFORE ?=
bench-unigram: $(BUILD)/tokvec $(ORACLE)/.installed $(ORACLE)/spm-test_model.json
	@BUILD=$(BUILD) ORACLE=$(ORACLE) WPBENCH=unigram BEFORE=$(BEFORE) \
	  bench/wpbench.sh

# POST /similar alone (~1 min once its 50257x768 table is made): one scan
# on one core and whole requests over HTTP, default table and 50257x768
# (GPT2_TABLE=FILE: GPT-2's real table; else a random one of that shape).
# Writes bench/results/similar.md; make bench runs it too.
GPT2_TABLE ?=
bench-similar: all data $(BUILD)/bench/similarbench
	@BUILD=$(BUILD) PYTHON=$(PYTHON) TABLE=$(DEFAULT_TABLE) \
	  TOKENIZER=$(TOKENIZER_DIR) GPT2_TABLE=$(GPT2_TABLE) bench/similar.sh

# Special tokens at scale (bench/specialbench.sh, ~10 s): 16 MiB of "<"
# with 256 added tokens, and GET /info with 3,000. Prints a table.
bench-specials: all data
	@BUILD=$(BUILD) PYTHON=$(PYTHON) TOKENIZER=$(TOKENIZER_DIR) \
	  bench/specialbench.sh

# Sentence vectors over HTTP (bench/sentbench.py, ~4 min): tokvec serve
# --model against bench/sentpeer.js (Node, npm tokenizers from the oracle's
# pinned lock file, Float32Array mean pooling) on a generated potion-shaped
# model, POST /v1/embeddings of 256 short mixed-language lines with wrk;
# same vectors checked first. Writes bench/results/sentences.md and .json.
# ROUNDS=7 SECS=10 CONNS=4 PERF=1 (the CPU split with perf) by default.
bench-sentences: $(BUILD)/tokvec $(ORACLE)/.installed
	@tools/deps.sh wrk python3-numpy
	@BUILD=$(BUILD) ORACLE=$(ORACLE) $(PYTHON) bench/sentbench.py

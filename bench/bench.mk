# bench.mk -- `make bench`: benchmarks, never part of `make test`.
# Included by the top Makefile (BUILD, DEFAULT_TABLE, PYTHON are set there).
.PHONY: bench
bench: all $(DEFAULT_TABLE) $(BUILD)/bench/embedbench $(BUILD)/bench/floatbench
	@BUILD=$(BUILD) PYTHON=$(PYTHON) TABLE=$(DEFAULT_TABLE) bench/run.sh

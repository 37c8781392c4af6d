# The README's two commands: `make demo` and `make test`. Both create or refresh
# the local virtual environment first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test schemas bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/audit demo

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2

# Speed and memory targets (minutes; not part of `make test`).
bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

schemas: $(STAMP)
	$(BIN)/audit schemas --write

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

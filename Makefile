# dshlog: the two commands that work on a fresh machine are `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench stress fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	@echo '$$ dshlog info fixtures/golden/loop-events.json'
	@$(VENV)/bin/dshlog info fixtures/golden/loop-events.json
	@echo
	@echo '$$ dshlog events fixtures/golden/loop-events.json --type "*/message" --type tool/result'
	@$(VENV)/bin/dshlog events fixtures/golden/loop-events.json --type '*/message' --type tool/result
	@echo
	@echo '$$ dshlog validate fixtures/v0/text-turn/session.jsonl'
	@$(VENV)/bin/dshlog validate fixtures/v0/text-turn/session.jsonl

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) bench/run.py

stress: $(STAMP)
	$(PY) bench/stress.py

fuzz: $(STAMP)
	$(PY) bench/fuzz.py --seconds $${FUZZ_SECONDS:-300} --report bench/out/fuzz.jsonl

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info

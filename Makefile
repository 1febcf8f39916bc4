# dshlog: the two commands that work on a fresh machine are `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint fidelity bench stress fuzz fuzz-cache fuzz-long clean

$(STAMP): pyproject.toml dshlog/protocol/_scan.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	@echo '$$ dshlog events fixtures/v4/loop/session.v4.jsonl --turn 3'
	@$(VENV)/bin/dshlog events fixtures/v4/loop/session.v4.jsonl --turn 3
	@echo
	@echo '$$ dshlog surface fixtures/golden/loop-events.json      # what the model saw'
	@$(VENV)/bin/dshlog surface fixtures/golden/loop-events.json
	@echo
	@echo '$$ dshlog requests fixtures/v4/loop/session.v4.jsonl    # every request dsh sent, and prefix reuse'
	@$(VENV)/bin/dshlog requests fixtures/v4/loop/session.v4.jsonl
	@echo
	@echo '$$ dshlog rebuild fixtures/v4/loop/session.v4.jsonl --request 1 --compact'
	@$(VENV)/bin/dshlog rebuild fixtures/v4/loop/session.v4.jsonl --request 1 --compact
	@echo
	@echo '$$ dshlog repair fixtures/v4/crash/session.v4.jsonl     # a crashed session: what dsh appends on resume'
	@$(VENV)/bin/dshlog repair fixtures/v4/crash/session.v4.jsonl
	@echo
	@echo '$$ dshlog validate fixtures/v0/text-turn/session.jsonl && dshlog migrate --dry-run --no-children fixtures/v0/text-turn'
	@$(VENV)/bin/dshlog validate fixtures/v0/text-turn/session.jsonl
	@$(VENV)/bin/dshlog migrate --dry-run --no-children fixtures/v0/text-turn

# the suite under both modes of the fast paths (DSHLOG_PATHS=fast and exact), as two concurrent runs
test: lint
	$(PY) tests/both_modes.py

# mypy --strict over the package and ruff over the code (settings in pyproject.toml); part of `make test`
lint: $(STAMP)
	$(PY) -m mypy
	$(PY) -m ruff check dshlog tests bench

# agreement with dsh's own code (the differential suite's comparisons), into docs/fidelity.md
fidelity: $(STAMP)
	$(PY) tests/system/oracle_report.py --update docs/fidelity.md

# the table of BENCHMARKS.md (bench/run.py); the generated inputs (about 600 MB) go to BENCH_DATA, outside the checkout
BENCH_DATA ?= /tmp/bench-data
bench: $(STAMP)
	$(PY) bench/run.py --data $(BENCH_DATA)

stress: $(STAMP)
	$(PY) bench/stress.py

fuzz: $(STAMP)
	$(PY) bench/fuzz.py --seconds $${FUZZ_SECONDS:-300} --huge-line-mb $${FUZZ_HUGE_MB:-8} --bomb-mb $${FUZZ_BOMB_MB:-256} \
		--report bench/out/fuzz.jsonl

# the reading commands with a damaged cache (or a log changed under it): every answer must be --no-cache's
fuzz-cache: $(STAMP)
	$(PY) bench/fuzz.py --cache-mode --seconds $${FUZZ_SECONDS:-300} --huge-line-mb $${FUZZ_HUGE_MB:-8} \
		--bomb-mb $${FUZZ_BOMB_MB:-256} --report bench/out/fuzz-cache.jsonl

# exactly FUZZ_INPUTS inputs (default 10 000), every class and command, at a 1 MiB line-size limit with huge lines
# and bombs sized around it (the 256 MiB and 1 GiB sizes are the targeted bomb tests'); see RELIABILITY.md.
# FUZZ_SHARDS processes (default 1) split one seed's inputs between them; FUZZ_SECONDS stops them early.
fuzz-long: $(STAMP)
	@mkdir -p bench/out
	@for k in $$(seq 0 $$(( $${FUZZ_SHARDS:-1} - 1 ))); do \
		$(PY) bench/fuzz.py --inputs $${FUZZ_INPUTS:-10000} --seed $${FUZZ_SEED:-20261202} --shard $$k/$${FUZZ_SHARDS:-1} \
			--max-line-mib 1 --huge-line-mb 1.5 --bomb-mb 4 --timeout 30 --progress 100 $${FUZZ_SECONDS:+--seconds $$FUZZ_SECONDS} \
			--report bench/out/fuzz-long.jsonl > bench/out/fuzz-long.$$k.json 2> bench/out/fuzz-long.$$k.log & \
	done; wait

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache build *.egg-info

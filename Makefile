# Two commands for a newcomer: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PIP     = $(VENV)/bin/pip
STAMP   = $(VENV)/.installed
TRACE  ?= traces/ior-small-shared-4k.darshan
OUT    ?= out

.PHONY: demo dist docs docs-screenshot docs-screenshots test venv system-deps bench lint clean

$(STAMP): setup.cfg pyproject.toml
	@echo "make: creating the virtual environment $(VENV)"
	$(PYTHON) -m venv $(VENV)
	@echo "make: installing ioadvisor and its dependencies into $(VENV) (about a minute the first time)"
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	@mkdir -p $(OUT) $(OUT)/replay-scratch
	@echo "make: diagnosing $(TRACE), then replaying each fix in $(OUT)/replay-scratch (about a minute; one line per round)"
	$(VENV)/bin/ioadvisor diagnose $(TRACE) --json $(OUT)/demo.json --html $(OUT)/demo.html --verify --target $(OUT)/replay-scratch --model default
	@echo "report: $(OUT)/demo.html (JSON: $(OUT)/demo.json)"
	@echo "ioadvisor is installed in $(VENV): run $(VENV)/bin/ioadvisor, or 'source $(VENV)/bin/activate' first"
	@$(PY) -m advisor.report.screenshot $(OUT)/demo.html $(OUT)/demo-report.png --height 1800 \
	  || echo "(no screenshot: Chromium not found; the report itself is complete)"

# The wheel to install elsewhere (ioadvisor is not on PyPI): dist/ioadvisor-VERSION-py3-none-any.whl,
# then `pip install dist/ioadvisor-*.whl` in the target venv (docs/hook.md). Built with this venv's
# setuptools, offline (no build isolation: nothing is downloaded).
dist: $(STAMP)
	$(PIP) wheel --no-deps --no-build-isolation -q -w dist .
	@ls dist/ioadvisor-*.whl

# Refresh the README's picture from a demo run (a deliberate, committed change; `make demo` never
# touches the tree).
docs-screenshot: demo
	cp $(OUT)/demo-report.png docs/demo-report.png

# The three reports of docs/report.md (the demo, imbalanced-io, sample-badost), photographed in
# Chromium by the test that checks them (tests/test_report_screenshots.py).
docs-screenshots: $(STAMP)
	IOADVISOR_DOCS_SCREENSHOTS=1 $(VENV)/bin/python -m pytest -q tests/test_report_screenshots.py

# System components the tests start for real (Slurm, GlusterFS, Chromium, fio): installed when root.
system-deps:
	@bash tests/system/install-components.sh

test: $(STAMP) system-deps
	$(VENV)/bin/python -m pytest -n 2 --dist loadgroup tests

# The rule pages of docs/rules.md, from the catalogue (tests/test_rules_catalogue.py checks they are current).
docs: $(STAMP)
	$(VENV)/bin/ioadvisor rules --write-docs docs/rules.md

# ruff's rule sets and line length are in pyproject.toml.
lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench: $(STAMP)
	for b in bench/*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) $(OUT) build dist *.egg-info

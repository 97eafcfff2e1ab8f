#!/usr/bin/env bash
# The whole test suite: formatting, lints, both feature sets, unit/integration/doc tests,
# the embedding example, the DuckDB interoperability check, the FOCUS validator, a minute of
# the fuzz harness, and the object store suite (moto's S3 server and Spark).
# CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/gpuaudit-target}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"

cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p gpuaudit-core --no-default-features --all-targets -- -D warnings
cargo clippy -p gpuaudit-cli --features cloud -- -D warnings
cargo test -p gpuaudit-core --no-default-features
cargo test --workspace

# Finance tooling embeds the library without polars: the example must build that way and
# print exactly the expected findings for the example bills.
cargo run -q -p gpuaudit-core --no-default-features --example embed -- \
    2024-05 examples/gpuaudit.toml examples/bills/*.csv > "$CARGO_TARGET_DIR/embed.out"
diff -u tests/embed.expected "$CARGO_TARGET_DIR/embed.out"
echo "embed example: output as expected"

python3 -c 'import duckdb' 2>/dev/null || python3 -m pip install --quiet duckdb
python3 tests/duckdb_check.py "$CARGO_TARGET_DIR/debug/gpuaudit"

# The FinOps Foundation's FOCUS validator (PyPI focus-validator, Python >= 3.12) on the FOCUS
# export of the example ledger and of every fixture ledger, offline; its failures outside
# tests/focus_allowlist.txt fail the suite. The venv is made once, outside the clone.
FOCUS_VENV="${GPUAUDIT_FOCUS_VENV:-$HOME/.cache/gpuaudit-focus-venv}"
if [ ! -x "$FOCUS_VENV/bin/focus-validator" ]; then
    PY312="$(command -v python3.12 || ls "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python 2>/dev/null | head -1 || true)"
    if [ -n "$PY312" ]; then
        "$PY312" -m venv "$FOCUS_VENV"
        "$FOCUS_VENV/bin/pip" install --quiet "focus-validator==2.2.1" "pyarrow<22"
    fi
fi
if [ -x "$FOCUS_VENV/bin/focus-validator" ]; then
    python3 tests/focus_validator.py "$CARGO_TARGET_DIR/debug/gpuaudit" "$FOCUS_VENV"
elif [ -n "${GPUAUDIT_REQUIRE_FOCUS_VALIDATOR:-}" ]; then
    echo "focus-validator: cannot be installed (no Python >= 3.12)" >&2
    exit 1
else
    echo "focus-validator: skipped (it needs Python >= 3.12; CI runs it)"
fi

# The fuzz harness: mutated bills of every profile and spreadsheet, for a bounded time (no
# panic, no hang, bounded memory, errors naming the file, the ledger unchanged on failure).
# Run it longer by hand: python3 scripts/fuzz.py BINARY --seconds 3600
python3 scripts/fuzz.py "$CARGO_TARGET_DIR/debug/gpuaudit" --seconds "${GPUAUDIT_FUZZ_SECONDS:-60}"

# The ledger on an object store, shared by many importers, read by Spark (tests/object_store.py):
# moto's S3 server on 127.0.0.1 and pyspark in local mode, from a venv made once outside the
# clone (Python >= 3.9 and Java 17 for Spark), against gpuaudit built with `--features cloud`.
STORE_VENV="${GPUAUDIT_STORE_VENV:-$HOME/.cache/gpuaudit-store-venv}"
if [ ! -x "$STORE_VENV/bin/moto_server" ]; then
    PY3="$(command -v python3.12 || ls "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python 2>/dev/null | head -1 || command -v python3)"
    "$PY3" -m venv "$STORE_VENV" && "$STORE_VENV/bin/pip" install --quiet "moto[server]>=5.1,<6" boto3 "pyspark>=4,<5" || true
fi
if [ -x "$STORE_VENV/bin/moto_server" ]; then
    cargo build -q -p gpuaudit-cli --features cloud
    cp "$CARGO_TARGET_DIR/debug/gpuaudit" "$CARGO_TARGET_DIR/gpuaudit-cloud"
    SPARK_FLAG=""
    if ! command -v java >/dev/null 2>&1 || ! "$STORE_VENV/bin/python" -c 'import pyspark' 2>/dev/null; then
        if [ -n "${GPUAUDIT_REQUIRE_OBJECT_STORE:-}" ]; then echo "object store suite: Spark needs Java and pyspark" >&2; exit 1; fi
        echo "object store suite: Spark skipped (no java or no pyspark in $STORE_VENV; CI runs it)"
        SPARK_FLAG="--no-spark"
    fi
    "$STORE_VENV/bin/python" tests/object_store.py "$CARGO_TARGET_DIR/gpuaudit-cloud" $SPARK_FLAG
elif [ -n "${GPUAUDIT_REQUIRE_OBJECT_STORE:-}" ]; then
    echo "object store suite: moto and pyspark cannot be installed" >&2
    exit 1
else
    echo "object store suite: skipped (pip install moto[server] boto3 pyspark into $STORE_VENV; CI runs it)"
fi

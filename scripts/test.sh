#!/usr/bin/env bash
# The whole test suite: formatting, lints, both feature sets, unit/integration/doc tests,
# the embedding example, the DuckDB interoperability check and a minute of the fuzz harness.
# CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/gpuaudit-target}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"

cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p gpuaudit-core --no-default-features --all-targets -- -D warnings
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

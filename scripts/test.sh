#!/usr/bin/env bash
# The whole test suite: formatting, lints, both feature sets, unit/integration/doc tests,
# the embedding example, the DuckDB interoperability check, the FOCUS validator, the report in
# headless Chromium, a minute of the fuzz harness, and the object store suite (moto's S3 server
# and Spark). CI runs exactly this, with the GPUAUDIT_REQUIRE_* flags that forbid skipping.
#
# It sets up everything itself first: rustfmt and clippy (rustup), a Python for each part found
# by running each candidate and checking its version (never by a name on the PATH: a pyenv
# shim answers to names it cannot run), venvs outside the clone (made once, rebuilt when their
# requirements change), and Debian's Chromium and a Java runtime when they are missing and the
# machine allows it (root with apt-get). A part that cannot be set up is skipped with a message
# saying what to install, or fails the run when its GPUAUDIT_REQUIRE_* flag is set:
#
#   GPUAUDIT_REQUIRE_DUCKDB, GPUAUDIT_REQUIRE_FOCUS_VALIDATOR, GPUAUDIT_REQUIRE_CHROMIUM,
#   GPUAUDIT_REQUIRE_OBJECT_STORE
#
# GPUAUDIT_PYTHON names a Python to try first; GPUAUDIT_{DUCKDB,FOCUS,STORE}_VENV move a venv.
# `bash scripts/test.sh --setup-only` does the set-up, says what would be skipped, and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="$HOME/.cache"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CACHE/gpuaudit-target}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"

# ---------------------------------------------------------------------------------------------
# Set-up. Every skip is decided here, before the long build, so that a required part that
# cannot be set up fails at once.

SKIPPED=()
# skip PART REQUIRE_FLAG WHY: fail when the flag is set, else remember the skip and say so.
skip() {
    if [ -n "${!2:-}" ]; then
        echo "$1: cannot run: $3 ($2 is set)" >&2
        exit 1
    fi
    echo "$1: will be skipped: $3"
    SKIPPED+=("$1: $3")
}

# Debian packages, when this machine allows it: root with apt-get.
APT_UPDATED=""
apt_install() {
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || return 1
    if [ -z "$APT_UPDATED" ]; then
        apt-get update -q >/dev/null || return 1
        APT_UPDATED=1
    fi
    echo "installing Debian packages: $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null
}

# python_at_least MINOR: the first Python 3.MINOR or newer that runs and can make a venv, as its
# real path. Candidates: GPUAUDIT_PYTHON, then by version (3.12 and 3.13 first: the versions the
# pinned packages are known to install on) the names python3.X and pyenv's installed versions
# (when pyenv is on the PATH or PYENV_ROOT is set), then python3.
PREFERRED_MINORS="12 13 11 10 14 15 9"
python_at_least() {
    local minor=$1 candidates=() root="" c m
    [ -n "${GPUAUDIT_PYTHON:-}" ] && candidates+=("$GPUAUDIT_PYTHON")
    if command -v pyenv >/dev/null 2>&1; then
        root="$(pyenv root 2>/dev/null || true)"
    fi
    root="${root:-${PYENV_ROOT:-}}"
    for m in $PREFERRED_MINORS; do
        candidates+=("python3.$m")
        if [ -n "$root" ] && [ -d "$root/versions" ]; then
            while IFS= read -r c; do candidates+=("$c/bin/python3"); done \
                < <(find "$root/versions" -mindepth 1 -maxdepth 1 -name "3.$m.*" | sort -V -r)
        fi
    done
    candidates+=(python3)
    for c in "${candidates[@]}"; do
        "$c" -c "import sys, venv, ensurepip; sys.exit(0 if sys.version_info >= (3, $minor) else 1)" \
            >/dev/null 2>&1 || continue
        "$c" -c 'import sys; print(sys.executable)'
        return 0
    done
    return 1
}

# venv_ready DIR SPEC: DIR holds a venv completely installed with exactly SPEC.
venv_ready() {
    [ -x "$1/bin/python" ] && [ "$(cat "$1/.gpuaudit-requirements" 2>/dev/null)" = "$2" ]
}

# make_venv DIR PYTHON PACKAGE...: a venv made from scratch; its requirements are written last,
# so an interrupted install is made again next time.
make_venv() {
    local dir=$1 py=$2
    shift 2
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    echo "making $dir with $py: $*"
    if "$py" -m venv "$dir" && "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@"; then
        echo "$*" > "$dir/.gpuaudit-requirements"
    else
        rm -rf "$dir"
        return 1
    fi
}

# venv PART FLAG DIR MINOR PACKAGE...: DIR ready for PART, or PART skipped.
venv() {
    local part=$1 flag=$2 dir=$3 minor=$4 py
    shift 4
    venv_ready "$dir" "$*" && return 0
    if ! py="$(python_at_least "$minor")"; then
        skip "$part" "$flag" "no Python >= 3.$minor found (install one, or set GPUAUDIT_PYTHON to it)"
        return 1
    fi
    if ! make_venv "$dir" "$py" "$@"; then
        skip "$part" "$flag" "pip could not install $* into $dir (is PyPI reachable?)"
        return 1
    fi
}

if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    rustup component add rustfmt clippy
fi

# The scripts that need only the standard library (the fuzz harness, the validator's driver).
if ! PY3="$(python_at_least 9)"; then
    echo "no Python >= 3.9 found: the DuckDB check, the validator and the fuzz harness need one" >&2
    exit 1
fi

DUCKDB_VENV="${GPUAUDIT_DUCKDB_VENV:-$CACHE/gpuaudit-duckdb-venv}"
RUN_DUCKDB=""
venv "DuckDB check" GPUAUDIT_REQUIRE_DUCKDB "$DUCKDB_VENV" 9 "duckdb>=1,<2" && RUN_DUCKDB=1

# The FinOps Foundation's FOCUS validator (PyPI focus-validator) needs Python >= 3.12.
FOCUS_VENV="${GPUAUDIT_FOCUS_VENV:-$CACHE/gpuaudit-focus-venv}"
RUN_FOCUS=""
venv "FOCUS validator" GPUAUDIT_REQUIRE_FOCUS_VALIDATOR "$FOCUS_VENV" 12 \
    "focus-validator==2.2.1" "pyarrow<22" && RUN_FOCUS=1

# The HTML report in a real browser (tests/cli/report.rs finds /usr/bin/chromium).
chromium_runs() {
    local b
    for b in /usr/bin/chromium /usr/bin/chromium-browser; do
        [ -x "$b" ] && "$b" --version >/dev/null 2>&1 && return 0
    done
    return 1
}
if ! chromium_runs && ! { apt_install chromium && chromium_runs; }; then
    skip "report in Chromium" GPUAUDIT_REQUIRE_CHROMIUM \
        "no /usr/bin/chromium (install Debian's chromium package)"
fi

# The object store suite: moto's S3 server and pyspark 4 (Python >= 3.9, Java >= 17).
java_major() {
    java -version 2>&1 | sed -n 's/.*version "\(1\.\)\{0,1\}\([0-9]*\).*/\2/p' | head -1
}
java_ok() {
    command -v java >/dev/null 2>&1 && [ "$(java_major)" -ge 17 ] 2>/dev/null
}
STORE_VENV="${GPUAUDIT_STORE_VENV:-$CACHE/gpuaudit-store-venv}"
RUN_STORE=""
SPARK_FLAG=""
if venv "object store suite" GPUAUDIT_REQUIRE_OBJECT_STORE "$STORE_VENV" 9 \
    "moto[server]>=5.1,<6" boto3 "pyspark>=4,<5"; then
    RUN_STORE=1
    if ! java_ok && ! { { apt_install openjdk-17-jre-headless || apt_install default-jre-headless; } && java_ok; }; then
        skip "Spark in the object store suite" GPUAUDIT_REQUIRE_OBJECT_STORE \
            "no Java >= 17 (install Debian's openjdk-17-jre-headless)"
        SPARK_FLAG="--no-spark"
    fi
fi

if [ "${1:-}" = "--setup-only" ]; then
    echo "set-up done; ${#SKIPPED[@]} part(s) would be skipped"
    exit 0
fi

# ---------------------------------------------------------------------------------------------
# The tests.

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

# The real exports' totals (fixtures/real/), computed without gpuaudit, are the ones the tests
# compare with. The Parquet exports' are read with DuckDB: with the DuckDB check's venv when it
# was set up (else the script checks the CSV exports' and says it kept the others').
if [ -n "$RUN_DUCKDB" ]; then
    "$DUCKDB_VENV/bin/python" fixtures/real/totals.py --check
else
    "$PY3" fixtures/real/totals.py --check
fi

if [ -n "$RUN_DUCKDB" ]; then
    "$DUCKDB_VENV/bin/python" tests/duckdb_check.py "$CARGO_TARGET_DIR/debug/gpuaudit"
fi

# The validator on the FOCUS export of the example ledger and of every fixture ledger,
# offline; its failures outside tests/focus_allowlist.txt fail the suite.
if [ -n "$RUN_FOCUS" ]; then
    "$PY3" tests/focus_validator.py "$CARGO_TARGET_DIR/debug/gpuaudit" "$FOCUS_VENV"
fi

# The fuzz harness: mutated bills of every profile and spreadsheet, for a bounded time (no
# panic, no hang, bounded memory, errors naming the file, the ledger unchanged on failure).
# Run it longer by hand: python3 scripts/fuzz.py BINARY --seconds 3600
"$PY3" scripts/fuzz.py "$CARGO_TARGET_DIR/debug/gpuaudit" --seconds "${GPUAUDIT_FUZZ_SECONDS:-60}"

# The ledger on an object store, shared by many importers, read by Spark (tests/object_store.py):
# moto's S3 server on 127.0.0.1 and pyspark in local mode, against gpuaudit built with
# `--features cloud`.
if [ -n "$RUN_STORE" ]; then
    cargo build -q -p gpuaudit-cli --features cloud
    cp "$CARGO_TARGET_DIR/debug/gpuaudit" "$CARGO_TARGET_DIR/gpuaudit-cloud"
    "$STORE_VENV/bin/python" tests/object_store.py "$CARGO_TARGET_DIR/gpuaudit-cloud" $SPARK_FLAG
fi

if [ ${#SKIPPED[@]} -gt 0 ]; then
    echo "all tests passed; skipped:"
    printf '  %s\n' "${SKIPPED[@]}"
else
    echo "all tests passed; nothing skipped"
fi

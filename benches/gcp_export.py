#!/usr/bin/env python3
"""Google Cloud's billing export, as JSON lines and as Parquet, against DuckDB, in one run.

usage: python3 benches/gcp_export.py PATH/TO/release/gpuaudit [RECORDS]   (default 200000)

The records are those of fixtures/gcp/valid/detailed_export_a2_vm.json (a detailed export: an
A2 VM's cores, RAM and GPU with a committed use credit, a disk, an IP with a free-tier credit,
egress, a snapshot, storage), repeated hour after hour to RECORDS records, written under
$CARGO_TARGET_DIR/bench-data (never committed) as JSON lines and, by DuckDB, as Parquet with
its nested columns (structs and lists, as BigQuery's Parquet export has them). Then, three
times each and alternating: `gpuaudit import` of each into a fresh ledger, and DuckDB copying
read_json / read_parquet of it to a Parquet file. Prints the median wall time and peak RSS."""
import json, os, statistics, subprocess, sys, tempfile
from datetime import datetime, timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import timed

GPUAUDIT = os.path.abspath(sys.argv[1])
RECORDS = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
DATA = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "bench-data")
SEED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "gcp", "valid",
                    "detailed_export_a2_vm.json")
FMT = "%Y-%m-%d %H:%M:%S UTC"


def generate(path):
    seed = [json.loads(line) for line in open(SEED, encoding="utf-8") if line.strip()]
    with open(path, "w", encoding="utf-8") as out:
        for i in range(RECORDS):
            r = dict(seed[i % len(seed)])
            shift = timedelta(hours=i // len(seed))
            for key in ("usage_start_time", "usage_end_time"):
                r[key] = (datetime.strptime(r[key], FMT) + shift).strftime(FMT)
            out.write(json.dumps(r, separators=(",", ":")) + "\n")


def main():
    os.makedirs(DATA, exist_ok=True)
    path = os.path.join(DATA, f"gcp-{RECORDS}.json")
    if not os.path.exists(path):
        generate(path + ".tmp")
        os.rename(path + ".tmp", path)
    pq = path + ".parquet"
    if not os.path.exists(pq):
        subprocess.run([sys.executable, "-c", "import duckdb,sys; duckdb.connect().execute("
                        "f\"COPY (SELECT * FROM read_json('{sys.argv[1]}', format='newline_delimited')) TO '{sys.argv[2]}' (FORMAT parquet)\")",
                        path, pq], check=True)
    duck = ("import duckdb,sys; duckdb.connect().execute(\"COPY (SELECT * FROM %s) TO '%s' "
            "(FORMAT parquet)\")")
    runs = {k: [] for k in ("gpuaudit json", "gpuaudit parquet", "duckdb json", "duckdb parquet")}
    for _ in range(3):
        with tempfile.TemporaryDirectory(dir=DATA) as tmp:
            for name, bill in (("json", path), ("parquet", pq)):
                ledger = os.path.join(tmp, "ledger-" + name)
                runs["gpuaudit " + name].append(timed([GPUAUDIT, "--ledger", ledger, "import", bill], tmp))
            out = os.path.join(tmp, "x.parquet")
            source = f"read_json('{path}', format='newline_delimited')"
            runs["duckdb json"].append(timed([sys.executable, "-c", duck % (source, out)], tmp))
            runs["duckdb parquet"].append(timed([sys.executable, "-c", duck % (f"read_parquet('{pq}')", out)], tmp))
    mb = lambda p: os.path.getsize(p) / 1e6
    print(f"{RECORDS} records: JSON lines {mb(path):.1f} MB, Parquet {mb(pq):.1f} MB")
    print("what               median s  peak RSS MB")
    for name, results in runs.items():
        print(f"{name:<18} {statistics.median(w for w, _ in results):>8.2f} {max(r for _, r in results):>12.0f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A wide AWS CUR imported as Parquet, against the same rows as CSV and against DuckDB, in one run.

usage: python3 benches/cur_parquet.py PATH/TO/release/gpuaudit [ROWS]   (default 119000)

The bill is the real anonymised CUR of the corpus (fixtures/real/aws-cur-legacy, 94 columns),
widened to 124 columns as a CUR with resource tags and more product columns is (30 more columns:
`resourceTags/user:*` and `product/*`, filled on some rows), its rows repeated with fresh
`identity/LineItemId`s to ROWS rows. It is written under $CARGO_TARGET_DIR/bench-data (never
committed) as CSV and, by DuckDB with the types it infers (times as TIMESTAMP, costs as DOUBLE,
as AWS writes them), as Parquet. Then, three times each and alternating, it times:
  - `gpuaudit import` of the CSV, and of the Parquet, each into a fresh ledger;
  - DuckDB (the Python package) `COPY (SELECT * FROM read_parquet(F)) TO 'x.parquet'`, and the
    same of read_csv.
It prints the median wall time and the peak RSS of each (/usr/bin/time -f %M). Needs duckdb."""
import csv, hashlib, os, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import timed

GPUAUDIT = os.path.abspath(sys.argv[1])
ROWS = int(sys.argv[2]) if len(sys.argv) > 2 else 119_000
DATA = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "bench-data")
REAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "real",
                    "aws-cur-legacy", "sample-anonymous-aws-export-dataset.csv")
EXTRA = ([f"resourceTags/user:{k}" for k in ("team", "project", "owner", "env", "cost-center",
          "app", "component", "customer", "stage", "Name")] +
         [f"product/{k}" for k in ("gpu", "gpuMemory", "vcpu", "memory", "storage",
          "networkPerformance", "physicalProcessor", "processorArchitecture", "clockSpeed",
          "dedicatedEbsThroughput", "ecu", "enhancedNetworkingSupported", "instanceFamily",
          "intelAvxAvailable", "intelTurboAvailable", "licenseModel", "normalizationSizeFactor",
          "operatingSystem", "preInstalledSw", "tenancy")])


def generate(path):
    with open(REAL, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = list(reader)
    assert len(header) + len(EXTRA) == 124, len(header)
    ident = header.index("identity/LineItemId")
    with open(path, "w", newline="", encoding="utf-8") as out:
        w = csv.writer(out, lineterminator="\n")
        w.writerow(header + EXTRA)
        for i in range(ROWS):
            row = list(rows[i % len(rows)])
            row[ident] = hashlib.sha1(str(i).encode()).hexdigest()
            extra = [f"v{(i + j) % 7}" if (i + j) % 3 == 0 else "" for j in range(len(EXTRA))]
            w.writerow(row + extra)


def main():
    os.makedirs(DATA, exist_ok=True)
    path = os.path.join(DATA, f"cur-124-{ROWS}.csv")
    if not os.path.exists(path):
        generate(path + ".tmp")
        os.rename(path + ".tmp", path)
    pq = path + ".parquet"
    if not os.path.exists(pq):
        subprocess.run([sys.executable, "-c", "import duckdb,sys; duckdb.connect().execute("
                        "f\"COPY (SELECT * FROM read_csv('{sys.argv[1]}')) TO '{sys.argv[2]}' (FORMAT parquet)\")",
                        path, pq], check=True)
    duck = ("import duckdb,sys; duckdb.connect().execute(\"COPY (SELECT * FROM %s('%s')) TO '%s' "
            "(FORMAT parquet)\")")
    runs = {k: [] for k in ("gpuaudit csv", "gpuaudit parquet", "duckdb parquet", "duckdb csv")}
    for _ in range(3):
        with tempfile.TemporaryDirectory(dir=DATA) as tmp:
            for name, bill in (("csv", path), ("parquet", pq)):
                ledger = os.path.join(tmp, "ledger-" + name)
                runs["gpuaudit " + name].append(timed([GPUAUDIT, "--ledger", ledger, "import", bill], tmp))
            for name, fn, bill in (("parquet", "read_parquet", pq), ("csv", "read_csv", path)):
                out = os.path.join(tmp, "x.parquet")
                runs["duckdb " + name].append(timed([sys.executable, "-c", duck % (fn, bill, out)], tmp))
    mb = lambda p: os.path.getsize(p) / 1e6
    print(f"{ROWS} rows, 124 columns: CSV {mb(path):.1f} MB, Parquet {mb(pq):.1f} MB")
    print("what               median s  peak RSS MB")
    for name, results in runs.items():
        print(f"{name:<18} {statistics.median(w for w, _ in results):>8.2f} {max(r for _, r in results):>12.0f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""gpuaudit import against DuckDB on the same FOCUS export, timed in one run.

usage: python3 benches/vs_duckdb.py PATH/TO/release/gpuaudit [SIZE_MB[gz] ...]   (default 100 1000)

A size ending in `gz` (`1000gz`) times the same export gzip-compressed (`gzip -6`, as AWS
delivers it): gpuaudit decompresses as it reads, DuckDB's read_csv reads the `.csv.gz`. A size
ending in `pq` times it as Parquet (written by DuckDB with the types it infers): gpuaudit
imports the Parquet bill, DuckDB copies read_parquet of it to another Parquet file.

For each size it generates a FOCUS 1.2 CSV (about 200 bytes a row: 1000 MB ≈ 5 M rows) under
$CARGO_TARGET_DIR/bench-data (never committed), then runs, three times each and alternating:
  - `gpuaudit import FILE` into a fresh ledger (detection, parsing, dedup, Parquet, commit);
  - DuckDB (the Python package) `COPY (SELECT * FROM read_csv(FILE)) TO 'x.parquet'`.
It prints the median wall time of each, the ratio, and each tool's peak RSS (/usr/bin/time -f %M,
or getrusage of the child when that is missing); then ("again") the time and peak RSS of
importing the same file a second time into gpuaudit's ledger, every row a duplicate.
Needs `pip install duckdb`."""
import os, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

GPUAUDIT = os.path.abspath(sys.argv[1])
SIZES = sys.argv[2:] or ["100", "1000"]
DATA = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "bench-data")
from focus_data import generate
from timing import timed

DUCK = ("import duckdb,sys; duckdb.connect().execute(\"COPY (SELECT * FROM read_csv('%s')) TO '%s' "
        "(FORMAT parquet)\")")

os.makedirs(DATA, exist_ok=True)
print("size     rows       gpuaudit s  duckdb s  ratio  gpuaudit RSS MB  duckdb RSS MB  again s  again MB")
for size in SIZES:
    gz, pq = size.endswith("gz"), size.endswith("pq")
    mb = int(size.removesuffix("gz").removesuffix("pq"))
    path = os.path.join(DATA, f"focus-{mb}mb.csv")
    rows_path = path + ".rows"
    if not os.path.exists(rows_path):
        rows = generate(path, mb)
        open(rows_path, "w").write(str(rows))
    rows = int(open(rows_path).read())
    if gz:
        if not os.path.exists(path + ".gz"):
            subprocess.run(f"gzip -6 -c {path} > {path}.gz.tmp && mv {path}.gz.tmp {path}.gz", shell=True, check=True)
        path += ".gz"
    if pq:
        if not os.path.exists(path + ".parquet"):
            subprocess.run([sys.executable, "-c", "import duckdb,sys; duckdb.connect().execute(f\"COPY (SELECT * FROM read_csv('{sys.argv[1]}')) TO '{sys.argv[1]}.parquet' (FORMAT parquet)\")", path], check=True)
        path += ".parquet"
    ours, theirs, again = [], [], []
    for _ in range(3):
        with tempfile.TemporaryDirectory(dir=DATA) as tmp:
            ledger = os.path.join(tmp, "ledger")
            ours.append(timed([GPUAUDIT, "--ledger", ledger, "import", path], tmp))
            duck = DUCK.replace("read_csv", "read_parquet") if pq else DUCK
            theirs.append(timed([sys.executable, "-c", duck % (path, os.path.join(tmp, "x.parquet"))], tmp))
            again.append(timed([GPUAUDIT, "--ledger", ledger, "import", path], tmp))
    g = statistics.median(w for w, _ in ours)
    d = statistics.median(w for w, _ in theirs)
    a = statistics.median(w for w, _ in again)
    print(f"{size:>5} MB {rows:>9} {g:>11.2f} {d:>9.2f} {g / d:>6.2f} {max(r for _, r in ours):>16.0f} "
          f"{max(r for _, r in theirs):>14.0f} {a:>10.2f} {max(r for _, r in again):>9.0f}")

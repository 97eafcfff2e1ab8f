#!/usr/bin/env python3
"""The ledger is usable by the engines users grow into: DuckDB reads
.gpuaudit/charges/**/*.parquet with Hive partitioning, and the view `gpuaudit sql ddl
--dialect duckdb` defines, and gets exactly the totals that `gpuaudit summary --format csv`
prints, DECIMAL for DECIMAL. With a file no commit names left in `charges/` (a crashed
writer's), the view still does; the glob does not.

usage: duckdb_check.py PATH/TO/gpuaudit   (run from the repository root)"""
import csv, decimal, glob, io, os, shutil, subprocess, sys, tempfile

import duckdb

GPUAUDIT = os.path.abspath(sys.argv[1])
BILLS = sorted(glob.glob("examples/bills/*.csv")) + [
    "fixtures/aliyun/valid/english_headers.csv",
    "fixtures/aliyun/valid/gb18030_title_and_footer.csv",
]
# --by keys → the DuckDB expression for each (month comes from the Hive partition path)
KEYS = {"platform": "platform", "category": "category", "instance": "coalesce(instance_id, '')", "month": "month"}
GROUPINGS = [["platform", "category"], ["month", "platform"], ["instance"], ["platform", "category", "instance", "month"]]

passed = failed = 0

def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")

def compare(con, env, source, label):
    for by in GROUPINGS:
        out = subprocess.run([GPUAUDIT, "summary", "--by", ",".join(by), "--format", "csv"],
                             check=True, env=env, capture_output=True, text=True).stdout
        ours = {}
        for row in csv.DictReader(io.StringIO(out)):
            key = tuple(row[k] for k in by) + (row["currency"],)
            ours[key] = (decimal.Decimal(row["billed_cost"]), decimal.Decimal(row["list_cost"]), int(row["charges"]))
        exprs = ", ".join(f"{KEYS[k]} AS {k}" for k in by)
        sql = (f"SELECT {exprs}, currency, sum(billed_cost) AS billed, "
               f"sum(coalesce(list_cost, billed_cost)) AS list, count(*) AS n, typeof(sum(billed_cost)) AS t "
               f"FROM {source} WHERE kind <> 'payment' GROUP BY ALL")
        theirs = {}
        for row in con.sql(sql).fetchall():
            *keys, currency, billed, lst, n, t = row
            check(f"{label} {by}: DuckDB sums as DECIMAL", t.startswith("DECIMAL(38,"), t)
            check(f"{label} {by}: DuckDB returns exact decimals", isinstance(billed, decimal.Decimal), type(billed))
            theirs[tuple(keys) + (currency,)] = (billed, lst, n)
        check(f"{label}: --by {','.join(by)}: same groups", set(ours) == set(theirs), f"{sorted(ours)} vs {sorted(theirs)}")
        for key in ours:
            check(f"{label}: --by {','.join(by)} {key}: same totals", ours[key] == theirs.get(key), f"{ours[key]} vs {theirs.get(key)}")


with tempfile.TemporaryDirectory() as tmp:
    ledger = os.path.join(tmp, ".gpuaudit")
    env = dict(os.environ, GPUAUDIT_LEDGER=ledger)
    subprocess.run([GPUAUDIT, "import", *BILLS], check=True, env=env, stdout=subprocess.DEVNULL)
    con = duckdb.connect()
    source = f"read_parquet('{ledger}/charges/**/*.parquet', hive_partitioning = true)"
    types = dict(con.sql(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {source})").fetchall())
    for col in ["billed_cost", "list_cost", "unit_price", "quantity", "balance_after"]:
        check(f"{col} is DECIMAL", types[col] == "DECIMAL(38,12)", types[col])
    check("ids are strings", types["id"] == "VARCHAR", types["id"])
    compare(con, env, source, "glob")
    ddl = subprocess.run([GPUAUDIT, "sql", "ddl", "--dialect", "duckdb"], check=True, env=env,
                         capture_output=True, text=True).stdout
    con.execute(ddl)
    compare(con, env, "charges", "sql ddl view")
    # A crashed writer's part file, named by no commit: the view (made again) ignores it.
    part = sorted(glob.glob(f"{ledger}/charges/**/*.parquet", recursive=True))[0]
    shutil.copy(part, os.path.join(os.path.dirname(part), "crashed-writer-0000.parquet"))
    con.execute(subprocess.run([GPUAUDIT, "sql", "ddl", "--dialect", "duckdb"], check=True, env=env,
                               capture_output=True, text=True).stdout)
    compare(con, env, "charges", "sql ddl view, with an orphan in charges/")
    globbed = con.sql(f"SELECT count(*) FROM {source}").fetchall()[0][0]
    viewed = con.sql("SELECT count(*) FROM charges").fetchall()[0][0]
    check("the glob counts the orphan, the view does not", globbed > viewed, f"{globbed} vs {viewed}")

print(f"duckdb: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)

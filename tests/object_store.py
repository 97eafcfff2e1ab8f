#!/usr/bin/env python3
"""The ledger on an object store, shared by many importers, read by Spark (issue 18).

Real components, on 127.0.0.1 only, started and stopped here: an S3 API server (PyPI
`moto[server]`, which implements create-only puts) and Spark in local mode (PyPI `pyspark`).

    python tests/object_store.py BINARY [--trials 200] [--no-spark]

BINARY is gpuaudit built with `--features cloud`; run this with the Python of a venv holding
moto, boto3 and pyspark (scripts/test.sh makes one). Checks, each against an s3:// ledger and,
where it says so, a local folder too:

- 8 importers started at once on 8 different bills (s3 and local): every row exactly once,
  no error, each importer told as many new rows as the bill has alone;
- 4 importers of the same bill at once (s3 and local): its rows land once;
- summary, waste and reconcile on the s3 ledger equal the local ledger's outputs, and again
  after its rollup and look-back files were damaged or removed and `ledger --repair` made
  them again (the same bytes);
- a writer killed at random moments (TRIALS times, from its start to past its end) leaves
  the ledger as before or after its batch, never half: gpuaudit's charge count, `ledger
  --verify`, and the symlink manifests (which never name a file no commit names);
- Spark, reading copies of the ledger taken between kills and the example ledger through
  `gpuaudit sql ddl --dialect spark`, gets exactly `summary --format csv`'s totals.
"""

import argparse
import concurrent.futures
import csv
import io
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples" / "bills").glob("*.csv"))
EIGHT = [str(p) for p in EXAMPLES] + [
    str(ROOT / "fixtures" / f)
    for f in (
        "tencent/valid/resource_bill_gb18030.csv",
        "ctyun/valid/yen_amounts.csv",
        "aws-cur/valid/cur2_snake_case.csv",
        "focus/valid/messy_export.csv",
    )
]
BUCKET = "gpuaudit-test"
TIMEOUT = 120


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# moto_server, with its create-only puts made atomic. moto checks `If-None-Match: *` and then
# stores the object: two steps, between which another request can come on its threaded
# server, so two create-only puts of one key could both succeed, the second replacing the
# first. S3 never lets that happen, and the ledger's commit point rests on it: eight importers
# at once on moto lost two commits in a CI run (each importer told it had committed, and the
# summary missed their bills). Object writes are taken one at a time here (reads stay
# side by side), so the check and the put are one step, as on S3.
MOTO_SERVER = """
import functools, sys, threading
from moto.s3.responses import S3Response
lock = threading.Lock()
for name in ("put_object", "_key_response_post"):
    def locked(self, *args, _method=getattr(S3Response, name), **kwargs):
        with lock:
            return _method(self, *args, **kwargs)
    setattr(S3Response, name, functools.wraps(getattr(S3Response, name))(locked))
from moto.server import main
main(sys.argv[1:])
"""


class Moto:
    """moto's S3 server on 127.0.0.1 (`MOTO_SERVER`), stopped on exit."""

    def __init__(self, work):
        self.port = free_port()
        self.log = open(work / "moto.log", "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", MOTO_SERVER, "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.endpoint = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise SystemExit("moto_server did not start: see moto.log")
                time.sleep(0.2)
        import boto3

        self.s3 = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )
        self.s3.create_bucket(Bucket=BUCKET)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()

    def keys(self, prefix):
        out = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
            out += [o["Key"] for o in page.get("Contents", [])]
        return out

    def text(self, key):
        return self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()

    def mirror(self, prefix, into):
        """Copies every object under `prefix` into the folder `into`."""
        for key in self.keys(prefix + "/"):
            target = into / key[len(prefix) + 1 :]
            target.parent.mkdir(parents=True, exist_ok=True)
            self.s3.download_file(BUCKET, key, str(target))


class Gpuaudit:
    def __init__(self, binary, env):
        self.binary, self.env = binary, env

    def args(self, ledger, *args):
        return [self.binary, "--ledger", ledger, *args]

    def run(self, ledger, *args, check=True):
        out = subprocess.run(
            self.args(ledger, *args), env=self.env, capture_output=True, text=True, timeout=TIMEOUT
        )
        if check and out.returncode != 0:
            raise AssertionError(f"gpuaudit {' '.join(args)} on {ledger}: exit {out.returncode}\n{out.stderr}")
        return out

    def start(self, ledger, *args):
        return subprocess.Popen(
            self.args(ledger, *args), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def charges(self, ledger):
        first = self.run(ledger, "ledger").stdout.splitlines()[0]
        m = re.search(r"(\d+) batches, (\d+) charges", first)
        assert m, first
        return int(m.group(2))

    def committed(self, ledger):
        """The URLs of the committed part files, as the DuckDB definition names them."""
        out = self.run(ledger, "sql", "ddl", "--dialect", "duckdb", check=False)
        if out.returncode != 0:
            return set()
        return {line.strip().rstrip(",").strip("'") for line in out.stdout.splitlines() if line.startswith("  '")}


def new_counts(stdout):
    return [int(m.group(1)) for m in re.finditer(r"(\d+) new, \d+ duplicates", stdout)]


def at_once(ga, ledger, bills):
    """Starts one importer per bill at once; their (exit, stdout, stderr) in order."""
    procs = [ga.start(ledger, "import", bill) for bill in bills]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=TIMEOUT)
        outs.append((p.returncode, stdout, stderr))
    return outs


def eight_importers(ga, ledger, reference, alone):
    outs = at_once(ga, ledger, EIGHT)
    for bill, (code, stdout, stderr) in zip(EIGHT, outs):
        assert code == 0, f"{ledger}: {bill}: exit {code}\n{stderr}"
        assert new_counts(stdout) == [alone[bill]], f"{ledger}: {bill}: {stdout}"
    got = ga.run(ledger, "summary", "--format", "csv").stdout
    assert got == reference, f"{ledger}: the summary differs:\n{got}\nwant:\n{reference}"
    ga.run(ledger, "ledger", "--verify")
    print(f"8 importers at once on {ledger}: every row once, each told its {sorted(alone.values())} new rows")


def same_bill(ga, ledger):
    bill = str(EXAMPLES[2])
    outs = at_once(ga, ledger, [bill] * 4)
    for code, stdout, stderr in outs:
        assert code == 0, f"{ledger}: exit {code}\n{stderr}"
    news = sorted(n for _, stdout, _ in outs for n in new_counts(stdout))
    assert news == [0, 0, 0, 776], f"{ledger}: new rows per importer {news}"
    assert ga.charges(ledger) == 776
    ga.run(ledger, "ledger", "--verify")
    print(f"4 importers of one bill at once on {ledger}: its 776 rows landed once")


def same_outputs(ga, s3, local):
    config = str(ROOT / "examples" / "gpuaudit.toml")
    for args in (
        ["summary", "--format", "csv"],
        ["summary", "--by", "month,instance", "--format", "csv"],
        ["--config", config, "waste", "--month", "2024-05", "--format", "csv"],
        ["--config", config, "reconcile", "--month", "2024-05", "--format", "csv"],
        ["--config", config, "cost", "--month", "2024-05", "--compare", "--format", "csv"],
    ):
        a = ga.run(s3, *args, check=False)
        b = ga.run(local, *args, check=False)
        assert (a.returncode, a.stdout) == (b.returncode, b.stdout), f"{args}: s3 and local differ"
        assert a.returncode in (0, 1) and a.stdout.count("\n") >= 1, f"{args}: {a.stdout!r}"
    print("summary, waste, reconcile and cost on the s3 ledger equal the local ledger's")


def repaired(ga, moto, work, s3, local):
    """A rollup and look-back files of the s3 ledger damaged or gone (as a copy cut short
    leaves them; the local cache cleared, so that the damage is what is read): the reads
    that need them fail naming `ledger --repair`, which makes them again from the part
    files, the same bytes; then every output equals the local ledger's again."""
    rollups = moto.keys("examples/rollups/")
    look_back = sorted(moto.keys("examples/look-back/"))
    assert rollups and len(look_back) >= 2, (rollups, look_back)
    good = {key: moto.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() for key in rollups + look_back}
    moto.s3.put_object(Bucket=BUCKET, Key=rollups[0], Body=b"PAR1 not a parquet file PAR1")
    moto.s3.put_object(Bucket=BUCKET, Key=look_back[0], Body=good[look_back[0]][:100])
    moto.s3.delete_object(Bucket=BUCKET, Key=look_back[1])
    shutil.rmtree(work / "cache", ignore_errors=True)
    out = ga.run(s3, "summary", "--format", "csv", check=False)
    assert out.returncode == 2 and "`gpuaudit ledger --repair`" in out.stderr, out.stderr
    assert ga.run(s3, "ledger", "--verify", check=False).returncode == 1
    out = ga.run(s3, "ledger", "--repair")
    assert "rebuilt" in out.stdout and out.stdout.endswith("every file is as the manifest says\n"), out.stdout
    for key, data in good.items():
        assert moto.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == data, f"{key} as imported"
    same_outputs(ga, s3, local)
    print("a damaged rollup and look-back files on the s3 ledger made again by `ledger --repair`")


def variant(work, n):
    """The AutoDL example bill with its serial numbers made unique to trial n."""
    lines = EXAMPLES[2].read_text(encoding="utf-8").splitlines()
    path = work / f"variant-{n}.csv"
    path.write_text("\n".join([lines[0]] + [f"K{n:04d}{line}" for line in lines[1:]]) + "\n", encoding="utf-8")
    return str(path)


def symlinked(moto, prefix):
    urls = set()
    for key in moto.keys(prefix + "/_symlink_format_manifest/"):
        urls |= set(moto.text(key).split())
    return urls


def kill_trials(ga, moto, work, trials, mirrors):
    prefix = "killed"
    ledger = f"s3://{BUCKET}/{prefix}"
    start = time.time()
    ga.run(ledger, "import", variant(work, 0))
    whole = time.time() - start
    count = ga.charges(ledger)
    assert count == 776
    rng = random.Random(18)
    killed = finished = late = stale = 0
    serial = trials + 1
    for n in range(1, trials + 1):
        if n % 10 == 1:
            # How long a whole import takes now (the ledger grows): kills spread over it.
            serial += 1
            start = time.time()
            ga.run(ledger, "import", variant(work, serial))
            whole = time.time() - start
            count += 776
        proc = ga.start(ledger, "import", variant(work, n))
        time.sleep(rng.uniform(0, whole * 1.1))
        proc.kill()
        proc.communicate(timeout=TIMEOUT)
        after = ga.charges(ledger)
        assert after in (count, count + 776), f"trial {n}: {count} → {after} charges"
        if proc.returncode == 0:
            assert after == count + 776, f"trial {n}: it finished, yet {after}"
        killed += proc.returncode != 0
        finished += after == count + 776
        late += proc.returncode != 0 and after == count + 776
        verified = ga.run(ledger, "ledger", "--verify", check=False)
        if verified.returncode != 0:
            # Only a manifest one batch behind, after a kill between commit and manifests.
            problems = [l for l in verified.stdout.splitlines()[1:] if not l.startswith("repair: ")]
            assert verified.returncode == 1 and problems, verified.stdout
            assert all(l.startswith("_symlink_format_manifest/") for l in problems), verified.stdout
            stale += 1
        committed = ga.committed(ledger)
        links = symlinked(moto, prefix)
        assert links <= committed, f"trial {n}: a symlink manifest names uncommitted files {links - committed}"
        count = after
        if n % max(1, trials // 10) == 0:
            copy = work / f"mirror-{n}"
            moto.mirror(prefix, copy)
            mirrors.append((ledger, copy, ga.run(ledger, "summary", "--format", "csv").stdout))
    # The next commit brings every symlink manifest of the partition up to date, and
    # `ledger --manifests` does without one.
    ga.run(ledger, "import", variant(work, serial + 1))
    assert symlinked(moto, prefix) == ga.committed(ledger)
    ga.run(ledger, "ledger", "--verify")
    key = f"{prefix}/_symlink_format_manifest/month=2024-05/platform=autodl/manifest"
    moto.s3.put_object(Bucket=BUCKET, Key=key, Body=moto.text(key).split("\n", 1)[1].encode())
    assert ga.run(ledger, "ledger", "--verify", check=False).returncode == 1
    ga.run(ledger, "ledger", "--manifests")
    ga.run(ledger, "ledger", "--verify")
    print(
        f"{trials} writers killed at random within a whole import's time ({whole:.2f} s at the "
        f"end): {killed} died, {finished} batches committed ({late} killed after their commit, "
        f"{stale} leaving a symlink manifest one batch behind until the next commit): "
        f"the ledger always before or after, never half"
    )


def spark_checks(ga, mirrors, work):
    from pyspark.sql import SparkSession

    # Derby's log and anything else Spark leaves in the working folder stay in `work`.
    os.chdir(work)

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.warehouse.dir", str(work / "spark-warehouse"))
        .config("spark.hadoop.javax.jdo.option.ConnectionURL", f"jdbc:derby:;databaseName={work / 'metastore'};create=true")
        .config("spark.hadoop.hive.metastore.schema.verification", "false")
        .enableHiveSupport()
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for ledger, copy, summary in mirrors:
            ddl = ga.run(ledger, "sql", "ddl", "--dialect", "spark", "--location", f"file://{copy}").stdout
            for statement in ddl.split(";\n"):
                lines = [l for l in statement.splitlines() if l.strip() and not l.startswith("--")]
                if lines:
                    spark.sql("\n".join(lines))
            rows = spark.sql(
                "SELECT platform, category, currency, sum(billed_cost) AS billed, sum(coalesce(list_cost, billed_cost)) AS list, count(*) AS n "
                "FROM charges WHERE kind <> 'payment' GROUP BY platform, category, currency"
            ).collect()
            got = {(r.platform, r.category, r.currency): (r.billed, r.list, r.n) for r in rows}
            want = {
                (r["platform"], r["category"], r["currency"]): (Decimal(r["billed_cost"]), Decimal(r["list_cost"]), int(r["charges"]))
                for r in csv.DictReader(io.StringIO(summary))
            }
            assert got == want, f"{copy}: Spark {got}\n gpuaudit {want}"
            assert all(isinstance(v[0], Decimal) for v in got.values())
        print(f"Spark read {len(mirrors)} ledgers through the generated DDL: exactly summary's totals, DECIMAL for DECIMAL")
        # The Athena definition in a Hive metastore (Spark's, with Hive support): it parses, and
        # MSCK REPAIR finds one partition per symlink manifest. (Spark itself cannot read
        # through SymlinkTextInputFormat; Athena and Trino do.)
        ledger, copy, _ = mirrors[0]
        ddl = ga.run(ledger, "sql", "ddl", "--dialect", "athena", "--table", "athena_charges", "--location", f"file://{copy}").stdout
        for statement in ddl.split(";\n"):
            lines = [l for l in statement.splitlines() if l.strip() and not l.startswith("--")]
            if lines:
                spark.sql("\n".join(lines))
        partitions = sorted(r[0] for r in spark.sql("SHOW PARTITIONS athena_charges").collect())
        manifests = sorted(
            str(p.parent.relative_to(copy / "_symlink_format_manifest")) for p in copy.glob("_symlink_format_manifest/*/*/manifest")
        )
        assert partitions == manifests and partitions, f"{partitions} vs {manifests}"
        columns = {r[0]: r[1] for r in spark.sql("DESCRIBE athena_charges").collect() if r[0] and not r[0].startswith("#")}
        assert columns["billed_cost"] == "decimal(38,12)" and columns["charge_start"] == "timestamp", columns
        print(f"the Athena/Trino definition: accepted by a Hive metastore, {len(partitions)} partitions found by MSCK REPAIR")
    finally:
        spark.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--no-spark", action="store_true")
    opts = parser.parse_args()
    started = time.time()
    work = Path(tempfile.mkdtemp(prefix="gpuaudit-object-store-"))
    moto = Moto(work)
    try:
        env = dict(os.environ)
        env.pop("GPUAUDIT_LEDGER", None)
        env.pop("GPUAUDIT_FAILPOINT", None)
        env.update(
            AWS_ACCESS_KEY_ID="test",
            AWS_SECRET_ACCESS_KEY="test",
            AWS_REGION="us-east-1",
            GPUAUDIT_ENDPOINT=moto.endpoint,
            GPUAUDIT_CACHE=str(work / "cache"),
        )
        ga = Gpuaudit(opts.binary, env)
        # The reference: the eight bills one after another into a local folder, and each alone.
        reference_ledger = str(work / "reference")
        for bill in EIGHT:
            ga.run(reference_ledger, "import", bill)
        reference = ga.run(reference_ledger, "summary", "--format", "csv").stdout
        alone = {}
        for i, bill in enumerate(EIGHT):
            alone[bill] = new_counts(ga.run(str(work / f"alone-{i}"), "import", bill).stdout)[0]
        assert sum(alone.values()) == ga.charges(reference_ledger)

        eight_importers(ga, f"s3://{BUCKET}/eight", reference, alone)
        eight_importers(ga, str(work / "eight"), reference, alone)
        same_bill(ga, f"s3://{BUCKET}/same")
        same_bill(ga, str(work / "same"))

        s3, local = f"s3://{BUCKET}/examples", str(work / "examples")
        for ledger in (s3, local):
            ga.run(ledger, "import", *map(str, EXAMPLES))
        same_outputs(ga, s3, local)
        repaired(ga, moto, work, s3, local)

        mirrors = []
        copy = work / "mirror-examples"
        moto.mirror("examples", copy)
        mirrors.append((s3, copy, ga.run(s3, "summary", "--format", "csv").stdout))
        kill_trials(ga, moto, work, opts.trials, mirrors)
        if not opts.no_spark:
            spark_checks(ga, mirrors, work)
    finally:
        moto.stop()
    shutil.rmtree(work, ignore_errors=True)
    print(f"object store suite: passed in {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()

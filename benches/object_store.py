#!/usr/bin/env python3
"""Import of the 1 GB FOCUS benchmark export into a local ledger, with each Parquet codec, and
into an s3:// ledger on moto's S3 server; DuckDB's COPY of the same export beside them.

usage: python benches/object_store.py PATH/TO/release/gpuaudit [SIZE_MB]   (default 1000)

Run with the Python of the venv that holds moto and duckdb (scripts/test.sh makes one under
~/.cache/gpuaudit-store-venv; add duckdb with its pip). gpuaudit must be built with
`--features cloud`. The export is the one benches/vs_duckdb.py generates (made here if missing,
under $CARGO_TARGET_DIR/bench-data). Three runs of each (RUNS=N for more), alternating, the
codecs in turn first; median wall time, peak
RSS (/usr/bin/time -f %M) and the ledger's size. moto holds objects in its own memory: its RSS
is printed as well. Then `summary` on the s3 ledger, cold (empty cache) and warm.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import focus_data  # noqa: E402

GPUAUDIT = os.path.abspath(sys.argv[1])
MB = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
DATA = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "bench-data")
RUNS = int(os.environ.get("RUNS", "3"))


def timed(cmd, env=None):
    start = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    return wall, int(out.stderr.strip().splitlines()[-1]) / 1024


def size_of(folder):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs) / 1e6


def rss_of(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0


def main():
    path = focus_data.export(DATA, MB)
    work = tempfile.mkdtemp(dir=DATA)
    port = 5000 + os.getpid() % 1000
    server = os.path.join(os.path.dirname(sys.executable), "moto_server")
    moto = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(3)
    import boto3

    s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                      aws_access_key_id="test", aws_secret_access_key="test")
    s3.create_bucket(Bucket="bench")
    env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_REGION="us-east-1",
               GPUAUDIT_ENDPOINT=f"http://127.0.0.1:{port}")
    env.pop("GPUAUDIT_LEDGER", None)
    runs = {}
    try:
        codecs = ["snappy", "zstd", "lz4_raw"]
        for n in range(RUNS):
            # Each codec first, second and third in turn: no order favours one.
            for codec in codecs[n % 3:] + codecs[: n % 3]:
                ledger = os.path.join(work, f"{codec}-{n}")
                run_env = dict(env, GPUAUDIT_PARQUET_CODEC=codec)
                wall, rss = timed([GPUAUDIT, "--ledger", ledger, "import", path], run_env)
                runs.setdefault(f"local, {codec}", []).append((wall, rss, size_of(ledger)))
                shutil.rmtree(ledger)
            cache = os.path.join(work, f"cache-{n}")
            s3_env = dict(env, GPUAUDIT_CACHE=cache)
            url = f"s3://bench/ledger-{n}"
            wall, rss = timed([GPUAUDIT, "--ledger", url, "import", path], s3_env)
            runs.setdefault("s3 on moto, snappy", []).append((wall, rss, size_of(cache)))
            cold = timed([GPUAUDIT, "--ledger", url, "summary"], dict(env, GPUAUDIT_CACHE=cache + "-cold"))
            warm = timed([GPUAUDIT, "--ledger", url, "summary"], dict(env, GPUAUDIT_CACHE=cache + "-cold"))
            runs.setdefault("s3 summary, cold cache", []).append((cold[0], cold[1], 0))
            runs.setdefault("s3 summary, warm cache", []).append((warm[0], warm[1], 0))
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(cache + "-cold", ignore_errors=True)
            duck = ("import duckdb,sys; duckdb.connect().execute(\"COPY (SELECT * FROM read_csv('%s')) TO '%s' "
                    "(FORMAT parquet)\")") % (path, os.path.join(work, "x.parquet"))
            wall, rss = timed([sys.executable, "-c", duck])
            runs.setdefault("DuckDB COPY to Parquet", []).append((wall, rss, os.path.getsize(os.path.join(work, "x.parquet")) / 1e6))
        moto_rss = rss_of(moto.pid)
    finally:
        moto.terminate()
        shutil.rmtree(work, ignore_errors=True)
    print(f"{MB} MB FOCUS export ({path}), medians of {RUNS}")
    print(f"{'what':<26} {'wall s':>8} {'peak RSS MB':>12} {'ledger MB':>10}")
    for what, r in runs.items():
        print(f"{what:<26} {statistics.median(w for w, _, _ in r):>8.2f} {max(m for _, m, _ in r):>12.0f} "
              f"{statistics.median(s for _, _, s in r):>10.1f}")
    print(f"moto_server peak RSS: {moto_rss:.0f} MB")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""gpuaudit's read side (summary, ledger, waste, reconcile, cost) against DuckDB on the same ledger.

usage: python3 benches/read_side.py PATH/TO/release/gpuaudit [MILLIONS ...]   (default 2 10)

For each size it generates a FOCUS 1.2 export of about that many million charges over April and
May 2024 (never committed: under $CARGO_TARGET_DIR/bench-data), with a mix for the rules to chew
on: GPU instances that stop and start (compute and egress billed only while running, egress under
the VM's own id), their data disks and public IPs billed every hour of their life, a quarter of
them released with their disk and IP left billed for ten days after, daily snapshots. It imports
it into a ledger once, then runs, three times each and alternating, and prints the median wall
time and the peak RSS of:
  - `summary --by platform,category` and DuckDB's GROUP BY over the same Parquet files, with the
    same answer (checked): spend (payments left out) by platform, category and currency;
  - `summary --by month,instance` and DuckDB's equivalent (a charge without an instance whose
    resource is a compute instance's id counts for that instance, as gpuaudit links it);
  - `ledger`;
  - `waste --month 2024-05` and `reconcile --month 2024-05`, against DuckDB reading the same
    window: the four columns of the issue's example (`count(DISTINCT resource_id),
    sum(billed_cost), min(charge_start), max(charge_end)` over the months each reads), and on a
    second line every column the command reads (`DUCK_COLUMNS`);
  - `export --focus` to CSV and to Parquet (the whole ledger; compare with the import's time);
  - `cost --month 2024-05` (the month) and with `--compare` (the year up to it: April and May
    here), against DuckDB reading the same columns of the months each reads.
Needs `pip install duckdb` and /usr/bin/time."""
import csv, io, os, random, statistics, subprocess, sys, tempfile, time

GPUAUDIT = os.path.abspath(sys.argv[1])
SIZES = [float(s) for s in sys.argv[2:]] or [2, 10]
DATA = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "bench-data")
HEADER = ("BillingAccountId,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,"
          "ChargePeriodEnd,ChargeCategory,ChargeClass,ChargeDescription,PricingCategory,PricingQuantity,"
          "PricingUnit,ListUnitPrice,ListCost,BilledCost,ResourceId,ResourceType,RegionId,ServiceCategory,"
          "ServiceName\n")
HOURS = (30 + 31) * 24  # April and May 2024
ROWS_PER_INSTANCE = 3900  # about: see generate()


def stamp(hour):
    day, h = divmod(hour, 24)
    month, day = (4, day + 1) if day < 30 else (5, day - 29)
    return f"2024-{month:02d}-{day:02d} {h:02d}:00:00", f"2024-{month:02d}-{day:02d} {h:02d}:59:59", month


def generate(path, millions):
    rng = random.Random(int(millions * 1000))
    instances = max(1, int(millions * 1_000_000 / ROWS_PER_INSTANCE))
    rows = 0
    with open(path, "w") as f:
        f.write(HEADER)
        for i in range(instances):
            account = ("111111111111", "222222222222")[i % 2]
            region = ("eastus", "westeurope", "japaneast")[i % 3]
            vm = f"/subscriptions/s{i % 7}/vm/gpu-{i:05d}"
            disk, ip, snap = vm.replace("/vm/", "/disk/"), vm.replace("/vm/", "/ip/"), vm.replace("/vm/", "/snap/")
            start = rng.randrange(0, HOURS // 4)
            released = rng.random() < 0.25
            end = rng.randrange(HOURS // 2, HOURS) if released else HOURS
            leftover = min(HOURS, end + 240) if released else HOURS
            running, next_switch = True, start + rng.randrange(4, 72)
            out = []
            for hour in range(start, leftover):
                s, e, month = stamp(hour)
                period = f"{account},USD,2024-{month:02d}-01T00:00:00Z,2024-{month + 1:02d}-01T00:00:00Z,{s},{e},Usage,NULL"
                if hour >= next_switch:
                    running = not running
                    next_switch = hour + (rng.randrange(4, 72) if running else rng.randrange(2, 48))
                alive = hour < end
                if alive and running:
                    c = 3.673 + rng.randrange(0, 10) / 1000
                    out.append(f"{period},NC24ads_A100_v4 hours,Standard,1,Hours,{c:.3f},{c:.3f},{c:.3f},{vm},Virtual Machine,{region},Compute,Virtual Machines\n")
                    g = rng.randrange(1, 5000) / 100
                    t = g * 0.087
                    out.append(f"{period},Data Transfer Out,Standard,{g:.2f},GB,0.087,{t:.6f},{t:.6f},{vm},NULL,{region},Networking,Bandwidth\n")
                out.append(f"{period},P30 Premium SSD,Standard,1,GB-Month,0.0821,0.0821,0.0821,{disk},Disk,{region},Storage,Storage\n")
                out.append(f"{period},Standard IPv4 Static Public IP,Standard,1,Hours,0.005,0.005,0.005,{ip},Public IP Address,{region},Networking,Virtual Network\n")
                if hour % 24 == 0 and i % 3 == 0:
                    out.append(f"{period},Snapshot LRS,Standard,64,GB-Month,0.05,3.2,3.2,{snap},Snapshot,{region},Storage,Storage\n")
            f.writelines(out)
            rows += len(out)
    return rows


def timed(cmd, cwd):
    """Wall seconds, peak RSS in MB and stdout of one run of cmd. Its stdout goes to a file, as
    a user's `> findings.csv` would, and is read after the clock stops: captured through a pipe,
    this script's own decoding of `waste`'s 155 MB of CSV ran beside the command and was timed
    with it (3.0 s against 2.1-2.3 s for the same build writing to a file)."""
    with tempfile.TemporaryFile(dir=cwd) as stdout:
        start = time.perf_counter()
        out = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, cwd=cwd, stdout=stdout,
                             stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
        stdout.seek(0)
        text = stdout.read().decode()
    if out.returncode not in (0, 1):
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    return wall, int(out.stderr.strip().splitlines()[-1]) / 1024, text


PARTS = "read_parquet('%s/charges/**/*.parquet', hive_partitioning = true)"
DUCK_BY_PLATFORM = """SELECT platform, category, currency, sum(billed_cost)::VARCHAR, sum(coalesce(list_cost, billed_cost))::VARCHAR, count(*)
FROM {parts} WHERE kind <> 'payment' GROUP BY ALL"""
DUCK_BY_INSTANCE = """WITH c AS (SELECT billing_period, platform, account, category, kind, currency, instance_id, resource_id, billed_cost, list_cost FROM {parts} WHERE kind <> 'payment'),
vms AS (SELECT DISTINCT platform, account, instance_id FROM {parts} WHERE category = 'compute' AND instance_id IS NOT NULL)
SELECT c.billing_period, coalesce(c.instance_id, vms.instance_id) AS instance, c.currency, sum(c.billed_cost)::VARCHAR, sum(coalesce(c.list_cost, c.billed_cost))::VARCHAR, count(*)
FROM c LEFT JOIN vms ON c.instance_id IS NULL AND vms.platform = c.platform AND vms.account IS NOT DISTINCT FROM c.account AND vms.instance_id = c.resource_id
GROUP BY ALL"""
DUCK_WINDOW = """SELECT count(DISTINCT resource_id), sum(billed_cost), min(charge_start), max(charge_end)
FROM {parts} WHERE month IN ({months})"""
# The same window read with every column the command reads (rows.rs `row_columns`), each used so
# that DuckDB decodes it: the texts and codes every use reads, and `extra`, a use's own.
DUCK_COLUMNS = """SELECT count(DISTINCT resource_id), count(DISTINCT instance_id),
count(DISTINCT (platform, account, currency, gpu_model, source_item, billing_period, category, kind, pricing)),
sum(billed_cost), min(charge_start), max(charge_end), {extra}
FROM {parts} WHERE month IN ({months})"""
IN_MAY = "max(CASE WHEN month = '2024-05' THEN id END)"
EXTRA = {
    # Of the month's own columns only the ids: `waste --format csv` reads no file or line
    # (they are read only for an output that shows them).
    "waste": IN_MAY,
    "reconcile": "sum(quantity), sum(unit_price), sum(list_cost), sum(balance_after), max(source_file), "
                 "sum(source_line)",
    "cost": "sum(quantity)",
}


def duck(sql):
    return [sys.executable, "-c", "import duckdb,sys; r = duckdb.connect().execute(sys.argv[1]).fetchall(); "
            "print('\\n'.join(','.join('' if v is None else str(v) for v in row) for row in r))", sql]


def same_answer(ours_csv, duck_out, keys):
    """Our CSV (keys…, currency, billed, list, charges) and DuckDB's rows give the same groups."""
    def norm(v):
        return v.rstrip("0").rstrip(".") if "." in v else v
    ours = {tuple(r[:keys + 1]): tuple(norm(v) for v in r[keys + 1:]) for r in list(csv.reader(io.StringIO(ours_csv)))[1:]}
    theirs = {tuple(r[:keys + 1]): tuple(norm(v) for v in r[keys + 1:]) for r in csv.reader(io.StringIO(duck_out)) if r}
    if ours != theirs:
        diff = [k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k)][:5]
        sys.exit(f"different answers: {[(k, ours.get(k), theirs.get(k)) for k in diff]}")


os.makedirs(DATA, exist_ok=True)
print("charges    question                      gpuaudit s  RSS MB   duckdb s  RSS MB   ratio")
for millions in SIZES:
    path = os.path.join(DATA, f"readside-{millions:g}m.csv")
    if not os.path.exists(path + ".rows"):
        open(path + ".rows", "w").write(str(generate(path, millions)))
    rows = int(open(path + ".rows").read())
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        ledger = os.path.join(tmp, "ledger")
        wall, rss, _ = timed([GPUAUDIT, "--ledger", ledger, "import", path], tmp)
        print(f"{rows:>9}  import                        {wall:>10.2f} {rss:>7.0f}")
        parts = PARTS % ledger

        def window(use, months):
            """DuckDB's reads of a window: the four columns of the issue's example, and every column
            the use reads."""
            return [DUCK_WINDOW.format(parts=parts, months=months),
                    DUCK_COLUMNS.format(parts=parts, months=months, extra=EXTRA[use])]
        questions = [
            ("summary --by platform,category", ["summary", "--by", "platform,category", "--format", "csv"],
             DUCK_BY_PLATFORM.format(parts=parts), 2),
            ("summary --by month,instance", ["summary", "--by", "month,instance", "--format", "csv"],
             DUCK_BY_INSTANCE.format(parts=parts), 2),
            ("ledger", ["ledger"], None, None),
            ("waste --month 2024-05", ["waste", "--month", "2024-05", "--format", "csv"],
             window("waste", "'2024-02','2024-03','2024-04','2024-05'"), None),
            ("reconcile --month 2024-05", ["reconcile", "--month", "2024-05", "--format", "csv"],
             window("reconcile", "'2024-04','2024-05','2024-06'"), None),
            ("cost --month 2024-05", ["cost", "--month", "2024-05", "--format", "csv"],
             window("cost", "'2024-05'"), None),
            ("cost --month 2024-05 --compare", ["cost", "--month", "2024-05", "--compare", "--format", "csv"],
             window("cost", "'2024-04','2024-05'"), None),
            ("export --focus -o .csv", ["export", "--focus", "-o", os.path.join(tmp, "focus.csv")], None, None),
            ("export --focus -o .parquet", ["export", "--focus", "-o", os.path.join(tmp, "focus.parquet")], None, None),
        ]
        for name, args, sql, keys in questions:
            sqls = [] if sql is None else sql if isinstance(sql, list) else [sql]
            ours, theirs = [], [[] for _ in sqls]
            for _ in range(3):
                ours.append(timed([GPUAUDIT, "--ledger", ledger] + args, tmp))
                for q, times in zip(sqls, theirs):
                    times.append(timed(duck(q), tmp))
            if keys is not None:
                same_answer(ours[0][2], theirs[0][0][2], keys)
            g = statistics.median(w for w, _, _ in ours)
            line = f"{rows:>9}  {name:<29} {g:>10.2f} {max(r for _, r, _ in ours):>7.0f}"
            for k, times in enumerate(theirs):
                d = statistics.median(w for w, _, _ in times)
                if k:
                    line += f"\n{'':>11}  {'  DuckDB, every column read':<29} {'':>10} {'':>7}"
                line += f" {d:>10.2f} {max(r for _, r, _ in times):>7.0f} {g / d:>7.2f}"
            print(line, flush=True)

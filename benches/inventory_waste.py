#!/usr/bin/env python3
"""`waste --month` with and without an inventory snapshot, on the same ledger, against DuckDB
reading the same window.

usage: python3 benches/inventory_waste.py PATH/TO/release/gpuaudit [MILLIONS] [VOLUMES]
       (default 10 million charges, an inventory of 100,000 volumes)

Generates (never committed: under $CARGO_TARGET_DIR/bench-data) a FOCUS export of Azure
charges (ProviderName Microsoft, so the bill links no disk to its VM) over April and May 2024:
GPU VMs that stop and start, their data disks and public IPs billed every hour of their life,
a quarter released with their disk left billed; and an `az disk list` of VOLUMES disks, the
bill's disks among them (half attached to their VM, half unattached since May 10) and the rest
disks the bill does not name. Imports the bill once, then runs `waste --month 2024-05 --format
csv` three times before the inventory is imported and three times after, alternating with
DuckDB's read of the same window (`count(DISTINCT resource_id), sum(billed_cost)` over the
months waste reads), and prints the median wall time and peak RSS of each.
Needs `pip install duckdb` and /usr/bin/time."""
import json, os, random, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import timed  # noqa: E402

GPUAUDIT = os.path.abspath(sys.argv[1])
MILLIONS = float(sys.argv[2]) if len(sys.argv) > 2 else 10
VOLUMES = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
DATA = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "bench-data")
HOURS = (30 + 31) * 24
ROWS_PER_INSTANCE = 3 * HOURS * 3 // 4
SUB = "/subscriptions/00000000-0000-0000-0000-00000000000{}/resourceGroups/gpu/providers/Microsoft.Compute"
HEADER = ("BillingAccountId,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,"
          "ChargePeriodEnd,ChargeCategory,ChargeDescription,PricingQuantity,PricingUnit,BilledCost,"
          "ResourceId,ResourceType,ServiceCategory,ServiceName,ProviderName\n")


def stamp(hour):
    day, h = divmod(hour, 24)
    month, d = (4, day + 1) if day < 30 else (5, day - 29)
    s = f"2024-{month:02d}-{d:02d}T{h:02d}:00:00Z"
    day2, h2 = divmod(hour + 1, 24)
    month2, d2 = (4, day2 + 1) if day2 < 30 else ((5, day2 - 29) if day2 < 61 else (6, 1))
    return s, f"2024-{month2:02d}-{d2:02d}T{h2:02d}:00:00Z", month


def generate(path, millions):
    rng = random.Random(int(millions * 1000))
    instances = max(1, int(millions * 1_000_000 / ROWS_PER_INSTANCE))
    rows = 0
    with open(path, "w") as f:
        f.write(HEADER)
        for i in range(instances):
            vm, disk = f"{SUB.format(i % 7)}/virtualMachines/gpu-{i:05d}", f"{SUB.format(i % 7)}/disks/gpu-{i:05d}-data"
            ip = f"{SUB.format(i % 7).replace('Compute', 'Network')}/publicIPAddresses/gpu-{i:05d}-ip"
            start = rng.randrange(0, HOURS // 4)
            end = rng.randrange(HOURS // 2, HOURS) if rng.random() < 0.25 else HOURS
            running, switch, out = True, start + rng.randrange(4, 72), []
            for hour in range(start, HOURS):
                s, e, month = stamp(hour)
                p = f"111111111111,USD,2024-{month:02d}-01T00:00:00Z,2024-{month + 1:02d}-01T00:00:00Z,{s},{e},Usage"
                if hour >= switch:
                    running, switch = not running, hour + (rng.randrange(4, 72) if running else rng.randrange(2, 48))
                if hour < end and running:
                    out.append(f"{p},NC24ads_A100_v4 hours,1,Hours,3.673,{vm},Virtual Machine,Compute,Virtual Machines,Microsoft\n")
                out.append(f"{p},P30 Premium SSD,1,GB-Month,0.0821,{disk},Disk,Storage,Storage,Microsoft\n")
                if hour < end:
                    out.append(f"{p},Standard IPv4 Static Public IP,1,Hours,0.005,{ip},Public IP Address,Networking,Virtual Network,Microsoft\n")
            f.writelines(out)
            rows += len(out)
    return rows, instances


def inventory(path, instances, volumes):
    disks = []
    for i in range(volumes):
        sub = SUB.format(i % 7)
        if i < instances:
            attached = f"{sub}/virtualMachines/gpu-{i:05d}" if i % 2 == 0 else None
            disks.append({"id": f"{sub}/disks/gpu-{i:05d}-data", "diskState": "Attached" if attached else "Unattached", "managedBy": attached})
        else:
            disks.append({"id": f"{sub}/disks/other-{i:06d}", "diskState": "Unattached", "managedBy": None})
    with open(path, "w") as f:
        json.dump({"taken_at": "2024-05-10T00:00:00Z", "output": disks}, f)


DUCK = ("SELECT count(DISTINCT resource_id), sum(billed_cost) FROM read_parquet('{ledger}/charges/**/*.parquet', "
        "hive_partitioning = true) WHERE billing_period IN ('2024-02','2024-03','2024-04','2024-05')")

os.makedirs(DATA, exist_ok=True)
path = os.path.join(DATA, f"inventory-{MILLIONS:g}m.csv")
if not os.path.exists(path + ".rows"):
    open(path + ".rows", "w").write(" ".join(map(str, generate(path, MILLIONS))))
rows, instances = map(int, open(path + ".rows").read().split())
with tempfile.TemporaryDirectory(dir=DATA) as tmp:
    ledger = os.path.join(tmp, "ledger")
    wall, rss = timed([GPUAUDIT, "--ledger", ledger, "import", path], tmp)
    print(f"{rows} charges, {instances} VMs: import {wall:.2f} s, {rss:.0f} MB")
    inv = os.path.join(tmp, "disks.json")
    inventory(inv, instances, VOLUMES)
    duck = [sys.executable, "-c", "import duckdb,sys; print(duckdb.connect().execute(sys.argv[1]).fetchall())", DUCK.format(ledger=ledger)]
    waste = [GPUAUDIT, "--ledger", ledger, "waste", "--month", "2024-05", "--format", "csv"]
    for label in ["without inventory", f"with {VOLUMES} volumes"]:
        if label.startswith("with "):
            wall, rss = timed([GPUAUDIT, "--ledger", ledger, "inventory", "import", inv], tmp)
            print(f"inventory import of {VOLUMES} volumes: {wall:.2f} s, {rss:.0f} MB")
        ours, theirs = [], []
        for _ in range(3):
            ours.append(timed(waste, tmp))
            theirs.append(timed(duck, tmp))
        g, d = statistics.median(w for w, _ in ours), statistics.median(w for w, _ in theirs)
        out = subprocess.run(waste, cwd=tmp, capture_output=True, text=True).stdout
        codes = {}
        for line in out.splitlines()[1:]:
            codes[line[:4]] = codes.get(line[:4], 0) + 1
        print(f"waste --month 2024-05 {label:<22} {g:>7.2f} s {max(r for _, r in ours):>6.0f} MB"
              f"  (findings {codes})  DuckDB {d:.2f} s {max(r for _, r in theirs):.0f} MB  ratio {g / d:.2f}", flush=True)

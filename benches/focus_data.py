"""The generated FOCUS 1.2 export of the benchmarks (about 200 bytes a row: 1000 MB ≈ 5 M rows),
shared by vs_duckdb.py and object_store.py."""
import os
import random

HEADER = ("BillingAccountId,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,"
          "ChargePeriodEnd,ChargeCategory,ChargeClass,ChargeDescription,PricingCategory,PricingQuantity,"
          "PricingUnit,ListUnitPrice,ListCost,BilledCost,ResourceId,ResourceType,RegionId,ServiceCategory,"
          "ServiceName\n")
KINDS = [("Virtual Machine", "Compute", "Virtual Machines", "NC24ads_A100_v4 hours", "Hours", 3673),
         ("Disk", "Storage", "Storage", "P30 Premium SSD", "GB-Month", 60),
         ("Snapshot", "Storage", "Storage", "Snapshot LRS", "GB-Month", 5),
         ("Public IP Address", "Networking", "Virtual Network", "Standard IPv4 Static Public IP", "Hours", 5),
         ("NULL", "Networking", "Bandwidth", "Data Transfer Out", "GB", 117)]

def generate(path, megabytes):
    rng = random.Random(megabytes)
    target = megabytes * 1_000_000
    with open(path, "w") as f:
        f.write(HEADER)
        written, i = len(HEADER), 0
        while written < target:
            rtype, scat, sname, desc, unit, cost = KINDS[i % len(KINDS)]
            hour = (i // len(KINDS)) % (31 * 24)
            day, h = 1 + hour // 24, hour % 24
            res = f"/subscriptions/s{i % 97}/res-{i // (len(KINDS) * 744)}-{i % len(KINDS)}"
            c = cost + rng.randint(0, 9)
            line = (f"012345678901,USD,2024-05-01T00:00:00Z,2024-06-01T00:00:00Z,2024-05-{day:02d} {h:02d}:00:00,"
                    f"2024-05-{day:02d} {h:02d}:59:59,Usage,NULL,{desc},Standard,1,{unit},{c / 1000:.3f},{c / 1000:.3f},"
                    f"{c / 1000:.3f},{res},{rtype},eastus,{scat},{sname}\n")
            f.write(line)
            written += len(line)
            i += 1
    return i


def export(data, megabytes):
    """The export of `megabytes` MB under the folder `data`, generated once."""
    os.makedirs(data, exist_ok=True)
    path = os.path.join(data, f"focus-{megabytes}mb.csv")
    if not os.path.exists(path + ".rows"):
        rows = generate(path, megabytes)
        with open(path + ".rows", "w") as f:
            f.write(str(rows))
    return path

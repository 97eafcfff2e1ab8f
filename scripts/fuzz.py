#!/usr/bin/env python3
"""Black-box fuzz and property harness for `gpuaudit import`.

Every case is one input the binary is run on, with a time limit and a cap on its address
space; the harness checks what a billing tool must never do, whatever the input:

- exit with anything but 0 or 2, print a panic, hang (time limit), or take unbounded memory
  (the address-space cap makes an allocation fail, which Rust reports as an abort);
- refuse an input (exit 2) without naming it, or change a byte of the ledger while refusing;
- accept an input and leave a ledger that `summary` or `ledger --verify` cannot read.

Inventory files (fixtures/inventory/, the clouds' CLI outputs) are mutated and imported with
`gpuaudit inventory import` too. Inputs are mutations of every bill under fixtures/ and examples/bills/ (CSV, XLSX, Parquet and
JSON lines (cut lines, deep nesting, odd credits), every
built-in profile and the profile-file fixtures): amounts and dates that are hard to read
(decimal commas, 10^26, year 0), stray and unclosed quotes, short and long rows, a header
column twice, control characters, truncation, byte flips, endless lines, and for workbooks
mutated zip members, far cell addresses and padded sheet XML; a quarter of the cases are
then delivered as platforms deliver them (gzip'ed, or zipped beside another bill), the
compressed bytes sometimes cut short or flipped. A ledger's derived file (a rollup or a
look-back file) damaged or removed is named by the reads that need it and made again,
exactly, by `ledger --repair`. Two property cases check
figures, not just behaviour: a FOCUS export split into parts imports in any order to exactly
the whole (count and exact sum), and amounts written with thousands separators read as the
number they are while decimal commas are refused. After every accepted import, `cost
--compare` and `report` must answer or refuse with an error (and the report hold no markup
from a bill); and a mutated `gpuaudit.toml` (values
replaced by negative, huge, non-numeric or non-date ones, lines doubled or dropped, unknown
keys) must either be used, with `cost`'s lines adding up to `summary`'s total, or be refused
with exit 2 naming the file. A bill that imports, exported as FOCUS (CSV or Parquet) and
imported back with `--profile focus`, must give the same spend by platform, month and category.

    python3 scripts/fuzz.py BINARY [--seconds 60] [--seed N] [--out DIR]

CI runs it for 60 seconds (`scripts/test.sh`); run it longer by hand, e.g. `--seconds 3600`.
Failing inputs are kept under --out (default: a temporary folder) and the run exits 1.
"""

import argparse
import csv
import io
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIME_LIMIT = 20  # seconds a case may take
MEMORY_LIMIT = 3 << 30  # bytes of address space a case may map

HARD_AMOUNTS = [
    "12,50", "0,99", "1.234,56", "1,2,3.5", "3,673", "193,20", "1,234.56", "99999999999999999999999999",
    "1000000000000000", "999999999999999.999999999999", "-0", "(1.20)", "1e30", "1E-20", "NaN", "inf",
    "¥ 1,234.00 元", "0.0000000000001", "--5", "+", ".", "１２.５", "12.5.6", "",
    # Machine exports' floats (OCI, Azure): exponents, digits past the ledger's 12 decimals.
    "6.266090E-12", "2.323760000E-9", "0.012264277499950943", "8.5450077867419368", "1E+16", "1e-41",
    "1e-999999999", "1E999999999", "5.0000000000005E-13", "-0.0000000000005", "1e", "1e+-5", "1.5E-4.2",
]
HARD_TIMES = [
    "0000-01-01 00:00:00", "9999-12-31 23:59:59", "2024-02-30 00:00:00", "2024-13-01", "1999-12-31 23:59:59",
    "2100-12-31 23:59:59", "2024-05-01T25:00:00Z", "20240501", "2024/5/1 9:00", "2024-05-01 00:00:00+14:00",
    # Dates with the year last (Azure's EA exports): ambiguous unless a profile says its order.
    "03/04/2024", "09/21/2023", "21/09/2023", "9/21/2023 1:05:00 PM", "9/21/2023 13:05:00 PM", "2/30/2024",
    "2023-11-13T10:00Z",
]
NASTY_TEXT = ["\x1b]0;x\x07", "\x00", '"', '""', '"open', "a\nb", "\r", "<script>", "=cmd|' /C calc'!A0", "\u202e", "\ufeff"]


def limits():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(binary, ledger, args, cwd):
    try:
        p = subprocess.run(
            [binary, "--ledger", str(ledger), *args], cwd=cwd, capture_output=True, timeout=TIME_LIMIT,
            preexec_fn=limits, env={k: v for k, v in os.environ.items() if not k.startswith("GPUAUDIT")},
        )
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return "timeout", "", ""


def snapshot(ledger):
    files = {}
    for path in sorted(ledger.rglob("*")):
        if path.is_file():
            files[str(path.relative_to(ledger))] = path.read_bytes()
    return files


def seeds():
    out = []
    for top in ["fixtures", "examples/bills"]:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix.lower() in (".csv", ".xlsx", ".parquet", ".json") and "inventory" not in path.parts:
                out.append(path)
    return out


def inventory_mutation(data, rng):
    """A mutation of a cloud CLI's JSON: a value made odd, a resource named twice with another
    state, nesting made deep, a list made long, the time wrapper broken, or bytes flipped."""
    text = data.decode("utf-8", "replace")
    choice = rng.randrange(7)
    if choice == 0:
        for key in ['"State": "', '"diskState": "', '"status": "', '"Status": "', '"InstanceState": "']:
            text = text.replace(key, key + rng.choice(["", "x", "\u0000", "available\u001b[31m"]), 1)
    elif choice == 1:
        for key in ['"VolumeId":', '"InstanceId":', '"id":', '"name":', '"DiskId":']:
            text = text.replace(key, key + " " + rng.choice(["null", "1e400", "[]", "{}", '"' + "a" * 5000 + '"']) + ', "was":', 1)
    elif choice == 2:
        text = text.replace("[", "[" + "[" * rng.choice([50, 200]), 1) + "]" * rng.choice([50, 200])
    elif choice == 3:
        try:
            doc = json.loads(text)
            for key in ["Volumes", "Reservations", "Addresses", "Snapshots", "DiskSet", "InstanceSet"]:
                if isinstance(doc, dict) and isinstance(doc.get(key), list) and doc[key]:
                    doc[key] = doc[key] * rng.choice([2, 1000])
            if isinstance(doc, list) and doc:
                doc = doc * rng.choice([2, 1000])
            text = json.dumps(doc)
        except ValueError:
            pass
    elif choice == 4:
        text = '{"taken_at": ' + rng.choice(['"2024-13-40T99:00:00Z"', "17", '"2018-11-15T00:00:00Z"', "null"]) + ', "output": ' + text + "}"
    elif choice == 5:
        text = text[: rng.randrange(len(text) + 1)]
    else:
        b = bytearray(text.encode("utf-8"))
        for _ in range(rng.randint(1, 8)):
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    return text.encode("utf-8")


def inventory_property(binary, work, rng, failures):
    """An inventory file, mutated: imported (exit 0) or refused naming the file (exit 2, the
    ledger unchanged), never a panic; after an accepted one, waste and cost still answer."""
    pool = sorted((ROOT / "fixtures/inventory").rglob("*.json"))
    data = rng.choice(pool).read_bytes()
    for _ in range(rng.randint(1, 2)):
        data = inventory_mutation(data, rng)
    ledger = work / "inventory-ledger"
    name = "inventory-case.json"
    (work / name).write_bytes(data)
    before = snapshot(ledger)
    code, _, err = run(binary, ledger, ["inventory", "import", name, "--at", "2024-05-20T00:00:00Z"], work)
    problem = None
    if code not in (0, 2) or "panicked" in err:
        problem = f"inventory import exits {code}"
    elif code == 2 and (name not in err or snapshot(ledger) != before):
        problem = "a refused inventory that does not name the file, or changed the ledger"
    elif code == 0:
        for args in (["waste", "--month", "2024-05"], ["cost", "--month", "2024-05"], ["inventory", "list"]):
            c, _, e = run(binary, ledger, args, work)
            if c != 0:
                problem = f"after an accepted inventory, {' '.join(args)} exits {c}: {e[:300]}"
                break
    if problem:
        kept = work / f"inventory-failure-{len(failures):04d}.json"
        kept.write_bytes(data)
        failures.append(f"{kept}: {problem}\n  {err[:500]}")


def csv_mutation(data, rng):
    """A mutation of a CSV bill's bytes, by cells where it can, by bytes where it cannot."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    choice = rng.randrange(12)
    if text is None or choice >= 10:
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
        if rng.random() < 0.3:
            b = b[: rng.randrange(len(b) + 1)]
        return bytes(b)
    lines = text.split("\n")
    if len(lines) < 2:
        return data + b"\n" + data
    i = rng.randrange(1, len(lines))
    cells = lines[i].split(",")
    if choice == 0:
        cells[rng.randrange(len(cells))] = rng.choice(HARD_AMOUNTS)
    elif choice == 1:
        cells[rng.randrange(len(cells))] = rng.choice(HARD_TIMES)
    elif choice == 2:
        j = rng.randrange(len(cells))
        cells[j] = cells[j][: rng.randrange(len(cells[j]) + 1)] + rng.choice(NASTY_TEXT) + cells[j]
    elif choice == 3:
        cells = cells[: rng.randrange(len(cells))]  # a short row
    elif choice == 4:
        cells += ["extra"] * rng.randint(1, 5)  # a long row
    elif choice == 5:
        header = lines[0].split(",")
        header.append(rng.choice(header))  # a column twice
        lines[0] = ",".join(header)
    elif choice == 6:
        lines.insert(i, '"' + lines[i])  # an unclosed quote
    elif choice == 7:
        lines.insert(i, "x" * rng.choice([70_000, 1_100_000]))  # a long line
    elif choice == 8:
        lines = lines[:1] + lines[1:] * rng.randint(2, 4)  # rows repeated
    elif choice == 9:
        return "\r\n".join(lines).encode("gb18030", "replace")
    lines[i] = ",".join(cells)
    return "\n".join(lines).encode("utf-8")


def json_mutation(data, rng):
    """A mutation of a JSON lines bill: a value replaced by a hard amount, time or text, a line
    cut or broken, nesting made deep, a credit made odd, or bytes flipped."""
    lines = data.decode("utf-8", "replace").split("\n")
    i = rng.randrange(len(lines))
    choice = rng.randrange(8)
    if choice == 0:
        lines[i] = lines[i].replace('"cost":', '"cost":' + json.dumps(rng.choice(HARD_AMOUNTS)) + ',"x":', 1)
    elif choice == 1:
        lines[i] = lines[i].replace('"usage_start_time":', '"usage_start_time":' + json.dumps(rng.choice(HARD_TIMES)) + ',"y":', 1)
    elif choice == 2:
        lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    elif choice == 3:
        lines[i] = lines[i].replace('"labels":', '"labels":' + '{"a":' * rng.choice([10, 20, 200]) + "1" + "}" * rng.choice([10, 20, 200]) + ',"z":', 1)
    elif choice == 4:
        lines[i] = lines[i].replace('"credits":[', '"credits":[{"name":' + json.dumps(rng.choice(NASTY_TEXT)) + ',"amount":' + rng.choice(["-1e400", '"x"', "null", "-0.5", "1e-30"]) + "},", 1)
    elif choice == 5:
        lines.insert(i, rng.choice(["[1,2]", "{", "null", '{"cost":1}', "\x00" * 10, "{}" * 1000]))
    elif choice == 6:
        lines = lines * rng.randint(2, 4)
    else:
        b = bytearray("\n".join(lines).encode("utf-8"))
        for _ in range(rng.randint(1, 8)):
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    return "\n".join(lines).encode("utf-8")


def xlsx_mutation(data, rng):
    """A mutation of a workbook: a member's XML edited, padded or broken, or the zip's bytes."""
    choice = rng.randrange(5)
    if choice == 0:
        b = bytearray(data)
        for _ in range(rng.randint(1, 16)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if choice == 1:
        return data[: rng.randrange(len(data))]
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            body = src.read(item)
            if item.filename.startswith("xl/worksheets/") and body:
                text = body.decode("utf-8", "replace")
                if choice == 2:
                    text = text.replace('r="A2"', 'r="XFD1048576"', 1).replace("<c r=\"B2\"", "<c r=\"ZZZZ9\"", 1)
                elif choice == 3:
                    text = text.replace("</row>", "</row>" + " " * rng.choice([1000, 2_000_000]), 1)
                else:
                    at = rng.randrange(len(text))
                    text = text[:at] + rng.choice(["<", "&", "<row r=\"0\">", "</sheetData>", "\x00"]) + text[at:]
                body = text.encode("utf-8")
            dst.writestr(item.filename, body)
    return out.getvalue()


def delivered(data, suffix, pool, rng):
    """`data` as a platform may deliver it: gzip'ed or zipped (with another bill beside it),
    the compressed bytes sometimes cut short or with a byte flipped. Returns (data, suffix)."""
    import gzip
    import zipfile
    choice = rng.random()
    if choice < 0.5:
        data, suffix = gzip.compress(data), suffix + ".gz"
    else:
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(f"a{suffix}", data)
            other = rng.choice(pool)
            z.writestr(f"b/{other.name}", other.read_bytes())
        data, suffix = out.getvalue(), ".zip"
    damage = rng.random()
    if damage < 0.2:
        data = data[: rng.randint(1, len(data))]
    elif damage < 0.4:
        at = rng.randrange(len(data))
        data = data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1:]
    return data, suffix


def parquet_mutation(data, rng):
    """A mutation of a Parquet bill's bytes: flipped, zeroed or cut, in its pages or footer."""
    data = bytearray(data)
    choice = rng.random()
    if choice < 0.4:
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(data))
            data[at] ^= 1 << rng.randrange(8)
    elif choice < 0.7:
        # The footer (metadata, its length) is where readers trust the file most.
        at = rng.randrange(max(0, len(data) - 400), len(data))
        data[at] = rng.choice([0, 0xFF, data[at] ^ 0x80])
    elif choice < 0.85:
        start = rng.randrange(len(data))
        data[start:start + rng.randint(1, 64)] = bytes(rng.randint(1, 64))
    else:
        data = data[: rng.randrange(4, len(data))]
    return bytes(data)


def check_case(binary, work, ledger, name, data, failures, out_dir):
    """Runs one import of `data` and checks it; returns the exit code."""
    case = work / name
    case.write_bytes(data)
    before = snapshot(ledger)
    code, stdout, stderr = run(binary, ledger, ["import", name], work)
    problem = None
    if code not in (0, 2):
        problem = f"exit {code}"
    elif "panicked" in stderr:
        problem = "panic"
    elif code == 2:
        if not stderr.startswith("error: ") or name not in stderr:
            problem = "an error that does not name the file"
        elif snapshot(ledger) != before:
            problem = "the ledger changed on a refused import"
    else:
        for args in (["summary", "--format", "json"], ["ledger", "--verify"]):
            c, _, err = run(binary, ledger, args, work)
            if c != 0:
                problem = f"after an accepted import, {' '.join(args)} exits {c}: {err[:300]}"
                break
        # The cost report of the month most fixtures bill: an answer, or an error that says
        # what (a sum too large to be exact), never a panic.
        c, _, err = run(binary, ledger, ["cost", "--month", "2024-05", "--compare", "--format", "csv"], work)
        if problem is None and (c not in (0, 2) or "panicked" in err or (c == 2 and not err.startswith("error: "))):
            problem = f"after an accepted import, cost exits {c}: {err[:300]}"
        # The month's report: written, or refused with an error; never a bill's markup in it.
        c, _, err = run(binary, ledger, ["report", "--month", "2024-05", "-o", "report.html"], work)
        page = work / "report.html"
        if problem is None and (c not in (0, 2) or "panicked" in err):
            problem = f"after an accepted import, report exits {c}: {err[:300]}"
        elif problem is None and c == 0 and "<script" in page.read_text(encoding="utf-8", errors="replace"):
            problem = "a bill's text became markup in the report"
        page.unlink(missing_ok=True)
    if problem:
        kept = out_dir / f"{len(failures):04d}-{name}"
        kept.write_bytes(data)
        failures.append(f"{kept}: {problem}\n  {stderr[:500]}")
    case.unlink()
    return code


def split_export_property(binary, work, rng, failures):
    """A FOCUS export split into parts imports, in any order, to exactly the whole."""
    header = "Id,BillingAccountId,BillingCurrency,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,BilledCost,ResourceId"
    rows, total = [], Decimal(0)
    for i in range(rng.randint(50, 400)):
        cost = Decimal(rng.randint(0, 10**8)) / Decimal(10 ** rng.randint(0, 8))
        total += cost
        h = rng.randrange(48)
        rows.append(f"r{i},0123,USD,2024-05-{1 + h // 24:02}T{h % 24:02}:00:00Z,2024-05-{1 + h // 24:02}T{h % 24:02}:59:59Z,Usage,{cost},vm-{rng.randrange(3)}")
    cut = sorted(rng.sample(range(1, len(rows)), rng.randint(1, min(7, len(rows) - 1))))
    parts = [rows[a:b] for a, b in zip([0] + cut, cut + [len(rows)])]
    names = []
    for n, part in enumerate(parts):
        (work / f"part{n}.csv").write_text(header + "\n" + "\n".join(part) + "\n")
        names.append(f"part{n}.csv")
    rng.shuffle(names)
    ledger = work / "split-ledger"
    shutil.rmtree(ledger, ignore_errors=True)
    at_once = rng.random() < 0.5
    for group in ([names] if at_once else [[n] for n in names]):
        code, _, err = run(binary, ledger, ["import", "--profile", "focus", *group], work)
        if code != 0:
            failures.append(f"split export: import exits {code}: {err[:300]}")
            return
    code, out, _ = run(binary, ledger, ["summary", "--by", "platform", "--format", "csv"], work)
    want = f"focus,USD,{total:.12f}"
    got = out.strip().split("\n")[-1] if out.strip() else ""
    fields = got.split(",")
    if code != 0 or len(fields) != 5 or Decimal(fields[2]) != total or fields[4] != str(len(rows)):
        failures.append(f"split export ({len(parts)} parts, {'at once' if at_once else 'one by one'}): want {want} and {len(rows)} charges, got {got!r}")


def grouping_property(binary, work, rng, failures):
    """Amounts with thousands separators read as the number they are; decimal commas are refused."""
    value = Decimal(rng.randint(1000, 10**12)) / 100
    grouped = f"{value:,.2f}"
    comma = f"{value:.2f}".replace(".", ",")
    head = "流水号,交易时间,收支类型,交易类型,交易渠道,交易金额,账户余额,备注\n"
    for text, ok in ((grouped, True), (comma, False)):
        bill = work / "grouped.csv"
        bill.write_text(head + f'P1,2024-05-01 10:00:00,支出,按量计费,余额,"{text}",0.00,容器实例ID：p1\n')
        ledger = work / "grouping-ledger"
        shutil.rmtree(ledger, ignore_errors=True)
        code, _, err = run(binary, ledger, ["import", "grouped.csv"], work)
        if ok:
            _, out, _ = run(binary, ledger, ["summary", "--format", "csv"], work)
            if code != 0 or f",{value:.2f}," not in out:
                failures.append(f"{text!r} should read as {value}: exit {code} {err[:200]} {out!r}")
        elif code != 2 or "a decimal comma?" not in err:
            failures.append(f"{text!r} should be refused as a decimal comma: exit {code} {err[:200]}")


CONFIG_VALUES = ['"-1"', '"1e30"', "1e300", '"abc"', '""', "-0", '"0.000000000000001"', "99999999999999999999",
                 '"2024-13-01"', "2024-05-01", '"USD"', '"CNY"', '["gpu"]', "[]", '"\u202e"', "true", "{}"]


def config_property(binary, work, rng, failures):
    """A mutated gpuaudit.toml (the example's, a value replaced, a line doubled or dropped, an
    unknown key) is either used, with the cost lines adding up to the summary, or refused with
    exit 2 naming the file; never a panic."""
    ledger = work / "cost-ledger"
    if not ledger.exists():
        bills = sorted(str(p) for p in (ROOT / "examples/bills").glob("*.csv"))
        if run(binary, ledger, ["import", *bills], work)[0] != 0:
            failures.append("cannot import the example bills for the config property")
            return
    lines = (ROOT / "examples/gpuaudit.toml").read_text().split("\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        choice = rng.randrange(4)
        if choice == 0 and "=" in lines[i]:
            lines[i] = lines[i].split("=")[0] + "= " + rng.choice(CONFIG_VALUES)
        elif choice == 1:
            lines.insert(i, lines[i])
        elif choice == 2:
            del lines[i]
        else:
            lines.insert(i, rng.choice(["gpus = 0", "gpus = 70000", "colour = 1", "[[platform_rate]]\nplatform = \"autodl\"", "data_disk_gb = \"-5\""]))
    config = work / "mutated.toml"
    config.write_text("\n".join(lines))
    code, out, err = run(binary, ledger, ["--config", str(config), "cost", "--month", "2024-05", "--compare", "--format", "csv"], work)
    # Refused naming the file, or a total too large to be exact (an error that says which).
    named = "mutated.toml" in err or "does not fit in 28 significant digits" in err
    if code not in (0, 2) or "panicked" in err or (code == 2 and not named):
        kept = work / f"config-{len(failures):04d}.toml"
        shutil.copy(config, kept)
        failures.append(f"{kept}: cost with a mutated config exits {code}: {err[:300]}")
    elif code == 0:
        code, lines_csv, err = run(binary, ledger, ["--config", str(config), "cost", "--month", "2024-05", "--format", "csv"], work)
        _, summary, _ = run(binary, ledger, ["summary", "--month", "2024-05", "--by", "platform", "--format", "csv"], work)
        total = lambda text, col: sum(Decimal(r[col]) for r in csv.DictReader(io.StringIO(text)))
        if code != 0 or total(lines_csv, "all_in") != total(summary, "billed_cost"):
            failures.append(f"cost lines do not add up to the summary with {config.read_text()!r}: {err[:200]}")


def export_property(binary, work, rng, pool, failures):
    """A bill (mutated once) that imports is exported as FOCUS, CSV or Parquet, and imported
    back with --profile focus: the same spend by platform, month and category."""
    seed = rng.choice(pool)
    data = seed.read_bytes()
    if seed.suffix.lower() == ".csv" and rng.random() < 0.5:
        data = csv_mutation(data, rng)
    bill = work / f"export-case{seed.suffix}"
    bill.write_bytes(data)
    first, back = work / "export-ledger", work / "export-back"
    for d in (first, back):
        shutil.rmtree(d, ignore_errors=True)
    profile = next((p for p in seed.parent.parent.glob("*.toml")), None)
    args = ["import"] + (["--profile", str(profile)] if profile else []) + [bill.name]
    if run(binary, first, args, work)[0] != 0:
        return
    out = work / rng.choice(["export.csv", "export.parquet"])
    code, _, err = run(binary, first, ["export", "--focus", "-o", out.name], work)
    if code != 0 or "panicked" in err:
        failures.append(f"{seed}: export of an accepted bill exits {code}: {err[:300]}")
        return
    summary = ["summary", "--by", "platform,month,category", "--format", "csv"]
    want = run(binary, first, summary, work)[1]
    if not want.strip() or want.count("\n") < 2:
        return
    code, _, err = run(binary, back, ["import", "--profile", "focus", out.name], work)
    got = run(binary, back, summary, work)[1]
    if code != 0 or got != want:
        kept = work / f"export-{len(failures):04d}{seed.suffix}"
        shutil.copy(bill, kept)
        failures.append(f"{kept}: its FOCUS export ({out.suffix}) does not import back to the same spend: exit {code} {err[:200]}\n  want {want[:300]!r}\n  got  {got[:300]!r}")


def commit_property(binary, work, rng, failures):
    """A ledger whose commit objects are damaged (cut, bytes flipped, a number changed, one
    removed, a stray file added) is read or refused with exit 2 naming the commit; never a
    panic, and never fewer charges without an error. An import into it either succeeds (a
    commit was removed: the ledger is its commits) or is refused the same way."""
    ledger = work / "commit-ledger"
    shutil.rmtree(ledger, ignore_errors=True)
    bills = sorted(str(p) for p in (ROOT / "examples/bills").glob("*.csv"))
    for bill in bills:
        if run(binary, ledger, ["import", bill], work)[0] != 0:
            failures.append(f"cannot import {bill} for the commit property")
            return
    commits = sorted((ledger / "_commits").glob("*.json"))
    target = rng.choice(commits)
    data = bytearray(target.read_bytes())
    choice = rng.randrange(5)
    if choice == 0:
        data = data[: rng.randrange(len(data))]
    elif choice == 1:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif choice == 2:
        data = data.replace(b'"commit": ', b'"commit": 9', 1)
    elif choice == 3:
        target.unlink()
        data = None
    else:
        (ledger / "_commits" / "notes.json").write_text("{}")
    if data is not None:
        target.write_bytes(bytes(data))
    for args in (["ledger"], ["summary", "--format", "csv"], ["import", bills[0]]):
        code, out, err = run(binary, ledger, args, work)
        named = "_commits/" in err
        if code not in (0, 2) or "panicked" in err or (code == 2 and not named):
            kept = work / f"commit-{len(failures):04d}.json"
            if target.exists():
                shutil.copy(target, kept)
            failures.append(f"{kept}: {args[0]} on a damaged commit ({choice}) exits {code}: {err[:300]}")
            return
        if choice == 4 and code != 0:
            failures.append(f"a stray file in _commits/ stops {args[0]}: {err[:300]}")


def part_property(binary, work, rng, failures):
    """A ledger whose part file is damaged (bytes flipped, zeroed or cut: `parquet_mutation`)
    gives waste, reconcile, cost, the review (`report`) and summary an answer or exit 2 with
    an error that names the damaged file or its batch; never a panic. These read the part
    files' columns straight into rows (texts and enums by their dictionaries' keys, read by
    polars-parquet's page decoder from the column chunks' bytes the footer points at, or by
    their Arrow views; ids as hex digits, amounts from their mantissas), each only the
    columns it uses of each month."""
    ledger = work / "part-ledger"
    shutil.rmtree(ledger, ignore_errors=True)
    for bill in sorted(str(p) for p in (ROOT / "examples/bills").glob("*.csv")):
        if run(binary, ledger, ["import", bill], work)[0] != 0:
            failures.append(f"cannot import {bill} for the part property")
            return
    parts = sorted((ledger / "charges").rglob("*.parquet"))
    target = rng.choice(parts)
    data = target.read_bytes()
    for _ in range(rng.randint(1, 3)):
        data = parquet_mutation(data, rng)
    target.write_bytes(data)
    month = target.parent.parent.name.removeprefix("month=")
    batch = target.name.rsplit("-", 1)[0]
    for args in (["waste", "--month", month, "--format", "json"],
                 ["reconcile", "--month", month, "--format", "csv"],
                 ["cost", "--month", month, "--compare", "--format", "csv"],
                 ["report", "--month", month, "-o", str(work / "part-report.html")],
                 ["summary", "--by", "month,instance", "--format", "csv"]):
        code, _, err = run(binary, ledger, args, work)
        named = target.name in err or batch in err
        if code not in (0, 2) or "panicked" in err or (code == 2 and not (err.startswith("error: ") and named)):
            kept = work / f"part-{len(failures):04d}.parquet"
            kept.write_bytes(data)
            failures.append(f"{kept}: {args[0]} on a damaged part file exits {code}: {err[:300]}")
            return


def derived_property(binary, work, rng, failures):
    """A ledger whose rollup or look-back file is damaged (`parquet_mutation`) or gone: each
    read answers as before or exits 2 naming the file and `ledger --repair`; never a panic.
    Then `ledger --repair` exits 0 and every read answers as before the damage, byte for
    byte: the file is made again from the batch's part files."""
    ledger = work / "derived-ledger"
    shutil.rmtree(ledger, ignore_errors=True)
    bills = sorted(str(p) for p in (ROOT / "examples/bills").glob("*.csv"))
    if run(binary, ledger, ["import", *bills], work)[0] != 0:
        failures.append("cannot import the examples for the derived property")
        return
    reads = (["summary", "--by", "month,platform,category", "--format", "csv"],
             ["waste", "--month", "2024-05", "--format", "csv"],
             ["reconcile", "--month", "2024-05", "--format", "csv"])
    before = [run(binary, ledger, args, work)[1] for args in reads]
    derived = sorted([*(ledger / "rollups").rglob("*.parquet"), *(ledger / "look-back").rglob("*.parquet")])
    target = rng.choice(derived)
    rel = str(target.relative_to(ledger))
    if rng.random() < 0.2:
        target.unlink()
    else:
        data = target.read_bytes()
        for _ in range(rng.randint(1, 3)):
            data = parquet_mutation(data, rng)
        target.write_bytes(data)
    for args in reads:
        code, _, err = run(binary, ledger, args, work)
        named = rel in err and "`gpuaudit ledger --repair`" in err
        if code not in (0, 1, 2) or "panicked" in err or (code == 2 and not named):
            failures.append(f"{args[0]} on a damaged {rel} exits {code}: {err[:300]}")
            return
    code, out, err = run(binary, ledger, ["ledger", "--repair"], work)
    after = [run(binary, ledger, args, work)[1] for args in reads]
    if code != 0 or after != before:
        failures.append(f"ledger --repair of a damaged {rel} exits {code} ({out[-300:]}{err[:300]}); "
                        f"the reads after {'equal' if after == before else 'differ from'} those before")


def location_property(binary, work, rng, failures):
    """A --ledger of any scheme is opened or refused with exit 2 naming it: never a folder
    named after the scheme, never a panic."""
    scheme = rng.choice(["s3", "S3", "gs", "az", "abfss", "ftp", "http", "file", "", "s3a", "x" * 300, "\u00e9"])
    rest = rng.choice(["bills/ledger", "", "/", "bucket", "b/../c", "b/" + "x" * 2000, "b?x=1#f", "%00"])
    url = f"{scheme}://{rest}"
    before = set(p.name for p in work.iterdir())
    code, out, err = run(binary, url, ["summary"], work)
    made = set(p.name for p in work.iterdir()) - before
    if code not in (0, 2) or "panicked" in err or (code == 2 and "--ledger" not in err and "ledger" not in err):
        failures.append(f"--ledger {url[:80]!r} exits {code}: {err[:300]}")
    if any(name.endswith(":") for name in made):
        failures.append(f"--ledger {url[:80]!r} made a local folder {made}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    binary = str(Path(args.binary).resolve())
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="gpuaudit-fuzz-"))
    out_dir = args.out or work / "failures"
    out_dir.mkdir(parents=True, exist_ok=True)
    # Profile files of the fixtures are found next to a gpuaudit.toml.
    (work / "profiles").mkdir()
    for toml in [ROOT / "fixtures/xiaoyun/xiaoyun.toml", ROOT / "fixtures/eurocloud/eurocloud.toml"]:
        shutil.copy(toml, work / "profiles" / toml.name)
    (work / "gpuaudit.toml").write_text("")
    ledger = work / "ledger"
    code, _, err = run(binary, ledger, ["import", str(ROOT / "fixtures/aliyun/valid/english_headers.csv")], work)
    if code != 0:
        sys.exit(f"cannot seed the ledger: {err}")
    pool = seeds()
    failures, runs, codes = [], 0, {}
    started = time.monotonic()
    while time.monotonic() - started < args.seconds:
        if runs % 25 == 0:
            split_export_property(binary, work, rng, failures)
            grouping_property(binary, work, rng, failures)
            config_property(binary, work, rng, failures)
            export_property(binary, work, rng, pool, failures)
            commit_property(binary, work, rng, failures)
            part_property(binary, work, rng, failures)
            derived_property(binary, work, rng, failures)
            location_property(binary, work, rng, failures)
        if runs % 5 == 0:
            inventory_property(binary, work, rng, failures)
        seed = rng.choice(pool)
        data = seed.read_bytes()
        mutate = {".xlsx": xlsx_mutation, ".parquet": parquet_mutation, ".json": json_mutation}.get(seed.suffix.lower(), csv_mutation)
        for _ in range(rng.randint(1, 3)):
            try:
                data = mutate(data, rng)
            except Exception:  # noqa: BLE001 - a mutated zip Python cannot read is just bytes
                data = csv_mutation(data, rng)
        suffix = seed.suffix
        if rng.random() < 0.25:
            data, suffix = delivered(data, suffix, pool, rng)
        name = f"case{runs}{suffix}"
        code = check_case(binary, work, ledger, name, data, failures, out_dir)
        codes[code] = codes.get(code, 0) + 1
        runs += 1
    elapsed = time.monotonic() - started
    print(f"fuzz: {runs} executions in {elapsed:.0f} s (seed {args.seed}; exit codes {codes}), {len(failures)} failures")
    for f in failures[:20]:
        print(f)
    if not args.out:
        if failures:
            print(f"failing inputs kept in {out_dir}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

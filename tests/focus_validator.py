#!/usr/bin/env python3
"""The FinOps Foundation's own validator on gpuaudit's FOCUS exports.

usage: python3 tests/focus_validator.py PATH/TO/gpuaudit VENV

For the example bills, every valid fixture and every real export (fixtures/real/), a ledger is
built, exported with
`gpuaudit export --focus` (CSV; Parquet too for the example and two fixtures) and validated
offline by PyPI `focus-validator` (installed in VENV, Python >= 3.12) as FOCUS 1.2. The
validator exits 0 even when rules fail, so its unittest report is read: any failed or erring
rule outside tests/focus_allowlist.txt fails this check. An allowlist entry marked
`non-ascii` is accepted only for an export whose ChargeDescription holds non-ASCII text.
"""
import csv
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BINARY = str(Path(sys.argv[1]).resolve())
VENV = Path(sys.argv[2]).resolve()
SITE = next((VENV / "lib").glob("python3*/site-packages"))
PARQUET_TOO = {"examples", "fixtures/aws-cur/valid/cur2_snake_case.csv", "fixtures/focus/valid/vm_with_egress_on_its_resource_id.csv"}


def allowlist():
    entries = {}
    for line in (ROOT / "tests/focus_allowlist.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            rule, condition, reason = (part.strip() for part in line.split("|", 2))
            if not reason:
                sys.exit(f"allowlist entry {rule} has no reason")
            entries[rule] = condition
    return entries


def gpuaudit(ledger, *args, cwd=ROOT):
    p = subprocess.run([BINARY, "--ledger", str(ledger), *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"gpuaudit {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p.stdout


def failed_rules(export):
    report = export.with_suffix(export.suffix + ".xml")
    p = subprocess.run(
        [str(VENV / "bin/focus-validator"), "--data-file", str(export), "--validate-version", "1.2",
         "--block-download", "--output-type", "unittest", "--output-destination", str(report)],
        cwd=SITE, capture_output=True, text=True, timeout=600,
    )
    if not report.exists():
        sys.exit(f"the validator wrote no report for {export}: exit {p.returncode}: {p.stderr[-2000:]}")
    root = ET.parse(report).getroot()
    if int(root.get("tests", "0")) < 500:
        sys.exit(f"the validator ran {root.get('tests')} rules on {export}: not the FOCUS 1.2 model")
    bad = {}
    for case in root.iter("testcase"):
        for tag in ("failure", "error"):
            found = case.find(tag)
            if found is not None:
                bad[case.get("name").split(" ")[0]] = (found.get("message") or found.text or "").strip()[:200]
    return bad, int(root.get("tests"))


def non_ascii_descriptions(csv_export):
    with open(csv_export, newline="", encoding="utf-8") as f:
        return any(not row["ChargeDescription"].isascii() for row in csv.DictReader(f))


def ledgers():
    bills = sorted(str(p) for p in (ROOT / "examples/bills").glob("*.csv"))
    yield "examples", [["import", *bills]]
    for platform in sorted((ROOT / "fixtures").iterdir()):
        valid = platform / "valid"
        if not valid.is_dir():
            continue
        profile = next((p for p in platform.glob("*.toml")), None)
        for bill in sorted(valid.iterdir()):
            args = ["import"] + (["--profile", str(profile)] if profile else []) + [str(bill)]
            yield str(bill.relative_to(ROOT)), [args]
    # The real exports third parties published (fixtures/real/), each a ledger of its own.
    for bill in sorted((ROOT / "fixtures/real").glob("*/*.csv")):
        yield str(bill.relative_to(ROOT)), [["import", str(bill)]]


def main():
    allowed = allowlist()
    problems, checked, rules = [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, (name, imports) in enumerate(ledgers()):
            ledger = Path(tmp) / f"ledger{n}"
            for args in imports:
                gpuaudit(ledger, *args)
            formats = ["csv", "parquet"]
            for fmt in formats:
                export = Path(tmp) / f"export{n}.{fmt}"
                gpuaudit(ledger, "export", "--focus", "-o", str(export))
                csv_export = Path(tmp) / f"export{n}.csv"
                if sum(1 for _ in open(csv_export, encoding="utf-8")) < 2:
                    print(f"{name}: nothing to export (payments only)")
                    break
                bad, rules = failed_rules(export)
                non_ascii = non_ascii_descriptions(csv_export)
                for rule, message in sorted(bad.items()):
                    condition = allowed.get(rule)
                    if condition is None or (condition == "non-ascii" and not non_ascii) or (condition == "csv" and fmt != "csv"):
                        problems.append(f"{name} ({fmt}): {rule}: {message}")
                checked += 1
                print(f"{name} ({fmt}): {len(bad)} rules failed, all allowlisted" if not any(
                    p.startswith(f"{name} ({fmt})") for p in problems) else f"{name} ({fmt}): FAILED")
    print(f"focus-validator: {checked} exports checked against {rules} FOCUS 1.2 rules, {len(problems)} unexpected failures")
    for p in problems:
        print("  " + p)
    sys.exit(1 if problems or checked == 0 else 0)


if __name__ == "__main__":
    main()

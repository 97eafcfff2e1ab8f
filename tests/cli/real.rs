//! The corpus of real exports (`fixtures/real/`, each with its provenance in its README): every
//! file imports with auto-detection and reads every row, its totals per currency and month
//! equal those `fixtures/real/totals.py` computed without gpuaudit (where the import rounds
//! amounts past 12 decimals, the rounding it states makes up the whole difference), a second
//! import adds nothing, and `cost`'s all-in equals `summary`'s every month.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::cost::{instance_line, per_currency, rows};
use super::{gpuaudit, stderr, stdout, workdir};

/// What the import of `file` in `d` said on its way out with exit code 2.
fn refused(d: &std::path::Path, file: &str) -> String {
    let out = gpuaudit(d, &["import", file]);
    assert_eq!(out.status.code(), Some(2), "{file}: {}", stderr(&out));
    stderr(&out)
}

/// One line of `fixtures/real/totals.csv`.
struct Expected {
    currency: String,
    month: String,
    rows: u64,
    billed_cost: Decimal,
}

fn expected() -> BTreeMap<String, Vec<Expected>> {
    let text = std::fs::read_to_string(super::root().join("fixtures/real/totals.csv")).unwrap();
    let mut by_file: BTreeMap<String, Vec<Expected>> = BTreeMap::new();
    for r in rows(&text) {
        by_file.entry(r["file"].clone()).or_default().push(Expected {
            currency: r["currency"].clone(),
            month: r["month"].clone(),
            rows: r["rows"].parse().unwrap(),
            billed_cost: r["billed_cost"].parse().unwrap(),
        });
    }
    by_file
}

/// The import line's counts (rows read, new) and what it says was rounded off per currency.
fn import_line(out: &str, file: &str) -> (u64, u64, BTreeMap<String, Decimal>) {
    let line = out.lines().find(|l| l.starts_with(file)).unwrap_or_else(|| panic!("{out}"));
    let number = |after: &str| -> u64 {
        let at = line.find(after).unwrap_or_else(|| panic!("{line}"));
        let words: Vec<&str> = line[..at].split_whitespace().collect();
        words.last().unwrap().parse().unwrap()
    };
    let mut off = BTreeMap::new();
    if let Some(at) = line.find("minus the ledger's: ") {
        let list = line[at + "minus the ledger's: ".len()..].trim_end_matches(')');
        for part in list.split(", ") {
            let (amount, currency) = part.split_once(' ').unwrap();
            off.insert(currency.to_owned(), amount.trim_start_matches('+').parse().unwrap());
        }
    }
    (number(" rows read"), number(" new"), off)
}

#[test]
fn every_real_export_imports_to_its_independent_totals() {
    let dir = workdir();
    let files = expected();
    assert!(files.len() >= 5, "{} files in the corpus", files.len());
    for (file, groups) in &files {
        let ledger = tempfile::tempdir().unwrap();
        let l = ledger.path().join("l");
        let (l, path) = (l.to_str().unwrap(), format!("fixtures/{file}"));
        let out = gpuaudit(dir.path(), &["--ledger", l, "import", &path]);
        assert!(out.status.success(), "{file}: {}", stderr(&out));
        let (read, new, off) = import_line(&stdout(&out), &path);
        let rows_in_file: u64 = groups.iter().map(|g| g.rows).sum();
        assert_eq!((read, new), (rows_in_file, rows_in_file), "{file}");

        let again = gpuaudit(dir.path(), &["--ledger", l, "import", &path]);
        assert!(stdout(&again).contains("nothing new: the ledger is unchanged"), "{file}");

        let summary =
            gpuaudit(dir.path(), &["--ledger", l, "summary", "--by", "month", "--format", "csv"]);
        assert!(summary.status.success(), "{file}: {}", stderr(&summary));
        let summary = rows(&stdout(&summary));
        let mut ledger_by_currency: BTreeMap<String, Decimal> = BTreeMap::new();
        let mut bill_by_currency: BTreeMap<String, Decimal> = BTreeMap::new();
        for g in groups {
            let row = summary
                .iter()
                .find(|r| r["month"] == g.month && r["currency"] == g.currency)
                .unwrap_or_else(|| panic!("{file}: no {} {} in the summary", g.month, g.currency));
            let billed: Decimal = row["billed_cost"].parse().unwrap();
            assert_eq!(row["charges"].parse::<u64>().unwrap(), g.rows, "{file} {}", g.month);
            let stated = off.get(&g.currency).copied().unwrap_or_default();
            // Each month is within the file's stated rounding of the bill's figure.
            assert!(
                (g.billed_cost - billed).abs() <= stated.abs(),
                "{file} {}: {billed} vs {}",
                g.month,
                g.billed_cost
            );
            *ledger_by_currency.entry(g.currency.clone()).or_default() += billed;
            *bill_by_currency.entry(g.currency.clone()).or_default() += g.billed_cost;
        }
        for (currency, bill) in &bill_by_currency {
            let stated = off.get(currency).copied().unwrap_or_default();
            assert_eq!(ledger_by_currency[currency] + stated, *bill, "{file} {currency}");
        }

        for month in
            groups.iter().map(|g| g.month.clone()).collect::<std::collections::BTreeSet<_>>()
        {
            let run = |cmd: &str| {
                let out = gpuaudit(
                    dir.path(),
                    &["--ledger", l, cmd, "--month", &month, "--format", "csv"],
                );
                assert!(out.status.success(), "{file} {cmd}: {}", stderr(&out));
                rows(&stdout(&out))
            };
            let summary = per_currency(&run("summary"), "billed_cost");
            assert_eq!(per_currency(&run("cost"), "all_in"), summary, "{file} {month}");
        }
    }
}

/// What real exports get wrong, each refused with exit 2 at its file, line and column, the
/// ledger as it was.
#[test]
fn real_world_bad_input_is_refused_at_its_line_and_the_ledger_kept() {
    let dir = workdir();
    let d = dir.path();
    let first = gpuaudit(d, &["import", "fixtures/real/azure-ea/EA_ActualCost_Small.csv"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let before = super::snapshot(&d.join(".gpuaudit"));
    let cases = [
        (
            "fixtures/focus/invalid/sub_account_id_twice.csv",
            "sub_account_id_twice.csv:1: column SubAccountId appears twice (columns 42 and 45)",
        ),
        (
            "fixtures/focus/invalid/date_with_the_year_last.csv",
            "date_with_the_year_last.csv:3: column ChargePeriodStart: \"09/18/2024 22:00:00\" is a date with its year last (is 03/04/2024 March or April?)",
        ),
        (
            "fixtures/oci/invalid/exponent_beyond_bounds.csv",
            "exponent_beyond_bounds.csv:4: column cost/myCost: \"2.5E+41\" is not an amount (its exponent is beyond ±40)",
        ),
        (
            "fixtures/azure/invalid/no_currency_column.csv",
            "no_currency_column.csv:1: column BillingCurrencyCode: not found in the header",
        ),
    ];
    for (file, want) in cases {
        let said = refused(d, file);
        assert!(said.contains(want), "{file}:\n got: {said}\nwant: {want}");
        assert_eq!(super::snapshot(&d.join(".gpuaudit")), before, "{file} changed the ledger");
    }
    // The Azure export without its currency hears of the Azure profile first.
    let said = refused(d, "fixtures/azure/invalid/no_currency_column.csv");
    assert!(said.contains("closest: azure (missing: BillingCurrencyCode)"), "{said}");
}

/// The FOCUS sample holds three clouds' charges under one billing account and many sub
/// accounts: each cloud is its own platform, each sub account its own group, and the export
/// imported back keeps all three.
#[test]
fn focus_from_the_clouds_keeps_providers_and_sub_accounts_through_a_round_trip() {
    let dir = workdir();
    let d = dir.path();
    let import =
        gpuaudit(d, &["--ledger", "a", "import", "fixtures/real/focus-sample/focus_sample.csv"]);
    assert!(import.status.success(), "{}", stderr(&import));
    let by = |ledger: &str, keys: &str| {
        let out = gpuaudit(d, &["--ledger", ledger, "summary", "--by", keys, "--format", "csv"]);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let groups = rows(&by("a", "platform,sub_account"));
    let platforms: std::collections::BTreeSet<&str> =
        groups.iter().map(|r| r["platform"].as_str()).collect();
    assert_eq!(platforms.into_iter().collect::<Vec<_>>(), ["aws", "azure", "oci"]);
    // Sub accounts are kept apart from the one billing account.
    let aws = groups.iter().filter(|r| r["platform"] == "aws").count();
    assert!(aws > 50, "{aws} AWS sub accounts");
    assert!(groups.iter().any(|r| r["platform"] == "aws" && r["sub_account"] == "11353890204"));
    assert!(groups.iter().any(|r| r["platform"] == "azure"
        && r["sub_account"] == "/subscriptions/ed570627-0265-4620-bb42-bae06bcfa914"));
    let accounts = rows(&by("a", "account"));
    assert!(accounts.iter().all(|r| r["account"] != "11353890204"), "{accounts:?}");

    let export = gpuaudit(d, &["--ledger", "a", "export", "--focus", "-o", "back.csv"]);
    assert!(export.status.success(), "{}", stderr(&export));
    let back = gpuaudit(d, &["--ledger", "b", "import", "back.csv"]);
    assert!(back.status.success(), "{}", stderr(&back));
    for keys in ["platform,sub_account", "account,platform", "platform,category,month"] {
        assert_eq!(by("a", keys), by("b", keys), "by {keys}");
    }
}

/// Azure's other header sets, made from the real EA export (the German portal's localised
/// headers with the English name in parentheses; MCA's camelCase names with ISO dates), read
/// to the same ledger as the export itself.
#[test]
fn azure_header_sets_read_alike() {
    let dir = workdir();
    let d = dir.path();
    let summary = |file: &str, ledger: &str| {
        let out = gpuaudit(d, &["--ledger", ledger, "import", file]);
        assert!(out.status.success(), "{file}: {}", stderr(&out));
        let by = "month,sub_account,category,platform";
        let out = gpuaudit(d, &["--ledger", ledger, "summary", "--by", by, "--format", "csv"]);
        stdout(&out)
    };
    let real = summary("fixtures/real/azure-ea/EA_ActualCost_Small.csv", "real");
    assert!(real.contains("1caaa5a3-2b66-438e-8ab4-bce37d518c5d"), "{real}");
    assert_eq!(summary("fixtures/azure/valid/localised_headers_de.csv", "de"), real);
    assert_eq!(summary("fixtures/azure/valid/camel_case_iso_dates.csv", "camel"), real);
}

/// A ledger written before sub accounts (`fixtures/ledgers/before_sub_accounts.tar.gz`, see
/// its README) reads as it did, finds every charge of its bills again (no id changed: the
/// newly read columns still count as cells in a row's identity, and FOCUS rows put on their
/// provider's platform keep the profile's in it), and takes new imports beside its part files.
#[test]
fn a_ledger_written_before_sub_accounts_reads_as_before_and_keeps_its_ids() {
    let dir = workdir();
    let d = dir.path();
    let tarball = super::root().join("fixtures/ledgers/before_sub_accounts.tar.gz");
    let untar = std::process::Command::new("tar")
        .args(["xzf", tarball.to_str().unwrap(), "-C", d.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(untar.success());
    // The sample as the old version could read it: without the sub account columns.
    let mut reader =
        csv::Reader::from_path(d.join("fixtures/real/focus-sample/focus_sample.csv")).unwrap();
    let header = reader.headers().unwrap().clone();
    let keep: Vec<usize> =
        (0..header.len()).filter(|&i| !header[i].starts_with("SubAccount")).collect();
    let mut writer =
        csv::Writer::from_path(d.join("focus_sample_without_sub_accounts.csv")).unwrap();
    writer.write_record(keep.iter().map(|&i| &header[i])).unwrap();
    for record in reader.records() {
        let record = record.unwrap();
        writer.write_record(keep.iter().map(|&i| &record[i])).unwrap();
    }
    writer.flush().unwrap();
    drop(writer);
    let run = |args: &[&str]| {
        let mut all = vec!["--ledger", "old"];
        all.extend_from_slice(args);
        let out = gpuaudit(d, &all);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    // The symlink manifests name files by their absolute paths: made again where it now is.
    run(&["ledger", "--manifests"]);
    assert!(run(&["ledger", "--verify"]).contains("every file is as the manifest says"));
    let before = std::fs::read_to_string(d.join("summary_before.csv")).unwrap();
    assert_eq!(run(&["summary", "--by", "platform,month", "--format", "csv"]), before);
    let mut bills: Vec<String> = std::fs::read_dir(d.join("examples/bills"))
        .unwrap()
        .map(|e| format!("examples/bills/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    bills.sort();
    bills.extend([
        "fixtures/aws-cur/valid/legacy_headers.csv".to_owned(),
        "fixtures/focus/valid/commitment_discount_usage_scenario_3.csv".to_owned(),
        "focus_sample_without_sub_accounts.csv".to_owned(),
    ]);
    let mut again = vec!["import"];
    again.extend(bills.iter().map(String::as_str));
    let out = run(&again);
    assert!(out.contains("nothing new: the ledger is unchanged"), "{out}");
    assert_eq!(run(&["summary", "--by", "platform,month", "--format", "csv"]), before);
    let none = run(&["summary", "--by", "sub_account", "--format", "csv"]);
    assert!(rows(&none).iter().all(|r| r["sub_account"].is_empty()), "{none}");
    // New charges beside the old: the sample with its sub accounts.
    run(&["import", "fixtures/real/focus-sample/focus_sample.csv"]);
    let by = rows(&run(&["summary", "--by", "platform,sub_account", "--format", "csv"]));
    assert!(by.iter().any(|r| r["platform"] == "aws" && r["sub_account"] == "11353890204"));
    assert!(by.iter().any(|r| r["platform"] == "focus" && r["sub_account"].is_empty()));
    run(&["waste", "--month", "2024-05"]);
    run(&["export", "--focus", "-o", "all.csv"]);
}

/// A file no profile fits, whose columns say which export it is, is told what to export
/// instead (the closest profiles alone would not help).
#[test]
fn exports_that_are_not_bills_are_told_what_to_export_instead() {
    let dir = workdir();
    let d = dir.path();
    let cases = [
        // Read by the gcp profile but for its credits, held in one cell.
        (
            "fixtures/unknown/invalid/gcp_bigquery_export.csv",
            "gcp_bigquery_export.csv:1: column credits: a row's credits in one cell",
        ),
        // A query's result with its own column names.
        (
            "fixtures/unknown/invalid/gcp_query_with_underscored_names.csv",
            "note: this is a Google Cloud billing export (BigQuery's standard or detailed usage cost table) without the columns gpuaudit reads",
        ),
        (
            "fixtures/unknown/invalid/aws_cost_explorer_report.csv",
            "note: this is an AWS Cost Explorer report, which holds totals, not charges",
        ),
        (
            "fixtures/unknown/invalid/oci_usage_report.csv",
            "note: this is an OCI usage report, which holds no money",
        ),
        (
            "fixtures/azure/invalid/no_currency_column.csv",
            "note: this is an Azure export without its currency",
        ),
    ];
    for (file, want) in cases {
        let said = refused(d, file);
        assert!(said.contains(want), "{file}: {said}");
    }
    // A file whose columns say nothing gets no note.
    let said = refused(d, "fixtures/unknown/invalid/unknown_header.csv");
    assert!(!said.contains("note:"), "{said}");
}

/// An Azure GPU VM's day (the real EA export's VM row made an `NC24ads A100 v4`): `cost` gives
/// its GPU model and GPU-hours from the meter's VM size.
#[test]
fn azure_gpu_hours_come_from_the_vm_size() {
    let dir = workdir();
    let d = dir.path();
    let out = gpuaudit(d, &["import", "fixtures/azure/valid/a100_vm_day.csv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let vm = instance_line(d, "2023-09", "/virtualMachines/trainer-a100");
    assert_eq!((vm["gpu_model"].as_str(), vm["gpu_hours"].as_str()), ("A100 80GB", "24"));
    assert_eq!(vm["compute"], "88.152");
}

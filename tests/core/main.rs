//! Integration tests of gpuaudit-core: profiles on fixtures, identity, and the store.
//! One test binary for the crate (each links polars).
#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{TimeZone, Utc};
use gpuaudit_core::import::find_profile;
use gpuaudit_core::report::{GroupKey, summarize};
use gpuaudit_core::{Category, Charge, ErrorKind, Kind, Pricing, parse_bill};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;

mod cost;
mod credits;
#[cfg(feature = "store")]
mod delivery;
mod formats;
mod hours;
mod inventory;
#[cfg(feature = "store")]
mod read_side;
#[cfg(feature = "store")]
mod read_side_cases;
mod reconcile;
#[cfg(feature = "store")]
mod shared;
#[cfg(feature = "store")]
mod store;
mod third_month;
mod trust;
mod waste;

pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel)
}

/// Spend per category, as the summary computes it.
pub fn by_category(charges: &[Charge]) -> BTreeMap<String, Decimal> {
    summarize(charges, &[GroupKey::Category])
        .unwrap()
        .into_iter()
        .map(|r| (r.keys[0].clone().unwrap(), r.billed_cost))
        .collect()
}

/// Expected totals by category.
/// A FOCUS export of many batches of rows, ASCII for its first 64 KiB and GB18030 later.
pub fn big_focus_file(dir: &std::path::Path, rows: usize) -> (std::path::PathBuf, Decimal) {
    let mut bytes =
        b"BillingAccountId,BillingCurrency,BillingPeriodStart,ChargePeriodStart,ChargePeriodEnd,\
ChargeCategory,ChargeDescription,BilledCost,ResourceId,ResourceType,RegionId,ServiceCategory\n"
            .to_vec();
    let mut total = Decimal::ZERO;
    for i in 0..rows {
        let cost = Decimal::new((i % 7 + 1) as i64, 3);
        total += cost;
        let region = if i >= rows - 10 { "华东1" } else { "eastus" };
        let line = format!(
            "012345678901,USD,2024-05-01T00:00:00Z,2024-05-{:02} {:02}:00:00,2024-05-{:02} {:02}:59:59,Usage,\
NC24ads_A100_v4 hours,{cost},res-{i},Virtual Machine,{region},Compute\n",
            1 + i / 24 % 31,
            i % 24,
            1 + i / 24 % 31,
            i % 24
        );
        bytes.extend_from_slice(&encoding_rs::GB18030.encode(&line).0);
    }
    let path = dir.join("big_focus.csv");
    std::fs::write(&path, bytes).unwrap();
    (path, total)
}

pub fn cats(pairs: &[(&str, Decimal)]) -> BTreeMap<String, Decimal> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

#[test]
fn autodl_totals_by_category_match_the_hand_computed_ones() {
    let bill = parse_bill(&fixture("autodl/valid/two_days.csv"), None).unwrap();
    assert_eq!(bill.report.profile, "autodl");
    assert_eq!(bill.charges.len(), 7);
    // compute: 2.12 + 2.18 + 0.73 − 2.00 refund; data disk: 2 × 1.60; the top-up is no spend.
    assert_eq!(
        by_category(&bill.charges),
        cats(&[("compute", dec!(3.03)), ("data_disk", dec!(3.20))])
    );
}

#[test]
fn autodl_payments_are_kept_but_never_spend() {
    let bill = parse_bill(&fixture("autodl/valid/two_days.csv"), None).unwrap();
    let topup = bill.charges.iter().find(|c| c.kind == Kind::Payment).unwrap();
    assert_eq!(topup.billed_cost, dec!(-100.00));
    assert_eq!(topup.balance_after, Some(dec!(100.00)));
    assert!(!topup.is_spend());
    let spend: Decimal = summarize(&bill.charges, &[]).unwrap().iter().map(|r| r.billed_cost).sum();
    assert_eq!(spend, dec!(6.23));
    let refund = bill.charges.iter().find(|c| c.kind == Kind::Refund).unwrap();
    assert_eq!(refund.billed_cost, dec!(-2.00));
}

#[test]
fn autodl_compute_rows_cover_the_hour_before_or_since_the_previous_row() {
    let bill = parse_bill(&fixture("autodl/valid/two_days.csv"), None).unwrap();
    let utc = |d, h, m, s| Utc.with_ymd_and_hms(2024, 5, d, h, m, s).unwrap();
    let mut compute: Vec<_> = bill
        .charges
        .iter()
        .filter(|c| c.category == Category::Compute && c.kind == Kind::Usage)
        .map(|c| (c.charge_start, c.charge_end, c.origin.line))
        .collect();
    compute.sort();
    assert_eq!(
        compute,
        vec![
            (utc(1, 0, 59, 59), utc(1, 1, 59, 59), 7),
            (utc(2, 0, 59, 59), utc(2, 1, 59, 59), 4),
            (utc(2, 1, 59, 59), utc(2, 2, 20, 0), 3),
        ]
    );
    let disk = bill.charges.iter().find(|c| c.origin.line == 5).unwrap();
    assert_eq!(disk.category, Category::DataDisk);
    assert_eq!(disk.resource_id.as_deref(), Some("ab12cd34ef/data_disk"));
    assert_eq!(disk.instance_id.as_deref(), Some("ab12cd34ef"));
    let april_30 = Utc.with_ymd_and_hms(2024, 4, 30, 16, 0, 0).unwrap();
    assert_eq!((disk.charge_start, disk.charge_end), (april_30, utc(1, 16, 0, 0)), "a local day");
}

#[test]
fn aliyun_english_headers_totals_kinds_and_links() {
    let bill = parse_bill(&fixture("aliyun/valid/english_headers.csv"), None).unwrap();
    assert_eq!(bill.report.profile, "aliyun");
    assert_eq!(bill.charges.len(), 9);
    assert_eq!(
        by_category(&bill.charges),
        cats(&[
            ("compute", dec!(670.00)),
            ("data_disk", dec!(2.40)),
            ("public_ip", dec!(1.20)),
            ("snapshot", dec!(1.60)),
            ("system_disk", dec!(0.50)),
            ("traffic", dec!(3.456)),
        ])
    );
    let refund = bill.charges.iter().find(|c| c.kind == Kind::Refund).unwrap();
    assert_eq!((refund.billed_cost, refund.list_cost), (dec!(-300.00), Some(dec!(-300.00))));
    let order = bill.charges.iter().find(|c| c.kind == Kind::Purchase).unwrap();
    assert_eq!(order.pricing, Pricing::Subscription);
    assert_eq!(order.gpu_model.as_deref(), Some("A10"));
    let disk = bill.charges.iter().find(|c| c.category == Category::DataDisk).unwrap();
    assert_eq!(disk.resource_id.as_deref(), Some("d-bp1bbbb2222"));
    assert_eq!(disk.instance_id.as_deref(), Some("i-bp1aaaa1111"));
    let snapshots: Vec<_> =
        bill.charges.iter().filter(|c| c.category == Category::Snapshot).collect();
    assert_eq!(snapshots.len(), 2);
    assert_ne!(snapshots[0].id, snapshots[1].id, "identical rows are distinct charges");
    assert_eq!(snapshots[0].instance_id, None, "a snapshot naming no instance is unlinked");
}

#[test]
fn aliyun_gb18030_with_title_rows_and_a_footer() {
    let path = fixture("aliyun/valid/gb18030_title_and_footer.csv");
    let bill = parse_bill(&path, None).unwrap();
    assert_eq!(bill.report.rows_read, 3);
    assert_eq!(
        by_category(&bill.charges),
        cats(&[("compute", dec!(10.00)), ("system_disk", dec!(0.30)), ("traffic", dec!(1.25))])
    );
    assert_eq!(bill.charges[0].origin.line, 4, "lines count the title rows");
    assert_eq!(bill.charges[0].region.as_deref(), Some("华东1（杭州）"));
    let footer = &bill.report.control_totals;
    assert_eq!(footer.len(), 1);
    assert_eq!((footer[0].line, footer[0].label.as_str()), (7, "合计"));
    assert_eq!(footer[0].amount, Some(dec!(11.55)));
}

#[test]
fn forcing_a_profile_overrides_detection_and_explains_a_mismatch() {
    let autodl = find_profile("autodl").unwrap();
    let err = parse_bill(&fixture("aliyun/valid/english_headers.csv"), Some(autodl)).unwrap_err();
    let ErrorKind::UnknownFormat { location, closest, .. } = err.kind() else { panic!("{err}") };
    assert_eq!(location.line, 1);
    assert_eq!(closest[0].profile, "autodl");
    assert!(closest[0].missing.contains(&"交易时间".to_owned()));
    assert!(matches!(find_profile("nope").unwrap_err().kind(), ErrorKind::UnknownProfile { .. }));
}

/// Each bad input names its file, line and column.
#[test]
fn bad_input_is_reported_at_its_line_and_column() {
    let cases = [
        (
            "autodl/invalid/amount_not_a_number.csv",
            "amount_not_a_number.csv:2: column 交易金额: \"12,3x\" is not an amount",
        ),
        (
            "autodl/invalid/time_unparseable.csv",
            "time_unparseable.csv:3: column 交易时间: \"2024-05-32 10:59:59\" is not a time",
        ),
        (
            "aliyun/invalid/short_row.csv",
            "short_row.csv:3: column 实例规格: missing (the row has 12 fields, the header 20)",
        ),
        (
            "unknown/invalid/unknown_header.csv",
            "unknown_header.csv:1: column CostInBillingCurrency: not found in the header",
        ),
        ("unknown/invalid/empty.csv", "empty.csv: the file is empty"),
        (
            "unknown/invalid/neither_utf8_nor_gb18030.csv",
            "neither_utf8_nor_gb18030.csv:2: column 产品: bytes at offset",
        ),
    ];
    for (rel, want) in cases {
        let err = parse_bill(&fixture(rel), None).unwrap_err().to_string();
        assert!(err.contains(want), "{rel}:\n got: {err}\nwant: {want}");
    }
}

#[test]
fn every_fixture_is_read_by_a_test() {
    let root = fixture("");
    let mut sources = String::new();
    for dir in ["tests/core", "tests/cli"] {
        for entry in std::fs::read_dir(root.join("..").join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") {
                sources.push_str(&std::fs::read_to_string(path).unwrap());
            }
        }
    }
    // The real exports are listed, and read, through the totals computed for them.
    sources.push_str(&std::fs::read_to_string(root.join("real/totals.csv")).unwrap());
    let mut stack = vec![root.clone()];
    let mut unused = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| {
                ["csv", "xlsx", "toml", "parquet"].contains(&e.to_str().unwrap_or_default())
            }) {
                let rel = path.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
                if !sources.contains(&rel) {
                    unused.push(rel);
                }
            }
        }
    }
    assert!(unused.is_empty(), "fixtures no test reads: {unused:?}");
}

/// The data flow runs one way (DESIGN.md): the rules and reports import nothing from import
/// or the ledger, and import nothing from the ledger.
#[test]
fn no_module_imports_back_up_the_flow() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let code_of = |dir: &Path| -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_owned()];
        while let Some(d) = stack.pop() {
            let entries: Vec<PathBuf> = if d.is_dir() {
                std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().path()).collect()
            } else {
                vec![d.clone()]
            };
            for p in entries {
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    let code: String = text
                        .lines()
                        .filter(|l| !l.trim_start().starts_with("//"))
                        .collect::<Vec<_>>()
                        .join("\n");
                    out.push((p, code));
                }
            }
        }
        out
    };
    let rules = ["waste", "reconcile", "report.rs"].map(|m| src.join(m));
    for (path, code) in rules.iter().flat_map(|d| code_of(d)) {
        for upstream in ["crate::import", "crate::ledger"] {
            assert!(!code.contains(upstream), "{} uses {upstream}", path.display());
        }
    }
    for (path, code) in code_of(&src.join("import")) {
        assert!(!code.contains("crate::ledger"), "{} uses crate::ledger", path.display());
    }
}

/// The size limits of the restructuring: no source file of the workspace over 600 lines, no
/// function over 100 (counted from its `fn` line to its closing brace).
#[test]
fn source_files_and_functions_stay_small() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut stack = vec![crates.join("core/src"), crates.join("cli/src")];
    let mut too_big = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            if lines.len() > 600 {
                too_big.push(format!("{}: {} lines", path.display(), lines.len()));
            }
            for (start, name, length) in function_lengths(&lines) {
                if length > 100 {
                    too_big.push(format!("{}:{start}: fn {name}: {length} lines", path.display()));
                }
            }
        }
    }
    assert!(too_big.is_empty(), "{too_big:#?}");
}

/// Each function of `lines`: its first line (1-based), name and length in lines. Braces in
/// comments, strings and character literals are not counted.
fn function_lengths(lines: &[&str]) -> Vec<(usize, String, usize)> {
    let code: Vec<String> = lines.iter().map(|l| code_braces(l)).collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let Some(at) = t.find("fn ") else { continue };
        let before = &t[..at];
        let is_item = before.split_whitespace().all(|w| {
            matches!(w, "pub" | "const" | "async" | "unsafe" | "extern") || w.starts_with("pub(")
        });
        if !is_item || t.starts_with("//") {
            continue;
        }
        let name: String =
            t[at + 3..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let mut depth = 0i32;
        let mut opened = false;
        for (j, braces) in code.iter().enumerate().skip(i) {
            if !opened && braces.is_empty() && lines[j].trim_end().ends_with(';') {
                break; // a declaration without a body
            }
            for b in braces.chars() {
                depth += if b == '{' { 1 } else { -1 };
                opened = true;
            }
            if opened && depth <= 0 {
                out.push((i + 1, name.clone(), j - i + 1));
                break;
            }
        }
    }
    out
}

/// The braces of a line of Rust outside comments, strings and character literals.
fn code_braces(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_string => {
                chars.next();
            }
            '"' => in_string = !in_string,
            '/' if !in_string && chars.peek() == Some(&'/') => break,
            '\'' if !in_string => {
                // '{' or '\u{…}': skip a character literal; a lifetime has no closing quote.
                let rest: String = chars.clone().take(12).collect();
                if let Some(end) = rest.find('\'').filter(|&e| e > 0) {
                    for _ in 0..=end {
                        chars.next();
                    }
                }
            }
            '{' | '}' if !in_string => out.push(c),
            _ => {}
        }
    }
    out
}

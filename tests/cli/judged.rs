//! The big clouds judged by what their bills say: on the real AWS CUR of the corpus (the
//! Well-Architected cost workshop's three months as Parquet, `fixtures/real/aws-cur-workshop/`),
//! whose volumes no row links to an instance, no rule calls a volume unattached or an
//! instance off, no two lines the bill keys apart are a double charge, the idle addresses the
//! bill names are W002 with the bill's money to the last digit (`idle_addresses.csv`, which
//! `fixtures/real/totals.py` computes with DuckDB and no gpuaudit code), waste says how much it
//! could not judge, and `cost` puts the volumes on a `not_linked` line, never `unattached`.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::cost::rows;
use super::{gpuaudit, stderr, stdout, workdir};

/// The months of the workshop's CUR, and the exact money of its idle-address rows in each
/// (none in October).
fn idle_money() -> BTreeMap<String, Decimal> {
    let text =
        std::fs::read_to_string(super::root().join("fixtures/real/idle_addresses.csv")).unwrap();
    let mut by_month: BTreeMap<String, Decimal> =
        ["2018-10", "2018-11", "2018-12"].iter().map(|m| (m.to_string(), Decimal::ZERO)).collect();
    for row in rows(&text) {
        if row["file"].contains("aws-cur-workshop/") {
            *by_month.get_mut(&row["month"]).unwrap() += row["cost"].parse::<Decimal>().unwrap();
        }
    }
    by_month
}

#[test]
fn real_aws_bills_are_judged_by_what_they_say() {
    let dir = workdir();
    let d = dir.path();
    let mut import = vec!["import".to_owned()];
    for m in ["Oct", "Nov", "Dec"] {
        import.push(format!(
            "fixtures/real/aws-cur-workshop/{m}2018-WorkshopCUR-00001.snappy.parquet"
        ));
    }
    let args: Vec<&str> = import.iter().map(String::as_str).collect();
    let out = gpuaudit(d, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let idle = idle_money();
    assert!(idle["2018-11"] > Decimal::ONE, "{idle:?}");
    let run = |args: &[&str]| {
        let out = gpuaudit(d, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    for (month, idle) in &idle {
        let m = month.as_str();
        // Every finding, however small.
        let waste = run(&["waste", "--month", m, "--min-amount", "0", "--format", "json"]);
        let doc: serde_json::Value = serde_json::from_str(&waste).unwrap();
        let findings = doc["findings"].as_array().unwrap();
        for f in findings {
            let code = f["code"].as_str().unwrap();
            assert!(!["W001", "W003", "W004"].contains(&code), "{m}: {f}");
        }
        // W002 rests on the idle-address rows, each whole: its lines add up to their money.
        let mut flagged = Decimal::ZERO;
        for f in findings.iter().filter(|f| f["code"] == "W002") {
            assert!(f["recommendation"].as_str().unwrap().contains("IdleAddress"), "{f}");
            for line in f["charges"].as_array().unwrap() {
                assert_eq!(line["wasted"], line["billed_cost"], "{line}");
                flagged += line["wasted"].as_str().unwrap().parse::<Decimal>().unwrap();
            }
        }
        assert_eq!(flagged, *idle, "{m}");
        // The volumes' money is said to be not judged, never called unattached.
        let not_judged = doc["not_judged"].as_array().unwrap();
        assert_eq!(not_judged.len(), 1, "{m}: {not_judged:?}");
        assert_eq!(not_judged[0]["platform"], "aws");
        let cost = rows(&run(&["cost", "--month", m, "--format", "csv"]));
        assert!(cost.iter().all(|l| l["line"] != "unattached"), "{m}");
        let apart = cost.iter().find(|l| l["line"] == "not_linked").expect("a not_linked line");
        let data_disk: Decimal = apart["data_disk"].parse().unwrap();
        assert!(data_disk > Decimal::ZERO, "{m}: {apart:?}");
        let text = run(&["waste", "--month", m]);
        assert!(text.contains("not judged: ") && text.contains(" of aws disks, IPs and snapshots"));
        // S3's requests of one bucket and hour under several operations, one instance's
        // transfer in and out: lines the bill keys apart are no double charge.
        let reconcile = rows(&run(&["reconcile", "--month", m, "--format", "csv"]));
        assert!(reconcile.iter().all(|r| r["code"] != "R002"), "{m}: {reconcile:?}");
    }
}

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

/// The exact money of `resource`'s charges starting at or after `from` (RFC 3339), as the
/// ledger's FOCUS export of `month` gives them (ResourceId, ChargePeriodStart, BilledCost).
fn money_of(d: &std::path::Path, month: &str, resource: &str, from: &str) -> Decimal {
    let out = gpuaudit(d, &["export", "--focus", "--month", month, "-o", "month.csv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(d.join("month.csv")).unwrap();
    let from: chrono::DateTime<chrono::Utc> = from.parse().unwrap();
    rows(&text)
        .iter()
        .filter(|r| r["ResourceId"] == resource)
        .filter(|r| {
            let start = r["ChargePeriodStart"].replace(' ', "T");
            let start = if start.ends_with('Z') { start } else { format!("{start}Z") };
            start.parse::<chrono::DateTime<chrono::Utc>>().unwrap() >= from
        })
        .map(|r| r["BilledCost"].parse::<Decimal>().unwrap())
        .sum()
}

/// The sum of a finding's lines.
fn lines_of(f: &serde_json::Value) -> Decimal {
    let lines = f["charges"].as_array().unwrap();
    lines.iter().map(|l| l["wasted"].as_str().unwrap().parse::<Decimal>().unwrap()).sum()
}

#[test]
fn an_inventory_judges_what_the_bill_cannot() {
    let dir = workdir();
    let d = dir.path();
    let run = |args: &[&str]| {
        let out = gpuaudit(d, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    run(&["import", "fixtures/real/aws-cur-workshop/Nov2018-WorkshopCUR-00001.snappy.parquet"]);
    // Bad input first: each refused naming the file and where in it, the ledger as it was.
    let before = super::snapshot(&d.join(".gpuaudit"));
    for (file, says) in [
        ("invalid/unknown_shape.json", "unknown_shape.json: $: not the output of a CLI"),
        ("aws/describe-instances.json", "describe-instances.json: $: says not when it was taken"),
        (
            "invalid/volume_named_twice_with_two_states.json",
            "$.output: volume vol-09409784ef6121644 is named twice with two states",
        ),
    ] {
        let path = format!("fixtures/inventory/{file}");
        let out = gpuaudit(d, &["inventory", "import", &path]);
        assert_eq!(out.status.code(), Some(2), "{file}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{file}: {}", stderr(&out));
    }
    assert_eq!(super::snapshot(&d.join(".gpuaudit")), before, "the ledger as it was");

    let added = run(&["inventory", "import", "fixtures/inventory/aws/describe-volumes.json"]);
    let batch = added.lines().find_map(|l| l.strip_prefix("batch ")).unwrap();
    let batch = batch.split(':').next().unwrap().to_owned();
    run(&[
        "inventory",
        "import",
        "fixtures/inventory/aws/describe-instances.json",
        "--at",
        "2018-11-15T00:00:00Z",
    ]);
    assert_eq!(run(&["inventory", "list"]).lines().count(), 2);
    let from = "2018-11-15T00:00:00Z";
    let waste = run(&["waste", "--month", "2018-11", "--min-amount", "0", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&waste).unwrap();
    let findings = doc["findings"].as_array().unwrap();
    // The one volume the inventory shows unattached, to the cent from the snapshot's time.
    let w003: Vec<&serde_json::Value> = findings.iter().filter(|f| f["code"] == "W003").collect();
    assert_eq!(w003.len(), 1, "{w003:?}");
    assert_eq!(w003[0]["resource_id"], "vol-09409784ef6121644");
    let loose = money_of(d, "2018-11", "vol-09409784ef6121644", from);
    assert!(loose > Decimal::ONE, "{loose}");
    assert_eq!(lines_of(w003[0]), loose);
    // The stopped instance's volume: W001 from the snapshot on (its off time is past the
    // grace already).
    let w001: Vec<&serde_json::Value> = findings.iter().filter(|f| f["code"] == "W001").collect();
    assert_eq!(w001.len(), 1, "{w001:?}");
    assert_eq!(w001[0]["instance_id"], "i-0f7f5282f9ba54e03");
    assert_eq!(w001[0]["resource_id"], "vol-086a6ac5eec663f86");
    assert_eq!(lines_of(w001[0]), money_of(d, "2018-11", "vol-086a6ac5eec663f86", from));
    // cost gives the running instance its disk, from the snapshot on.
    let cost = rows(&run(&["cost", "--month", "2018-11", "--format", "csv"]));
    let line = cost.iter().find(|l| l["instance"] == "i-09676b3839354c8ae").unwrap();
    let disk = money_of(d, "2018-11", "vol-0866bc63e2838253c", from);
    assert_eq!(line["data_disk"].parse::<Decimal>().unwrap(), disk);
    // Removed like a batch: the volume listing's judgement goes (the instance listing,
    // which names the stopped instance's volume, still makes its W001).
    run(&["ledger", "--remove", &batch]);
    let waste = run(&["waste", "--month", "2018-11", "--min-amount", "0", "--format", "csv"]);
    let codes: Vec<String> = rows(&waste).iter().map(|f| f["code"].clone()).collect();
    assert!(!codes.contains(&"W003".to_owned()) && codes.contains(&"W001".to_owned()), "{codes:?}");
}

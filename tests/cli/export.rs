//! `gpuaudit export --focus`: the example ledger's export imported back with `--profile
//! focus` gives the same totals, waste findings and cost, from CSV and from Parquet; bad
//! arguments and hostile texts.

use std::path::Path;

use super::{gpuaudit, stderr, stdout, workdir};

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = gpuaudit(dir, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

/// `waste --format csv` without the charge ids (a re-import gives new ones).
fn findings(text: &str) -> Vec<String> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            let mut cells: Vec<&str> = rec.iter().collect();
            cells[12] = "";
            cells.join(",")
        })
        .collect()
}

#[test]
fn the_focus_export_imported_back_gives_the_same_totals_findings_and_cost() {
    let dir = workdir();
    let d = dir.path();
    super::import_examples(d, "original");
    let charges: u64 =
        ok(d, &["--ledger", "original", "summary", "--by", "month", "--format", "csv"])
            .lines()
            .skip(1)
            .map(|l| l.rsplit(',').next().unwrap().parse::<u64>().unwrap())
            .sum();
    for file in ["focus.csv", "focus.parquet"] {
        let out = gpuaudit(d, &["--ledger", "original", "export", "--focus", "-o", file]);
        assert!(out.status.success(), "{}", stderr(&out));
        // 1183 charges less the two top-ups, which are not charges.
        assert_eq!(stderr(&out), format!("{file}: 1181 FOCUS 1.2 rows\n"));
        assert_eq!(charges, 1181, "summary counts spend only");
        let back = format!("back-{file}");
        ok(d, &["--ledger", &back, "import", "--profile", "focus", file]);
        for by in ["month,category", "platform,month,category", "instance,month"] {
            let args = |l: &str| {
                vec!["--ledger", l, "summary", "--by", by, "--format", "csv"]
                    .into_iter()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            };
            let run = |a: Vec<String>| ok(d, &a.iter().map(String::as_str).collect::<Vec<_>>());
            assert_eq!(run(args(&back)), run(args("original")), "{file} by {by}");
        }
        let waste =
            |l: &str| ok(d, &["--ledger", l, "waste", "--month", "2024-05", "--format", "csv"]);
        let (before, after) = (findings(&waste("original")), findings(&waste(&back)));
        assert_eq!(before.len(), 7);
        assert_eq!(after, before, "{file}");
        let cost = |l: &str| {
            ok(d, &["--ledger", l, "cost", "--month", "2024-05", "--compare", "--format", "csv"])
        };
        assert_eq!(cost(&back), cost("original"), "{file}");
    }
    // One month only: every row's billing period is April's.
    ok(d, &["--ledger", "original", "export", "--focus", "--month", "2024-04", "-o", "april.csv"]);
    let april = std::fs::read_to_string(d.join("april.csv")).unwrap();
    let mut r = csv::Reader::from_reader(april.as_bytes());
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 70);
    assert!(rows.iter().all(|row| &row[5] == "2024-04-01T00:00:00Z"), "{:?}", &rows[0]);
}

#[test]
fn a_bad_export_is_refused_and_leaves_no_file() {
    let dir = workdir();
    let d = dir.path();
    super::import_examples(d, ".gpuaudit");
    let out = gpuaudit(d, &["export", "--focus", "-o", "focus.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("-o focus.txt: name a .csv or a .parquet file"),
        "{}",
        stderr(&out)
    );
    let out = gpuaudit(d, &["export", "--focus", "-o", "no/such/folder/focus.csv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error: no/such/folder/focus.csv.partial: "),
        "{}",
        stderr(&out)
    );
    assert!(!d.join("no").exists());
    let out = gpuaudit(d, &["export", "-o", "focus.csv"]);
    assert_eq!(out.status.code(), Some(2), "--focus is required");
    let out = gpuaudit(d, &["export", "--focus", "--month", "May", "-o", "focus.csv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!d.join("focus.csv").exists() && !d.join("focus.csv.partial").exists());
}

#[test]
fn hostile_texts_leave_the_export_as_text_and_a_hostile_platform_is_refused() {
    let dir = workdir();
    let d = dir.path();
    let head = "BillingAccountId,BillingCurrency,BillingPeriodStart,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ChargeDescription,BilledCost,ResourceId,ServiceCategory";
    let bill = format!(
        "{head}\nacct,USD,2024-05-01T00:00:00Z,2024-05-03T00:00:00Z,2024-05-03T01:00:00Z,Usage,\"=HYPERLINK(\"\"x\"\")\",1.25,@vm,Compute\n"
    );
    std::fs::write(d.join("hostile.csv"), bill).unwrap();
    ok(d, &["import", "--profile", "focus", "hostile.csv"]);
    ok(d, &["export", "--focus", "-o", "out.csv"]);
    let out = std::fs::read_to_string(d.join("out.csv")).unwrap();
    let mut r = csv::Reader::from_reader(out.as_bytes());
    let header = r.headers().unwrap().clone();
    let row = r.records().next().unwrap().unwrap();
    let cell = |name: &str| row[header.iter().position(|h| h == name).unwrap()].to_owned();
    assert_eq!(cell("ChargeDescription"), "'=HYPERLINK(\"x\")");
    assert_eq!(cell("ResourceId"), "'@vm");
    assert_eq!(cell("BilledCost"), "1.25");

    let evil = format!(
        "{head},x_Platform\nacct,USD,2024-05-01T00:00:00Z,2024-05-03T00:00:00Z,2024-05-03T01:00:00Z,Usage,GPU,1.00,vm,Compute,../../etc\n"
    );
    std::fs::write(d.join("evil.csv"), evil).unwrap();
    let out = gpuaudit(d, &["import", "--profile", "focus", "evil.csv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .contains("evil.csv:2: column x_Platform: \"../../etc\" is not a platform name"),
        "{}",
        stderr(&out)
    );
}

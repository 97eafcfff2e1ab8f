//! `gpuaudit cost` from the command line: its totals equal `summary`'s on every fixture
//! ledger, the example month shows its lesson, and a bad rate card is refused naming the
//! file and the key.

use rust_decimal::Decimal;
use std::collections::BTreeMap;

use super::{gpuaudit, stderr, stdout, workdir};

/// The CSV rows of `out` as maps from header to cell.
pub(super) fn rows(out: &str) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_reader(out.as_bytes());
    let header = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            header.iter().map(str::to_owned).zip(rec.unwrap().iter().map(str::to_owned)).collect()
        })
        .collect()
}

/// The `cost --format csv` line of `month` for the instance whose id ends with `ends`, run in
/// `d` (a GPU platform's test: its model, GPU-hours and compute).
pub(super) fn instance_line(
    d: &std::path::Path,
    month: &str,
    ends: &str,
) -> BTreeMap<String, String> {
    let out = gpuaudit(d, &["cost", "--month", month, "--format", "csv"]);
    let lines = rows(&stdout(&out));
    let line = lines.iter().find(|r| r["instance"].ends_with(ends));
    line.unwrap_or_else(|| panic!("no instance ending {ends}: {lines:?}")).clone()
}

/// Sum of `column` per currency.
pub(super) fn per_currency(
    rows: &[BTreeMap<String, String>],
    column: &str,
) -> BTreeMap<String, Decimal> {
    let mut totals = BTreeMap::new();
    for row in rows {
        let value: Decimal = row[column].parse().unwrap();
        *totals.entry(row["currency"].clone()).or_insert(Decimal::ZERO) += value;
    }
    totals
}

#[test]
fn the_cost_of_every_fixture_month_adds_up_to_its_summary_to_the_cent() {
    let dir = workdir();
    let root = dir.path().join("fixtures");
    let mut checked = 0;
    for platform in std::fs::read_dir(&root).unwrap() {
        let platform = platform.unwrap().path();
        let Ok(bills) = std::fs::read_dir(platform.join("valid")) else { continue };
        let profile = std::fs::read_dir(&platform)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "toml"));
        for bill in bills {
            let bill = bill.unwrap().path();
            let ledger = tempfile::tempdir().unwrap();
            let l = ledger.path().join("l");
            let mut import = vec!["--ledger", l.to_str().unwrap(), "import"];
            if let Some(p) = &profile {
                import.extend(["--profile", p.to_str().unwrap()]);
            }
            import.push(bill.to_str().unwrap());
            assert!(gpuaudit(dir.path(), &import).status.success(), "{}", bill.display());
            let by_month = gpuaudit(
                dir.path(),
                &["--ledger", l.to_str().unwrap(), "summary", "--by", "month", "--format", "csv"],
            );
            let months: std::collections::BTreeSet<String> =
                rows(&stdout(&by_month)).into_iter().map(|r| r["month"].clone()).collect();
            for month in months {
                let args = |cmd: &str| {
                    vec!["--ledger", l.to_str().unwrap(), cmd, "--month", &month, "--format", "csv"]
                        .into_iter()
                        .map(str::to_owned)
                        .collect::<Vec<_>>()
                };
                let run = |a: Vec<String>| {
                    let a: Vec<&str> = a.iter().map(String::as_str).collect();
                    let out = gpuaudit(dir.path(), &a);
                    assert!(out.status.success(), "{a:?}: {}", stderr(&out));
                    rows(&stdout(&out))
                };
                let summary = per_currency(&run(args("summary")), "billed_cost");
                let cost = per_currency(&run(args("cost")), "all_in");
                assert_eq!(cost, summary, "{} {month}", bill.display());
                checked += 1;
            }
        }
    }
    assert!(checked >= 30, "{checked} months checked");
}

#[test]
fn the_example_month_shows_a_platform_cheaper_per_hour_and_dearer_all_in() {
    let dir = workdir();
    let d = dir.path();
    super::import_examples(d, ".gpuaudit");
    let lines = rows(&stdout(&gpuaudit(d, &["cost", "--month", "2024-05", "--format", "csv"])));
    let of = |instance: &str, column: &str| -> Decimal {
        lines.iter().find(|r| r["instance"] == instance).unwrap()[column].parse().unwrap()
    };
    let (autodl, gpushare) = ("c7a1e0b3f2", "gpu-4090-02");
    assert!(of(autodl, "per_gpu_hour_compute") < of(gpushare, "per_gpu_hour_compute"));
    assert!(of(autodl, "per_gpu_hour_all_in") > of(gpushare, "per_gpu_hour_all_in"));
    let compare = gpuaudit(d, &["cost", "--month", "2024-05", "--compare", "--format", "csv"]);
    let compared = rows(&stdout(&compare));
    let on_gpushare = compared
        .iter()
        .find(|r| r["instance"] == autodl && r["target"] == "gpushare" && r["basis"] == "ledger")
        .unwrap();
    // 111.04 GPU-hours at the 2.38 paid there, and the disk's 925.33 GB·days while on at
    // 0.0048 (0.96 a day for 200 GB): 264.28 + 4.44 against the 291.61 paid on AutoDL.
    assert_eq!(on_gpushare["priced"], "268.72");
    assert_eq!(
        (on_gpushare["comparable"].as_str(), on_gpushare["saving"].as_str()),
        ("291.61", "22.89")
    );
    assert_eq!(on_gpushare["unpriced"], "");
}

fn refused(toml: &str) -> String {
    let dir = workdir();
    let d = dir.path();
    assert!(gpuaudit(d, &["import", "examples/bills/autodl-2024-05.csv"]).status.success());
    std::fs::write(d.join("gpuaudit.toml"), toml).unwrap();
    let out = gpuaudit(d, &["cost", "--month", "2024-05", "--compare"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(out.stdout.is_empty());
    stderr(&out)
}

#[test]
fn a_bad_rate_card_is_refused_naming_gpuaudit_toml_and_the_key() {
    let rate = "[[rate]]\nplatform = \"autodl\"\ngpu_model = \"RTX 4090\"\n";
    let cases = [
        (format!("{rate}hourly = \"2.18\"\n"), "unknown field `hourly`"),
        (format!("{rate}monthly = \"-1000\"\n"), "-1000 is negative"),
        (format!("{rate}monthly = \"a lot\"\n"), "\"a lot\" is not a number"),
        (format!("{rate}monthly = 1000\nas_of = \"May 2024\"\n"), "\"May 2024\" is not a date"),
        (
            "[[platform_rate]]\nplatform = \"x\"\nbills_while_off = [\"gpu\"]\n".to_owned(),
            "unknown variant `gpu`",
        ),
    ];
    for (toml, expected) in cases {
        let err = refused(&toml);
        assert!(err.starts_with("error: gpuaudit.toml: "), "{err}");
        assert!(err.contains(expected), "{toml}: {err}");
        let key_line = toml.lines().last().unwrap();
        assert!(err.contains(key_line.split('=').next().unwrap().trim()), "names the key: {err}");
    }
    let err = refused(&format!("{rate}monthly = 140\ncurrency = \"USD\"\n"));
    assert!(
        err.starts_with("error: gpuaudit.toml: rate[1].currency: \"USD\" differs from the currency of autodl's bills (CNY)"),
        "{err}"
    );
    let unknown =
        refused("[[rate]]\nplatform = \"elsewhere\"\ngpu_model = \"A100\"\non_demand_hourly = 9\n");
    assert!(unknown.contains("rate[1].currency: missing"), "{unknown}");
}

#[test]
fn a_rate_card_figure_beyond_a_bill_s_bounds_is_refused() {
    let rate = "[[rate]]\nplatform = \"autodl\"\ngpu_model = \"RTX 4090\"\n";
    let err = refused(&format!("{rate}monthly = \"0.000000000000001\"\n"));
    assert!(err.contains("\"0.000000000000001\" has more than 12 decimals"), "{err}");
    let err = refused(&format!("{rate}monthly = \"1000000000000000\"\n"));
    assert!(err.contains("is 10^15 or more"), "{err}");
}

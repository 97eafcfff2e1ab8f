//! Whole-output snapshots of every command on every fixture and example bill (table, CSV,
//! JSON, Markdown), so that a restructuring that changes a byte of what users see fails here.
//! Batch ids and commit times, which change from run to run, are replaced by `[batch N]` and
//! `[created N]`. Update with `INSTA_UPDATE=always cargo test -p gpuaudit-cli --test cli
//! snapshots` and review the diff; CI never writes snapshots.

use std::path::Path;

use super::{gpuaudit, workdir};

/// One command, its exit code, its stdout and its stderr, as a snapshot shows them.
fn shown(dir: &Path, args: &[&str]) -> String {
    let out = gpuaudit(dir, args);
    let mut text =
        format!("$ gpuaudit {}\n[exit {}]\n", args.join(" "), out.status.code().unwrap_or(-1));
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    if !out.stderr.is_empty() {
        text.push_str("[stderr]\n");
        text.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    text.push('\n');
    text
}

/// `text` with the ledger's batch ids and commit times replaced by placeholders.
fn redact(dir: &Path, text: &str) -> String {
    let store = gpuaudit_core::ledger::Store::open(dir.join(".gpuaudit"));
    let Ok(manifest) = store.manifest() else {
        return text.to_owned();
    };
    let mut text = text.to_owned();
    for (n, batch) in manifest.batches.iter().enumerate() {
        text = text.replace(&batch.id, &format!("[batch {}]", n + 1));
        text = text.replace(&batch.created, &format!("[created {}]", n + 1));
    }
    text
}

/// The months the ledger holds, from `summary --by month`.
fn months(dir: &Path) -> Vec<String> {
    let out = gpuaudit(dir, &["summary", "--by", "month", "--format", "csv"]);
    let mut months: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').next().map(str::to_owned))
        .filter(|m| !m.is_empty())
        .collect();
    months.sort();
    months.dedup();
    months
}

#[test]
fn snapshots_of_the_example_bills_every_command_and_format() {
    let dir = workdir();
    let d = dir.path();
    std::fs::copy(super::root().join("examples/gpuaudit.toml"), d.join("gpuaudit.toml")).unwrap();
    super::copy_tree(&super::root().join("examples/statements"), &d.join("examples/statements"));
    let mut bills: Vec<String> = std::fs::read_dir(d.join("examples/bills"))
        .unwrap()
        .map(|e| format!("examples/bills/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    bills.sort();
    let mut import: Vec<&str> = vec!["import"];
    import.extend(bills.iter().map(String::as_str));
    let mut text = shown(d, &import);
    let statement = "examples/statements/2024-05.csv";
    let commands: Vec<Vec<&str>> = vec![
        vec!["ledger"],
        vec!["summary"],
        vec!["summary", "--month", "2024-05", "--format", "csv"],
        vec!["summary", "--month", "2024-05", "--format", "json"],
        vec!["summary", "--month", "2024-05", "--format", "md"],
        vec!["summary", "--by", "instance,month", "--format", "csv"],
        vec!["summary", "--by", "platform,category,instance,month", "--format", "json"],
        vec!["waste", "--month", "2024-05"],
        vec!["waste", "--month", "2024-05", "--explain"],
        vec!["waste", "--month", "2024-05", "--format", "csv"],
        vec!["waste", "--month", "2024-05", "--format", "json"],
        vec!["waste", "--month", "2024-05", "--format", "md"],
        vec!["waste", "--month", "2024-04", "--format", "csv"],
        vec!["reconcile", "--month", "2024-05"],
        vec!["reconcile", "--month", "2024-05", "--statement", statement],
        vec!["reconcile", "--month", "2024-05", "--statement", statement, "--format", "csv"],
        vec!["reconcile", "--month", "2024-05", "--statement", statement, "--format", "json"],
        vec!["reconcile", "--month", "2024-05", "--statement", statement, "--format", "md"],
        vec!["cost", "--month", "2024-05"],
        vec!["cost", "--month", "2024-05", "--compare"],
        vec!["cost", "--month", "2024-05", "--format", "csv"],
        vec!["cost", "--month", "2024-05", "--format", "json", "--compare"],
        vec!["cost", "--month", "2024-05", "--format", "md"],
        vec!["cost", "--month", "2024-05", "--compare", "--format", "csv"],
        vec!["cost", "--month", "2024-05", "--breakeven", "--format", "csv"],
        vec!["cost", "--month", "2024-05", "--by", "platform,gpu_model", "--format", "csv"],
        vec!["cost", "--month", "2024-04", "--format", "csv"],
        vec!["formats"],
        vec!["config"],
        vec!["config", "--defaults"],
    ];
    for args in &commands {
        text.push_str(&shown(d, args));
    }
    insta::assert_snapshot!("examples", redact(d, &text));
}

#[test]
fn snapshots_of_every_valid_fixture_imported_summarised_audited_and_reconciled() {
    let root = super::root().join("fixtures");
    let mut fixtures = Vec::new();
    for platform in std::fs::read_dir(&root).unwrap() {
        let platform = platform.unwrap().path();
        let valid = platform.join("valid");
        if !valid.is_dir() {
            continue;
        }
        let profile = std::fs::read_dir(&platform)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "toml"));
        for bill in std::fs::read_dir(&valid).unwrap() {
            let bill = bill.unwrap().path();
            fixtures.push((bill, profile.clone()));
        }
    }
    fixtures.sort();
    assert!(fixtures.len() >= 30, "{} fixtures", fixtures.len());
    for (bill, profile) in fixtures {
        let dir = workdir();
        let d = dir.path();
        let rel = bill.strip_prefix(super::root()).unwrap().to_string_lossy().into_owned();
        let profile_rel =
            profile.map(|p| p.strip_prefix(super::root()).unwrap().to_string_lossy().into_owned());
        let mut import = vec!["import"];
        if let Some(p) = &profile_rel {
            import.extend(["--profile", p.as_str()]);
        }
        import.push(&rel);
        let mut text = shown(d, &import);
        text.push_str(&shown(
            d,
            &["summary", "--by", "platform,category,month", "--format", "csv"],
        ));
        for month in months(d) {
            text.push_str(&shown(d, &["waste", "--month", &month, "--format", "csv"]));
            text.push_str(&shown(d, &["reconcile", "--month", &month, "--format", "csv"]));
            text.push_str(&shown(d, &["cost", "--month", &month, "--format", "csv"]));
        }
        let name = rel.trim_start_matches("fixtures/").replace(['/', '.'], "_");
        insta::assert_snapshot!(name, redact(d, &text));
    }
}

#[test]
fn snapshots_of_every_invalid_fixture_refused() {
    let root = super::root().join("fixtures");
    let mut bills = Vec::new();
    for platform in std::fs::read_dir(&root).unwrap() {
        let invalid = platform.unwrap().path().join("invalid");
        if invalid.is_dir() {
            bills.extend(std::fs::read_dir(&invalid).unwrap().map(|e| e.unwrap().path()));
        }
    }
    bills.sort();
    let dir = workdir();
    let d = dir.path();
    let mut text = String::new();
    for bill in bills {
        let rel = bill.strip_prefix(super::root()).unwrap().to_string_lossy().into_owned();
        // The eurocloud bill is refused by its own profile (a point in a decimal-comma bill).
        let profile =
            rel.starts_with("fixtures/eurocloud/").then_some("fixtures/eurocloud/eurocloud.toml");
        // Inventory files are refused by `inventory import`, which reads them.
        let mut args = match rel.starts_with("fixtures/inventory/") {
            true => vec!["inventory", "import"],
            false => vec!["import"],
        };
        if let Some(p) = profile {
            args.extend(["--profile", p]);
        }
        args.push(&rel);
        text.push_str(&shown(d, &args));
    }
    insta::assert_snapshot!("invalid", text);
}

//! `gpuaudit completions` and `gpuaudit man`: made from the command line's own definition, so
//! every subcommand is in them; they need no ledger and no configuration.

use super::{gpuaudit, stdout, workdir};

const SUBCOMMANDS: &[&str] =
    &["import", "ledger", "summary", "waste", "reconcile", "cost", "export", "config", "formats"];

#[test]
fn completions_for_every_shell_and_the_man_page_name_every_subcommand() {
    let dir = workdir();
    // A broken configuration does not stop them.
    std::fs::write(dir.path().join("gpuaudit.toml"), "garbage = [").unwrap();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = gpuaudit(dir.path(), &["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let text = stdout(&out);
        for sub in SUBCOMMANDS {
            assert!(text.contains(sub), "{shell} completion lacks {sub}");
        }
        assert!(text.contains("month"), "{shell} completes the options");
    }
    let out = gpuaudit(dir.path(), &["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "an unknown shell is a usage error");
    let man = stdout(&gpuaudit(dir.path(), &["man"]));
    assert!(man.contains(".TH gpuaudit 1"), "{}", &man[..man.len().min(300)]);
    for sub in SUBCOMMANDS {
        assert!(man.contains(&format!("gpuaudit\\-{sub}")), "the man page lists {sub}");
    }
    assert!(!dir.path().join(".gpuaudit").exists(), "no ledger was made");
}

/// Bill texts a cloud account's owner chooses: formula starts, quotes, line breaks, control
/// characters, bidi overrides, text that looks like an escape.
const HOSTILE: &[&str] = &[
    "=HYPERLINK(\"http://x\",\"y\")",
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1)",
    "a|b\nc\r\"q\"\t\u{7}\u{1b}[31m\u{202e}\\ud800\u{fffd}",
];

#[test]
fn every_command_s_csv_json_and_markdown_keep_hostile_bill_texts_inert() {
    let dir = workdir();
    let d = dir.path();
    let head = "BillingAccountId,BillingCurrency,BillingPeriodStart,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ChargeDescription,BilledCost,ResourceId,ResourceType,ServiceCategory";
    let mut rows = vec![head.to_owned()];
    let quoted = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    for (i, text) in HOSTILE.iter().enumerate() {
        // A disk of its own billed daily with a gap (W003, R003), and a VM (cost lines).
        for day in (1..=20).filter(|d| *d != 10) {
            rows.push(format!(
                "acct,USD,2024-05-01T00:00:00Z,2024-05-{day:02}T00:00:00Z,2024-05-{:02}T00:00:00Z,Usage,{},{}.00,{},Disk,Storage",
                day + 1, quoted(text), i + 2, quoted(&format!("{text}-disk"))
            ));
        }
        rows.push(format!(
            "acct,USD,2024-05-01T00:00:00Z,2024-05-03T00:00:00Z,2024-05-03T01:00:00Z,Usage,{},3.00,{},Virtual Machine,Compute",
            quoted(text), quoted(text)
        ));
    }
    std::fs::write(d.join("hostile.csv"), rows.join("\n") + "\n").unwrap();
    let out = gpuaudit(d, &["import", "--profile", "focus", "hostile.csv"]);
    assert!(out.status.success(), "{}", super::stderr(&out));
    let commands: &[&[&str]] = &[
        &["summary", "--by", "instance,category"],
        &["waste", "--month", "2024-05"],
        &["reconcile", "--month", "2024-05"],
        &["cost", "--month", "2024-05"],
        &["cost", "--month", "2024-05", "--compare"],
        &["cost", "--month", "2024-05", "--breakeven"],
    ];
    let mut texts_seen = 0;
    for args in commands {
        let run = |format: &str| {
            let mut a: Vec<&str> = args.to_vec();
            a.extend(["--format", format]);
            let out = gpuaudit(d, &a);
            assert!(out.status.success(), "{a:?}: {}", super::stderr(&out));
            stdout(&out)
        };
        let csv_text = run("csv");
        let mut r = csv::Reader::from_reader(csv_text.as_bytes());
        for rec in r.records() {
            for cell in rec.unwrap().iter() {
                let numeric = cell.parse::<rust_decimal::Decimal>().is_ok();
                assert!(numeric || !cell.starts_with(['=', '+', '-', '@']), "{args:?}: {cell:?}");
                texts_seen += usize::from(cell.contains("HYPERLINK"));
            }
        }
        let json = run("json");
        let v: serde_json::Value =
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert!(v.is_object());
        // JSON keeps the text exact (the CSV escapes formulas; JSON has no formulas).
        if args[0] != "cost" || args.len() == 3 {
            let exact = serde_json::to_string(&v).unwrap();
            assert!(exact.contains("HYPERLINK"), "{args:?}: {json}");
        }
        let md = run("md");
        for line in md.lines().filter(|l| l.starts_with('|')) {
            let bars = line.matches('|').count() - line.matches("\\|").count();
            let header = md.lines().find(|l| l.starts_with('|')).unwrap();
            assert_eq!(
                bars,
                header.matches('|').count(),
                "{args:?}: a cell breaks its row: {line}"
            );
            assert!(!line.contains(['\u{1b}', '\u{7}', '\r']), "{args:?}: {line:?}");
        }
    }
    assert!(texts_seen >= 4, "the hostile texts reached the outputs ({texts_seen})");
}

//! The Parquet store: exact round trip, deduplication, dry runs, rejects.

use gpuaudit_core::ledger::{ImportOptions, LoadFilter, Store};
use gpuaudit_core::{ErrorKind, YearMonth, parse_bill};
use rust_decimal_macros::dec;

use super::{by_category, fixture};

fn ledger() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join(".gpuaudit"));
    (dir, store)
}

#[test]
fn round_trip_is_exact_for_every_field() {
    let (_dir, store) = ledger();
    let files = [fixture("aliyun/valid/english_headers.csv"), fixture("autodl/valid/two_days.csv")];
    store.import(&files, &ImportOptions::default()).unwrap();
    let mut want: Vec<_> =
        files.iter().flat_map(|f| parse_bill(f, None).unwrap().charges).collect();
    let mut got = store.load(&LoadFilter::default()).unwrap();
    want.sort_by_key(|c| c.id);
    got.sort_by_key(|c| c.id);
    assert_eq!(got.len(), 16);
    assert_eq!(got, want);
    let traffic = got.iter().find(|c| c.billed_cost == dec!(3.456)).unwrap();
    assert_eq!(traffic.unit_price, Some(dec!(0.80)));
    assert_eq!(traffic.quantity, Some(dec!(4.32)));
}

#[test]
fn reimporting_the_same_file_adds_nothing_and_changes_nothing() {
    let (_dir, store) = ledger();
    let files = [fixture("autodl/valid/two_days.csv")];
    let first = store.import(&files, &ImportOptions::default()).unwrap();
    assert_eq!(first.files[0].new, 7);
    let commit = std::fs::read(store.root().join("_commits/00000000000000000001.json")).unwrap();
    let again = store.import(&files, &ImportOptions::default()).unwrap();
    assert_eq!((again.files[0].new, again.files[0].duplicates), (0, 7));
    assert_eq!(again.batch, None);
    assert_eq!(store.head().unwrap(), 1, "no commit is made");
    let commits = std::fs::read_dir(store.root().join("_commits")).unwrap().count();
    assert_eq!(commits, 1);
    assert_eq!(
        std::fs::read(store.root().join("_commits/00000000000000000001.json")).unwrap(),
        commit
    );
    assert_eq!(store.load(&LoadFilter::default()).unwrap().len(), 7);
}

#[test]
fn an_overlapping_export_adds_only_its_new_rows() {
    let (_dir, store) = ledger();
    let a = store.import(&[fixture("aliyun/valid/overlap_may01_02.csv")], &Default::default());
    assert_eq!(a.unwrap().files[0].new, 4);
    let b =
        store.import(&[fixture("aliyun/valid/overlap_may02_03.csv")], &Default::default()).unwrap();
    assert_eq!((b.files[0].new, b.files[0].duplicates), (2, 2));
    let all = store.load(&LoadFilter::default()).unwrap();
    assert_eq!(by_category(&all)["compute"], dec!(270.00));
    assert_eq!(by_category(&all)["system_disk"], dec!(0.90));
}

#[test]
fn ids_spilled_to_disk_deduplicate_exactly_as_in_memory() {
    // Two ids in memory at most: every few rows the ids spill to a run file, so identity
    // (identical rows), duplicates across files and re-imports are all decided on disk.
    let files = [
        fixture("aliyun/valid/english_headers.csv"),
        fixture("aliyun/valid/overlap_may01_02.csv"),
        fixture("aliyun/valid/overlap_may02_03.csv"),
        fixture("autodl/valid/two_days.csv"),
    ];
    let spilling = ImportOptions { ids_in_memory: Some(2), ..Default::default() };
    let (_a, in_memory) = ledger();
    let (_b, on_disk) = ledger();
    let want = in_memory.import(&files, &ImportOptions::default()).unwrap();
    let got = on_disk.import(&files, &spilling).unwrap();
    let counts = |o: &gpuaudit_core::ledger::ImportOutcome| {
        o.files.iter().map(|f| (f.new, f.duplicates)).collect::<Vec<_>>()
    };
    assert_eq!(counts(&got), counts(&want));
    assert_eq!(counts(&got)[2], (2, 2), "the overlap is found in the spilled ids");
    let ids = |s: &Store| {
        let mut ids: Vec<_> =
            s.load(&LoadFilter::default()).unwrap().iter().map(|c| c.id).collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&on_disk), ids(&in_memory));
    assert_eq!(ids(&on_disk).len(), 9 + 4 + 2 + 7);
    let again = on_disk.import(&files, &spilling).unwrap();
    assert!(again.files.iter().all(|f| f.new == 0), "{:?}", counts(&again));
    assert_eq!(again.batch, None);
    assert!(!on_disk.root().join("tmp").exists(), "scratch files are removed");
}

/// Every file under `dir` with its bytes.
pub(crate) fn snapshot(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn a_bad_row_deep_in_a_big_file_fails_the_batch_with_its_line_and_leaves_the_ledger() {
    let (dir, store) = ledger();
    store.import(&[fixture("autodl/valid/two_days.csv")], &ImportOptions::default()).unwrap();
    let before = snapshot(store.root());
    let (path, _) = super::big_focus_file(dir.path(), 9_000);
    // Row 7,000 (line 7,001) gets an amount that is not one, row 8,500 loses its last cells:
    // both are read by parsing threads, many batches after the first.
    let bytes = std::fs::read(&path).unwrap();
    let mut lines: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let text = |line: &[u8]| String::from_utf8(line.to_vec()).unwrap();
    lines[7_000] = text(&lines[7_000]).replace(",0.00", ",0.0.0").into_bytes();
    let short: Vec<String> = text(&lines[8_500]).split(',').take(5).map(str::to_owned).collect();
    lines[8_500] = short.join(",").into_bytes();
    std::fs::write(&path, lines.join(&b'\n')).unwrap();
    let err = store
        .import(&[path.clone(), fixture("aliyun/valid/english_headers.csv")], &Default::default());
    let err = err.unwrap_err();
    let ErrorKind::InvalidRows { errors, total } = err.kind() else { panic!("{err}") };
    assert_eq!(*total, 2);
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(shown[0].contains("big_focus.csv:7001: column BilledCost"), "{shown:?}");
    assert!(shown[1].contains("big_focus.csv:8501: column ChargeCategory"), "{shown:?}");
    assert_eq!(snapshot(store.root()), before, "the ledger is as it was");
}

#[test]
fn reading_reports_its_progress_up_to_the_whole_file() {
    let (dir, store) = ledger();
    let (path, _) = super::big_focus_file(dir.path(), 9_000);
    let size = std::fs::metadata(&path).unwrap().len();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let progress =
        gpuaudit_core::import::Progress(std::sync::Arc::new(move |file, done, total| {
            record.lock().unwrap().push((file.to_path_buf(), done, total));
        }));
    let options = ImportOptions { progress: Some(progress), ..Default::default() };
    store.import(std::slice::from_ref(&path), &options).unwrap();
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 4, "a report per batch of 2,048 rows: {}", seen.len());
    assert!(seen.iter().all(|(file, _, total)| *file == path && *total == size));
    assert!(seen.windows(2).all(|w| w[0].1 <= w[1].1), "never goes back");
    assert!(seen[0].1 < size);
    assert_eq!(seen.last().unwrap().1, size, "ends at the whole file");
}

#[test]
fn a_dry_run_counts_but_writes_nothing() {
    let (dir, store) = ledger();
    let options = ImportOptions { dry_run: true, ..Default::default() };
    let out = store.import(&[fixture("autodl/valid/two_days.csv")], &options).unwrap();
    assert_eq!(out.files[0].new, 7);
    assert!(!store.root().exists(), "a dry run creates no ledger");
    drop(dir);
}

#[test]
fn skip_invalid_imports_the_valid_rows_and_keeps_the_rejects() {
    let (_dir, store) = ledger();
    let options = ImportOptions { skip_invalid: true, ..Default::default() };
    let out = store.import(&[fixture("autodl/invalid/amount_not_a_number.csv")], &options).unwrap();
    assert_eq!((out.files[0].new, out.files[0].report.rejected), (1, 1));
    let manifest = store.manifest().unwrap();
    let rejects = &manifest.batches[0].rejects;
    assert_eq!(rejects.len(), 1);
    let text = std::fs::read_to_string(store.root().join(&rejects[0])).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(
            "line,column,reason,流水号,交易时间,收支类型,交易类型,交易渠道,交易金额,账户余额,备注"
        )
    );
    assert_eq!(
        lines.next(),
        Some(
            "2,交易金额,\"\"\"12,3x\"\" is not an amount\",B0002,2024-05-01 10:59:59,支出,按量计费,余额,\"12,3x\",97.88,容器实例ID：ab12cd34ef"
        )
    );
}

#[test]
fn an_invalid_row_fails_the_whole_batch() {
    let (_dir, store) = ledger();
    let files =
        [fixture("autodl/valid/two_days.csv"), fixture("autodl/invalid/time_unparseable.csv")];
    let err = store.import(&files, &ImportOptions::default()).unwrap_err();
    let ErrorKind::InvalidRows { errors, total } = err.kind() else { panic!("{err}") };
    assert_eq!((*total, errors[0].location.line), (1, 3));
    assert!(store.manifest().unwrap().batches.is_empty());
    assert!(!store.root().join("charges").exists(), "nothing of the batch is left");
}

#[test]
fn loading_one_month_reads_only_its_partition() {
    let (_dir, store) = ledger();
    store.import(&[fixture("autodl/valid/two_days.csv")], &Default::default()).unwrap();
    let may = LoadFilter { months: vec![YearMonth::new(2024, 5).unwrap()] };
    let june = LoadFilter { months: vec![YearMonth::new(2024, 6).unwrap()] };
    assert_eq!(store.load(&may).unwrap().len(), 7);
    assert_eq!(store.load(&june).unwrap().len(), 0);
}

#[test]
fn the_largest_and_smallest_amounts_round_trip_exactly() {
    let (dir, store) = ledger();
    let bill = dir.path().join("extremes.csv");
    std::fs::write(
        &bill,
        "流水号,交易时间,收支类型,交易金额,账户余额,备注\n\
         E1,2024-05-01 10:00:00,支出,999999999999999.999999999999,-999999999999999.99,容器实例ID：e1\n\
         E2,2024-05-01 11:00:00,支出,0.000000000001,-1.000000000001,容器实例ID：e1\n",
    )
    .unwrap();
    store.import(&[bill], &ImportOptions::default()).unwrap();
    let mut got = store.load(&LoadFilter::default()).unwrap();
    got.sort_by_key(|c| c.origin.line);
    assert_eq!(got[0].billed_cost, dec!(999999999999999.999999999999));
    assert_eq!(got[0].balance_after, Some(dec!(-999999999999999.99)));
    assert_eq!(got[1].billed_cost, dec!(0.000000000001));
    assert_eq!(got[1].balance_after, Some(dec!(-1.000000000001)));
}

/// A FOCUS export whose rows come in threes that differ only in the export's own `Id` column
/// (which the profile does not read), and some rows repeated whole.
fn split_export(
    dir: &std::path::Path,
    parts: usize,
) -> (std::path::PathBuf, Vec<std::path::PathBuf>) {
    let header = "Id,BillingAccountId,BillingCurrency,ChargePeriodStart,ChargePeriodEnd,\
ChargeCategory,ChargeDescription,BilledCost,ResourceId,ServiceCategory";
    let mut rows = Vec::new();
    for i in 0..3000 {
        // Three rows an hour, a thousand lines apart: they fall in different parts.
        let hour = i % 1000;
        let (day, h) = (1 + hour / 24 % 28, hour % 24);
        let id = format!("line-{i:05}");
        rows.push(format!(
            "{id},012345678901,USD,2024-05-{day:02}T{h:02}:00:00Z,2024-05-{day:02}T{h:02}:59:59Z,\
Usage,GPU hours,0.125,vm-{},Compute",
            hour % 5
        ));
        if i % 500 == 0 {
            rows.push(rows.last().unwrap().clone()); // a row repeated whole, in one part
        }
    }
    let whole = dir.join("whole.csv");
    std::fs::write(&whole, format!("{header}\n{}\n", rows.join("\n"))).unwrap();
    // Split by line, but never between a row and its repeat: rows identical in every cell are
    // one row to identity when they are in different files (an overlapping re-export).
    let per = rows.len().div_ceil(parts);
    let mut chunks: Vec<Vec<&String>> = vec![Vec::new()];
    for (i, row) in rows.iter().enumerate() {
        let last = chunks.last_mut().unwrap();
        if last.len() >= per && rows[i - 1] != *row {
            chunks.push(vec![row]);
        } else {
            last.push(row);
        }
    }
    let files = chunks
        .iter()
        .enumerate()
        .map(|(n, chunk)| {
            let path = dir.join(format!("part-{n}.csv"));
            let text: Vec<&str> = chunk.iter().map(|r| r.as_str()).collect();
            std::fs::write(&path, format!("{header}\n{}\n", text.join("\n"))).unwrap();
            path
        })
        .collect();
    (whole, files)
}

fn ids(store: &Store) -> Vec<gpuaudit_core::ChargeId> {
    let mut ids: Vec<_> =
        store.load(&LoadFilter::default()).unwrap().iter().map(|c| c.id).collect();
    ids.sort();
    ids
}

#[test]
fn rows_of_a_split_export_are_not_merged_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, parts) = split_export(dir.path(), 8);
    assert_eq!(parts.len(), 8);
    let options = ImportOptions::default();
    let one = Store::open(dir.path().join("whole"));
    assert_eq!(one.import(std::slice::from_ref(&whole), &options).unwrap().files[0].new, 3006);
    let at_once = Store::open(dir.path().join("at-once"));
    let outcome = at_once.import(&parts, &options).unwrap();
    assert_eq!(outcome.files.iter().map(|f| f.new).sum::<u64>(), 3006);
    let reversed = Store::open(dir.path().join("reversed"));
    for part in parts.iter().rev() {
        reversed.import(std::slice::from_ref(part), &options).unwrap();
    }
    assert_eq!(ids(&one), ids(&at_once));
    assert_eq!(ids(&one), ids(&reversed));
    assert_eq!(ids(&one).len(), 3006);
    // The same rows exported again, whole, are all known.
    let again = reversed.import(&[whole], &options).unwrap();
    assert_eq!((again.files[0].new, again.files[0].duplicates), (0, 3006));
}

#[test]
fn verify_finds_missing_files_wrong_row_counts_and_repeated_ids() {
    let (_dir, store) = ledger();
    store.import(&[fixture("autodl/valid/two_days.csv")], &ImportOptions::default()).unwrap();
    store
        .import(&[fixture("aliyun/valid/english_headers.csv")], &ImportOptions::default())
        .unwrap();
    assert!(store.verify().unwrap().problems.is_empty());
    let first = store.manifest().unwrap().batches[0].files[0].clone();
    let path = store.root().join("_commits/00000000000000000002.json");
    let mut commit: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    // The second batch names the first one's file too (its ids twice), and miscounts a file.
    let second = commit["add"]["files"][0]["path"].as_str().unwrap().to_owned();
    commit["add"]["files"].as_array_mut().unwrap().push(serde_json::to_value(&first).unwrap());
    commit["add"]["files"][0]["rows"] = 99.into();
    std::fs::write(&path, serde_json::to_vec(&commit).unwrap()).unwrap();
    std::fs::remove_file(store.root().join(&second)).unwrap();
    let problems: Vec<String> = store
        .verify()
        .unwrap()
        .problems
        .iter()
        .map(|p| format!("{}: {}", p.file, p.message))
        .collect();
    assert_eq!(
        problems,
        [
            format!("{second}: is missing"),
            format!("{}: holds 7 charge ids that the ledger already has", first.path),
            "_commits: its files hold 106 charges, the batch says 9".to_owned(),
        ]
    );
}

#[test]
fn the_library_audits_and_reconciles_a_month_choosing_what_it_reads() {
    let (_dir, store) = ledger();
    let outcome = store
        .import(&[fixture("aliyun/valid/r005_footer_mismatch.csv")], &ImportOptions::default())
        .unwrap();
    let mismatch = &outcome.files[0].footer_mismatches;
    assert_eq!(mismatch.len(), 1, "the import outcome carries the footer that disagrees");
    assert_eq!((mismatch[0].expected, mismatch[0].actual), (dec!(620.00), dec!(621.63)));
    let may = YearMonth::new(2024, 5).unwrap();
    let found = store.reconcile(may, gpuaudit_core::reconcile::CHECKS, Default::default()).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].code, found[0].difference), ("R005", dec!(1.63)));
    let config = gpuaudit_core::config::Config::default();
    let platforms = gpuaudit_core::platforms::Platforms::default();
    let findings = store.audit(may, &config, gpuaudit_core::waste::RULES, &platforms).unwrap();
    let charges = store.load(&LoadFilter::default()).unwrap();
    let direct = gpuaudit_core::waste::audit(&charges, may, &config).unwrap();
    assert_eq!(findings, direct);
}

/// A store's reconciliation keeps, of the months around the one it checks, the rows with a
/// balance: a prepaid platform's balance chain broken in May is found only by following it
/// from April's rows of the same file.
#[test]
fn a_balance_chain_is_followed_into_the_month_before() {
    let (dir, store) = ledger();
    let bill = dir.path().join("autodl-apr-may.csv");
    std::fs::write(
        &bill,
        "流水号,交易时间,收支类型,交易类型,交易渠道,交易金额,账户余额,备注\n\
         A0003,2024-05-02 10:00:00,支出,按量计费,余额,2.00,96.00,容器实例ID：ab12cd34ef\n\
         A0002,2024-04-29 23:59:59,支出,数据盘,余额,1.60,99.00,容器实例ID：ab12cd34ef 数据盘\n\
         A0001,2024-04-29 10:00:00,支出,按量计费,余额,1.00,100.60,容器实例ID：ab12cd34ef\n",
    )
    .unwrap();
    store.import(&[bill], &ImportOptions::default()).unwrap();
    let may = YearMonth::new(2024, 5).unwrap();
    let input = gpuaudit_core::reconcile::ReconcileInput::default();
    let found = store.reconcile(may, gpuaudit_core::reconcile::CHECKS, input.clone()).unwrap();
    let r004: Vec<_> = found.iter().filter(|d| d.code == "R004").collect();
    assert_eq!(r004.len(), 1, "{found:?}");
    assert_eq!((r004[0].expected, r004[0].actual), (dec!(97.00), dec!(96.00)));
    let months = LoadFilter { months: gpuaudit_core::reconcile::months_to_read(may) };
    let charges = store.load(&months).unwrap();
    let direct = gpuaudit_core::reconcile::check_with(
        gpuaudit_core::reconcile::CHECKS,
        &charges,
        may,
        &input,
    )
    .unwrap();
    assert_eq!(found, direct);
}

/// A rule of one's own: a finding on every spend charge of the month whose cost is above
/// `from`, all of it wasted.
struct Above(&'static str, rust_decimal::Decimal);

impl gpuaudit_core::waste::Rule for Above {
    fn code(&self) -> &'static str {
        self.0
    }
    fn name(&self) -> &'static str {
        "above"
    }
    fn check(
        &self,
        ctx: &gpuaudit_core::waste::Context<'_>,
    ) -> gpuaudit_core::Result<Vec<gpuaudit_core::waste::Finding>> {
        let mut lines = ctx.lines();
        let mut first = None;
        for c in ctx.in_month().filter(|c| c.billed_cost() > self.1) {
            assert!(lines.push(ctx, c, c.billed_cost()));
            first.get_or_insert(c);
        }
        let Some(c) = first else { return Ok(Vec::new()) };
        Ok(vec![gpuaudit_core::waste::Finding {
            code: self.0,
            rule: "above",
            severity: gpuaudit_core::waste::Severity::Low,
            platform: ctx.text(c.platform).to_owned(),
            account: None,
            instance_id: None,
            resource_id: None,
            category: c.category,
            period_start: c.charge_start.time(),
            period_end: c.charge_end.time(),
            amount: rust_decimal::Decimal::ZERO,
            currency: ctx.text(c.currency).to_owned(),
            monthly_projection: rust_decimal::Decimal::ZERO,
            charges: lines,
            recommendation: "look".into(),
        }])
    }
}

/// No charge's money is counted twice: a charge claimed by one rule's finding is left out of
/// every later rule's, in a store's audit (which claims by the rows' places) as in the
/// library's of the charges (by their ids), and a charge given twice is claimed once.
#[test]
fn a_charge_claimed_by_one_rule_is_left_out_of_the_later_ones() {
    let (_dir, store) = ledger();
    let bill = fixture("aliyun/valid/english_headers.csv");
    store.import(std::slice::from_ref(&bill), &ImportOptions::default()).unwrap();
    let charges = parse_bill(&bill, None).unwrap().charges;
    let month = charges[0].billing_period;
    let (config, platforms) =
        (gpuaudit_core::config::Config::default(), gpuaudit_core::platforms::Platforms::default());
    let (high, low) = (Above("X001", dec!(5)), Above("X002", dec!(0)));
    let rules: [&dyn gpuaudit_core::waste::Rule; 2] = [&high, &low];
    let found = store.audit(month, &config, &rules, &platforms).unwrap();
    let direct = gpuaudit_core::waste::audit_with(&rules, &charges, month, &config).unwrap();
    assert_eq!(found, direct);
    let spend: Vec<_> = charges.iter().filter(|c| c.billed_cost > dec!(0)).collect();
    let above = spend.iter().filter(|c| c.billed_cost > dec!(5)).count();
    assert!(above > 0 && above < spend.len(), "the bill has charges on both sides of 5");
    let lines = |code: &str| -> Vec<gpuaudit_core::ChargeId> {
        let f = found.iter().find(|f| f.code == code).unwrap();
        f.charges.iter().map(|e| e.id).collect()
    };
    let (x1, x2) = (lines("X001"), lines("X002"));
    assert_eq!((x1.len(), x1.len() + x2.len()), (above, spend.len()));
    assert!(x2.iter().all(|id| !x1.contains(id)));
    let total: rust_decimal::Decimal = spend.iter().map(|c| c.billed_cost).sum();
    assert_eq!(found.iter().map(|f| f.amount).sum::<rust_decimal::Decimal>(), total);
    // The same charges given twice: the second copy is claimed with the first.
    let twice: Vec<_> = charges.iter().chain(&charges).cloned().collect();
    let again = gpuaudit_core::waste::audit_with(&rules, &twice, month, &config).unwrap();
    let x2_again = again.iter().find(|f| f.code == "X002").unwrap();
    assert_eq!(x2_again.charges.len(), 2 * x2.len());
    assert_eq!(again.iter().find(|f| f.code == "X001").unwrap().charges.len(), 2 * above);
}

/// The review hands each use the rows of its months linked as its own read links them: May's
/// egress under a VM's id whose compute is all in April is the VM's for the review's waste
/// (whose look-back holds April), and unattached for its cost (which reads May only), as
/// `Store::cost` has it.
#[test]
fn the_review_links_each_use_s_rows_as_its_own_read_would() {
    let (dir, store) = ledger();
    let bill = dir.path().join("focus-apr-may.csv");
    let vm = "//compute.googleapis.com/projects/p/zones/z/instances/41";
    let row = |period: &str, start: &str, end: &str, what: &str, cost: &str, kind: &str| {
        format!(
            "acct,USD,{period},{start},{end},Usage,,{what},Standard,1,hour,{cost},{cost},{cost},\
             {vm},trainer,{kind},us-central1,{},Compute Engine,SKU\n",
            if kind == "Compute Instance" { "Compute" } else { "Networking" }
        )
    };
    let (april, may) =
        ("2024-04-01T00:00:00Z,2024-05-01T00:00:00Z", "2024-05-01T00:00:00Z,2024-06-01T00:00:00Z");
    let mut text = "BillingAccountId,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,\
        ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ChargeClass,ChargeDescription,\
        PricingCategory,PricingQuantity,PricingUnit,ListUnitPrice,ListCost,BilledCost,\
        ResourceId,ResourceName,ResourceType,RegionId,ServiceCategory,ServiceName,SkuId\n"
        .to_owned();
    text += &row(
        april,
        "2024-04-29T00:00:00Z",
        "2024-04-29T01:00:00Z",
        "A2 core",
        "3.67",
        "Compute Instance",
    );
    text += &row(
        may,
        "2024-05-02T00:00:00Z",
        "2024-05-02T01:00:00Z",
        "Egress",
        "0.12",
        "Network Egress",
    );
    std::fs::write(&bill, text).unwrap();
    store.import(&[bill], &ImportOptions::default()).unwrap();
    let may = YearMonth::new(2024, 5).unwrap();
    let (config, platforms) =
        (gpuaudit_core::config::Config::default(), gpuaudit_core::platforms::Platforms::default());
    let options = gpuaudit_core::cost::CostOptions::default();
    let review = store.review(may, &config, &platforms, &options.by).unwrap();
    let cost = store.cost(may, &config, &platforms, &options).unwrap();
    assert_eq!(review.cost, cost);
    assert_eq!(cost.instances.len(), 1, "{cost:?}");
    assert_eq!(cost.instances[0].instance, None, "May alone has no compute of the VM");
    let whole = store.load(&LoadFilter::default()).unwrap();
    let egress = whole.iter().find(|c| c.billing_period == may).unwrap();
    assert_eq!(egress.instance_id.as_deref(), Some(vm), "April and May read together link it");
    let audit = store.audit(may, &config, gpuaudit_core::waste::RULES, &platforms).unwrap();
    assert_eq!(review.findings, audit);
}

/// A check of one's own that reads where charges were read itself ([`Window::origin`]):
/// the built-in double-charge check, without saying it reads them through its context.
struct OwnLines;

impl gpuaudit_core::reconcile::Check for OwnLines {
    fn code(&self) -> &'static str {
        "R002"
    }
    fn name(&self) -> &'static str {
        "double-charge"
    }
    fn run(
        &self,
        ctx: &gpuaudit_core::reconcile::Context<'_>,
    ) -> gpuaudit_core::Result<Vec<gpuaudit_core::reconcile::Discrepancy>> {
        gpuaudit_core::reconcile::Check::run(&gpuaudit_core::reconcile::DoubleCharge, ctx)
    }
}

/// A store's reconciliation reads the files and lines of the charges its discrepancies name
/// after the checks ran, and of charges billed twice for the same time, in the order of
/// their lines: the same discrepancies as the library's of the loaded charges and as a read
/// of every charge's file and line first (a check of one's own that does not read them
/// through its context), though the ledger holds the two in the other order.
#[test]
fn a_reconciliation_reads_the_lines_it_names_after_the_checks_ran() {
    let (dir, store) = ledger();
    let bill = std::fs::read_to_string(fixture("aliyun/valid/r002_double_charge.csv")).unwrap();
    let lines: Vec<&str> = bill.lines().collect();
    // The disk's second day once at line 6 of the first file imported, and billed again,
    // for less, at line 2 of the second: in the ledger's order the first comes first.
    let first = dir.path().join("first.csv");
    let mut text: Vec<&str> =
        lines.iter().copied().enumerate().filter(|&(i, _)| i != 6).map(|l| l.1).collect();
    std::fs::write(&first, text.join("\n") + "\n").unwrap();
    let again = lines[5].replace(",12.50,12.50,CNY", ",12.50,12.40,CNY");
    text = vec![lines[0], &again];
    let second = dir.path().join("second.csv");
    std::fs::write(&second, text.join("\n") + "\n").unwrap();
    for bill in [&first, &second] {
        store.import(std::slice::from_ref(bill), &ImportOptions::default()).unwrap();
    }
    let may = YearMonth::new(2024, 5).unwrap();
    let input = gpuaudit_core::reconcile::ReconcileInput::default();
    let checks = gpuaudit_core::reconcile::CHECKS;
    let found = store.reconcile(may, checks, input.clone()).unwrap();
    let r002: Vec<_> = found.iter().filter(|d| d.code == "R002").collect();
    assert_eq!(r002.len(), 1, "{found:?}");
    let at: Vec<String> = r002[0].locations.iter().map(ToString::to_string).collect();
    let (first, second) = (first.display().to_string(), second.display().to_string());
    assert_eq!(at, [format!("{second}:2"), format!("{first}:6")]);
    assert_eq!((r002[0].expected, r002[0].difference), (dec!(12.40), dec!(12.50)));
    let months = LoadFilter { months: gpuaudit_core::reconcile::months_to_read(may) };
    let charges = store.load(&months).unwrap();
    let direct = gpuaudit_core::reconcile::check_with(checks, &charges, may, &input).unwrap();
    assert_eq!(found, direct);
    let own = store.reconcile(may, &[&OwnLines], input).unwrap();
    assert_eq!(own.iter().collect::<Vec<_>>(), r002);
}

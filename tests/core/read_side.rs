//! The read side answers from rollups and the manifest exactly what the charges give: on
//! generated ledgers (several batches, months, accounts, currencies; instances, their disks,
//! egress billed under a VM's own id; payments), `Store::summary` for every `--by` and month
//! equals `report::summarize` of `Store::load`, and `Store::overview` its month × platform
//! view — also for a batch written before rollups (its manifest entry without them).

use std::path::{Path, PathBuf};

use gpuaudit_core::YearMonth;
use gpuaudit_core::ledger::{ImportOptions, LoadFilter, Store};
use gpuaudit_core::report::{GroupKey, summarize};

/// A small deterministic generator (the tests must not depend on a random seed).
pub(super) struct Lcg(pub(super) u64);

impl Lcg {
    pub(super) fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

const HEADER: &str = "BillingAccountId,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,\
ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ChargeClass,ChargeDescription,PricingCategory,\
PricingQuantity,PricingUnit,ListUnitPrice,ListCost,BilledCost,ResourceId,ResourceType,RegionId,\
ServiceCategory,ServiceName";

/// A FOCUS export of `rows` charges over April–June 2024: VMs, their disks, snapshots, IPs
/// and egress (under the VM's id), in two accounts and two currencies, with credits.
pub(super) fn focus_bill(dir: &Path, name: &str, seed: u64, rows: usize) -> PathBuf {
    let mut rng = Lcg(seed);
    let mut text = format!("{HEADER}\n");
    for _ in 0..rows {
        let month = 4 + rng.next(3);
        let day = 1 + rng.next(28);
        let hour = rng.next(24);
        let account = ["111111111111", "222222222222"][rng.next(2) as usize];
        let currency = if account.starts_with('1') { "USD" } else { "EUR" };
        let vm = rng.next(6);
        let (resource, rtype, service_category, service, desc) = match rng.next(5) {
            0 => {
                (format!("vm-{vm}"), "Virtual Machine", "Compute", "Virtual Machines", "A100 hours")
            }
            1 => (format!("disk-{vm}"), "Disk", "Storage", "Storage", "Premium SSD"),
            2 => (format!("snap-{}", rng.next(4)), "Snapshot", "Storage", "Storage", "Snapshot"),
            3 => (format!("ip-{vm}"), "Public IP Address", "Networking", "Virtual Network", "IPv4"),
            // Egress under the VM's own id: linked to the VM only when the VM is in the window.
            _ => (format!("vm-{}", rng.next(9)), "NULL", "Networking", "Bandwidth", "Egress"),
        };
        let category = if rng.next(10) == 0 { "Credit" } else { "Usage" };
        let cents = rng.next(1_000_000) as i64;
        let billed = if category == "Credit" { -cents } else { cents };
        let list = billed + rng.next(500) as i64;
        let (start, end) = (
            format!("2024-{month:02}-{day:02} {hour:02}:00:00"),
            format!("2024-{month:02}-{day:02} {hour:02}:59:59"),
        );
        let amount = |v: i64| {
            let sign = if v < 0 { "-" } else { "" };
            format!("{sign}{}.{:06}", v.abs() / 1_000_000, v.abs() % 1_000_000)
        };
        text.push_str(&format!(
            "{account},{currency},2024-{month:02}-01T00:00:00Z,2024-{:02}-01T00:00:00Z,{start},{end},\
{category},NULL,{desc},Standard,1,Hours,{},{},{},{resource},{rtype},eastus,{service_category},{service}\n",
            month + 1,
            amount(list),
            amount(list),
            amount(billed),
        ));
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A ledger under `dir` of the example bills: AutoDL's has payments (never spend), the
/// Alibaba ones instance-linked disks.
fn ledger_of_examples(dir: &Path) -> Store {
    let store = Store::open(dir.join(".gpuaudit"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let examples: Vec<PathBuf> = ["autodl-2024-05.csv", "aliyun-2024-04.csv", "aliyun-2024-05.csv"]
        .iter()
        .map(|f| root.join("examples/bills").join(f))
        .collect();
    store.import(&examples, &ImportOptions::default()).unwrap();
    store
}

fn every_key_list() -> Vec<Vec<GroupKey>> {
    let mut out = vec![vec![]];
    for k in GroupKey::ALL {
        out.push(vec![*k]);
        for j in GroupKey::ALL {
            if j != k {
                out.push(vec![*k, *j]);
            }
        }
    }
    out.push(GroupKey::ALL.to_vec());
    out
}

/// Every summary and the overview agree with the charges, for every month filter.
pub(super) fn assert_agrees(store: &Store, what: &str) {
    let months: Vec<Vec<YearMonth>> = vec![
        vec![],
        vec!["2024-04".parse().unwrap()],
        vec!["2024-05".parse().unwrap(), "2024-06".parse().unwrap()],
        vec!["2031-01".parse().unwrap()],
    ];
    for months in months {
        let filter = LoadFilter { months: months.clone() };
        let charges = store.load(&filter).unwrap();
        for keys in every_key_list() {
            let want = summarize(&charges, &keys).unwrap();
            let got = store.summary(&filter, &keys).unwrap();
            assert_eq!(got, want, "{what}: --by {keys:?}, months {months:?}");
        }
    }
    let overview = store.overview().unwrap();
    let all = store.load(&LoadFilter::default()).unwrap();
    assert_eq!(overview.charges, all.len() as u64, "{what}");
    assert_eq!(overview.spend, summarize(&all, &[GroupKey::Month, GroupKey::Platform]).unwrap());
}

#[test]
fn summaries_from_rollups_equal_summaries_of_the_charges() {
    let dir = tempfile::tempdir().unwrap();
    let store = ledger_of_examples(dir.path());
    for seed in 1..=3 {
        let bill = focus_bill(dir.path(), &format!("focus-{seed}.csv"), seed, 400);
        store.import(&[bill], &ImportOptions::default()).unwrap();
        assert_agrees(&store, &format!("after batch {seed}"));
    }
    let manifest = store.manifest().unwrap();
    assert_eq!(manifest.batches.len(), 4);
    assert!(manifest.batches.iter().all(|b| b.rollup.is_some() && b.spend.is_some()));
    assert!(store.verify().unwrap().problems.is_empty());

    // A ledger written before commits and rollups: a manifest.json whose batches say nothing
    // of rollups.
    let mut json = serde_json::to_value(&manifest).unwrap();
    for batch in json["batches"].as_array_mut().unwrap().iter_mut().take(2) {
        let batch = batch.as_object_mut().unwrap();
        let rollup = batch.remove("rollup").unwrap();
        std::fs::remove_file(store.root().join(rollup.as_str().unwrap())).unwrap();
        batch.remove("spend");
    }
    std::fs::remove_dir_all(store.root().join("_commits")).unwrap();
    std::fs::remove_dir_all(store.root().join("_symlink_format_manifest")).unwrap();
    let path = store.root().join("manifest.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&json).unwrap()).unwrap();
    assert_eq!(store.manifest().unwrap().batches.len(), 4, "the old ledger opens");
    assert_agrees(&store, "without rollups for two batches");

    // The next commit upgrades it: checkpoint 0 holds its batches, their spend and rollups
    // made once, from their parts; the symlink manifests name every partition's files.
    let bill = focus_bill(dir.path(), "focus-9.csv", 9, 50);
    store.import(&[bill], &ImportOptions::default()).unwrap();
    assert!(store.root().join("_commits/00000000000000000000.checkpoint.json").is_file());
    assert_eq!(store.head().unwrap(), 1);
    let listed: usize = walk(&store.root().join("_symlink_format_manifest"))
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap().lines().count())
        .sum();
    let manifest = store.manifest().unwrap();
    assert_eq!(listed, manifest.batches.iter().map(|b| b.files.len()).sum::<usize>());
    assert_eq!(manifest.batches.len(), 5);
    assert!(manifest.batches.iter().all(|b| b.rollup.is_some() && b.spend.is_some()));
    assert!(store.verify().unwrap().problems.is_empty());
    assert_agrees(&store, "after the upgrade");
}

/// A batch with about as many groups as charges (every charge a resource of its own) keeps no
/// rollup, only its spend: the summary reads its part files, with the same answer.
#[test]
fn a_batch_too_varied_for_a_rollup_is_summarised_from_its_charges() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join(".gpuaudit"));
    let mut text = format!("{HEADER}\n");
    for i in 0..70_000u32 {
        let (day, hour) = (1 + i % 28, i % 24);
        let cost = format!("0.{:06}", 1 + i % 999_999);
        text.push_str(&format!(
            "111111111111,USD,2024-05-01T00:00:00Z,2024-06-01T00:00:00Z,\
2024-05-{day:02} {hour:02}:00:00,2024-05-{day:02} {hour:02}:59:59,Usage,NULL,Egress,Standard,1,GB,\
{cost},{cost},{cost},res-{i},NULL,eastus,Networking,Bandwidth\n"
        ));
    }
    let bill = dir.path().join("varied.csv");
    std::fs::write(&bill, text).unwrap();
    let out = store.import(&[bill], &ImportOptions::default()).unwrap();
    assert_eq!(out.files[0].new, 70_000);
    let batch = &store.manifest().unwrap().batches[0];
    assert_eq!(batch.rollup, None, "a rollup as big as the charges is not kept");
    let spend = batch.spend.as_ref().expect("the spend is recorded all the same");
    assert_eq!(spend.iter().map(|s| s.charges).sum::<u64>(), 70_000);
    assert!(!store.root().join("rollups").exists());
    assert_agrees(&store, "a batch without a rollup");
}

/// Waste, reconcile and cost read the window as rows straight from the part files' columns
/// (`Store::load_window`, waste without the amounts); the findings, discrepancies and cost
/// lines are those of the rules run on the loaded charges (`Store::load`, then the embedding
/// API), for every month of the ledger, and the review's are those of each use alone.
#[test]
fn waste_reconcile_and_cost_on_the_columnar_window_equal_them_on_the_loaded_charges() {
    use gpuaudit_core::config::Config;

    let dir = tempfile::tempdir().unwrap();
    let store = ledger_of_examples(dir.path());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for seed in 4..=5 {
        let bill = focus_bill(dir.path(), &format!("focus-{seed}.csv"), seed, 600);
        store.import(&[bill], &ImportOptions::default()).unwrap();
    }
    // The FOCUS batches' months are read from their look-back files where not audited.
    let manifest = store.manifest().unwrap();
    assert!(manifest.batches.iter().filter(|b| !b.look_back.is_empty()).count() >= 2);
    let config = Config::load(&root.join("examples/gpuaudit.toml"), true).unwrap();
    let platforms = store.platforms_over(gpuaudit_core::import::profiles()).unwrap();
    let (mut findings, mut lines) = (0, 0);
    for month in ["2024-04", "2024-05", "2024-06"] {
        let (codes, l) = assert_uses_agree(&store, &config, &platforms, month.parse().unwrap(), "");
        findings += codes.iter().filter(|c| c.starts_with('W')).count();
        lines += l;
    }
    assert!(findings > 0, "the ledger has waste to find");
    assert!(lines > 0, "the ledger has costs to report");
}

/// The store's waste (with and without evidence), reconciliation, cost report (compared
/// across platforms) and review of `month` equal those of the library on the charges
/// `Store::load` gives for the months each reads; `what` names the case in a failure. What
/// it saw: the codes of the findings and discrepancies, and the number of cost lines.
pub(super) fn assert_uses_agree(
    store: &Store,
    config: &gpuaudit_core::config::Config,
    platforms: &gpuaudit_core::platforms::Platforms,
    month: YearMonth,
    what: &str,
) -> (std::collections::BTreeSet<&'static str>, usize) {
    use gpuaudit_core::reconcile::{self, ReconcileInput};
    use gpuaudit_core::{cost, waste, window};

    let window = LoadFilter { months: waste::months_to_read(month, config) };
    let charges = store.load(&window).unwrap();
    let want = waste::audit_in(waste::RULES, &charges, month, config, platforms).unwrap();
    let got = store.audit(month, config, waste::RULES, platforms).unwrap();
    assert_eq!(got, want, "waste {month} {what}");
    let mut codes: std::collections::BTreeSet<_> = got.iter().map(|f| f.code).collect();
    // Read without the evidence: the same findings, lines, ids and amounts; only where
    // each line was read is left out.
    let lean = store.audit_without_evidence(month, config, waste::RULES, platforms).unwrap();
    assert_eq!(lean.len(), got.len(), "lean waste {month} {what}");
    for (lean, full) in lean.iter().zip(&got) {
        // Every field but the lines, then the lines.
        let mut same = lean.clone();
        same.charges = full.charges.clone();
        assert_eq!(&same, full, "lean waste {month} {what}");
        assert_eq!(lean.charges.len(), full.charges.len());
        for (l, f) in lean.charges.iter().zip(full.charges.iter()) {
            assert_eq!((l.file, l.line), ("", 0));
            assert!(!f.file.is_empty() && f.line > 0, "{f:?}");
            let (l, f) =
                ((l.id, l.item, l.billed_cost, l.wasted), (f.id, f.item, f.billed_cost, f.wasted));
            assert_eq!(l, f);
        }
    }

    let input = ReconcileInput { platforms: platforms.clone(), ..ReconcileInput::default() };
    let around = LoadFilter { months: reconcile::months_to_read(month) };
    let charges = store.load(&around).unwrap();
    let want = reconcile::check_with(reconcile::CHECKS, &charges, month, &input).unwrap();
    let got = store.reconcile(month, reconcile::CHECKS, input).unwrap();
    // The store adds the footers of the files that billed the month; without footers in
    // these bills, the discrepancies are the same.
    assert_eq!(got, want, "reconcile {month} {what}");
    codes.extend(got.iter().map(|d| d.code));

    // The cost report, compared across platforms, reads a window with its amounts.
    let options = cost::CostOptions { by: vec![cost::CostKey::Platform], compare: true };
    let months = LoadFilter { months: cost::months_to_read(month, true) };
    let mut rows = window::rows_of(&store.load(&months).unwrap());
    window::link_rows(&mut rows.rows);
    let want = cost::report_rows(&rows, month, config, platforms, &options).unwrap();
    let got = store.cost(month, config, platforms, &options).unwrap();
    assert_eq!(got, want, "cost {month} {what}");
    let lines = got.lines.len();

    // The review reads one window and hands each use the rows of its months (their
    // amounts with them): what each use gives alone.
    let review = store.review(month, config, platforms, &[]).unwrap();
    let alone = store.audit(month, config, waste::RULES, platforms).unwrap();
    assert_eq!(review.findings, alone, "review's waste {month} {what}");
    let input = ReconcileInput {
        config: config.clone(),
        platforms: platforms.clone(),
        ..ReconcileInput::default()
    };
    let alone = store.reconcile(month, reconcile::CHECKS, input).unwrap();
    assert_eq!(review.discrepancies, alone, "review's reconcile {month} {what}");
    let options = cost::CostOptions { by: Vec::new(), compare: false };
    let alone = store.cost(month, config, platforms, &options).unwrap();
    assert_eq!(review.cost, alone, "review's cost {month} {what}");
    (codes, lines)
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A part file holding a figure no import writes (10^15 or more, which `parse_amount`
/// refuses: the file is damaged) is refused by every read that takes the column, naming the
/// file, the column and the batch, rather than read as a figure a sum overflows on later
/// without saying where; a read that does not take the column (waste, which reads no
/// quantity) answers as before.
#[test]
fn a_part_file_holding_a_figure_no_import_writes_is_refused_naming_it() {
    use gpuaudit_core::config::Config;
    use gpuaudit_core::reconcile::{self, ReconcileInput};
    use gpuaudit_core::{cost, waste};
    use polars::prelude::*;

    let dir = tempfile::tempdir().unwrap();
    let store = ledger_of_examples(dir.path());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let config = Config::load(&root.join("examples/gpuaudit.toml"), true).unwrap();
    let platforms = store.platforms_over(gpuaudit_core::import::profiles()).unwrap();
    let month: YearMonth = "2024-05".parse().unwrap();
    let waste_before = store.audit(month, &config, waste::RULES, &platforms).unwrap();
    let part = walk(&dir.path().join(".gpuaudit/charges/month=2024-05/platform=aliyun"))
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "parquet"))
        .expect("May's aliyun part file");
    let batch = part.file_name().unwrap().to_str().unwrap().rsplit_once('-').unwrap().0.to_owned();
    let mut frame = ParquetReader::new(std::fs::File::open(&part).unwrap()).finish().unwrap();
    let quantities = frame.column("quantity").unwrap().decimal().unwrap().physical().clone();
    // The first charge's quantity becomes 10^15 (at scale 12), the others stay.
    let damaged =
        quantities.iter().enumerate().map(|(i, q)| if i == 0 { Some(10i128.pow(27)) } else { q });
    let damaged = Int128Chunked::from_iter_options("quantity".into(), damaged);
    let damaged = damaged.into_decimal(38, 12).unwrap().into_series().into_column();
    frame.replace("quantity", damaged).unwrap();
    ParquetWriter::new(std::fs::File::create(&part).unwrap()).finish(&mut frame).unwrap();

    let refused = |what: &str, err: gpuaudit_core::Error| {
        let err = err.to_string();
        let name = part.file_name().unwrap().to_str().unwrap();
        assert!(err.contains(name) && err.contains(&batch), "{what}: {err}");
        let why = "column quantity: a figure of 16 digits before the point, beyond any a bill";
        assert!(err.contains(why), "{what}: {err}");
    };
    let options = cost::CostOptions { by: Vec::new(), compare: true };
    refused("cost", store.cost(month, &config, &platforms, &options).unwrap_err());
    let input = ReconcileInput { platforms: platforms.clone(), ..ReconcileInput::default() };
    refused("reconcile", store.reconcile(month, reconcile::CHECKS, input).unwrap_err());
    let may = LoadFilter { months: vec![month] };
    refused("load", store.load(&may).unwrap_err());
    let waste_after = store.audit(month, &config, waste::RULES, &platforms).unwrap();
    assert_eq!(waste_after, waste_before, "waste reads no quantity");
}

/// A batch's rollup and look-back files damaged, cut or missing: `Store::repair` writes them
/// again from its part files, the same bytes, and every use answers as before. A batch whose
/// part file is damaged is left as it is, named: its charges have no other copy.
#[test]
fn repair_makes_derived_files_again_from_the_part_files_and_never_a_part_file() {
    use gpuaudit_core::config::Config;
    use gpuaudit_core::ledger::is_derived_file;

    let dir = tempfile::tempdir().unwrap();
    let store = ledger_of_examples(dir.path());
    let bill = focus_bill(dir.path(), "focus-7.csv", 7, 900);
    store.import(&[bill], &ImportOptions::default()).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let config = Config::load(&root.join("examples/gpuaudit.toml"), true).unwrap();
    let platforms = store.platforms_over(gpuaudit_core::import::profiles()).unwrap();
    let june: YearMonth = "2024-06".parse().unwrap();
    let keys = [GroupKey::Month, GroupKey::Platform, GroupKey::Category];
    let uses = |store: &Store| {
        let summary = store.summary(&LoadFilter::default(), &keys)?;
        let waste = store.audit(june, &config, gpuaudit_core::waste::RULES, &platforms)?;
        Ok::<_, gpuaudit_core::Error>((summary, waste))
    };
    let before = uses(&store).unwrap();
    let manifest = store.manifest().unwrap();
    let focus = &manifest.batches[1];
    let rollup = focus.rollup.clone().unwrap();
    let look_back: Vec<String> = focus.look_back.iter().flat_map(|l| l.names()).cloned().collect();
    assert!(focus.look_back.len() >= 2, "April's and May's look-back files, read auditing June");
    let bytes: Vec<Vec<u8>> = look_back
        .iter()
        .chain([&rollup])
        .map(|f| std::fs::read(store.root().join(f)).unwrap())
        .collect();

    std::fs::write(store.root().join(&rollup), &bytes[look_back.len()][..40]).unwrap();
    std::fs::remove_file(store.root().join(&look_back[0])).unwrap();
    let last = look_back.len() - 1;
    std::fs::write(store.root().join(&look_back[last]), b"PAR1 not a parquet file PAR1").unwrap();
    let err = uses(&store).unwrap_err();
    let gpuaudit_core::ErrorKind::Unreadable { path, batch, .. } = err.kind() else {
        panic!("{err}")
    };
    assert!(is_derived_file(path) && batch == &focus.id, "{err}");
    let problems = store.verify().unwrap().problems;
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems.iter().all(|p| p.in_derived_file() && p.batch == focus.id), "{problems:?}");

    let repaired = store.repair().unwrap();
    assert_eq!(repaired.rebuilt.len(), 1);
    assert_eq!(repaired.rebuilt[0].batch, focus.id);
    assert_eq!(repaired.left.problems, vec![]);
    for (file, bytes) in look_back.iter().chain([&rollup]).zip(&bytes) {
        assert_eq!(&std::fs::read(store.root().join(file)).unwrap(), bytes, "{file}");
    }
    assert_eq!(uses(&store).unwrap(), before);

    // A part file damaged: nothing to make it from.
    let part = &manifest.batches[0].files[0].path;
    std::fs::write(store.root().join(part), b"PAR1 not a parquet file PAR1").unwrap();
    let err = store.rebuild_derived(&manifest.batches[0].id).unwrap_err();
    let gpuaudit_core::ErrorKind::Unreadable { path, .. } = err.kind() else { panic!("{err}") };
    assert!(path.ends_with(part) && !is_derived_file(path), "{err}");
    let repaired = store.repair().unwrap();
    assert_eq!(repaired.rebuilt, vec![]);
    assert!(repaired.left.problems.iter().any(|p| &p.file == part && !p.in_derived_file()));
}

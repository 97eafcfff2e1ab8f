//! The read side against its oracle on generated ledgers: for each of many seeds, a ledger
//! built of generated bills, split into files that overlap, imported as batches in a random
//! order, read with random thresholds, then with a batch removed. For every month it holds,
//! the store's summaries, waste (with and without evidence), reconciliation, cost report and
//! review equal those of the library on the charges `Store::load` gives (the in-memory
//! implementation, kept as the oracle). Last, one of its derived files (a rollup or a
//! look-back file) is cut short or removed, and `Store::repair` must make it again, byte for
//! byte.
//!
//! The bills are AutoDL's transaction logs (one account's balance chain, broken now and
//! then; instances that stop and start, billed by the hour and at shutdown; data disks billed
//! daily whether the instance runs or not, some kept after the instance's last run; a monthly
//! plan; top-ups; an hour now and then billed twice), FOCUS exports (two accounts and
//! currencies, credits) and, in some cases, the example Alibaba bills (disks linked to their
//! instances). The cases are deterministic: a failure names its seed, and
//! `GPUAUDIT_READ_SIDE_CASES=N` runs N of them (8 by default).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chrono::{Duration, NaiveDate, NaiveDateTime};
use gpuaudit_core::YearMonth;
use gpuaudit_core::config::Config;
use gpuaudit_core::ledger::{ImportOptions, Store};

use super::read_side::{Lcg, assert_agrees, assert_uses_agree, focus_bill};

/// One row of an AutoDL transaction log; `cents` is the amount in fen, income positive.
struct Txn {
    at: NaiveDateTime,
    kind: &'static str,
    note: String,
    cents: i64,
}

/// An instance of the generated AutoDL account.
struct Instance {
    id: String,
    hourly: i64,
    disk_daily: Option<i64>,
    /// The hour of its last run: its disk is billed for some days after.
    last: i64,
}

/// The transactions of one AutoDL account over `hours` hours from `start`, in time order.
fn autodl_txns(rng: &mut Lcg, start: NaiveDateTime, hours: i64) -> Vec<Txn> {
    let instances: Vec<Instance> = (0..2 + rng.next(3))
        .map(|i| Instance {
            id: format!("{:010x}", 0x009d_3f55_aa00_u64 + i * 0x1111 + rng.next(0xff)),
            hourly: [198, 258, 10][rng.next(3) as usize],
            disk_daily: (rng.next(3) > 0).then(|| [80, 160][rng.next(2) as usize]),
            last: hours - rng.next(hours as u64 / 2) as i64,
        })
        .collect();
    let mut txns = Vec::new();
    let expense = |at, kind, note: String, cents: i64| Txn { at, kind, note, cents: -cents };
    for inst in &instances {
        let note = format!("容器实例ID：{}", inst.id);
        let (mut running, mut switch) = (rng.next(2) == 0, rng.next(30) as i64);
        for h in 0..hours {
            let hour_end = start + Duration::hours(h) + Duration::seconds(3599);
            if h >= switch {
                if running && h < inst.last {
                    // The shutdown's row: the part of the hour it ran, 0.01 at least.
                    let at = start + Duration::hours(h) + Duration::seconds(rng.next(3000) as i64);
                    let cents = (inst.hourly * rng.next(60) as i64 / 60).max(1);
                    txns.push(expense(at, "按量计费", note.clone(), cents));
                }
                running = !running;
                switch = h + 3 + rng.next(if running { 60 } else { 120 }) as i64;
            }
            if running && h < inst.last {
                txns.push(expense(hour_end, "按量计费", note.clone(), inst.hourly));
                if rng.next(150) == 0 {
                    txns.push(expense(hour_end, "按量计费", note.clone(), inst.hourly));
                }
            }
            let kept = h < inst.last + 24 * 6;
            if let Some(daily) = inst.disk_daily
                && kept
                && (hour_end + Duration::hours(8)).format("%H").to_string() == "23"
            {
                txns.push(expense(hour_end, "数据盘", format!("{note} 数据盘"), daily));
            }
        }
    }
    if rng.next(2) == 0 {
        let at = start + Duration::hours(rng.next(hours as u64) as i64) + Duration::minutes(7);
        let note = format!("容器实例ID：{} 包月", instances[0].id);
        txns.push(expense(at, "包月", note, 150_000));
    }
    txns.sort_by_key(|t| t.at);
    txns
}

/// `txns` as AutoDL exports them (newest first, the balance after each), with serial numbers
/// from `serial`; a top-up wherever the balance would fall under 100.00, and the chain broken
/// by a cent now and then. Times are Beijing time, as the export writes them.
fn autodl_lines(rng: &mut Lcg, txns: &[Txn]) -> Vec<String> {
    let (mut balance, mut serial) = (0i64, 2024_0300_0000u64);
    let mut lines = Vec::new();
    let yuan = |c: i64| format!("{}.{:02}", c / 100, c % 100);
    let mut push =
        |at: NaiveDateTime, flow: &str, kind: &str, channel: &str, c: i64, b: i64, note| {
            serial += 1;
            let at = (at + Duration::hours(8)).format("%Y-%m-%d %H:%M:%S");
            lines.push(format!(
                "{serial},{at},{flow},{kind},{channel},{},{},{note}",
                yuan(c),
                yuan(b)
            ));
        };
    for t in txns {
        if balance + t.cents < 10_000 {
            balance += 500_000;
            push(t.at, "收入", "充值", "支付宝", 500_000, balance, "余额充值".to_owned());
        }
        balance += t.cents;
        if rng.next(400) == 0 {
            balance += 1;
        }
        push(t.at, "支出", t.kind, "余额", -t.cents, balance, t.note.clone());
    }
    lines.reverse();
    lines
}

/// The AutoDL log of `lines` (newest first) written as `parts` files of consecutive rows,
/// each sharing up to a dozen rows with the next (an export of overlapping dates).
fn autodl_files(rng: &mut Lcg, dir: &Path, case: u64, lines: &[String]) -> Vec<PathBuf> {
    let parts = 1 + rng.next(3) as usize;
    let size = lines.len().div_ceil(parts);
    (0..parts)
        .map(|p| {
            let from = (p * size).saturating_sub(rng.next(12) as usize);
            let to = ((p + 1) * size).min(lines.len());
            let mut text =
                "流水号,交易时间,收支类型,交易类型,交易渠道,交易金额,账户余额,备注\n".to_owned();
            for line in &lines[from..to] {
                writeln!(text, "{line}").unwrap();
            }
            let path = dir.join(format!("autodl-{case}-{p}.csv"));
            std::fs::write(&path, text).unwrap();
            path
        })
        .collect()
}

/// Keeps of the FOCUS export at `bill` its compute and one in eight of its other rows: so
/// few are left out of a window's look-back that its months keep no look-back files, and a
/// window reads their part files, keeping some rows of each (which the lines a
/// reconciliation reads after its checks must skip).
fn mostly_compute(bill: &Path, rng: &mut Lcg) {
    let text = std::fs::read_to_string(bill).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .enumerate()
        .filter(|(i, line)| *i == 0 || line.contains("Virtual Machine") || rng.next(8) == 0)
        .map(|(_, line)| line)
        .collect();
    std::fs::write(bill, kept.join("\n") + "\n").unwrap();
}

/// The bills of case `case`: AutoDL files, FOCUS exports and maybe the Alibaba examples.
fn bills(rng: &mut Lcg, dir: &Path, case: u64) -> Vec<PathBuf> {
    let day = NaiveDate::from_ymd_opt(2024, 3, 20).unwrap() + Duration::days(rng.next(12) as i64);
    let start = day.and_hms_opt(0, 0, 0).unwrap();
    let hours = 24 * (40 + rng.next(50) as i64);
    let txns = autodl_txns(rng, start, hours);
    let lines = autodl_lines(rng, &txns);
    let mut files = autodl_files(rng, dir, case, &lines);
    for k in 0..1 + rng.next(2) {
        let rows = 100 + rng.next(400) as usize;
        let bill = focus_bill(dir, &format!("focus-{case}-{k}.csv"), case * 10 + k, rows);
        if rng.next(2) == 0 {
            mostly_compute(&bill, rng);
        }
        files.push(bill);
    }
    if rng.next(2) == 0 {
        let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bills");
        files.push(examples.join("aliyun-2024-04.csv"));
        files.push(examples.join("aliyun-2024-05.csv"));
    }
    // A random order, then batches of one or two files.
    for i in (1..files.len()).rev() {
        files.swap(i, rng.next(i as u64 + 1) as usize);
    }
    files
}

/// One of the ledger's derived files (a rollup or look-back file) cut short or removed:
/// `Store::repair` makes it again from the part files, the same bytes, and the summaries
/// agree again. Whether there was one to damage.
fn damage_and_repair(store: &Store, rng: &mut Lcg, what: &str) -> usize {
    let batches = store.manifest().unwrap().batches;
    let derived: Vec<String> = batches
        .iter()
        .flat_map(|b| b.rollup.iter().chain(b.look_back.iter().flat_map(|l| l.names())))
        .cloned()
        .collect();
    if derived.is_empty() {
        return 0;
    }
    let file = store.root().join(&derived[rng.next(derived.len() as u64) as usize]);
    let bytes = std::fs::read(&file).unwrap();
    if rng.next(2) == 0 {
        std::fs::remove_file(&file).unwrap();
    } else {
        std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    }
    let repaired = store.repair().unwrap();
    assert_eq!(repaired.rebuilt.len(), 1, "{what}: {file:?}");
    assert_eq!(repaired.left.problems, vec![], "{what}: {file:?}");
    assert_eq!(std::fs::read(&file).unwrap(), bytes, "{what}: {file:?} as imported");
    assert_agrees(store, &format!("{what}, {file:?} repaired"));
    1
}

/// Every month the ledger holds, and the one after its last.
fn months_of(store: &Store) -> Vec<YearMonth> {
    let manifest = store.manifest().unwrap();
    let mut months: BTreeSet<YearMonth> =
        manifest.batches.iter().flat_map(|b| &b.months).map(|m| m.parse().unwrap()).collect();
    if let Some(last) = months.last().copied() {
        months.insert(last.next());
    }
    months.into_iter().collect()
}

#[test]
fn every_use_of_generated_ledgers_equals_the_in_memory_oracle() {
    let cases: u64 = std::env::var("GPUAUDIT_READ_SIDE_CASES").map_or(8, |n| n.parse().unwrap());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (mut seen, mut lines, mut removed, mut repaired) = (BTreeSet::new(), 0, 0, 0);
    for case in 1..=cases {
        let mut rng = Lcg(case.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join(".gpuaudit"));
        let files = bills(&mut rng, dir.path(), case);
        let mut rest = &files[..];
        while !rest.is_empty() {
            let n = (1 + rng.next(2) as usize).min(rest.len());
            store.import(&rest[..n], &ImportOptions::default()).unwrap();
            rest = &rest[n..];
        }
        // A bill imported again (as `gpuaudit import bills/*.csv` run twice does): no row
        // is new.
        if rng.next(3) == 0 {
            let again = &files[rng.next(files.len() as u64) as usize];
            let report = store.import(std::slice::from_ref(again), &ImportOptions::default());
            assert_eq!(report.unwrap().files[0].new, 0, "case {case}: {again:?} again");
        }
        let mut config = Config::load(&root.join("examples/gpuaudit.toml"), true).unwrap();
        config.waste.lookback_days = [7, 30, 40][rng.next(3) as usize];
        config.waste.snapshot_days = [10, 30][rng.next(2) as usize];
        config.waste.storage_grace_hours = [24, 72][rng.next(2) as usize];
        let platforms = store.platforms_over(gpuaudit_core::import::profiles()).unwrap();
        let what = format!("(case {case}: {} files, {:?})", files.len(), config.waste);
        assert_agrees(&store, &what);
        for month in months_of(&store) {
            let (codes, l) = assert_uses_agree(&store, &config, &platforms, month, &what);
            seen.extend(codes);
            lines += l;
        }
        // A batch taken out: what is left reads as if it had been the whole ledger.
        let batches = store.manifest().unwrap().batches;
        if batches.len() > 1 {
            let gone = &batches[rng.next(batches.len() as u64) as usize].id;
            store.remove_batch(gone).unwrap();
            removed += 1;
            let what = format!("{what}, batch {gone} removed");
            assert_agrees(&store, &what);
            for month in months_of(&store) {
                seen.extend(assert_uses_agree(&store, &config, &platforms, month, &what).0);
            }
        }
        repaired += damage_and_repair(&store, &mut rng, &what);
    }
    // The cases reached what they are for: findings of most rules, broken chains, gaps and
    // charges billed twice (discrepancies naming lines read after the checks), cost lines,
    // removals.
    for code in ["W001", "W003", "W004", "R002", "R003", "R004"] {
        assert!(seen.contains(code), "no case found {code}: {seen:?}");
    }
    assert!(lines > 0 && (cases < 4 || removed > 0), "{lines} cost lines, {removed} removals");
    assert!(cases < 4 || repaired > 0, "no case had a derived file to repair");
}

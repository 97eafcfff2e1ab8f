//! Look-back files give a window exactly what the part files give it (see `look_back`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::reader::Reading;
use super::{ImportOptions, LoadFilter, Store};
use crate::charge::{Category, YearMonth};
use crate::window::{Amounts, Row, Window};

const HEADER: &str = "BillingAccountId,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,\
ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ChargeClass,ChargeDescription,PricingCategory,\
PricingQuantity,PricingUnit,ListUnitPrice,ListCost,BilledCost,ResourceId,ResourceType,RegionId,\
ServiceCategory,ServiceName";

/// A FOCUS export of `rows` charges over April–June 2024, months mixed row by row (so that
/// each flush writes a part file of every month): VMs, disks, IPs and egress, some egress
/// without a resource.
fn bill(dir: &Path, name: &str, seed: u64, rows: usize) -> PathBuf {
    let mut state = seed;
    let mut next = |n: u64| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) % n
    };
    let mut text = format!("{HEADER}\n");
    for _ in 0..rows {
        let (month, day, hour) = (4 + next(3), 1 + next(28), next(24));
        let vm = next(40);
        let (resource, rtype, service) = match next(4) {
            0 => (format!("vm-{vm}"), "Virtual Machine", "Compute"),
            1 => (format!("disk-{vm}"), "Disk", "Storage"),
            2 => (format!("ip-{vm}"), "Public IP Address", "Networking"),
            _ if next(3) == 0 => (String::new(), "NULL", "Networking"),
            _ => (format!("vm-{}", next(60)), "NULL", "Networking"),
        };
        let cents = next(100_000);
        text.push_str(&format!(
            "111111111111,USD,2024-{month:02}-01T00:00:00Z,2024-{:02}-01T00:00:00Z,\
2024-{month:02}-{day:02} {hour:02}:00:00,2024-{month:02}-{day:02} {hour:02}:59:59,Usage,NULL,x,\
Standard,1,Hours,0.{cents:05},0.{cents:05},0.{cents:05},{resource},{rtype},eastus,{service},{service}\n",
            month + 1
        ));
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// What a window keeps of a row.
type Keep<'a> = dyn Fn(&Row, Option<&Amounts>) -> bool + 'a;

/// A row as its texts show it, with its amounts and id.
fn shown(w: &Window, r: &Row) -> String {
    let t = |s| w.texts.get(s).to_owned();
    let o = |s| w.texts.opt(s).map(str::to_owned);
    let a: Amounts = w.amounts(r);
    let (origin, usage) = (w.origin(r), w.usage(r));
    format!(
        "{} {:?} {} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {} {} {} {} {} {} {:?} {:?}",
        t(r.platform),
        o(r.account),
        r.billing_period,
        r.charge_start,
        r.charge_end,
        o(r.resource_id),
        o(r.instance_id),
        (r.category, r.kind, r.pricing),
        o(r.gpu_model),
        usage.gpu_count,
        o(usage.unit),
        [a.quantity(), a.unit_price(), a.list_cost(), a.balance_after()],
        r.pos,
        r.billed_cost(),
        t(r.currency),
        o(origin.file).unwrap_or_default(),
        origin.line,
        o(origin.item).unwrap_or_default(),
        w.id(r),
        r.billed_positive(),
        (),
    )
}

/// What a window's rows left out tell, by text.
type Told = (BTreeMap<String, (i64, i64)>, BTreeMap<(String, String), i64>, u64);

fn told(w: &Window) -> Told {
    let l = &w.left_out;
    let spans = l.spans.iter().map(|(p, s)| (w.texts.get(*p).to_owned(), (s.0.0, s.1.0)));
    let seen = l
        .first_seen
        .iter()
        .map(|((p, r), s)| ((w.texts.get(*p).to_owned(), w.texts.get(*r).to_owned()), s.0));
    (spans.collect(), seen.collect(), l.rows)
}

fn months() -> Vec<YearMonth> {
    ["2024-04", "2024-05", "2024-06"].iter().map(|m| m.parse().unwrap()).collect()
}

/// A ledger of two batches of mixed months, each partition in several part files.
fn ledger(dir: &Path) -> Store {
    let store = Store::open(dir.join(".gpuaudit"));
    for seed in [7, 8] {
        let path = bill(dir, &format!("bill-{seed}.csv"), seed, 60_000 + seed as usize);
        store.import(&[path], &ImportOptions::default()).unwrap();
    }
    store
}

#[test]
fn a_window_read_from_look_back_files_is_the_window_read_from_the_part_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = ledger(dir.path());
    let manifest = store.manifest().unwrap();
    for batch in &manifest.batches {
        // Three partitions a batch, each in several part files and several rows files.
        assert_eq!(batch.look_back.len(), 3, "{:?}", batch.look_back);
        for l in &batch.look_back {
            assert!(l.parts() > 1 && l.files.len() > 1, "{l:?}");
            assert!(l.left_out > 0);
        }
    }
    let months = months();
    for &month in &months {
        let waste = |r: &Row, _: Option<&Amounts>| r.billing_period == month;
        let reconcile = |r: &Row, a: Option<&Amounts>| {
            r.billing_period == month || a.is_some_and(|a| a.balance_after().is_some())
        };
        let cases: [(&Keep<'_>, bool); 2] = [(&waste, false), (&reconcile, true)];
        for (keep, amounts) in cases {
            let keep = |r: &Row, a: Option<&Amounts>| r.category == Category::Compute || keep(r, a);
            let only = Some(std::slice::from_ref(&month));
            let from_parts = Reading { ids: only, ..Reading::all(amounts) };
            let filter = LoadFilter { months: months.clone() };
            let want = store.load_rows_unlinked(&filter, from_parts, &keep).unwrap();
            let reading = Reading { look_back: Some(month), ..from_parts };
            let got = store.load_rows_unlinked(&filter, reading, &keep).unwrap();
            assert_eq!(got.rows.len(), want.rows.len(), "{month}");
            assert!(got.rows.len() > 10_000);
            for (g, w) in got.rows.iter().zip(&want.rows) {
                assert_eq!(shown(&got, g), shown(&want, w), "{month}");
            }
            assert_eq!(told(&got), told(&want), "{month}");
            assert!(want.left_out.rows > 40_000, "{month}: most rows are left out");
        }
    }
    assert!(store.verify().unwrap().problems.is_empty());
}

#[test]
fn verify_finds_a_look_back_file_that_does_not_hold_what_the_part_files_give() {
    let dir = tempfile::tempdir().unwrap();
    let store = ledger(dir.path());
    let manifest = store.manifest().unwrap();
    let (first, second) = (&manifest.batches[0].look_back[0], &manifest.batches[1].look_back[0]);
    let root = dir.path().join(".gpuaudit");
    // Another batch's rows file in its place; a facts file gone.
    std::fs::copy(root.join(&second.files[0].path), root.join(&first.files[0].path)).unwrap();
    std::fs::remove_file(root.join(&second.facts)).unwrap();
    let problems = store.verify().unwrap().problems;
    let files: Vec<(&str, &str)> =
        problems.iter().map(|p| (p.file.as_str(), p.message.as_str())).collect();
    assert_eq!(problems.len(), 2, "{files:?}");
    assert_eq!(files[0].0, first.files[0].path);
    assert!(files[0].1.starts_with("holds ") || files[0].1.starts_with("does not hold"));
    assert_eq!(files[1].0, second.facts);
    assert!(files[1].1.starts_with("cannot be read"), "{}", files[1].1);
    // A window of it is refused, naming the batch, never given another batch's rows.
    let month = months()[1];
    let filter = LoadFilter { months: months() };
    let reading = Reading { look_back: Some(month), ..Reading::all(false) };
    let err = store.load_rows_unlinked(&filter, reading, &|_, _| true).unwrap_err().to_string();
    assert!(err.contains(&manifest.batches[0].id) || err.contains(&manifest.batches[1].id));
    // Taking the batches out takes their look-back files with them.
    for batch in &manifest.batches {
        store.remove_batch(&batch.id).unwrap();
    }
    let left = walk(&root.join(super::look_back::LOOK_BACK));
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_partition_of_which_little_would_be_left_out_keeps_no_look_back_and_reads_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join(".gpuaudit"));
    // Every AutoDL flow has a balance: nothing would be left out.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bills");
    store.import(&[root.join("autodl-2024-05.csv")], &ImportOptions::default()).unwrap();
    let manifest = store.manifest().unwrap();
    assert!(manifest.batches[0].look_back.is_empty());
    let left = walk(&dir.path().join(".gpuaudit").join(super::look_back::LOOK_BACK));
    assert!(left.is_empty(), "{left:?}");
    let (month, filter) = ("2024-04".parse().unwrap(), LoadFilter::default());
    let plan = super::look_back::plan(&manifest.batches, &Default::default(), Some(month));
    assert!(plan.look_backs.is_empty() && plan.slots.iter().all(|s| s.1.is_none()));
    let reading = Reading { look_back: Some(month), ..Reading::all(true) };
    let got = store.load_rows_unlinked(&filter, reading, &|_, _| true).unwrap();
    assert_eq!(got.rows.len() as u64, manifest.batches[0].rows);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Of a batch's frame, compute and charges with a balance are kept; of the others, the
/// facts are those a window's `LeftOut` takes from them.
#[test]
fn a_frame_is_split_into_what_a_look_back_keeps_and_what_the_rest_tells() {
    use crate::Charge;
    use chrono::TimeZone;
    use rust_decimal::Decimal;
    let at = |h: u32| chrono::Utc.with_ymd_and_hms(2024, 4, 2, h, 0, 0).unwrap();
    let charge =
        |id: u128, category, resource: Option<&str>, balance: Option<i64>, h: u32| Charge {
            id: crate::ChargeId(id),
            category,
            resource_id: resource.map(str::to_owned),
            balance_after: balance.map(|b| Decimal::new(b, 2)),
            charge_start: at(h),
            charge_end: at(h + 1),
            ..Charge::blank()
        };
    let charges = [
        charge(1, Category::Compute, Some("vm-1"), None, 1),
        charge(2, Category::DataDisk, Some("disk-1"), Some(0), 2),
        charge(3, Category::DataDisk, Some("disk-1"), None, 3),
        charge(4, Category::DataDisk, Some("disk-1"), None, 5),
        charge(5, Category::Traffic, Some(""), None, 0),
        charge(6, Category::PublicIp, None, None, 9),
        charge(7, Category::PublicIp, Some("ip-1"), None, 7),
    ];
    let mut builder = super::columns::FrameBuilder::new(charges.len());
    charges.iter().for_each(|c| builder.push(c));
    let frame = builder.finish().unwrap();
    let mut facts = super::look_back::Facts::default();
    let keep = facts.split(&frame).unwrap();
    let kept: Vec<bool> = keep.iter().map(Option::unwrap_or_default).collect();
    assert_eq!(kept, [true, true, false, false, false, false, false]);
    let micros = |h: u32| crate::window::Micros::of(at(h));
    let want = vec![
        (None, micros(0), micros(10)),
        (Some("disk-1".to_owned()), micros(3), micros(6)),
        (Some("ip-1".to_owned()), micros(7), micros(8)),
    ];
    assert_eq!(facts.listed(), want);
    // As a window takes them.
    let (mut left_out, mut texts) =
        (crate::window::LeftOut::default(), crate::window::Texts::default());
    super::look_back::merge(&mut left_out, &mut texts, "p", &facts.listed(), 5);
    let p = texts.sym("p");
    assert_eq!(left_out.spans[&p], (micros(0), micros(10)));
    assert_eq!(left_out.first_seen.len(), 2);
    assert_eq!(left_out.first_seen[&(p, texts.sym("disk-1"))], micros(3));
    assert_eq!(left_out.rows, 5);
}

/// A facts file's instants are checked as a part file's are: out of range, or missing, is
/// an error, never a window's wrong first sighting.
#[test]
fn a_facts_file_with_an_instant_out_of_range_is_refused() {
    use polars::prelude::{Column, DataFrame};
    let frame = |start: Option<i64>| {
        DataFrame::new_infer_height(vec![
            Column::new("resource".into(), [None, Some("disk-1")]),
            Column::new("first_start".into(), [Some(0), start]),
            Column::new("last_end".into(), [Some(10), Some(10)]),
        ])
        .unwrap()
    };
    let read = super::look_back::facts_of(&frame(Some(5))).unwrap();
    assert_eq!(
        read[1],
        (Some("disk-1".to_owned()), crate::window::Micros(5), crate::window::Micros(10))
    );
    for bad in [None, Some(i64::MAX), Some(i64::MIN)] {
        let err = super::look_back::facts_of(&frame(bad)).unwrap_err();
        assert_eq!(err, "first_start: missing or invalid instant");
    }
}

/// A window read without its rows' files and lines reads them when asked for, from the part
/// files and look-back files its rows came from: each row's, as a window read with them
/// holds it, whether all of a file's rows were kept or some (the months around, read from
/// their part files); a file gone since is an error naming its batch, never a line made up.
#[test]
fn files_and_lines_read_later_are_those_a_window_read_with_them_holds() {
    let dir = tempfile::tempdir().unwrap();
    let store = ledger(dir.path());
    let (filter, month) = (LoadFilter { months: months() }, months()[1]);
    let keep =
        |r: &Row, _: Option<&Amounts>| r.category == Category::Compute || r.billing_period == month;
    let none = Some(&[][..]);
    for look_back in [None, Some(month)] {
        let reading = Reading { ids: none, look_back, ..Reading::all(false) };
        let want = store.load_rows_unlinked(&filter, reading, &keep).unwrap();
        let later = Reading { lines: none, lines_later: true, ..reading };
        let got = store.load_rows_unlinked(&filter, later, &keep).unwrap();
        assert!(got.reads_lines_later() && !want.reads_lines_later());
        assert_eq!(got.rows.len(), want.rows.len());
        assert!(got.left_out.rows > 10_000, "some rows of the files read are left out");
        let places: Vec<u32> = got.rows.iter().rev().map(|r| r.pos).collect();
        let read = got.lines_at(&places).unwrap();
        let held = want.lines_at(&places).unwrap();
        assert_eq!(read, held, "{look_back:?}");
        assert!(read.iter().all(|(file, line)| file.contains("bill-") && *line > 1), "{read:?}");
        assert_eq!(got.origin(&got.rows[0]).line, 0, "not kept in the window");
    }
    let later = Reading { ids: none, lines: none, lines_later: true, ..Reading::all(false) };
    let got = store.load_rows_unlinked(&filter, later, &keep).unwrap();
    let manifest = store.manifest().unwrap();
    let batch = &manifest.batches[0];
    std::fs::remove_file(dir.path().join(".gpuaudit").join(&batch.files[0].path)).unwrap();
    let err = got.lines_at(&[0]).unwrap_err().to_string();
    assert!(err.contains(&batch.id) && err.contains(&batch.files[0].path), "{err}");
}

//! One ledger, many writers at once: the commit protocol (numbered commits created once, a
//! lost race caught up or imported again) on a local folder. tests/object_store.py runs the
//! same against an S3 API server, with processes.

use std::sync::Barrier;

use gpuaudit_core::ErrorKind;
use gpuaudit_core::ledger::{ImportOptions, Store};

use super::fixture;

const BILLS: [&str; 8] = [
    "autodl/valid/two_days.csv",
    "aliyun/valid/english_headers.csv",
    "tencent/valid/resource_bill_gb18030.csv",
    "ctyun/valid/yen_amounts.csv",
    "aws-cur/valid/cur2_snake_case.csv",
    "focus/valid/messy_export.csv",
    "gpushare/valid/running_instance_with_its_disk.csv",
    "aliyun/valid/gb18030_title_and_footer.csv",
];

/// Imports each of `bills` into `store` on a thread of its own, all started at once; the
/// new charges each was told of.
fn at_once(store: &Store, bills: &[&str]) -> Vec<u64> {
    let start = Barrier::new(bills.len());
    let options = ImportOptions::default();
    std::thread::scope(|scope| {
        let handles: Vec<_> = bills
            .iter()
            .map(|bill| {
                let (start, options) = (&start, &options);
                scope.spawn(move || {
                    start.wait();
                    store.import(&[fixture(bill)], options).unwrap().files[0].new
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn charges(store: &Store) -> u64 {
    store.manifest().unwrap().batches.iter().map(|b| b.rows).sum()
}

#[test]
fn eight_writers_at_once_land_every_row_once_each_told_its_new_rows() {
    let dir = tempfile::tempdir().unwrap();
    let alone: Vec<u64> = BILLS
        .iter()
        .enumerate()
        .map(|(i, bill)| at_once(&Store::open(dir.path().join(format!("alone-{i}"))), &[bill])[0])
        .collect();
    assert!(alone.iter().all(|&n| n > 0), "{alone:?}");
    let store = Store::open(dir.path().join("shared"));
    let got = at_once(&store, &BILLS);
    assert_eq!(got, alone, "each writer is told the new rows its bill has alone");
    assert_eq!(charges(&store), alone.iter().sum::<u64>());
    assert_eq!(store.head().unwrap(), 8, "one commit per batch, numbered 1 to 8");
    let verified = store.verify().unwrap();
    assert!(verified.problems.is_empty(), "{:?}", verified.problems);
    assert_eq!(verified.charges, alone.iter().sum::<u64>(), "no charge twice");
}

#[test]
fn four_writers_of_the_same_bill_at_once_land_its_rows_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("shared"));
    let mut got = at_once(&store, &[BILLS[6]; 4]);
    got.sort_unstable();
    assert_eq!(got, [0, 0, 0, 75]);
    assert_eq!(charges(&store), 75);
    assert_eq!(store.head().unwrap(), 1, "the losers' batches added nothing and made no commit");
    assert!(store.verify().unwrap().problems.is_empty());
}

#[test]
fn a_removal_is_a_commit_and_engines_lose_the_batch_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("ledger"));
    let options = ImportOptions::default();
    store.import(&[fixture(BILLS[0])], &options).unwrap();
    let second = store.import(&[fixture(BILLS[1])], &options).unwrap().batch.unwrap();
    let manifest = std::fs::read_to_string(
        store.root().join("_symlink_format_manifest/month=2024-05/platform=aliyun/manifest"),
    )
    .unwrap();
    assert_eq!(manifest.lines().count(), 1, "{manifest}");
    let removed = store.remove_batch(&second).unwrap();
    assert_eq!(store.head().unwrap(), 3);
    assert!(
        !store.root().join("_symlink_format_manifest/month=2024-05/platform=aliyun").exists(),
        "the partition's manifest goes with its last file"
    );
    assert!(!store.root().join(&removed.files[0].path).exists(), "its files are deleted");
    assert_eq!(store.manifest().unwrap().batches.len(), 1);
}

#[test]
fn checkpoints_keep_reading_short_and_the_state_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("ledger"));
    let bill = std::fs::read_to_string(fixture("autodl/valid/two_days.csv")).unwrap();
    let (header, rows) = bill.split_once('\n').unwrap();
    for n in 0..17 {
        let path = dir.path().join(format!("bill-{n}.csv"));
        let varied: String = rows.lines().map(|l| format!("K{n:02}{l}\n")).collect();
        std::fs::write(&path, format!("{header}\n{varied}")).unwrap();
        store.import(&[path], &ImportOptions::default()).unwrap();
    }
    assert!(store.root().join("_commits/00000000000000000016.checkpoint.json").is_file());
    let before = store.manifest().unwrap();
    assert_eq!(before.batches.len(), 17);
    // The commits before the checkpoint are not read any more.
    for n in 1..=16 {
        std::fs::remove_file(store.root().join(format!("_commits/{n:020}.json"))).unwrap();
    }
    assert_eq!(store.manifest().unwrap(), before);
}

#[test]
fn a_gap_in_the_commits_is_an_error_never_a_shorter_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("ledger"));
    for bill in &BILLS[..3] {
        store.import(&[fixture(bill)], &ImportOptions::default()).unwrap();
    }
    std::fs::remove_file(store.root().join("_commits/00000000000000000002.json")).unwrap();
    let e = store.manifest().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Ledger { .. }), "{e}");
    assert!(e.to_string().contains("00000000000000000002.json: is missing"), "{e}");
}

#[cfg(not(feature = "cloud"))]
#[test]
fn a_ledger_url_this_build_cannot_read_is_refused() {
    for (url, says) in [
        ("s3://bills/ledger", "built without object stores"),
        ("gs://bills/ledger", "the `cloud` feature"),
        ("ftp://bills/ledger", "unknown scheme ftp://"),
    ] {
        let e = Store::at(url, None).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Location { .. }), "{url}: {e}");
        assert!(e.to_string().starts_with(&format!("--ledger {url}: ")), "{e}");
        assert!(e.to_string().contains(says), "{url}: {e}");
    }
    let local = Store::at("file:///srv/bills/.gpuaudit", None).unwrap();
    assert_eq!(local.root(), std::path::Path::new("/srv/bills/.gpuaudit"));
}

#[test]
fn a_symlink_manifest_left_behind_is_found_by_verify_and_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("ledger"));
    store.import(&[fixture(BILLS[1])], &ImportOptions::default()).unwrap();
    assert!(store.verify().unwrap().stale_manifests.is_empty());
    let manifest =
        store.root().join("_symlink_format_manifest/month=2024-05/platform=aliyun/manifest");
    let committed = std::fs::read_to_string(&manifest).unwrap();
    // As an import killed between its commit and its manifests leaves it, and a manifest of
    // a partition that no file is in any more.
    std::fs::write(&manifest, "").unwrap();
    let emptied =
        store.root().join("_symlink_format_manifest/month=2023-01/platform=aliyun/manifest");
    std::fs::create_dir_all(emptied.parent().unwrap()).unwrap();
    std::fs::write(&emptied, committed.clone()).unwrap();
    let verified = store.verify().unwrap();
    assert!(verified.problems.is_empty());
    assert_eq!(
        verified.stale_manifests,
        ["month=2024-05/platform=aliyun", "month=2023-01/platform=aliyun"]
    );
    assert_eq!(store.write_manifests().unwrap(), 1);
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), committed);
    assert!(!emptied.exists());
    assert!(store.verify().unwrap().stale_manifests.is_empty());
}

#[test]
fn what_crashed_writers_leave_is_swept_once_a_day_old_never_sooner() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("ledger"));
    store.import(&[fixture(BILLS[0])], &ImportOptions::default()).unwrap();
    let day_and_more = std::time::SystemTime::now() - std::time::Duration::from_secs(25 * 3600);
    let left = |rel: &str, old: bool| {
        let path = store.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"{").unwrap();
        if old {
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(day_and_more)
                .unwrap();
        }
        path
    };
    let old_commit = left("_commits/.00000000000000000002.json.1-1.tmp", true);
    let young_commit = left("_commits/.00000000000000000002.json.1-2.tmp", false);
    let old_part = left("charges/month=2024-05/platform=autodl/crashed-0000.parquet", true);
    let young_part = left("charges/month=2024-05/platform=autodl/running-0000.parquet", false);
    let old_manifest =
        left("_symlink_format_manifest/month=2024-05/platform=autodl/.manifest.1-1.tmp", true);
    store.import(&[fixture(BILLS[1])], &ImportOptions::default()).unwrap();
    assert!(!old_commit.exists() && !old_part.exists() && !old_manifest.exists());
    assert!(young_commit.exists() && young_part.exists(), "a concurrent writer's, maybe");
    assert_eq!(store.head().unwrap(), 2);
    assert!(store.verify().unwrap().problems.is_empty());
}

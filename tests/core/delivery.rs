//! Bills as delivered: gzip, zip archives of bills, folders with and without an AWS export
//! manifest; the same charges and ids whatever the delivery; bad deliveries refused with the
//! file named and the ledger as it was.

use std::io::Write;
use std::path::Path;

use gpuaudit_core::ErrorKind;
use gpuaudit_core::ledger::{ImportOptions, LoadFilter, Store};

use super::fixture;
use super::store::snapshot;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn zip(path: &Path, members: &[(&str, &[u8])]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in members {
        zip.start_file(*name, options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

fn ids(store: &Store) -> Vec<String> {
    let mut ids: Vec<String> =
        store.load(&LoadFilter::default()).unwrap().iter().map(|c| c.id.to_string()).collect();
    ids.sort();
    ids
}

#[test]
fn a_gzip_or_zip_of_a_bill_is_the_same_bill_with_the_same_ids_and_digest() {
    let dir = tempfile::tempdir().unwrap();
    let csv = fixture("aliyun/valid/english_headers.csv");
    let bytes = std::fs::read(&csv).unwrap();
    let gz = dir.path().join("bill.csv.gz");
    std::fs::write(&gz, gzip(&bytes)).unwrap();
    // Named as nothing in particular: the content says gzip.
    let unnamed = dir.path().join("download");
    std::fs::write(&unnamed, gzip(&bytes)).unwrap();
    let archive = dir.path().join("bills.zip");
    zip(&archive, &[("export/bill.csv", &bytes)]);

    let plain = Store::open(dir.path().join("plain"));
    plain.import(std::slice::from_ref(&csv), &ImportOptions::default()).unwrap();
    let want = ids(&plain);
    assert_eq!(want.len(), 9);
    for input in [&gz, &unnamed, &archive] {
        let store =
            Store::open(dir.path().join(format!("l-{}", input.display().to_string().len())));
        let out = store.import(std::slice::from_ref(input), &ImportOptions::default()).unwrap();
        assert_eq!(out.files.len(), 1, "{}", input.display());
        assert_eq!(ids(&store), want, "{}", input.display());
        let source = &store.manifest().unwrap().batches[0].sources[0];
        let plain_source = &plain.manifest().unwrap().batches[0].sources[0];
        assert_eq!((&source.sha256, source.size), (&plain_source.sha256, plain_source.size));
        // Into the ledger that has the plain bill, nothing is new.
        let again = plain.import(std::slice::from_ref(input), &ImportOptions::default()).unwrap();
        assert_eq!((again.files[0].new, again.files[0].duplicates), (0, 9), "{}", input.display());
    }
    let zipped = Store::open(dir.path().join("zipped"));
    let out = zipped.import(std::slice::from_ref(&archive), &ImportOptions::default()).unwrap();
    assert_eq!(out.files[0].report.path, format!("{}!export/bill.csv", archive.display()));
}

#[test]
fn a_bad_member_of_a_zip_is_named_with_its_line_and_nothing_is_imported() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(fixture("autodl/valid/two_days.csv")).unwrap();
    let mut bad = std::fs::read(fixture("aliyun/valid/english_headers.csv")).unwrap();
    let text = String::from_utf8(bad.clone()).unwrap();
    let line3 = text.lines().nth(2).unwrap().to_owned();
    let broken = line3.replacen(',', ",\"unclosed", 1);
    bad = text.replacen(&line3, &broken, 1).into_bytes();
    let archive = dir.path().join("month.zip");
    zip(&archive, &[("a-good.csv", &good), ("b-bad.csv", &bad), ("notes.md", b"# notes")]);
    let store = Store::open(dir.path().join(".gpuaudit"));
    store.import(&[fixture("autodl/valid/two_days.csv")], &ImportOptions::default()).unwrap();
    let before = snapshot(store.root());
    let err = store.import(std::slice::from_ref(&archive), &ImportOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with(&format!("{}!b-bad.csv:3", archive.display())), "{text}");
    assert_eq!(snapshot(store.root()), before, "the ledger is as it was");
}

#[test]
fn a_folder_with_a_manifest_imports_the_files_it_lists_and_says_what_it_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("focus-export");
    let period = export.join("data/BILLING_PERIOD=2024-05");
    std::fs::create_dir_all(&period).unwrap();
    std::fs::create_dir_all(export.join("metadata/BILLING_PERIOD=2024-05")).unwrap();
    let focus =
        std::fs::read(fixture("focus/valid/vm_with_egress_on_its_resource_id.csv")).unwrap();
    std::fs::write(period.join("focus-export-00001.csv.gz"), gzip(&focus)).unwrap();
    // An older run's file the manifest does not list, and a file that is not a bill.
    std::fs::write(period.join("focus-export-00000.csv.gz"), gzip(&focus)).unwrap();
    std::fs::write(export.join("README.txt.bak"), b"not a bill").unwrap();
    let manifest = serde_json::json!({
        "executionId": "x",
        "dataFiles": ["s3://bucket/exports/focus-export/data/BILLING_PERIOD=2024-05/focus-export-00001.csv.gz"],
    });
    let manifest_path = export.join("metadata/BILLING_PERIOD=2024-05/focus-export-Manifest.json");
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();

    let store = Store::open(dir.path().join(".gpuaudit"));
    let out = store.import(std::slice::from_ref(&export), &ImportOptions::default()).unwrap();
    let read: Vec<&str> = out.files.iter().map(|f| f.report.path.as_str()).collect();
    assert_eq!(read, [period.join("focus-export-00001.csv.gz").display().to_string()]);
    let skipped: Vec<(String, &str)> = out
        .skipped
        .iter()
        .map(|s| (s.path.strip_prefix(&export).unwrap().display().to_string(), s.reason.as_str()))
        .collect();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert_eq!(skipped[0].0, "README.txt.bak");
    assert_eq!(skipped[0].1, "not a bill (by its name)");
    assert_eq!(skipped[1].0, "data/BILLING_PERIOD=2024-05/focus-export-00000.csv.gz");
    assert!(skipped[1].1.starts_with("not listed in "), "{}", skipped[1].1);

    // The listed part decompressed by the user (`.csv` for the manifest's `.csv.gz`) is the
    // part: the same charges; with both forms present, the second is noted and not read.
    let gz_ledger = Store::open(dir.path().join("gz"));
    let from_gz =
        gz_ledger.import(std::slice::from_ref(&export), &ImportOptions::default()).unwrap();
    std::fs::remove_file(period.join("focus-export-00001.csv.gz")).unwrap();
    std::fs::write(period.join("focus-export-00001.csv"), &focus).unwrap();
    let plain_ledger = Store::open(dir.path().join("plain"));
    let from_plain =
        plain_ledger.import(std::slice::from_ref(&export), &ImportOptions::default()).unwrap();
    assert_eq!(from_plain.files.len(), 1);
    assert_eq!(from_plain.files[0].new, from_gz.files[0].new);
    let ids = |s: &Store| -> Vec<_> {
        let mut ids: Vec<_> =
            s.load(&Default::default()).unwrap().into_iter().map(|c| c.id).collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&plain_ledger), ids(&gz_ledger));
    std::fs::write(period.join("focus-export-00001.csv.gz"), gzip(&focus)).unwrap();
    let both = Store::open(dir.path().join("both"));
    let out = both.import(std::slice::from_ref(&export), &ImportOptions::default()).unwrap();
    assert_eq!(out.files.len(), 1);
    assert!(
        out.skipped.iter().any(|s| s.reason.starts_with("another form of ")),
        "{:?}",
        out.skipped
    );
    std::fs::remove_file(period.join("focus-export-00001.csv")).unwrap();

    // A manifest that lists a file the folder does not have: the export is incomplete.
    let listing = serde_json::json!({"reportKeys": ["focus-export/data/BILLING_PERIOD=2024-05/focus-export-00002.csv.gz"]});
    std::fs::write(&manifest_path, listing.to_string()).unwrap();
    let before = snapshot(store.root());
    let err = store.import(std::slice::from_ref(&export), &ImportOptions::default()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Delivery { .. }), "{err}");
    assert!(err.to_string().contains("focus-export-00002.csv.gz, which is not in"), "{err}");
    assert!(err.to_string().contains("in any form"), "{err}");
    assert_eq!(snapshot(store.root()), before);
}

#[test]
fn a_truncated_gzip_or_a_bomb_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("aliyun/valid/english_headers.csv")).unwrap();
    let whole = gzip(&bytes);
    let truncated = dir.path().join("cut.csv.gz");
    std::fs::write(&truncated, &whole[..whole.len() / 2]).unwrap();
    // A member declaring a gigabyte from a few kilobytes.
    let bomb = dir.path().join("bomb.zip");
    let mut rows = b"a,b\n".to_vec();
    rows.extend(std::iter::repeat_n(b'0', 256 << 20));
    zip(&bomb, &[("big.csv", &rows)]);
    let store = Store::open(dir.path().join(".gpuaudit"));
    store.import(&[fixture("autodl/valid/two_days.csv")], &ImportOptions::default()).unwrap();
    let before = snapshot(store.root());
    for (input, want) in [(&truncated, "cut.csv.gz"), (&bomb, "bomb.zip!big.csv")] {
        let err = store.import(std::slice::from_ref(input), &ImportOptions::default()).unwrap_err();
        let text = err.to_string();
        assert!(text.contains(want), "{text}");
        assert_eq!(snapshot(store.root()), before, "{text}");
        if input == &bomb {
            assert!(text.contains("zip bomb"), "{text}");
        }
    }
}

#[test]
fn a_parquet_export_gives_the_charges_and_ids_of_the_same_export_as_csv() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        // FOCUS with DECIMAL(38,10) costs and UTC timestamps; CUR 2.0 with doubles, as AWS
        // writes them (both written by DuckDB from the CSV fixtures).
        (
            "focus/valid/vm_with_egress_on_its_resource_id.parquet",
            "focus/valid/vm_with_egress_on_its_resource_id.csv",
            27,
        ),
        ("aws-cur/valid/cur2_snake_case.parquet", "aws-cur/valid/cur2_snake_case.csv", 10),
        // The real CUR of the corpus as Parquet (94 columns, costs as doubles, times with a
        // zone): only the columns the profile reads are decoded.
        (
            "aws-cur/valid/real_cur_as_parquet.parquet",
            "real/aws-cur-legacy/sample-anonymous-aws-export-dataset.csv",
            1281,
        ),
        // Its first 40 rows, the fifth without identity/LineItemId and TimeInterval, every
        // column text: that row's id hashes the columns the profile does not read, so its
        // slice is read whole.
        (
            "aws-cur/valid/real_rows_one_without_its_line_item_id.parquet",
            "aws-cur/valid/real_rows_one_without_its_line_item_id.csv",
            40,
        ),
        // Google Cloud's export with its nested columns (service, labels, credits), written by
        // DuckDB from the JSON lines fixture: read through the same JSON lines reader.
        ("gcp/valid/detailed_export_a2_vm.parquet", "gcp/valid/detailed_export_a2_vm.json", 22),
    ];
    for (name, csv, rows) in cases {
        let (parquet, csv) = (fixture(name), fixture(csv));
        let store = Store::open(dir.path().join(name.replace('/', "-")));
        let out = store.import(std::slice::from_ref(&parquet), &ImportOptions::default()).unwrap();
        assert_eq!(out.files[0].new, rows, "{name}");
        let from_parquet = store.load(&LoadFilter::default()).unwrap();
        let again = store.import(std::slice::from_ref(&csv), &ImportOptions::default()).unwrap();
        assert_eq!((again.files[0].new, again.files[0].duplicates), (0, rows), "{name}: same ids");
        let from_csv = gpuaudit_core::parse_bill(&csv, None).unwrap().charges;
        let total = |cs: &[gpuaudit_core::Charge]| -> rust_decimal::Decimal {
            cs.iter().map(|c| c.billed_cost).sum()
        };
        assert_eq!(total(&from_parquet), total(&from_csv), "{name}: the same money");
        let times = |cs: &[gpuaudit_core::Charge]| {
            let mut t: Vec<_> = cs.iter().map(|c| (c.id, c.charge_start, c.charge_end)).collect();
            t.sort();
            t
        };
        assert_eq!(times(&from_parquet), times(&from_csv), "{name}: the same times");
    }
}

#[test]
fn a_parquet_bill_with_a_column_of_the_wrong_type_is_refused_at_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join(".gpuaudit"));
    store.import(&[fixture("autodl/valid/two_days.csv")], &ImportOptions::default()).unwrap();
    let before = snapshot(store.root());
    let bad = fixture("focus/invalid/billed_cost_as_text.parquet");
    let err = store.import(std::slice::from_ref(&bad), &ImportOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(
            "billed_cost_as_text.parquet: row 2: column BilledCost: \"twelve\" is not an amount"
        ),
        "{text}"
    );
    assert_eq!(snapshot(store.root()), before);
    // Compressed, a Parquet file cannot be read where its footer is.
    let gz = dir.path().join("bill.parquet.gz");
    std::fs::write(
        &gz,
        gzip(&std::fs::read(fixture("aws-cur/valid/cur2_snake_case.parquet")).unwrap()),
    )
    .unwrap();
    let err = store.import(std::slice::from_ref(&gz), &ImportOptions::default()).unwrap_err();
    assert!(err.to_string().contains("a Parquet bill is read from a file of its own"), "{err}");
}

#[test]
fn a_zstd_compressed_bill_is_the_same_bill() {
    let dir = tempfile::tempdir().unwrap();
    let csv = fixture("autodl/valid/two_days.csv");
    let zst = dir.path().join("bill.csv.zst");
    std::fs::write(&zst, zstd::encode_all(&std::fs::read(&csv).unwrap()[..], 3).unwrap()).unwrap();
    let store = Store::open(dir.path().join(".gpuaudit"));
    store.import(std::slice::from_ref(&csv), &ImportOptions::default()).unwrap();
    let again = store.import(std::slice::from_ref(&zst), &ImportOptions::default()).unwrap();
    assert_eq!((again.files[0].new, again.files[0].duplicates), (0, 7));
}

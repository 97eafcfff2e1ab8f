//! `gpuaudit import` of bills as delivered: a folder, a gzip'ed bill, a cut one.

use std::io::Write;

use super::{gpuaudit, snapshot, stderr, stdout, workdir};

#[test]
fn a_folder_imports_its_bills_in_order_and_notes_what_is_not_one() {
    let dir = workdir();
    std::fs::write(dir.path().join("examples/bills/notes.md"), "# where the bills came from\n")
        .unwrap();
    let out = gpuaudit(dir.path(), &["import", "examples/bills"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let files: Vec<&str> = text.lines().take(3).map(|l| l.split(':').next().unwrap()).collect();
    assert_eq!(
        files,
        [
            "examples/bills/aliyun-2024-04.csv",
            "examples/bills/aliyun-2024-05.csv",
            "examples/bills/autodl-2024-05.csv"
        ]
    );
    assert_eq!(stderr(&out), "note: skipped examples/bills/notes.md: not a bill (by its name)\n");
}

#[test]
fn a_gzipped_bill_imports_as_the_bill_and_a_cut_one_is_refused() {
    let dir = workdir();
    let bill = std::fs::read(dir.path().join("examples/bills/autodl-2024-05.csv")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&bill).unwrap();
    let gz = gz.finish().unwrap();
    std::fs::write(dir.path().join("autodl.csv.gz"), &gz).unwrap();
    std::fs::write(dir.path().join("cut.csv.gz"), &gz[..gz.len() / 3]).unwrap();

    let plain = gpuaudit(dir.path(), &["import", "examples/bills/autodl-2024-05.csv"]);
    assert_eq!(plain.status.code(), Some(0));
    let again = gpuaudit(dir.path(), &["import", "autodl.csv.gz"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(
        stdout(&again).starts_with(
            "autodl.csv.gz: profile autodl, 776 rows read, 0 new, 776 duplicates, 0 rejected\n"
        ),
        "{}",
        stdout(&again)
    );
    let ledger = dir.path().join(".gpuaudit");
    let before = snapshot(&ledger);
    let cut = gpuaudit(dir.path(), &["import", "cut.csv.gz"]);
    assert_eq!(cut.status.code(), Some(2));
    assert!(stderr(&cut).starts_with("error: cut.csv.gz: "), "{}", stderr(&cut));
    assert_eq!(snapshot(&ledger), before);
}

#[test]
fn a_parquet_file_the_decoder_panics_on_is_an_error_naming_it() {
    let dir = workdir();
    let out = gpuaudit(dir.path(), &["import", "fixtures/focus/invalid/damaged_footer.parquet"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: fixtures/focus/invalid/damaged_footer.parquet: the reader failed"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_parquet_page_claiming_impossible_values_is_refused_before_it_is_decoded() {
    // polars' decoder reserved 2^61 bytes for this page's claim and the process aborted.
    let dir = workdir();
    let bill = "fixtures/focus/invalid/page_claims_impossible_values.parquet";
    let out = gpuaudit(dir.path(), &["import", bill]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.starts_with(&format!("error: {bill}: a page claims")), "{err}");
    assert!(!dir.path().join(".gpuaudit/manifest.json").exists(), "nothing was imported");
}

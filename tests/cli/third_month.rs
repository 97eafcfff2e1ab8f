//! Regression tests of the third month's defects, through the binary.

use super::{gpuaudit, stderr, stdout, workdir};

#[test]
fn reconcile_tables_show_hours_and_days_as_people_write_them() {
    let dir = workdir();
    let out = gpuaudit(dir.path(), &["import", "fixtures/aliyun/valid/r008_five_hours_late.csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&gpuaudit(dir.path(), &["reconcile", "--month", "2024-05"]));
    assert!(
        table.contains("R008  aliyun    i-bp1aaaa1111       0 h     5 h         5 h  time  "),
        "{table}"
    );
    let md = stdout(&gpuaudit(dir.path(), &["reconcile", "--month", "2024-05", "--format", "md"]));
    assert!(md.contains("| 0 h | 5 h | 5 h | time |"), "{md}");
    // Machines keep the exact figure, in days.
    let csv =
        stdout(&gpuaudit(dir.path(), &["reconcile", "--month", "2024-05", "--format", "csv"]));
    assert!(
        csv.contains(",2024-05,0,0.2083333333333333333333333333,0.2083333333333333333333333333,,"),
        "{csv}"
    );
}

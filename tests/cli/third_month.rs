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

#[test]
fn a_user_profiles_months_are_cut_in_its_own_zone() {
    // A platform gpuaudit does not know, in Beijing time: a row for 2024-12-01 02:00–03:00
    // local is in December, though it is 2024-11-30 18:00 UTC.
    let dir = workdir();
    let d = dir.path();
    std::fs::create_dir_all(d.join("profiles")).unwrap();
    std::fs::write(
        d.join("profiles/beijing.toml"),
        "name = \"beijinggpu\"\nzone = \"Asia/Shanghai\"\n\
         [[columns]]\nkey = \"charge_start\"\naliases = [\"开始\"]\nrequired = true\n\
         [[columns]]\nkey = \"charge_end\"\naliases = [\"结束\"]\n\
         [[columns]]\nkey = \"billed_cost\"\naliases = [\"金额\"]\nrequired = true\n\
         [[columns]]\nkey = \"resource_id\"\naliases = [\"资源\"]\n",
    )
    .unwrap();
    std::fs::write(d.join("gpuaudit.toml"), "").unwrap();
    std::fs::write(
        d.join("bj.csv"),
        "开始,结束,金额,资源\n2024-12-01 02:00:00,2024-12-01 03:00:00,3.50,gpu-1\n",
    )
    .unwrap();
    let out = gpuaudit(d, &["import", "bj.csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("bj.csv: profile beijinggpu, 1 rows read, 1 new"),
        "{}",
        stdout(&out)
    );
    let months = stdout(&gpuaudit(d, &["summary", "--by", "month", "--format", "csv"]));
    assert!(months.contains("\n2024-12,CNY,3.50,3.50,1\n"), "{months}");
    let reconcile = gpuaudit(d, &["reconcile", "--month", "2024-12"]);
    assert_eq!(stdout(&reconcile), "reconcile 2024-12: no discrepancy\n", "no false R008");
    // Also with the profile file gone: the ledger remembers the zone it was imported in.
    std::fs::remove_file(d.join("profiles/beijing.toml")).unwrap();
    let reconcile = gpuaudit(d, &["reconcile", "--month", "2024-12"]);
    assert_eq!(stdout(&reconcile), "reconcile 2024-12: no discrepancy\n");
}

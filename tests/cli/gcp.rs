//! Google Cloud's billing export as BigQuery writes it to JSON lines: credits as charges of
//! their own, GPU-hours from the machine type, gzip the same bill, and bad lines refused at
//! their JSON line with the ledger left as it was.

use std::io::Write;

use rust_decimal::Decimal;

use super::cost::{instance_line, rows};
use super::{gpuaudit, snapshot, stderr, stdout, workdir};

const BILL: &str = "fixtures/gcp/valid/detailed_export_a2_vm.json";

#[test]
fn a_gcp_export_nets_its_credits_and_gives_gpu_hours_by_machine_type() {
    let dir = workdir();
    let d = dir.path();
    let out = gpuaudit(d, &["import", BILL]);
    assert!(out.status.success(), "{}", stderr(&out));
    // 18 records, 4 of them with one credit each: 22 charges.
    assert!(stdout(&out).contains("profile gcp, 22 rows read, 22 new"), "{}", stdout(&out));
    let out = gpuaudit(d, &["summary", "--by", "platform,sub_account", "--format", "csv"]);
    let lines = rows(&stdout(&out));
    // The project's charges, and the tax and rounding error, which belong to no project.
    let projects: Vec<(&str, &str)> =
        lines.iter().map(|r| (r["platform"].as_str(), r["sub_account"].as_str())).collect();
    assert_eq!(projects, [("gcp", "ml-train-prod"), ("gcp", "")], "{lines:?}");
    // The costs and credits of the file, each rounded half to even to 12 decimals (two costs
    // have 16): 3 × (0.379908 + 0.377927 + 2.933908 − 1.613649) + 3 × 0.013698630137
    // + 0.015 − 0.015 + 0.84 + 0.004931506849 + 0.0011 + 0.21 − 0.004511.
    let want: Decimal = "7.326898397260".parse().unwrap();
    let total: Decimal = lines.iter().map(|r| r["billed_cost"].parse::<Decimal>().unwrap()).sum();
    assert_eq!(total, want);
    let vm = instance_line(d, "2024-05", "/instances/4471947310893417302");
    assert_eq!((vm["gpu_model"].as_str(), vm["gpu_hours"].as_str()), ("A100 40GB", "3"));
    // Core, RAM and GPU for 3 hours, less the committed use discount on the GPU.
    assert_eq!(vm["compute"], "6.234282");
    // The same bill gzip-compressed, as BigQuery writes it to Cloud Storage, adds nothing.
    let gz = d.join("export-000000000000.json.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&std::fs::read(d.join(BILL)).unwrap()).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let out = gpuaudit(d, &["import", "export-000000000000.json.gz"]);
    assert!(stdout(&out).contains("0 new, 22 duplicates"), "{}{}", stdout(&out), stderr(&out));
}

#[test]
fn a_bad_line_of_a_json_lines_bill_is_refused_at_its_line() {
    let dir = workdir();
    let d = dir.path();
    assert!(gpuaudit(d, &["import", "fixtures/autodl/valid/two_days.csv"]).status.success());
    let before = snapshot(&d.join(".gpuaudit"));
    let text = std::fs::read_to_string(d.join(BILL)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let refused = |name: &str, body: String| {
        std::fs::write(d.join(name), body).unwrap();
        let out = gpuaudit(d, &["import", name]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stdout(&out));
        assert_eq!(snapshot(&d.join(".gpuaudit")), before, "{name}");
        stderr(&out)
    };
    // A line cut short.
    let cut = format!("{}\n{}\n{}\n", lines[0], lines[1], &lines[2][..40]);
    assert!(refused("cut.json", cut).contains("cut.json:3: not JSON"));
    // A credit whose amount is no amount: its row is the third record's, at line 3.
    let odd = lines[2].replace("\"amount\":-1.613649", "\"amount\":\"lots\"");
    assert_ne!(odd, lines[2]);
    let err = refused("credit.json", format!("{}\n\n{}\n{odd}\n", lines[0], lines[1]));
    assert!(err.contains("credit.json:4: column cost: \"lots\" is not an amount"), "{err}");
    // The Parquet form (nested columns), its second row's cost a text: named by its row.
    let out = gpuaudit(d, &["import", "fixtures/gcp/invalid/cost_as_text_on_row_2.parquet"]);
    assert_eq!(out.status.code(), Some(2));
    let want = "cost_as_text_on_row_2.parquet: row 2: column cost: \"lots\" is not an amount";
    assert!(stderr(&out).contains(want), "{}", stderr(&out));
    assert_eq!(snapshot(&d.join(".gpuaudit")), before);
    // An amount past the bounds of exponent notation.
    let huge = lines[0].replace("\"cost\":0.379908", "\"cost\":1e99");
    let err = refused("huge.json", format!("{huge}\n"));
    assert!(err.contains("huge.json:1: column cost:"), "{err}");
}

//! Regression tests of the trust issue through the binary: exit codes, messages naming the
//! file, and the ledger's bytes, for the inputs that used to take the machine or lose rows.

use std::io::Write;
use std::process::{Command, Stdio};

use super::{gpuaudit, root, snapshot, stderr, stdout, workdir};

/// Imports the overlap fixture into the work folder's ledger; its files, byte for byte.
fn seeded(dir: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let ok = gpuaudit(dir, &["import", "fixtures/aliyun/valid/overlap_may01_02.csv"]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    snapshot(&dir.join(".gpuaudit"))
}

#[test]
fn hostile_files_are_refused_quickly_in_bounded_memory_naming_the_file() {
    let dir = workdir();
    let before = seeded(dir.path());
    let cases = [
        (
            "fixtures/unknown/invalid/truncated_workbook.xlsx",
            "error: fixtures/unknown/invalid/truncated_workbook.xlsx: not a readable workbook (XLSX, XLS or ODS): ",
        ),
        (
            "fixtures/unknown/invalid/spaces_inside_the_sheet.xlsx",
            "error: fixtures/unknown/invalid/spaces_inside_the_sheet.xlsx: not a readable workbook (XLSX, XLS or ODS): xl/worksheets/sheet1.xml holds a text or tag of more than 1 MiB\n",
        ),
        (
            "fixtures/unknown/invalid/one_cell_at_xfd1048576.xlsx",
            "error: fixtures/unknown/invalid/one_cell_at_xfd1048576.xlsx:1048576: column 交易时间: not found in the header",
        ),
        (
            "fixtures/autodl/invalid/unclosed_quote_in_note.csv",
            "error: fixtures/autodl/invalid/unclosed_quote_in_note.csv:5: column 备注: a quote opened here is never closed\n",
        ),
        ("/dev/zero", "error: /dev/zero:1: column #1: the row is longer than 1 MiB"),
    ];
    for (file, want) in cases {
        let started = std::time::Instant::now();
        // The address space is capped: a file that takes the machine fails the allocation.
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "ulimit -v 4000000; exec {} import {file}",
                env!("CARGO_BIN_EXE_gpuaudit")
            ))
            .current_dir(dir.path())
            .env_remove("GPUAUDIT_LEDGER")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{file}: {}", stderr(&out));
        assert!(stderr(&out).starts_with(want), "{file}:\n got: {}\nwant: {want}", stderr(&out));
        assert!(started.elapsed().as_secs() < 30, "{file} took {:?}", started.elapsed());
        assert_eq!(snapshot(&dir.path().join(".gpuaudit")), before, "{file} changed the ledger");
    }
}

#[test]
fn a_bill_on_standard_input_or_a_pipe_is_read_once_and_whole() {
    let dir = workdir();
    let bill = std::fs::read(dir.path().join("fixtures/autodl/valid/two_days.csv")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpuaudit"))
        .args(["import", "--profile", "autodl", "-"])
        .current_dir(dir.path())
        .env_remove("GPUAUDIT_LEDGER")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bill).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("-: profile autodl, 7 rows read, 7 new, 0 duplicates"),
        "{}",
        stdout(&out)
    );
    // A named pipe: opened once (a second open would wait for a writer forever), its first
    // bytes not lost to a sniff.
    let fifo = dir.path().join("bill.csv");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let writer = {
        let (fifo, bill) = (fifo.clone(), bill.clone());
        std::thread::spawn(move || std::fs::write(fifo, bill).unwrap())
    };
    let out = Command::new("timeout")
        .args(["20", env!("CARGO_BIN_EXE_gpuaudit"), "import", "bill.csv"])
        .current_dir(dir.path())
        .env_remove("GPUAUDIT_LEDGER")
        .output()
        .unwrap();
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("bill.csv: profile autodl, 7 rows read, 0 new, 7 duplicates"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn skip_invalid_keeps_short_and_long_rows_as_they_were() {
    let dir = workdir();
    let bill = dir.path().join("ragged.csv");
    let good =
        std::fs::read_to_string(dir.path().join("fixtures/autodl/valid/two_days.csv")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(2, "A0100,2024-05-02 10:00:00,支出");
    lines.insert(3, "A0101,2024-05-02 11:00:00,支出,按量计费,余额,x1.0,90.00,容器实例ID：ab12cd34ef,extra,cells");
    std::fs::write(&bill, lines.join("\n") + "\n").unwrap();
    let out = gpuaudit(dir.path(), &["import", "--skip-invalid", "ragged.csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out)
            .contains("ragged.csv: profile autodl, 9 rows read, 7 new, 0 duplicates, 2 rejected"),
        "{}",
        stdout(&out)
    );
    let rejects = dir.path().join(".gpuaudit/rejects");
    let batch = std::fs::read_dir(&rejects).unwrap().next().unwrap().unwrap().path();
    let file = std::fs::read_dir(batch).unwrap().next().unwrap().unwrap().path();
    let text = std::fs::read_to_string(file).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert_eq!(
        rows[1],
        "3,交易类型,\"missing (the row has 3 fields, the header 8)\",A0100,2024-05-02 10:00:00,支出"
    );
    assert!(
        rows[2].starts_with("4,交易金额,\"\"\"x1.0\"\" is not an amount\",A0101,"),
        "{}",
        rows[2]
    );
    assert!(rows[2].ends_with(",容器实例ID：ab12cd34ef,extra,cells"), "{}", rows[2]);
}

#[test]
fn a_dry_run_on_a_read_only_ledger_writes_nothing_and_succeeds() {
    let dir = workdir();
    seeded(dir.path());
    let ledger = dir.path().join(".gpuaudit");
    // A ledger copied read-only from elsewhere, with a file a crash left behind.
    std::fs::write(ledger.join("charges/left-behind.parquet"), b"partial").unwrap();
    let before = snapshot(&ledger);
    let chmod = |mode: &str| {
        let ledger = ledger.to_str().unwrap();
        assert!(Command::new("chmod").args(["-R", mode, ledger]).status().unwrap().success());
    };
    chmod("a-w");
    let out = gpuaudit(
        dir.path(),
        &["import", "--dry-run", "fixtures/aliyun/valid/overlap_may02_03.csv"],
    );
    chmod("u+w");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("dry run: "), "{}", stdout(&out));
    // Root ignores the permission bits: the bytes prove that nothing was written or swept.
    assert_eq!(snapshot(&ledger), before);
}

#[test]
fn a_failed_commit_leaves_no_part_file_of_the_batch_in_charges() {
    let dir = workdir();
    let before = seeded(dir.path());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpuaudit"))
        .args([
            "import",
            "fixtures/aliyun/valid/overlap_may02_03.csv",
            "fixtures/autodl/valid/two_days.csv",
        ])
        .current_dir(dir.path())
        .env_remove("GPUAUDIT_LEDGER")
        .env("GPUAUDIT_FAILPOINT", "commit-create")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("_commits/00000000000000000002.json: failpoint commit-create"),
        "{}",
        stderr(&out)
    );
    let after = snapshot(&dir.path().join(".gpuaudit"));
    let want = before;
    assert_eq!(after.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>());
    assert_eq!(after, want);
}

/// An AutoDL log of `rows` expenses of `amount` each.
fn log_of(dir: &std::path::Path, name: &str, rows: usize, amount: &str) -> String {
    let mut text =
        String::from("流水号,交易时间,收支类型,交易类型,交易渠道,交易金额,账户余额,备注\n");
    for i in 0..rows {
        let (day, hour) = (1 + i / 24 % 28, i % 24);
        text.push_str(&format!(
            "B{i:05},2024-05-{day:02} {hour:02}:59:59,支出,按量计费,余额,{amount},0.00,容器实例ID：big{}\n",
            i % 9
        ));
    }
    std::fs::write(dir.join(name), text).unwrap();
    name.to_owned()
}

#[test]
fn amounts_near_the_limit_are_exact_or_refused_never_a_panic() {
    let dir = workdir();
    let before = seeded(dir.path());
    let huge = log_of(dir.path(), "huge.csv", 3, "99999999999999999999999999");
    let out = gpuaudit(dir.path(), &["import", &huge]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).starts_with(
        "error: huge.csv:2: column 交易金额: \"99999999999999999999999999\" is too large an amount (the limit is 10^15)\n"
    ), "{}", stderr(&out));
    // A thousand amounts at the limit with 12 decimals need 31 digits: refused, exit 2.
    let fine = log_of(dir.path(), "fine.csv", 1000, "999999999999999.999999999999");
    let out = gpuaudit(dir.path(), &["import", &fine]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the exact result does not fit in 28 significant digits"),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(&dir.path().join(".gpuaudit")), before);
    // At the cents bills print, a thousand of them add up exactly.
    let cents = log_of(dir.path(), "cents.csv", 1000, "999999999999999.99");
    let out = gpuaudit(dir.path(), &["import", &cents]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let csv = gpuaudit(dir.path(), &["summary", "--by", "platform", "--format", "csv"]);
    assert!(
        stdout(&csv).contains("autodl,CNY,999999999999999990.00,999999999999999990.00,1000\n"),
        "{}",
        stdout(&csv)
    );
    for args in
        [&["waste", "--month", "2024-05"][..], &["reconcile", "--month", "2024-05"], &["ledger"]]
    {
        let out = gpuaudit(dir.path(), args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_row_dated_outside_the_import_window_is_refused_at_its_line() {
    let dir = workdir();
    let before = seeded(dir.path());
    let bill = "流水号,交易时间,收支类型,交易类型,交易渠道,交易金额,账户余额,备注\n\
                Z1,1995-06-01 10:00:00,支出,按量计费,余额,1.00,9.00,容器实例ID：zz\n\
                Z2,0000-01-01 10:00:00,支出,按量计费,余额,1.00,8.00,容器实例ID：zz\n";
    std::fs::write(dir.path().join("old.csv"), bill).unwrap();
    let out = gpuaudit(dir.path(), &["import", "old.csv"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "error: old.csv:2: column 交易时间: \"1995-06-01 10:00:00\" is outside the years 2000–2100 a bill may have (the import window)\n\
         old.csv:3: column 交易时间: \"0000-01-01 10:00:00\" is outside the years 2000–2100 a bill may have (the import window)\n\
         nothing was imported (use --skip-invalid to import the valid rows)\n"
    );
    assert_eq!(snapshot(&dir.path().join(".gpuaudit")), before);
    // The window is a setting: widened, the 1995 row imports (year 0 is no month at all).
    std::fs::write(dir.path().join("gpuaudit.toml"), "[import]\nfirst_year = 1990\n").unwrap();
    let out = gpuaudit(dir.path(), &["import", "--skip-invalid", "old.csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out)
            .contains("old.csv: profile autodl, 2 rows read, 1 new, 0 duplicates, 1 rejected"),
        "{}",
        stdout(&out)
    );
    let summary = gpuaudit(dir.path(), &["summary", "--month", "1995-06", "--format", "csv"]);
    assert_eq!(
        stdout(&summary),
        "platform,category,currency,billed_cost,list_cost,charges\nautodl,compute,CNY,1.00,1.00,1\n"
    );
}

#[test]
fn a_ledger_with_a_file_it_cannot_read_is_repaired_by_removing_its_batch() {
    let dir = workdir();
    seeded(dir.path());
    let out = gpuaudit(dir.path(), &["import", "fixtures/autodl/valid/two_days.csv"]);
    assert_eq!(out.status.code(), Some(0));
    let ledger = dir.path().join(".gpuaudit");
    let manifest = gpuaudit_core::ledger::Store::open(&ledger).manifest().unwrap();
    let batch = manifest.batches[1].id.clone();
    let part = manifest.batches[1].files[0].path.clone();
    let clean = gpuaudit(dir.path(), &["ledger", "--verify"]);
    assert_eq!(clean.status.code(), Some(0), "{}", stdout(&clean));
    assert!(
        stdout(&clean)
            .ends_with("2 batches, 2 files, 11 charges: every file is as the manifest says\n"),
        "{}",
        stdout(&clean)
    );
    let rollup = manifest.batches[1].rollup.clone().unwrap();
    std::fs::write(ledger.join(&part), b"PAR1 not a parquet file PAR1").unwrap();
    // What reads the charges fails, naming the file and the way out; the summary, which
    // reads the batch's rollup, still answers, and verify finds the damage.
    let waste = gpuaudit(dir.path(), &["waste", "--month", "2024-05"]);
    assert_eq!(waste.status.code(), Some(2));
    let err = stderr(&waste);
    assert!(
        err.contains(&part) && err.contains(&format!("`gpuaudit ledger --remove {batch}`")),
        "{err}"
    );
    assert_eq!(gpuaudit(dir.path(), &["summary"]).status.code(), Some(0));
    let good_rollup = std::fs::read(ledger.join(&rollup)).unwrap();
    std::fs::write(ledger.join(&rollup), b"PAR1 not a parquet file PAR1").unwrap();
    let summary = gpuaudit(dir.path(), &["summary"]);
    assert_eq!(summary.status.code(), Some(2));
    let err = stderr(&summary);
    // A rollup is made from the part files: the way out is to make it again.
    assert!(err.contains(&rollup) && err.contains("`gpuaudit ledger --repair`"), "{err}");
    let verify = gpuaudit(dir.path(), &["ledger", "--verify"]);
    assert!(
        stdout(&verify).contains(&format!("{rollup}: cannot be read: ")),
        "{}",
        stdout(&verify)
    );
    // Not while a part file of its batch is damaged: it is made of them.
    let repair = gpuaudit(dir.path(), &["ledger", "--repair"]);
    assert_eq!(repair.status.code(), Some(1), "{}", stderr(&repair));
    assert!(!stdout(&repair).contains("rebuilt"), "{}", stdout(&repair));
    assert!(
        stdout(&repair).ends_with(&format!("repair: gpuaudit ledger --remove {batch}\n")),
        "{}",
        stdout(&repair)
    );
    std::fs::write(ledger.join(&rollup), good_rollup).unwrap();
    let verify = gpuaudit(dir.path(), &["ledger", "--verify"]);
    assert_eq!(verify.status.code(), Some(1));
    assert!(stdout(&verify).contains(&format!("{part}: cannot be read: ")), "{}", stdout(&verify));
    assert!(
        stdout(&verify).ends_with(&format!("repair: gpuaudit ledger --remove {batch}\n")),
        "{}",
        stdout(&verify)
    );
    let unknown = gpuaudit(dir.path(), &["ledger", "--remove", "no-such-batch"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("no batch \"no-such-batch\"; batches: "),
        "{}",
        stderr(&unknown)
    );
    let removed = gpuaudit(dir.path(), &["ledger", "--remove", &batch]);
    assert_eq!(removed.status.code(), Some(0), "{}", stderr(&removed));
    assert_eq!(
        stdout(&removed),
        format!("removed batch {batch}: 7 charges of fixtures/autodl/valid/two_days.csv\n")
    );
    assert!(!ledger.join(&part).exists(), "the batch's files are swept");
    let verify = gpuaudit(dir.path(), &["ledger", "--verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
    // The bill imports again after the repair.
    let again = gpuaudit(dir.path(), &["import", "fixtures/autodl/valid/two_days.csv"]);
    assert!(stdout(&again).contains("7 new, 0 duplicates"), "{}", stdout(&again));
}

/// A rollup and look-back files damaged or missing (the part files sound): the commands that
/// read them fail naming the file and `ledger --repair`, which makes them again from the part
/// files; then every command answers as before, byte for byte.
#[test]
fn damaged_rollups_and_look_back_files_are_made_again_by_ledger_repair() {
    let dir = workdir();
    std::fs::copy(root().join("examples/gpuaudit.toml"), dir.path().join("gpuaudit.toml")).unwrap();
    for bill in ["examples/bills/aliyun-2024-04.csv", "examples/bills/aliyun-2024-05.csv"] {
        assert_eq!(gpuaudit(dir.path(), &["import", bill]).status.code(), Some(0));
    }
    let ledger = dir.path().join(".gpuaudit");
    let manifest = gpuaudit_core::ledger::Store::open(&ledger).manifest().unwrap();
    let batch = &manifest.batches[0];
    let rollup = batch.rollup.clone().unwrap();
    let look_back: Vec<String> = batch.look_back.iter().flat_map(|l| l.names()).cloned().collect();
    assert!(look_back.len() >= 2, "{look_back:?}");
    let commands: [&[&str]; 4] = [
        &["summary", "--by", "month,instance", "--format", "csv"],
        &["waste", "--month", "2024-05", "--format", "csv"],
        &["reconcile", "--month", "2024-05", "--format", "csv"],
        &["cost", "--month", "2024-05", "--compare", "--format", "csv"],
    ];
    let before: Vec<String> = commands.iter().map(|c| stdout(&gpuaudit(dir.path(), c))).collect();
    let bytes: Vec<Vec<u8>> =
        look_back.iter().chain([&rollup]).map(|f| std::fs::read(ledger.join(f)).unwrap()).collect();

    std::fs::write(ledger.join(&rollup), b"PAR1 not a parquet file PAR1").unwrap();
    std::fs::remove_file(ledger.join(&look_back[0])).unwrap();
    let cut = &bytes[1][..bytes[1].len() / 2];
    std::fs::write(ledger.join(&look_back[1]), cut).unwrap();
    for (command, damaged) in [(commands[0], &rollup), (commands[1], &look_back[0])] {
        let out = gpuaudit(dir.path(), command);
        assert_eq!(out.status.code(), Some(2), "{command:?}");
        let err = stderr(&out);
        assert!(
            err.contains(damaged.as_str()) && err.contains("`gpuaudit ledger --repair`"),
            "{err}"
        );
    }
    let verify = gpuaudit(dir.path(), &["ledger", "--verify"]);
    assert_eq!(verify.status.code(), Some(1));
    assert!(stdout(&verify).ends_with("repair: gpuaudit ledger --repair\n"), "{}", stdout(&verify));
    assert!(!stdout(&verify).contains("--remove"), "{}", stdout(&verify));

    let repair = gpuaudit(dir.path(), &["ledger", "--repair"]);
    assert_eq!(repair.status.code(), Some(0), "{}{}", stdout(&repair), stderr(&repair));
    let said = stdout(&repair);
    assert!(said.starts_with(&format!("batch {}: rebuilt {rollup} ", batch.id)), "{said}");
    assert!(said.ends_with("every file is as the manifest says\n"), "{said}");
    for (file, bytes) in look_back.iter().chain([&rollup]).zip(&bytes) {
        assert_eq!(&std::fs::read(ledger.join(file)).unwrap(), bytes, "{file} as imported");
    }
    let after: Vec<String> = commands.iter().map(|c| stdout(&gpuaudit(dir.path(), c))).collect();
    assert_eq!(after, before);
    // Summary, waste and cost have lines to compare (these bills reconcile).
    for out in [&before[0], &before[1], &before[3]] {
        assert!(out.lines().count() > 1, "{out}");
    }
}

#[test]
fn bill_text_reaches_a_terminal_or_a_document_visibly_and_inert() {
    let dir = workdir();
    let out = gpuaudit(
        dir.path(),
        &["import", "fixtures/aliyun/valid/hostile_texts_in_a_resource_id.csv"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = "d-bp1<script>alert(1)</script>␛]0;owned␇␛[31m|x␊y";
    for args in [&["waste", "--month", "2024-05"][..], &["summary", "--by", "instance,platform"]] {
        let table = stdout(&gpuaudit(dir.path(), args));
        assert!(!table.contains(['\u{1b}', '\u{7}']), "{args:?}: {table:?}");
        assert!(table.contains(shown) || !args.contains(&"waste"), "{args:?}: {table}");
    }
    let waste = stdout(&gpuaudit(dir.path(), &["waste", "--month", "2024-05"]));
    assert_eq!(
        waste.lines().filter(|l| l.contains("d-bp1")).count(),
        2,
        "one table row, one advice line: {waste}"
    );
    let md = stdout(&gpuaudit(dir.path(), &["waste", "--month", "2024-05", "--format", "md"]));
    assert!(
        md.contains("| d-bp1&lt;script&gt;alert(1)&lt;/script&gt;␛\\]0;owned␇␛\\[31m\\|x␊y |"),
        "{md}"
    );
    assert!(!md.contains("<script>"), "{md}");
    // Machine formats keep the text exact: CSV quotes it, JSON escapes it.
    let json = stdout(&gpuaudit(dir.path(), &["waste", "--month", "2024-05", "--format", "json"]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["findings"][0]["resource_id"],
        "d-bp1<script>alert(1)</script>\u{1b}]0;owned\u{7}\u{1b}[31m|x\ny"
    );
}

#[test]
fn a_damaged_look_back_file_is_refused_naming_it_found_by_verify_and_made_again() {
    let dir = workdir();
    let ok = gpuaudit(
        dir.path(),
        &["import", "examples/bills/aliyun-2024-04.csv", "examples/bills/aliyun-2024-05.csv"],
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let ledger = dir.path().join(".gpuaudit");
    let manifest = gpuaudit_core::ledger::Store::open(&ledger).manifest().unwrap();
    let batch = &manifest.batches[0];
    let april = batch.look_back.iter().find(|l| l.month == "2024-04").expect("April's look-back");
    let before = gpuaudit(dir.path(), &["waste", "--month", "2024-05", "--format", "csv"]);
    assert_eq!(before.status.code(), Some(0), "{}", stderr(&before));
    for damaged in [&april.facts, &april.files[0].path] {
        let good = std::fs::read(ledger.join(damaged)).unwrap();
        std::fs::write(ledger.join(damaged), b"PAR1 not a parquet file PAR1").unwrap();
        // Auditing May reads April's look-back: refused, naming the file and the way out.
        for command in ["waste", "reconcile"] {
            let out = gpuaudit(dir.path(), &[command, "--month", "2024-05"]);
            assert_eq!(out.status.code(), Some(2), "{command}");
            let err = stderr(&out);
            let way_out = "it is made from the batch's part files: `gpuaudit ledger --repair`";
            assert!(err.contains(damaged.as_str()) && err.contains(way_out), "{err}");
        }
        // Auditing April reads April's part files, as does the cost report.
        let april_audit = gpuaudit(dir.path(), &["waste", "--month", "2024-04"]);
        assert_eq!(april_audit.status.code(), Some(0), "{}", stderr(&april_audit));
        let verify = gpuaudit(dir.path(), &["ledger", "--verify"]);
        assert_eq!(verify.status.code(), Some(1));
        let said = format!("{damaged}: cannot be read: ");
        assert!(stdout(&verify).contains(&said), "{}", stdout(&verify));
        // Made again from the part files, as the import made it.
        let repair = gpuaudit(dir.path(), &["ledger", "--repair"]);
        assert_eq!(repair.status.code(), Some(0), "{}", stdout(&repair));
        assert_eq!(std::fs::read(ledger.join(damaged)).unwrap(), good, "{damaged}");
    }
    let after = gpuaudit(dir.path(), &["waste", "--month", "2024-05", "--format", "csv"]);
    assert_eq!(stdout(&after), stdout(&before));
    assert_eq!(gpuaudit(dir.path(), &["ledger", "--verify"]).status.code(), Some(0));
}

#[test]
fn figures_no_check_can_multiply_are_refused_naming_the_line_and_the_check() {
    // Every figure is within a bill's bounds (it imports), but a price times a quantity, or
    // a cost times a saving, needs more than 28 digits: the audits refuse the bill, naming
    // where the charge was read and which check met it, with or without the evidence read.
    let dir = workdir();
    let bill = "fixtures/aliyun/unauditable/figures_no_check_can_multiply.csv";
    let out = gpuaudit(dir.path(), &["import", bill]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let before = snapshot(&dir.path().join(".gpuaudit"));
    let waste = format!(
        "error: {bill}:3: W005 on-demand-over-subscription: a charge's share of its time (the charge of i-bp1huge0001 from 2024-04-30 16:00 UTC): "
    );
    let reconcile = format!(
        "error: {bill}:3: R001 arithmetic: a unit price times its quantity (the charge of i-bp1huge0001 from 2024-04-30 16:00 UTC): "
    );
    for (command, want) in [("waste", &waste), ("reconcile", &reconcile)] {
        for format in ["table", "csv", "json"] {
            let args = [command, "--month", "2024-05", "--format", format];
            let out = gpuaudit(dir.path(), &args);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
            assert!(stderr(&out).starts_with(want.as_str()), "{args:?}: {}", stderr(&out));
            assert!(
                stderr(&out).ends_with("the exact result does not fit in 28 significant digits\n")
            );
            assert_eq!(stdout(&out), "", "{args:?}");
        }
    }
    assert_eq!(snapshot(&dir.path().join(".gpuaudit")), before);
}

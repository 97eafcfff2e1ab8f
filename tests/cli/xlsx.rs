//! `--format xlsx -o FILE.xlsx`: the workbook read back with calamine holds every cell of the
//! CSV output — money as a number with its exact text beside it, times as date-times.

use calamine::{Data, Reader, Xlsx, open_workbook};
use rust_decimal::Decimal;

use super::{gpuaudit, stderr, stdout, workdir};

#[test]
fn every_report_s_workbook_holds_its_csv_cell_for_cell() {
    let dir = workdir();
    let d = dir.path();
    super::import_examples(d, ".gpuaudit");
    let reports: &[(&[&str], &str)] = &[
        (&["summary", "--month", "2024-05", "--by", "platform,instance"], "summary"),
        (&["waste", "--month", "2024-05"], "findings"),
        (&["reconcile", "--month", "2024-05"], "discrepancies"),
        (&["cost", "--month", "2024-05"], "lines"),
        (&["cost", "--month", "2024-05", "--compare"], "compare"),
        (&["cost", "--month", "2024-05", "--breakeven"], "breakeven"),
    ];
    let mut cells = 0;
    for (args, sheet) in reports {
        let run = |extra: &[&str]| {
            let mut a = args.to_vec();
            a.extend(extra);
            let out = gpuaudit(d, &a);
            assert!(out.status.success(), "{a:?}: {}", stderr(&out));
            stdout(&out)
        };
        let csv_text = run(&["--format", "csv"]);
        run(&["--format", "xlsx", "-o", "out.xlsx"]);
        let mut book: Xlsx<_> = open_workbook(d.join("out.xlsx")).unwrap();
        let range = book.worksheet_range(sheet).unwrap();
        let mut r = csv::Reader::from_reader(csv_text.as_bytes());
        let header: Vec<String> = r.headers().unwrap().iter().map(str::to_owned).collect();
        let top: Vec<String> = range.rows().next().unwrap().iter().map(|c| c.to_string()).collect();
        for (i, record) in r.records().enumerate() {
            let record = record.unwrap();
            let row = range.rows().nth(i + 1).unwrap_or_else(|| panic!("{sheet}: row {i} missing"));
            let mut col = 0;
            for (h, cell) in header.iter().zip(record.iter()) {
                assert_eq!(&top[col], h, "{sheet}: header");
                let got = &row[col];
                if top.get(col + 1).is_some_and(|n| *n == format!("{h} (exact)")) {
                    // Money: a number, and the exact text beside it.
                    match cell.parse::<Decimal>() {
                        Ok(d) => assert_eq!(
                            got,
                            &Data::Float(d.to_string().parse().unwrap()),
                            "{sheet} {h}"
                        ),
                        Err(_) => assert_eq!(got.to_string(), cell, "{sheet} {h}"),
                    }
                    let exact =
                        if cell.is_empty() { Data::Empty } else { Data::String(cell.to_owned()) };
                    assert_eq!(row[col + 1], exact, "{sheet} {h} (exact)");
                    col += 2;
                } else {
                    match got {
                        Data::DateTime(t) => {
                            let t = t.as_datetime().unwrap();
                            assert_eq!(
                                format!("{}Z", t.format("%Y-%m-%dT%H:%M:%S")),
                                cell,
                                "{sheet} {h}"
                            );
                        }
                        Data::Float(f) => {
                            assert_eq!(*f, cell.parse::<f64>().unwrap(), "{sheet} {h}")
                        }
                        Data::Int(n) => assert_eq!(n.to_string(), cell, "{sheet} {h}"),
                        Data::Empty => assert_eq!(cell, "", "{sheet} {h}"),
                        other => assert_eq!(other.to_string(), cell, "{sheet} {h}"),
                    }
                    col += 1;
                }
                cells += 1;
            }
        }
        assert_eq!(range.height(), csv_text.lines().count(), "{sheet}: one row per CSV row");
    }
    assert!(cells > 500, "{cells} cells compared");
    let out = gpuaudit(d, &["summary", "--format", "xlsx"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("give -o FILE.xlsx"), "{}", stderr(&out));
}

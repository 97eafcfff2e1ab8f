//! `--format xlsx -o FILE.xlsx`: a report's CSV tables as an Excel workbook (rust_xlsxwriter),
//! one sheet per table, for people who read a monthly review in Excel.
//!
//! Every cell is the CSV output's cell: the workbook is made from the CSV text itself, so the
//! two never disagree. Money is a numeric cell with a two-decimal format, followed by the
//! exact decimal as text in a column of its own (`… (exact)`: Excel numbers are binary
//! floats); counts, hours and shares are numbers; times are Excel date-times; everything
//! else is text, as it is (an Excel cell is never run as a formula). The header row is bold
//! and frozen, with an autofilter.

use std::path::Path;

use rust_decimal::Decimal;
use rust_xlsxwriter::{ExcelDateTime, Format, Workbook};

use crate::error::{CliError, usage};

/// The columns whose figures are money.
const MONEY: &[&str] = &[
    "billed_cost",
    "list_cost",
    "amount",
    "monthly_projection",
    "expected",
    "actual",
    "difference",
    "compute",
    "system_disk",
    "data_disk",
    "snapshot",
    "public_ip",
    "traffic",
    "other",
    "all_in",
    "per_gpu_hour_compute",
    "per_gpu_hour_all_in",
    "unmeasured",
    "hourly",
    "monthly",
    "weekly",
    "on_demand",
    "comparable",
    "priced_compute",
    "priced_system_disk",
    "priced_data_disk",
    "priced_snapshot",
    "priced_public_ip",
    "priced_traffic",
    "priced",
    "saving",
    "unpriced_actual",
];

/// The columns whose figures are other numbers (counts, hours, quantities, shares).
fn is_number(name: &str) -> bool {
    matches!(
        name,
        "charges"
            | "gpu_count"
            | "compute_hours"
            | "gpu_hours"
            | "hours_on"
            | "hours_off"
            | "hidden_share"
            | "monthly_hours"
            | "weekly_hours"
            | "hours"
    ) || name.ends_with("_on")
        || name.ends_with("_off")
}

/// The columns whose cells are instants (RFC 3339, UTC).
fn is_time(name: &str) -> bool {
    name.ends_with("period_start") || name.ends_with("period_end")
}

fn xlsx_error(path: &Path, e: rust_xlsxwriter::XlsxError) -> CliError {
    let source = std::io::Error::other(e.to_string());
    gpuaudit_core::Error::from(gpuaudit_core::ErrorKind::Io { path: path.to_owned(), source })
        .into()
}

/// Writes `sheets` (a name and a CSV text each) to `output` as a workbook.
pub fn write(output: Option<&Path>, sheets: &[(&str, String)]) -> Result<(), CliError> {
    let path = output.ok_or_else(|| usage("--format xlsx writes a file: give -o FILE.xlsx"))?;
    if !path.extension().is_some_and(|e| e.eq_ignore_ascii_case("xlsx")) {
        return Err(usage(format!("-o {}: name an .xlsx file", path.display())));
    }
    let mut book = Workbook::new();
    let bold = Format::new().set_bold();
    let money = Format::new().set_num_format("0.00");
    let time = Format::new().set_num_format("yyyy-mm-dd hh:mm:ss");
    for (name, text) in sheets {
        let sheet = book.add_worksheet();
        sheet.set_name(*name).map_err(|e| xlsx_error(path, e))?;
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> =
            r.headers().map_err(|e| usage(e.to_string()))?.iter().map(str::to_owned).collect();
        // The sheet's columns: each CSV column, and after each money column its exact text.
        let mut col = 0u16;
        for h in &header {
            sheet.write_with_format(0, col, h.as_str(), &bold).map_err(|e| xlsx_error(path, e))?;
            col += 1;
            if MONEY.contains(&h.as_str()) {
                sheet
                    .write_with_format(0, col, format!("{h} (exact)"), &bold)
                    .map_err(|e| xlsx_error(path, e))?;
                col += 1;
            }
        }
        let mut row = 0u32;
        for record in r.records() {
            let record = record.map_err(|e| usage(e.to_string()))?;
            row += 1;
            let mut col = 0u16;
            for (h, cell) in header.iter().zip(record.iter()) {
                let err = |e| xlsx_error(path, e);
                let width = if MONEY.contains(&h.as_str()) { 2 } else { 1 };
                if cell.is_empty() {
                    // An unknown figure is an empty cell, as in the CSV.
                    col += width;
                    continue;
                }
                let number =
                    cell.parse::<Decimal>().ok().and_then(|d| d.to_string().parse::<f64>().ok());
                if MONEY.contains(&h.as_str()) {
                    match number {
                        Some(n) => {
                            sheet.write_number_with_format(row, col, n, &money).map_err(err)?
                        }
                        None => sheet.write_string(row, col, cell).map_err(err)?,
                    };
                    sheet.write_string(row, col + 1, cell).map_err(err)?;
                    col += 2;
                    continue;
                }
                let at = is_time(h)
                    .then(|| ExcelDateTime::parse_from_str(cell.trim_end_matches('Z')).ok())
                    .flatten();
                match (number, at) {
                    (_, Some(t)) => {
                        sheet.write_datetime_with_format(row, col, &t, &time).map_err(err)?
                    }
                    (Some(n), None) if is_number(h) => {
                        sheet.write_number(row, col, n).map_err(err)?
                    }
                    _ => sheet.write_string(row, col, cell).map_err(err)?,
                };
                col += 1;
            }
        }
        sheet.set_freeze_panes(1, 0).map_err(|e| xlsx_error(path, e))?;
        if col > 0 {
            sheet.autofilter(0, 0, row, col.saturating_sub(1)).map_err(|e| xlsx_error(path, e))?;
        }
    }
    book.save(path).map_err(|e| xlsx_error(path, e))
}

//! Output: tables for people, CSV/JSON/Markdown for machines. Writes treat a closed pipe as
//! success (`gpuaudit summary | head` is not an error).

use std::io::Write;

use clap::ValueEnum;

/// The output formats of the reporting commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns for a terminal.
    Table,
    /// Comma-separated values with a header row.
    Csv,
    /// One JSON document.
    Json,
    /// A Markdown table.
    Md,
}

/// How a column is aligned in a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// Writes `text` to stdout; a closed pipe ends quietly.
pub fn emit(text: &str) -> Result<(), gpuaudit_core::Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(gpuaudit_core::ErrorKind::Io { path: "<stdout>".into(), source: e }.into()),
    }
}

/// Writes one line of warning to stderr.
#[allow(clippy::print_stderr)]
pub fn warn(line: &str) {
    eprintln!("{line}");
}

/// A text table with aligned columns.
pub fn table(header: &[&str], align: &[Align], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(display_width(cell));
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = widths[i].saturating_sub(display_width(cell));
            if i > 0 {
                s.push_str("  ");
            }
            if align[i] == Align::Right {
                s.push_str(&" ".repeat(pad));
                s.push_str(cell);
            } else {
                s.push_str(cell);
                if i + 1 < cells.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// Terminal width of a cell: CJK characters take two columns.
fn display_width(s: &str) -> usize {
    s.chars().map(|c| if (c as u32) >= 0x1100 { 2 } else { 1 }).sum()
}

/// A Markdown table.
pub fn markdown(header: &[&str], align: &[Align], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|", header.join(" | "));
    for a in align {
        out.push_str(if *a == Align::Right { " ---: |" } else { " --- |" });
    }
    out.push('\n');
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// CSV with a header row. Text cells that a spreadsheet would run as a formula are escaped
/// with a leading `'`; numbers are written as they are.
pub fn csv(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(header);
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| formula_safe(c)).collect();
        let _ = w.write_record(&cells);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

fn formula_safe(cell: &str) -> String {
    let numeric = cell.parse::<rust_decimal::Decimal>().is_ok();
    if !numeric && cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{cell}")
    } else {
        cell.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_escapes_formulas_but_not_negative_money() {
        let out = csv(&["a", "b"], &[vec!["=HYPERLINK(1)".into(), "-12.30".into()]]);
        assert_eq!(out, "a,b\n'=HYPERLINK(1),-12.30\n");
    }

    #[test]
    fn tables_right_align_numbers_and_count_cjk_as_two_columns() {
        let out = table(
            &["name", "n"],
            &[Align::Left, Align::Right],
            &[vec!["数据盘".into(), "1.00".into()], vec!["ab".into(), "10.00".into()]],
        );
        assert_eq!(out, "name        n\n数据盘   1.00\nab      10.00\n");
    }
}

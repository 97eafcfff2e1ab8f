//! Output: tables for people, CSV/JSON/Markdown for machines. Writes treat a closed pipe as
//! success (`gpuaudit summary | head` is not an error).

use std::borrow::Cow;
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
    /// An Excel workbook, written to `-o FILE.xlsx`.
    Xlsx,
}

/// How a column is aligned in a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// Money rounded to cents, half away from zero: what every report prints and compares.
pub fn to_cents(d: rust_decimal::Decimal) -> rust_decimal::Decimal {
    d.round_dp_with_strategy(2, rust_decimal::RoundingStrategy::MidpointAwayFromZero)
}

/// [`to_cents`] as printed.
pub fn cents(d: rust_decimal::Decimal) -> String {
    gpuaudit_core::report::money_text(to_cents(d))
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

/// Writes to stdout what `write` writes, buffered, as it is made (an output of millions of
/// lines is never held whole); a closed pipe ends quietly.
pub fn emit_with(
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), gpuaudit_core::Error> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match write(&mut out).and_then(|()| out.flush()) {
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
    let rows: Vec<Vec<std::borrow::Cow<'_, str>>> =
        rows.iter().map(|r| r.iter().map(|c| visible(c)).collect()).collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
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
    for row in &rows {
        out.push_str(&line(row.iter().map(|c| c.as_ref()).collect()));
    }
    out
}

/// Text from a bill, safe to show on a terminal: control characters (ESC sequences that
/// recolour or retitle a terminal, BEL, line breaks inside a cell) become their visible
/// pictures (`␛`, `␇`, `␊`), C1 controls and the bidirectional overrides that reorder what a
/// line shows are written as `\u{…}`.
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !text.contains(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\u{0}'..='\u{1f}' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?')),
            '\u{7f}' => out.push('\u{2421}'),
            c if unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Text from a bill as Markdown shows it, not as it would run: [`visible`], with the
/// characters that make tables, links, HTML and code escaped.
pub fn md_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in visible(text).chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '|' | '[' | ']' | '`' | '\\' | '*' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
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
        let cells: Vec<String> = row.iter().map(|c| md_text(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// CSV with a header row. Text cells that a spreadsheet would run as a formula are escaped
/// with a leading `'`; numbers are written as they are.
pub fn csv(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = Vec::new();
    let _ = csv_to(&mut out, header, rows.iter());
    String::from_utf8(out).unwrap_or_default()
}

/// [`csv()`] written to `out` a row at a time, each row made as it is written.
pub fn csv_to<R: AsRef<[String]>>(
    out: &mut dyn Write,
    header: &[&str],
    rows: impl Iterator<Item = R>,
) -> std::io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(header)?;
    for row in rows {
        csv_record(&mut w, row.as_ref())?;
    }
    w.flush()
}

/// Writes `row`, each cell made [`formula_safe`].
fn csv_record<W: Write>(w: &mut csv::Writer<W>, row: &[String]) -> std::io::Result<()> {
    w.write_record(row.iter().map(|c| match formula_safe(c) {
        Cow::Borrowed(c) => Cow::Borrowed(c.as_bytes()),
        Cow::Owned(c) => Cow::Owned(c.into_bytes()),
    }))
    .map_err(std::io::Error::from)
}

/// `row` onto `out` as [`csv_record`] writes it (cells made [`formula_safe`], joined by
/// commas, a cell quoted when it holds a comma, a quote or a line break, its quotes doubled;
/// a row of one empty cell as `""`; then `\n`), the same bytes (a test holds them so),
/// each cell searched for what needs quoting a vector of bytes at a time instead of byte by
/// byte: a finding's cell of bill-line ids may be megabytes.
fn push_record(out: &mut Vec<u8>, row: &[String]) {
    if row.iter().all(String::is_empty) && row.len() <= 1 {
        out.extend_from_slice(b"\"\"\n");
        return;
    }
    for (i, cell) in row.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let cell = formula_safe(cell);
        let bytes = cell.as_bytes();
        if memchr::memchr3(b',', b'"', b'\n', bytes).is_none()
            && memchr::memchr(b'\r', bytes).is_none()
        {
            out.extend_from_slice(bytes);
            continue;
        }
        out.push(b'"');
        for (k, piece) in bytes.split(|&b| b == b'"').enumerate() {
            if k > 0 {
                out.extend_from_slice(b"\"\"");
            }
            out.extend_from_slice(piece);
        }
        out.push(b'"');
    }
    out.push(b'\n');
}

/// About how many bytes of CSV text [`csv_par_to`] makes at a time on each thread (five
/// parts at most are held at once).
const CSV_PART: usize = 1 << 20;

/// [`csv_to`] of the rows `row` makes of `items` (the same bytes), made into CSV text a part
/// at a time on two threads while this one writes the parts before, in order: a month's
/// findings may list millions of bill lines, whose cells are most of the time of writing
/// them. `size` tells about how many bytes an item's row takes, to cut the items into parts
/// of about [`CSV_PART`] each (each thread is at most two parts ahead of the writing).
pub fn csv_par_to<T: Sync>(
    out: &mut dyn Write,
    header: &[&str],
    items: &[T],
    size: impl Fn(&T) -> usize,
    row: impl Fn(&T) -> Vec<String> + Sync,
) -> std::io::Result<()> {
    // Each part with the bytes `size` tells it takes: its text is made into room for them
    // (grown from nothing, the text of a part was copied about twice over as it grew); a
    // part told more than 64 parts' worth grows past that as it needs.
    let mut parts = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        bytes = size(item).saturating_add(bytes);
        if bytes >= CSV_PART || i + 1 == items.len() {
            parts.push((start..i + 1, bytes));
            (start, bytes) = (i + 1, 0);
        }
    }
    let text = |(part, bytes): &(std::ops::Range<usize>, usize)| -> std::io::Result<Vec<u8>> {
        let room = bytes.saturating_add(bytes / 8).min(64 * CSV_PART);
        let mut out = Vec::with_capacity(room);
        for item in &items[part.clone()] {
            push_record(&mut out, &row(item));
        }
        Ok(out)
    };
    csv_to(out, header, std::iter::empty::<Vec<String>>())?;
    const THREADS: usize = 2;
    std::thread::scope(|scope| {
        // Part i is made by thread i % THREADS, and handed over through its own channel.
        let made: Vec<_> = (0..THREADS)
            .map(|k| {
                let (tx, rx) = std::sync::mpsc::sync_channel(1);
                let (parts, text) = (&parts, &text);
                scope.spawn(move || {
                    for part in parts.iter().skip(k).step_by(THREADS) {
                        // The writer has stopped at an error: nothing more is wanted.
                        if tx.send(text(part)).is_err() {
                            return;
                        }
                    }
                });
                rx
            })
            .collect();
        for i in 0..parts.len() {
            let part = made[i % THREADS].recv().map_err(std::io::Error::other)??;
            out.write_all(&part)?;
        }
        out.flush()
    })
}

/// `cell`, quoted with a `'` if a spreadsheet would take it for a formula (and it is not a
/// number, such as `-12.30`). Borrowed otherwise: a finding's cell of bill-line ids may be
/// megabytes.
fn formula_safe(cell: &str) -> Cow<'_, str> {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r'])
        && cell.parse::<rust_decimal::Decimal>().is_err()
    {
        format!("'{cell}").into()
    } else {
        cell.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows made on two threads, a part at a time, are the bytes one writer makes of them:
    /// across parts, with quoting, formulas and a row larger than a part.
    #[test]
    fn csv_made_in_parts_on_two_threads_is_csv_made_at_once() {
        let rows: Vec<Vec<String>> = (0..3_000)
            .map(|i: usize| {
                let cell = match i % 4 {
                    0 => "=SUM(A1)".to_owned(),
                    1 => format!("a \"quoted\", {i}"),
                    2 => "x;".repeat(if i == 2 { 3 << 20 } else { 1 + i % 900 }),
                    _ => "-12.30".to_owned(),
                };
                vec![i.to_string(), cell, "line\nbreak".to_owned()]
            })
            .collect();
        let at_once = csv(&["n", "cell", "text"], &rows);
        let size = |r: &Vec<String>| r.iter().map(String::len).sum::<usize>();
        for items in [&rows[..], &rows[..1], &rows[..0]] {
            let mut parts = Vec::new();
            csv_par_to(&mut parts, &["n", "cell", "text"], items, size, Clone::clone).unwrap();
            let once = csv(&["n", "cell", "text"], items);
            assert_eq!(String::from_utf8(parts).unwrap(), once);
        }
        assert!(at_once.len() > CSV_PART, "{} bytes: more than one part", at_once.len());
        // A writer that fails (a full disk, a closed pipe) stops the threads making parts:
        // the error comes back, nothing hangs.
        struct Full(usize);
        impl Write for Full {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                if self.0 < buf.len() {
                    return Err(std::io::Error::other("full"));
                }
                self.0 -= buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let err = csv_par_to(&mut Full(CSV_PART), &["n"], &rows, size, Clone::clone).unwrap_err();
        assert_eq!(err.to_string(), "full");
    }

    /// A row pushed by hand is the bytes csv's writer makes of it, whatever its cells hold.
    #[test]
    fn a_row_pushed_by_hand_is_the_row_csv_writes() {
        let pieces =
            ["", "a", ",", "\"", "\n", "\r", "\r\n", " ", "=1+1", "-12.30", "é漢", "#", "\t", ";"];
        let mut next = 0x2545_f491_4f6c_dd1d_u64;
        let mut rows: Vec<Vec<String>> = vec![vec![], vec![String::new()], vec![String::new(); 2]];
        for _ in 0..3_000 {
            let mut draw = || {
                next ^= next << 13;
                next ^= next >> 7;
                next ^= next << 17;
                next as usize
            };
            let cells = draw() % 5;
            let row = (0..cells)
                .map(|_| (0..draw() % 4).map(|_| pieces[draw() % pieces.len()]).collect())
                .collect();
            rows.push(row);
        }
        for row in &rows {
            let mut by_hand = Vec::new();
            push_record(&mut by_hand, row);
            let mut w = csv::WriterBuilder::new().flexible(true).from_writer(Vec::new());
            csv_record(&mut w, row).unwrap();
            let by_csv = w.into_inner().unwrap();
            assert_eq!(
                String::from_utf8(by_hand).unwrap(),
                String::from_utf8(by_csv).unwrap(),
                "{row:?}"
            );
        }
    }

    #[test]
    fn csv_escapes_formulas_but_not_negative_money() {
        let out = csv(&["a", "b"], &[vec!["=HYPERLINK(1)".into(), "-12.30".into()]]);
        assert_eq!(out, "a,b\n'=HYPERLINK(1),-12.30\n");
    }

    #[test]
    fn bill_text_reaches_a_terminal_or_a_document_visibly_and_inert() {
        let hostile = "i-1\u{1b}]0;pwned\u{7}\u{1b}[31m\nsecond line\u{202e}";
        assert_eq!(visible(hostile), "i-1␛]0;pwned␇␛[31m␊second line\\u{202e}");
        let out = table(&["id"], &[Align::Left], &[vec![hostile.into()]]);
        assert!(!out.contains('\u{1b}') && out.lines().count() == 2, "{out:?}");
        let md =
            markdown(&["id"], &[Align::Left], &[vec!["<script>alert(1)</script>|x\ny".into()]]);
        assert_eq!(md, "| id |\n| --- |\n| &lt;script&gt;alert(1)&lt;/script&gt;\\|x␊y |\n");
        assert_eq!(md_text("[click](javascript:x) `a`"), "\\[click\\](javascript:x) \\`a\\`");
        assert_eq!(visible("数据盘 plain"), "数据盘 plain");
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

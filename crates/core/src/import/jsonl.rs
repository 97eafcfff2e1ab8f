//! JSON lines bills: Google Cloud's billing export as BigQuery writes it (`bq extract
//! --destination_format NEWLINE_DELIMITED_JSON`, plain or gzip-compressed), read as the CSV
//! text of the same records, so that a profile (`gcp.toml`) reads it as any bill.
//!
//! Decisions:
//! - A file whose first byte (after a byte-order mark and white space) is `{` is JSON lines:
//!   one object a line; blank lines are skipped.
//! - A record's nested objects are columns named by their path (`service.description`,
//!   `usage.amount_in_pricing_units`, `invoice.month`). An array of `{key, value}` objects
//!   (`labels`, `system_labels`, `project.labels`, `tags`) gives a column a key
//!   (`labels.team`, `system_labels.compute.googleapis.com/machine_spec`); any other array is
//!   kept as its JSON text.
//! - `credits`: each credit is a row of its own, right after its record's row: the record's
//!   cells, with `cost` the credit's amount, no `cost_at_list`, `usage.*` or `price.*` (a
//!   credit uses nothing), and its own fields as `credits.name`, `credits.amount`,
//!   `credits.type`, `credits.id`, `credits.full_name` (empty on the record's own row). So a
//!   credit is a charge of its own (kind `credit`) and a month nets out as the invoice does.
//! - Values are kept as the file writes them: numbers as their text (exact: `0.93364999999987552`
//!   stays that), strings unescaped, `true`/`false`; null or absent is an empty cell.
//! - The columns are the union of every record's, sorted by name: the file is read twice (a
//!   file, plain or compressed; not standard input). Its digest is of its (decompressed)
//!   bytes, as a CSV bill's.
//! - Locations name the JSON line (`bill.json:7: column cost: …`); a credit's row is at its
//!   record's line, and so is its evidence.
//! - Bounds: a line of at most [`MAX_RECORD_BYTES`], at most [`MAX_COLUMNS`] columns, objects
//!   nested at most [`MAX_DEPTH`] deep. Beyond them, or for a line that is not a JSON object,
//!   the import stops with `file:line: what was wrong`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use super::split::MAX_RECORD_BYTES;
use crate::error::{Error, ErrorKind, Location, Result};

/// The most columns a JSON lines bill may have (its records' fields and label keys together).
pub(crate) const MAX_COLUMNS: usize = 4096;
/// The deepest nesting of objects read.
pub(crate) const MAX_DEPTH: usize = 16;
/// The fields of a credit, as columns.
const CREDIT_FIELDS: [&str; 5] = ["amount", "full_name", "id", "name", "type"];

/// Whether a file starting with `head` is JSON lines.
pub(crate) fn is_json_lines(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// Where each line of the CSV text made of a JSON lines bill was read (see [`LineMap::line`]).
#[derive(Debug, Default)]
pub(crate) struct LineMap {
    /// From a CSV line on (ascending): its JSON line, fixed (a credit's rows) or counted on.
    marks: Mutex<Vec<(u64, Mark)>>,
}

#[derive(Debug, Clone, Copy)]
enum Mark {
    /// JSON line = CSV line − n.
    Behind(u64),
    /// Every CSV line from here is of this JSON line (until the next mark).
    At(u64),
}

impl LineMap {
    /// The JSON line of CSV line `line` (the header is CSV line 1, JSON line 1 is CSV line 2).
    pub(crate) fn line(&self, line: u64) -> u64 {
        let marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        let at = marks.partition_point(|(from, _)| *from <= line);
        match at.checked_sub(1).map(|i| marks[i].1) {
            None => line.saturating_sub(1),
            Some(Mark::Behind(n)) => line.saturating_sub(n),
            Some(Mark::At(json)) => json,
        }
    }

    fn mark(&self, from: u64, mark: Mark) {
        self.marks.lock().unwrap_or_else(|e| e.into_inner()).push((from, mark));
    }
}

/// One record flattened: its cells by column, and its credits' cells.
#[derive(Debug)]
struct Flat {
    cells: BTreeMap<String, String>,
    credits: Vec<BTreeMap<String, String>>,
}

/// A bill as CSV text, and where each of its lines was read when they are not the file's.
pub(crate) type Text = (Box<dyn Read + Send>, Option<Arc<LineMap>>);

/// A JSON lines bill as CSV text, the digest of its bytes and their size, and where each CSV
/// line was read.
pub(crate) type Jsonl = (Box<dyn Read + Send>, Sha256, u64, Arc<LineMap>);

/// The JSON lines bill at `path` as CSV text; `open` opens its (decompressed) bytes, and is
/// called twice.
pub(crate) fn jsonl_as_csv(
    path: &Path,
    open: &dyn Fn() -> Result<Box<dyn Read + Send>>,
) -> Result<Jsonl> {
    let mut hasher = Sha256::new();
    let mut columns = BTreeSet::new();
    let mut bytes = 0u64;
    let mut reader = BufReader::new(open()?);
    let mut line = Vec::new();
    let mut number = 0u64;
    while next_line(path, &mut reader, &mut line, &mut number)? {
        bytes += line.len() as u64;
        hasher.update(&line);
        let Some(flat) = flat_line(path, number, &line)? else { continue };
        columns.extend(flat.cells.into_keys());
        if !flat.credits.is_empty() {
            columns.extend(CREDIT_FIELDS.iter().map(|f| format!("credits.{f}")));
        }
        if columns.len() > MAX_COLUMNS {
            let message = format!("more than {MAX_COLUMNS} columns (fields and label keys)");
            return Err(malformed(path, number, message));
        }
    }
    let header: Vec<String> = columns.into_iter().collect();
    let mut out = Vec::new();
    write_row(&mut out, header.iter().map(String::as_str));
    let map = Arc::new(LineMap::default());
    let text = JsonlCsv {
        path: path.to_owned(),
        reader: BufReader::new(open()?),
        header,
        line: Vec::new(),
        number: 0,
        csv_line: 1,
        out,
        at: 0,
        map: Arc::clone(&map),
    };
    Ok((Box::new(text), hasher, bytes, map))
}

fn malformed(path: &Path, line: u64, message: String) -> Error {
    ErrorKind::Malformed { location: Location::line(path, line), message }.into()
}

/// Reads the next line (with its line break) into `line`; false at the end.
fn next_line(
    path: &Path,
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    number: &mut u64,
) -> Result<bool> {
    line.clear();
    let limit = MAX_RECORD_BYTES as u64 + 1;
    let n = reader.take(limit).read_until(b'\n', line).map_err(|e| Error::io(path, e))?;
    if n == 0 {
        return Ok(false);
    }
    *number += 1;
    if line.len() as u64 >= limit && line.last() != Some(&b'\n') {
        let message = format!("a line of more than {MAX_RECORD_BYTES} bytes");
        return Err(malformed(path, *number, message));
    }
    Ok(true)
}

/// The record on line `number`, flattened; `None` for a blank line.
fn flat_line(path: &Path, number: u64, line: &[u8]) -> Result<Option<Flat>> {
    let text = std::str::from_utf8(line)
        .map_err(|e| malformed(path, number, format!("not UTF-8 (byte {})", e.valid_up_to())))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text).trim();
    if text.is_empty() {
        return Ok(None);
    }
    if !text.starts_with('{') {
        return Err(malformed(path, number, "not a JSON object".into()));
    }
    let mut flat = Flat { cells: BTreeMap::new(), credits: Vec::new() };
    flatten("", raw(text).map_err(|e| malformed(path, number, e))?, &mut flat, 0)
        .map_err(|e| malformed(path, number, e))?;
    Ok(Some(flat))
}

fn raw(text: &str) -> std::result::Result<&RawValue, String> {
    serde_json::from_str::<&RawValue>(text).map_err(|e| format!("not JSON: {e}"))
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() { key.to_owned() } else { format!("{prefix}.{key}") }
}

/// Adds the cells of `value`, at the path `prefix`, to `flat` (see the module docs).
fn flatten(
    prefix: &str,
    value: &RawValue,
    flat: &mut Flat,
    depth: usize,
) -> std::result::Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("{prefix}: objects nested more than {MAX_DEPTH} deep"));
    }
    let text = value.get();
    match text.as_bytes().first() {
        Some(b'{') => {
            let fields: BTreeMap<String, &RawValue> =
                serde_json::from_str(text).map_err(|e| format!("{prefix}: {e}"))?;
            for (key, value) in fields {
                flatten(&join(prefix, &key), value, flat, depth + 1)?;
            }
        }
        Some(b'[') if prefix == "credits" => {
            let credits: Vec<BTreeMap<String, &RawValue>> =
                serde_json::from_str(text).map_err(|e| format!("credits: {e}"))?;
            for credit in credits {
                let mut cells = BTreeMap::new();
                for (key, value) in credit {
                    if let Some(cell) = scalar(value)? {
                        cells.insert(join("credits", &key), cell);
                    }
                }
                flat.credits.push(cells);
            }
        }
        Some(b'[') => match key_values(text) {
            Some(pairs) => {
                for (key, value) in pairs {
                    if let Some(cell) = value.map(scalar).transpose()?.flatten() {
                        flat.cells.insert(join(prefix, &key), cell);
                    }
                }
            }
            None if text == "[]" => {}
            None => {
                flat.cells.insert(prefix.to_owned(), text.to_owned());
            }
        },
        _ => {
            if let Some(cell) = scalar(value)? {
                flat.cells.insert(prefix.to_owned(), cell);
            }
        }
    }
    Ok(())
}

/// An array of `{key, value}` objects as its pairs; `None` when it is something else.
fn key_values(text: &str) -> Option<Vec<(String, Option<&RawValue>)>> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Pair<'a> {
        key: String,
        #[serde(borrow)]
        value: Option<&'a RawValue>,
        #[serde(default, rename = "inherited")]
        _inherited: Option<bool>,
        #[serde(default, rename = "namespace")]
        _namespace: Option<String>,
    }
    let pairs: Vec<Pair<'_>> = serde_json::from_str(text).ok()?;
    (!pairs.is_empty()).then(|| pairs.into_iter().map(|p| (p.key, p.value)).collect())
}

/// A scalar's cell: a string unescaped, a number as its shortest exact decimal text, a boolean
/// as written, null as none; an object or array as its JSON text.
fn scalar(value: &RawValue) -> std::result::Result<Option<String>, String> {
    let text = value.get();
    Ok(match text.as_bytes().first() {
        Some(b'"') => Some(serde_json::from_str::<String>(text).map_err(|e| e.to_string())?),
        Some(b'n') => None,
        Some(b'-' | b'0'..=b'9') => Some(number(text)),
        _ => Some(text.to_owned()),
    })
}

/// A JSON number as its shortest exact decimal text (`1.9327352832E14` and `193273528320000.0`
/// are `193273528320000`), the text a Parquet export of the same value gives, so that a row
/// reads alike from either; a number past 28 significant digits is kept as written.
fn number(text: &str) -> String {
    let exact = match text.contains(['e', 'E']) {
        true => rust_decimal::Decimal::from_scientific(text).ok(),
        false => rust_decimal::Decimal::from_str_exact(text).ok(),
    };
    exact.map_or_else(|| text.to_owned(), |d| d.normalize().to_string())
}

/// The CSV text of a JSON lines bill, made a line at a time as it is read (second reading).
struct JsonlCsv {
    path: std::path::PathBuf,
    reader: BufReader<Box<dyn Read + Send>>,
    header: Vec<String>,
    line: Vec<u8>,
    /// JSON lines read.
    number: u64,
    /// CSV lines written.
    csv_line: u64,
    out: Vec<u8>,
    at: usize,
    map: Arc<LineMap>,
}

impl Read for JsonlCsv {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.out.len() {
            self.out.clear();
            self.at = 0;
            let more = next_line(&self.path, &mut self.reader, &mut self.line, &mut self.number)
                .map_err(io::Error::other)?;
            if !more {
                break;
            }
            self.rows().map_err(io::Error::other)?;
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl JsonlCsv {
    /// The rows of the line just read: its record's and its credits' (a blank line stays a
    /// blank line, so that lines keep their numbers).
    fn rows(&mut self) -> Result<()> {
        let Some(mut flat) = flat_line(&self.path, self.number, &self.line)? else {
            self.out.push(b'\n');
            self.csv_line += 1;
            return Ok(());
        };
        let (out, header) = (&mut self.out, &self.header);
        let cells_of = |cells: &BTreeMap<String, String>, out: &mut Vec<u8>| {
            write_row(out, header.iter().map(|n| cells.get(n).map_or("", String::as_str)));
        };
        cells_of(&flat.cells, out);
        self.csv_line += 1;
        if flat.credits.is_empty() {
            return Ok(());
        }
        let record = self.number;
        self.map.mark(self.csv_line + 1, Mark::At(record));
        let cost = |name: &str| name.starts_with("usage.") || name.starts_with("price.");
        flat.cells.retain(|name, _| !cost(name) && name != "cost_at_list");
        for credit in std::mem::take(&mut flat.credits) {
            let mut cells = flat.cells.clone();
            cells.insert("cost".into(), credit.get("credits.amount").cloned().unwrap_or_default());
            cells.extend(credit);
            cells_of(&cells, out);
            self.csv_line += 1;
        }
        self.map.mark(self.csv_line + 1, Mark::Behind(self.csv_line + 1 - (record + 1)));
        Ok(())
    }
}

/// Appends one CSV line: cells quoted when they hold a delimiter, a quote or a line break.
pub(crate) fn write_row<'a>(out: &mut Vec<u8>, cells: impl Iterator<Item = &'a str>) {
    for (i, cell) in cells.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if cell.contains([',', '"', '\n', '\r']) {
            out.push(b'"');
            out.extend_from_slice(cell.replace('"', "\"\"").as_bytes());
            out.push(b'"');
        } else {
            out.extend_from_slice(cell.as_bytes());
        }
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_flattens_to_paths_labels_to_keys_and_credits_apart() {
        let line = br#"{"cost":0.012434,"service":{"description":"Compute Engine"},"labels":[{"key":"team","value":"ml"}],"credits":[{"name":"Free tier","amount":-0.01}],"x":null,"tags":[]}"#;
        let flat = flat_line(Path::new("b.json"), 1, line).unwrap().unwrap();
        let cells: Vec<(&str, &str)> =
            flat.cells.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let want = [
            ("cost", "0.012434"),
            ("labels.team", "ml"),
            ("service.description", "Compute Engine"),
        ];
        assert_eq!(cells, want);
        assert_eq!(flat.credits.len(), 1);
        assert_eq!(flat.credits[0]["credits.amount"], "-0.01");
        assert!(is_json_lines(b"\xef\xbb\xbf \n{\"a\":1}"));
        assert_eq!(number("1.9327352832E14"), "193273528320000");
        assert_eq!(number("193273528320000.0"), "193273528320000");
        assert_eq!(number("0.93364999999987552"), "0.93364999999987552");
        assert_eq!(number("1e-7"), "0.0000001");
        let long = "0.12345678901234567890123456789012";
        assert_eq!(number(long), long, "past a decimal's digits: kept as written");
        assert!(!is_json_lines(b"a,b\n"));
    }

    #[test]
    fn a_credit_row_is_at_its_record_line() {
        let map = LineMap::default();
        // JSON line 1 at CSV line 2 with two credits (CSV 3, 4); JSON line 2 at CSV line 5.
        map.mark(3, Mark::At(1));
        map.mark(5, Mark::Behind(3));
        let lines: Vec<u64> = (2..=6).map(|l| map.line(l)).collect();
        assert_eq!(lines, [1, 1, 1, 2, 3]);
    }

    #[test]
    fn what_is_not_a_record_is_refused_at_its_line() {
        let bad = |line: &[u8]| flat_line(Path::new("b.json"), 7, line).unwrap_err().to_string();
        assert!(bad(b"[1,2]").starts_with("b.json:7: not a JSON object"), "{}", bad(b"[1]"));
        assert!(bad(b"{\"a\":").contains("b.json:7: not JSON"));
        let deep = format!("{}1{}", "{\"a\":".repeat(40), "}".repeat(40));
        assert!(bad(deep.as_bytes()).contains("nested more than 16 deep"));
        assert!(flat_line(Path::new("b.json"), 7, b"  \n").unwrap().is_none());
    }
}

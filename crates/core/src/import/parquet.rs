//! Parquet exports as bills (AWS Data Exports, FOCUS): read a slice of rows at a time and
//! handed to the profiles as the CSV the same export would be, so that the same profiles,
//! checks and identities apply.
//!
//! Decisions:
//! - Columns are found by name, as in CSV; each cell is written as the text a CSV export of the
//!   same data holds, from the Parquet type, without loss: decimals exactly (normalised:
//!   `3.670000000000` is `3.67`), integers as integers, doubles as their shortest round-trip
//!   text, timestamps with a zone as RFC 3339 in UTC (`2024-05-01T00:00:00Z`, as FOCUS writes
//!   them; fractions of a second when there are some), timestamps without a zone and dates as
//!   `YYYY-MM-DD HH:MM:SS` and `YYYY-MM-DD` (read in the profile's zone). So an export read as
//!   Parquet gives the charges, and the ids, it gives as CSV. Nested values (tags maps) are
//!   written as polars shows them; profiles do not read them.
//! - Only the columns the profile reads are decoded, when that gives the same charges: the
//!   profile is chosen from the schema's names first, and where it has a native id (AWS
//!   CUR's `identity/LineItemId`) every other column is left out (written as an empty cell).
//!   A slice of rows of which one has no native id is decoded again whole, since such a row's
//!   id hashes its unread cells. A profile without a native id (FOCUS) reads every column.
//!   So a 124-column CUR decodes a quarter of its columns. (Such a row's unread cells are
//!   hashed as the text made of them: where the CSV form writes a cell otherwise, a time as
//!   `…T00:00:00.000Z` or a cost as `0.0`, the two forms of a row without a native id are two
//!   charges; rows with one, as every CUR row, are one.)
//! - Bounded memory: [`ROWS_AT_ONCE`] rows are decoded at a time. Errors name the row,
//!   counted from 1: `bill.parquet: row 12345: column BilledCost: …`, and so do the
//!   evidence lines of `waste --explain` and `reconcile` ([`crate::error::place`]).
//! - A file with nested columns (structs, lists: Google Cloud's export as Parquet) is made the
//!   JSON lines of its rows and read by `jsonl` (its credits rows of their own), the names of
//!   a struct's fields dotted (`service.description`); it reads to the charges and ids of the
//!   same export as JSON lines. Its rows are decoded whole (no projection), row by row for
//!   lists, which is slower than a flat bill.
//! - The file's digest is of its own bytes (as a spreadsheet's), not of the text made of it.
//! - A Parquet bill has no footer rows: a row whose first cell reads `Total` is data.
//! - A Parquet bill is read from a file (its footer is at its end): not from standard input,
//!   an archive or a gzip stream.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate};
use polars::prelude::*;
use rust_decimal::Decimal;

use super::jsonl::Text;
use crate::error::{Error, ErrorKind, Result};

/// Rows decoded at a time.
pub(crate) const ROWS_AT_ONCE: usize = 4_096;

fn parquet_error(path: &Path, source: PolarsError) -> Error {
    ErrorKind::Parquet { path: path.to_owned(), source }.into()
}

/// The columns of a Parquet bill to decode, by their place in its schema.
pub(crate) struct Wanted {
    /// The columns to decode, in schema order.
    pub(crate) read: Vec<usize>,
    /// The columns of the native id (a row where all are empty needs every column).
    pub(crate) native: Vec<usize>,
}

/// The Parquet bill at `path` as CSV text, a slice of rows at a time; `want` is given the
/// schema's names and says which columns to decode (`None`: all).
pub(crate) fn parquet_as_csv(
    path: &Path,
    want: &dyn Fn(&[String]) -> Option<Wanted>,
) -> Result<Text> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let read = crate::error::catch(|| -> PolarsResult<(Footer, Vec<String>, bool)> {
        let mut reader = ParquetReader::new(file);
        let footer = reader.get_metadata()?.clone();
        let schema = reader.schema()?;
        let names = schema.iter_names().map(|n| n.to_string()).collect();
        let nested = schema.iter_values().any(|f| {
            use polars_arrow::datatypes::ArrowDataType as D;
            matches!(f.dtype(), D::Struct(_) | D::List(_) | D::LargeList(_))
        });
        Ok((footer, names, nested))
    });
    let (footer, names, nested) = match read {
        Ok(read) => read.map_err(|e| parquet_error(path, e))?,
        Err(panic) => {
            return Err(ErrorKind::Delivery { path: path.to_owned(), message: panic }.into());
        }
    };
    check_pages(path, &footer)?;
    if nested {
        let open = || -> Result<Box<dyn Read + Send>> {
            Ok(Box::new(ParquetJson::new(path, footer.clone())))
        };
        let (text, _, _, lines) = super::jsonl::jsonl_as_csv(path, &open)?;
        return Ok((text, Some(lines)));
    }
    let wanted = want(&names).filter(|w| w.read.len() < names.len());
    let mut out = Vec::new();
    write_row(&mut out, names.iter().map(|n| Some(n.as_str())));
    let (path, width) = (path.to_owned(), names.len());
    Ok((Box::new(ParquetCsv { path, footer, next: 0, out, at: 0, wanted, width }), None))
}

/// A Parquet file's footer, read once and shared by the readers of its slices.
type Footer = std::sync::Arc<polars_parquet::parquet::metadata::FileMetadata>;

/// Refuses a Parquet file whose page headers claim more values than their column chunk holds,
/// or pages larger than the file. polars' decoder reserves memory for a page's claimed values
/// before it reads them, and an allocation that fails aborts the process, which no guard can
/// turn into an error (the fuzz harness found a damaged header claiming 2^61 bytes' worth).
/// Only the headers are read (a few bytes a page, seeking past each page's data).
fn check_pages(path: &Path, meta: &Footer) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    let bad = |message: String| -> Error {
        ErrorKind::Delivery { path: path.to_owned(), message }.into()
    };
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    for group in &meta.row_groups {
        for column in group.parquet_columns() {
            let total = u64::try_from(column.num_values()).unwrap_or(0);
            let range = column.byte_range();
            if range.end > size {
                return Err(bad(format!(
                    "a column chunk ends at byte {}, past the file's end",
                    range.end
                )));
            }
            file.seek(SeekFrom::Start(range.start)).map_err(|e| Error::io(path, e))?;
            let bound = size.saturating_mul(1000).max(1 << 30);
            match pages_claim(&mut file, total, size, bound) {
                Claims::Fit | Claims::Unreadable => {}
                Claims::Impossible(message) => return Err(bad(message)),
            }
        }
    }
    Ok(())
}

/// What the page headers of a column chunk claim ([`pages_claim`]).
pub(crate) enum Claims {
    /// No more values than the chunk holds, no page larger than the bounds.
    Fit,
    /// A header that cannot be read (the decoder that follows names what it cannot read).
    Unreadable,
    /// A claim no file of this size can hold, said.
    Impossible(String),
}

/// Reads from `pages` (at a column chunk's first page) the headers of the pages that hold its
/// `total` values, seeking past each page's data: each must claim no more values than are
/// left, a page of at most `size` bytes (the bytes the chunk lives in) and at most `unpacked`
/// bytes decompressed. polars' decoder makes room for a page's claims before it reads it.
pub(crate) fn pages_claim<R: Read + std::io::Seek>(
    pages: &mut R,
    total: u64,
    size: u64,
    unpacked: u64,
) -> Claims {
    use polars_parquet_format::thrift::protocol::TCompactInputProtocol;
    let mut seen = 0u64;
    while seen < total {
        let mut protocol = TCompactInputProtocol::new(&mut *pages, 1 << 20);
        let Ok(header) = polars_parquet_format::PageHeader::read_from_in_protocol(&mut protocol)
        else {
            return Claims::Unreadable;
        };
        let values = header
            .data_page_header
            .as_ref()
            .map(|h| h.num_values)
            .or(header.data_page_header_v2.as_ref().map(|h| h.num_values))
            .unwrap_or(0);
        let Ok(values) = u64::try_from(values) else {
            return Claims::Impossible(format!("a page claims {values} values"));
        };
        if values > total - seen {
            return Claims::Impossible(format!(
                "a page claims {values} values where its column chunk has {} left: the file is damaged",
                total - seen
            ));
        }
        let (page, inflated) = (header.compressed_page_size, header.uncompressed_page_size);
        let (Ok(page), Ok(bytes)) = (u64::try_from(page), u64::try_from(inflated)) else {
            return Claims::Impossible(format!(
                "a page claims {page} bytes, {inflated} decompressed"
            ));
        };
        if page > size || bytes > unpacked {
            return Claims::Impossible(format!("a page claims {bytes} bytes in a file of {size}"));
        }
        if pages.seek(std::io::SeekFrom::Current(page as i64)).is_err() {
            return Claims::Unreadable;
        }
        seen += values;
    }
    Claims::Fit
}

/// CSV text of a Parquet file, made a slice of rows at a time as it is read.
struct ParquetCsv {
    path: PathBuf,
    footer: Footer,
    next: usize,
    out: Vec<u8>,
    at: usize,
    wanted: Option<Wanted>,
    /// The schema's columns.
    width: usize,
}

impl Read for ParquetCsv {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.out.len() && self.next < self.footer.num_rows {
            self.out.clear();
            self.at = 0;
            let take = ROWS_AT_ONCE.min(self.footer.num_rows - self.next);
            self.slice(self.next, take).map_err(io::Error::other)?;
            self.next += take;
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl ParquetCsv {
    /// Rows `from..from + take` as CSV lines into `out`: the wanted columns, or all of them
    /// when a row lacks its native id (see the module docs).
    fn slice(&mut self, from: usize, take: usize) -> std::result::Result<(), String> {
        let mut columns = self.decode(from, take, self.wanted.as_ref().map(|w| &w.read[..]))?;
        let lacks_id = |columns: &[Option<Texts>], native: &[usize], row: usize| {
            native.iter().all(|&i| {
                let cell = columns.get(i).and_then(|c| c.as_ref()).and_then(|c| c.get(row));
                cell.is_none_or(|text| text.trim().is_empty())
            })
        };
        if let Some(w) = &self.wanted
            && (0..take).any(|row| lacks_id(&columns, &w.native, row))
        {
            columns = self.decode(from, take, None)?;
        }
        let height = columns.iter().flatten().map(|c| c.cells.len()).max().unwrap_or(0);
        for row in 0..height {
            write_row(&mut self.out, columns.iter().map(|c| c.as_ref().and_then(|c| c.get(row))));
        }
        Ok(())
    }

    /// The texts of rows `from..from + take` of the columns `only` (all when `None`), by
    /// their place in the schema (`None` for a column not decoded).
    fn decode(
        &self,
        from: usize,
        take: usize,
        only: Option<&[usize]>,
    ) -> std::result::Result<Vec<Option<Texts>>, String> {
        let fail = |e: PolarsError| format!("parquet: {e}");
        let file = std::fs::File::open(&self.path).map_err(|e| e.to_string())?;
        let decoded = crate::error::catch(|| -> PolarsResult<_> {
            let mut reader = ParquetReader::new(file)
                .read_parallel(ParallelStrategy::None)
                .with_slice(Some((from, take)));
            reader.set_metadata(self.footer.clone());
            let frame = reader.with_projection(only.map(<[usize]>::to_vec)).finish()?;
            frame
                .columns()
                .iter()
                .map(|c| cells(c.as_materialized_series()))
                .collect::<PolarsResult<Vec<Texts>>>()
        });
        let decoded = decoded?.map_err(fail)?;
        let places: Vec<usize> = match only {
            Some(only) => only.to_vec(),
            None => (0..self.width).collect(),
        };
        if places.len() != decoded.len() {
            return Err(format!("parquet: {} columns decoded of {}", decoded.len(), places.len()));
        }
        let mut columns: Vec<Option<Texts>> = (0..self.width).map(|_| None).collect();
        for (place, texts) in places.into_iter().zip(decoded) {
            if let Some(column) = columns.get_mut(place) {
                *column = Some(texts);
            }
        }
        Ok(columns)
    }
}

/// A Parquet bill with nested columns (Google Cloud's export: `service`, `labels`, `credits`)
/// as the JSON lines of its rows, for `jsonl` to read as it reads BigQuery's JSON export: a
/// struct's fields as dotted names, a list as a JSON array, every value as the text a flat
/// Parquet bill's cell would be. Line 1 is blank, so that row N is line N + 1 (as in the CSV
/// text of a flat Parquet bill: errors and evidence say `row N`).
struct ParquetJson {
    path: PathBuf,
    footer: Footer,
    next: usize,
    out: Vec<u8>,
    at: usize,
}

impl ParquetJson {
    fn new(path: &Path, footer: Footer) -> Self {
        ParquetJson { path: path.to_owned(), footer, next: 0, out: b"\n".to_vec(), at: 0 }
    }

    /// Rows `from..from + take` as JSON lines into `out`.
    fn slice(&mut self, from: usize, take: usize) -> std::result::Result<(), String> {
        let file = std::fs::File::open(&self.path).map_err(|e| e.to_string())?;
        let decoded = crate::error::catch(|| -> PolarsResult<Vec<String>> {
            let mut reader = ParquetReader::new(file)
                .read_parallel(ParallelStrategy::None)
                .with_slice(Some((from, take)));
            reader.set_metadata(self.footer.clone());
            let frame = reader.finish()?;
            let mut rows = vec![String::from("{"); frame.height()];
            for column in frame.columns() {
                let series = column.as_materialized_series();
                add_json(series.name(), series, &mut rows)?;
            }
            Ok(rows)
        });
        for row in decoded?.map_err(|e| format!("parquet: {e}"))? {
            self.out.extend_from_slice(row.as_bytes());
            self.out.extend_from_slice(b"}\n");
        }
        Ok(())
    }
}

impl Read for ParquetJson {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.out.len() && self.next < self.footer.num_rows {
            self.out.clear();
            self.at = 0;
            let take = ROWS_AT_ONCE.min(self.footer.num_rows - self.next);
            self.slice(self.next, take).map_err(io::Error::other)?;
            self.next += take;
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Adds the values of `series` (a column, or a struct's field) to `rows`, one JSON object's
/// text a row being built: a struct's fields under `name.field`, a list as an array.
fn add_json(name: &str, series: &Series, rows: &mut [String]) -> PolarsResult<()> {
    match series.dtype() {
        DataType::Struct(_) => {
            for field in series.struct_()?.fields_as_series() {
                add_json(&format!("{name}.{}", field.name()), &field, rows)?;
            }
        }
        DataType::List(_) => {
            let lists = series.list()?;
            for (i, row) in rows.iter_mut().enumerate() {
                if let Some(items) = lists.get_as_series(i) {
                    json_field(row, name, &array_json(&items)?);
                }
            }
        }
        _ => {
            let texts = cells(series)?;
            for (i, row) in rows.iter_mut().enumerate() {
                if let Some(text) = texts.get(i) {
                    json_field(row, name, &json_string(text));
                }
            }
        }
    }
    Ok(())
}

/// A list's items as a JSON array: objects for structs (`{"key": …, "value": …}`), else texts.
fn array_json(items: &Series) -> PolarsResult<String> {
    let mut elements = if let DataType::Struct(_) = items.dtype() {
        let mut objects = vec![String::from("{"); items.len()];
        for field in items.struct_()?.fields_as_series() {
            add_json(field.name(), &field, &mut objects)?;
        }
        objects.iter_mut().for_each(|o| o.push('}'));
        objects
    } else {
        let texts = cells(items)?;
        (0..items.len()).map(|i| texts.get(i).map_or("null".into(), json_string)).collect()
    };
    elements.retain(|e| e != "{}");
    Ok(format!("[{}]", elements.join(",")))
}

/// Appends `"name": value` to the object being built in `row`.
fn json_field(row: &mut String, name: &str, value: &str) {
    if row.len() > 1 {
        row.push(',');
    }
    row.push_str(&json_string(name));
    row.push(':');
    row.push_str(value);
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "null".into())
}

/// The texts of a column's cells, in one buffer (a cell is a range of it; `None` is null).
#[derive(Default)]
struct Texts {
    buf: String,
    cells: Vec<Option<(u32, u32)>>,
}

impl Texts {
    fn get(&self, row: usize) -> Option<&str> {
        let (start, end) = self.cells.get(row).copied().flatten()?;
        self.buf.get(start as usize..end as usize)
    }

    /// The texts `write` makes of `values`; a value equal to the previous one shares its text
    /// (bills repeat times and prices row after row).
    fn of<T: PartialEq + Copy>(
        values: impl Iterator<Item = Option<T>>,
        write: impl Fn(T, &mut String),
    ) -> Texts {
        let mut texts = Texts::default();
        let mut last: Option<(T, (u32, u32))> = None;
        for value in values {
            let cell = value.map(|value| match last {
                Some((previous, span)) if previous == value => span,
                _ => {
                    let start = texts.buf.len() as u32;
                    write(value, &mut texts.buf);
                    let span = (start, texts.buf.len() as u32);
                    last = Some((value, span));
                    span
                }
            });
            texts.cells.push(cell);
        }
        texts
    }

    /// The texts of a text column.
    fn of_str<'a>(values: impl Iterator<Item = Option<&'a str>>) -> Texts {
        let mut texts = Texts::default();
        for value in values {
            let cell = value.map(|value| {
                let start = texts.buf.len() as u32;
                texts.buf.push_str(value);
                (start, texts.buf.len() as u32)
            });
            texts.cells.push(cell);
        }
        texts
    }
}

/// A column's cells as the text a CSV export holds (see the module docs).
fn cells(series: &Series) -> PolarsResult<Texts> {
    use std::fmt::Write as _;
    Ok(match series.dtype() {
        DataType::String => Texts::of_str(series.str()?.iter()),
        DataType::Decimal(_, scale) => {
            let scale = *scale as u32;
            let physical = series.decimal()?.physical().clone();
            Texts::of(physical.iter(), |v, out| out.push_str(&decimal_text(v, scale)))
        }
        DataType::Float64 | DataType::Float32 => {
            let floats = series.cast(&DataType::Float64)?;
            Texts::of(floats.f64()?.iter(), |v, out| {
                let _ = write!(out, "{v}");
            })
        }
        DataType::Datetime(_, zone) => {
            let micros = series.cast(&DataType::Datetime(TimeUnit::Microseconds, zone.clone()))?;
            let physical = micros.datetime()?.physical().clone();
            let zoned = zone.is_some();
            Texts::of(physical.iter(), |v, out| out.push_str(&instant_text(v, zoned)))
        }
        DataType::Date => {
            let days = series.cast(&DataType::Int32)?;
            let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
            Texts::of(days.i32()?.iter(), |d, out| {
                let day = epoch + chrono::Duration::days(i64::from(d));
                let _ = write!(out, "{}", day.format("%Y-%m-%d"));
            })
        }
        dtype if dtype.is_integer() || dtype.is_bool() => {
            let text = series.cast(&DataType::String)?;
            Texts::of_str(text.str()?.iter())
        }
        _ => {
            let values: Vec<Option<String>> = (0..series.len())
                .map(|i| {
                    let value = series.get(i).ok()?;
                    (!value.is_null()).then(|| value.to_string())
                })
                .collect();
            Texts::of_str(values.iter().map(|v| v.as_deref()))
        }
    })
}

/// A decimal mantissa at `scale` as its shortest exact text.
fn decimal_text(v: i128, scale: u32) -> String {
    if let Ok(d) = Decimal::try_from_i128_with_scale(v, scale) {
        return d.normalize().to_string();
    }
    // More digits than a decimal holds: written out, the import refuses it as too large.
    let digits = v.unsigned_abs().to_string();
    let sign = if v < 0 { "-" } else { "" };
    let scale = scale as usize;
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let digits = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = digits.split_at(digits.len() - scale);
    format!("{sign}{whole}.{fraction}")
}

/// UTC microseconds as RFC 3339 (`…Z`) when the column has a zone, else as a naive time.
fn instant_text(micros: i64, zoned: bool) -> String {
    let Some(t) = DateTime::from_timestamp_micros(micros) else { return micros.to_string() };
    let whole = t.timestamp_subsec_micros() == 0;
    match (zoned, whole) {
        (true, true) => t.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        (true, false) => t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        (false, true) => t.format("%Y-%m-%d %H:%M:%S").to_string(),
        (false, false) => t.format("%Y-%m-%d %H:%M:%S%.6f").to_string(),
    }
}

/// Appends one CSV line (see [`super::jsonl::write_row`]); `None` is an empty cell.
fn write_row<'a>(out: &mut Vec<u8>, cells: impl Iterator<Item = Option<&'a str>>) {
    super::jsonl::write_row(out, cells.map(|c| c.unwrap_or("")));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_read_as_a_csv_export_writes_them() {
        assert_eq!(decimal_text(3_670_000_000_000, 12), "3.67");
        assert_eq!(decimal_text(-5, 2), "-0.05");
        assert_eq!(decimal_text(i128::MAX, 12).len(), 40, "written out, for the import to refuse");
        assert_eq!(instant_text(1_714_521_600_000_000, true), "2024-05-01T00:00:00Z");
        assert_eq!(instant_text(1_714_521_600_500_000, true), "2024-05-01T00:00:00.500000Z");
        assert_eq!(instant_text(1_714_521_600_000_000, false), "2024-05-01 00:00:00");
        let mut out = Vec::new();
        write_row(&mut out, [Some("a,b"), None, Some("say \"hi\"")].into_iter());
        assert_eq!(out, b"\"a,b\",,\"say \"\"hi\"\"\"\n");
    }
}

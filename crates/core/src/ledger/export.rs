//! `gpuaudit export --focus`: the ledger streamed out as FOCUS 1.2 ([`crate::export`]), a
//! part file at a time (memory bounded by a few part files, whatever the ledger's size), as
//! CSV or as Parquet.
//!
//! Decisions:
//! - The file is written beside its final name and renamed into place when whole: a failed
//!   export leaves no half file.
//! - `x_InstanceId` is the instance the bill names (as the ledger stores it); a charge whose
//!   resource is a compute instance's id is linked to it by every reader, gpuaudit's own
//!   included, as it is on every read of the ledger.
//! - CSV: money and quantities as plain exact decimals, times `YYYY-MM-DDTHH:MM:SSZ`, null
//!   as an empty cell; a text that a spreadsheet would run as a formula is escaped with a
//!   leading `'` (as every CSV gpuaudit writes). Parquet: DECIMAL(38, 12), TIMESTAMP(µs,
//!   UTC), INT64 and STRING, Snappy-compressed: every engine reads it, and it writes in a
//!   fraction of zstd's time (the export would otherwise take longer than the import).

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use rust_decimal::Decimal;

use super::{LoadFilter, Store, io};
use crate::charge::MAX_SCALE;
use crate::error::{Error, ErrorKind, Result};
use crate::export::{ChargeRef, ColumnType, FOCUS_COLUMNS, Value, is_exported, push_csv};

/// The file format of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Comma-separated values with a header row.
    Csv,
    /// Apache Parquet.
    Parquet,
}

impl ExportFormat {
    /// The format a file name asks for (`.csv`, `.parquet`), if any.
    pub fn of(path: &Path) -> Option<ExportFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "csv" => Some(ExportFormat::Csv),
            "parquet" => Some(ExportFormat::Parquet),
            _ => None,
        }
    }
}

/// Where the rows go.
enum Sink {
    Csv(BufWriter<File>),
    Parquet(Box<polars::io::parquet::write::BatchedWriter<File>>),
}

impl Store {
    /// Writes the charges that pass `filter` (payments left out) to `out` as FOCUS 1.2, in
    /// batch and file order; returns how many rows it wrote.
    pub fn export_focus(
        &self,
        filter: &LoadFilter,
        out: &Path,
        format: ExportFormat,
    ) -> Result<u64> {
        let manifest = self.manifest()?;
        let (_, parts, _) = self.parts_of(&manifest, filter)?;
        let staged = staged_name(out);
        let file = io(&staged, File::create(&staged))?;
        let result = (|| {
            let mut sink = match format {
                ExportFormat::Csv => {
                    let mut header = csv::Writer::from_writer(Vec::new());
                    let names = FOCUS_COLUMNS.iter().map(|c| c.name);
                    header.write_record(names).map_err(|e| csv_error(&staged, e))?;
                    let header =
                        header.into_inner().map_err(|e| Error::ledger(&staged, e.to_string()))?;
                    let mut w = BufWriter::new(file);
                    std::io::Write::write_all(&mut w, &header)
                        .map_err(|e| Error::io(&staged, e))?;
                    Sink::Csv(w)
                }
                ExportFormat::Parquet => {
                    let writer = ParquetWriter::new(file)
                        .with_compression(ParquetCompression::Snappy)
                        .batched(&schema())
                        .map_err(|e| parquet(&staged, e))?;
                    Sink::Parquet(Box::new(writer))
                }
            };
            let mut rows = 0u64;
            let mut failed: Option<Error> = None;
            let mut take = |(n, chunk): (u64, Chunk)| {
                if failed.is_none() {
                    rows += n;
                    if let Err(e) = write(&mut sink, chunk, &staged) {
                        failed = Some(e);
                    }
                }
            };
            // Each part is decoded and made into the export's rows (CSV bytes, or a frame) on
            // the reading threads; this thread only writes them, in order.
            match format {
                ExportFormat::Csv => super::reader::read_parts_in_order(
                    &self.backend,
                    &parts,
                    None,
                    csv_chunk,
                    &mut take,
                )?,
                ExportFormat::Parquet => super::reader::read_parts_in_order(
                    &self.backend,
                    &parts,
                    None,
                    frame_chunk,
                    &mut take,
                )?,
            }
            if let Some(e) = failed {
                return Err(e);
            }
            match sink {
                Sink::Csv(mut w) => {
                    std::io::Write::flush(&mut w).map_err(|e| Error::io(&staged, e))?
                }
                Sink::Parquet(w) => {
                    w.finish().map_err(|e| parquet(&staged, e))?;
                }
            }
            Ok(rows)
        })();
        match result {
            Ok(rows) => {
                io(out, std::fs::rename(&staged, out))?;
                Ok(rows)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&staged);
                Err(e)
            }
        }
    }
}

/// `out` with `.partial` added to its name, in its folder.
fn staged_name(out: &Path) -> PathBuf {
    let mut name = out.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".partial");
    out.with_file_name(name)
}

fn csv_error(path: &Path, e: csv::Error) -> Error {
    Error::io(path, std::io::Error::other(e.to_string()))
}

fn parquet(path: &Path, source: PolarsError) -> Error {
    ErrorKind::Parquet { path: path.to_owned(), source }.into()
}

/// The Parquet schema of the export.
fn schema() -> Schema {
    FOCUS_COLUMNS
        .iter()
        .map(|c| {
            let dtype = match c.type_ {
                ColumnType::Text => DataType::String,
                ColumnType::Decimal => DataType::Decimal(38, MAX_SCALE as usize),
                ColumnType::Time => DataType::Datetime(TimeUnit::Microseconds, Some(TimeZone::UTC)),
                ColumnType::Int => DataType::Int64,
            };
            Field::new(c.name.into(), dtype)
        })
        .collect()
}

/// A part file's rows as the export writes them.
enum Chunk {
    Csv(Vec<u8>),
    Frame(DataFrame),
}

/// A part file's exported charges as CSV records (no header), and how many.
fn csv_chunk(df: &DataFrame) -> std::result::Result<(u64, Chunk), String> {
    super::columns::refs_from_frame(df, csv_rows)?
}

/// [`csv_chunk`] of the charges of a part.
fn csv_rows(charges: &[ChargeRef<'_>]) -> std::result::Result<(u64, Chunk), String> {
    let mut out: Vec<u8> = Vec::with_capacity(charges.len() * 400);
    let mut rows = 0;
    // Each column's last figure and its text: hourly rows repeat their prices, and every row
    // its billing period, so most figures are formatted once per part.
    let mut last: Vec<(Value<'static>, String)> =
        FOCUS_COLUMNS.iter().map(|_| (Value::Null, String::new())).collect();
    for c in charges.iter().filter(|c| is_exported(c)) {
        rows += 1;
        for (i, (col, last)) in FOCUS_COLUMNS.iter().zip(last.iter_mut()).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match (col.value)(c) {
                Value::Null => {}
                Value::Text(t) => {
                    let formula = t.starts_with(['=', '+', '-', '@', '\t', '\r']);
                    push_field(&mut out, &t, formula);
                }
                value => {
                    let value = figure(value);
                    if last.0 != value || last.1.is_empty() {
                        last.1.clear();
                        push_csv(&mut last.1, &value);
                        last.0 = value;
                    }
                    out.extend_from_slice(last.1.as_bytes());
                }
            }
        }
        out.push(b'\n');
    }
    Ok((rows, Chunk::Csv(out)))
}

/// A text field as CSV writes it (RFC 4180: quoted, its quotes doubled, when it holds a
/// comma, a quote or a line break; so does the `csv` crate), behind a `'` when `formula`.
fn push_field(out: &mut Vec<u8>, text: &str, formula: bool) {
    let quote = text.bytes().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r'));
    if quote {
        out.push(b'"');
    }
    if formula {
        out.push(b'\'');
    }
    if quote {
        for b in text.bytes() {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(text.as_bytes());
    }
}

/// A figure (a decimal, a time, a number) as a value that borrows nothing.
fn figure(v: Value<'_>) -> Value<'static> {
    match v {
        Value::Decimal(d) => Value::Decimal(d),
        Value::Time(t) => Value::Time(t),
        Value::Int(n) => Value::Int(n),
        Value::Null | Value::Text(_) => Value::Null,
    }
}

/// A part file's exported charges as a frame of the export's columns, and how many.
fn frame_chunk(df: &DataFrame) -> std::result::Result<(u64, Chunk), String> {
    super::columns::refs_from_frame(df, |charges| {
        let charges: Vec<&ChargeRef<'_>> = charges.iter().filter(|c| is_exported(c)).collect();
        let frame = frame(&charges).map_err(|e| e.to_string())?;
        Ok((charges.len() as u64, Chunk::Frame(frame)))
    })?
}

/// One chunk into the sink.
fn write(sink: &mut Sink, chunk: Chunk, path: &Path) -> Result<()> {
    match (sink, chunk) {
        (Sink::Csv(w), Chunk::Csv(bytes)) => {
            std::io::Write::write_all(w, &bytes).map_err(|e| Error::io(path, e))
        }
        (Sink::Parquet(w), Chunk::Frame(df)) => w.write_batch(&df).map_err(|e| parquet(path, e)),
        _ => Err(Error::ledger(path, "an export chunk of the other format")),
    }
}

/// The charges as a DataFrame of the export's columns.
fn frame(charges: &[&ChargeRef<'_>]) -> PolarsResult<DataFrame> {
    let columns = FOCUS_COLUMNS
        .iter()
        .map(|col| {
            let name: PlSmallStr = col.name.into();
            let values = charges.iter().map(|c| (col.value)(c));
            let series = match col.type_ {
                ColumnType::Text => {
                    // Appended as borrowed texts: no String per cell.
                    let mut b = StringChunkedBuilder::new(name, charges.len());
                    for v in values {
                        match v {
                            Value::Text(t) => b.append_value(&t),
                            _ => b.append_null(),
                        }
                    }
                    b.finish().into_series()
                }
                ColumnType::Decimal => Int128Chunked::from_iter_options(
                    name,
                    values.map(|v| match v {
                        Value::Decimal(d) => Some(at_scale(d)),
                        _ => None,
                    }),
                )
                .into_decimal(38, MAX_SCALE as usize)?
                .into_series(),
                ColumnType::Time => Int64Chunked::from_iter_options(
                    name,
                    values.map(|v| match v {
                        Value::Time(t) => Some(t.timestamp_micros()),
                        _ => None,
                    }),
                )
                .into_datetime(TimeUnit::Microseconds, Some(TimeZone::UTC))
                .into_series(),
                ColumnType::Int => Int64Chunked::from_iter_options(
                    name,
                    values.map(|v| match v {
                        Value::Int(n) => Some(n),
                        _ => None,
                    }),
                )
                .into_series(),
            };
            Ok(Column::from(series))
        })
        .collect::<PolarsResult<Vec<_>>>()?;
    DataFrame::new(charges.len(), columns)
}

/// The mantissa of `d` at the export's scale (every ledger figure has at most 12 decimals).
fn at_scale(d: Decimal) -> i128 {
    d.mantissa() * 10i128.pow(MAX_SCALE.saturating_sub(d.scale()))
}

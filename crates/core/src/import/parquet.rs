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
//! - Bounded memory: [`ROWS_AT_ONCE`] rows are decoded at a time. Errors name the row by the
//!   line it would have in CSV (the header is line 1: row 1 is line 2).
//! - A Parquet bill is read from a file (its footer is at its end): not from standard input,
//!   an archive or a gzip stream.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate};
use polars::prelude::*;
use rust_decimal::Decimal;

use crate::error::{Error, ErrorKind, Result};

/// Rows decoded at a time.
pub(crate) const ROWS_AT_ONCE: usize = 65_536;

fn parquet_error(path: &Path, source: PolarsError) -> Error {
    ErrorKind::Parquet { path: path.to_owned(), source }.into()
}

/// The Parquet bill at `path` as CSV text, a slice of rows at a time.
pub(crate) fn parquet_as_csv(path: &Path) -> Result<Box<dyn Read + Send>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let read = crate::error::catch(|| -> PolarsResult<(usize, Vec<String>)> {
        let mut reader = ParquetReader::new(file);
        let rows = reader.num_rows()?;
        let names = reader.schema()?.iter_names().map(|n| n.to_string()).collect();
        Ok((rows, names))
    });
    let (rows, names) = match read {
        Ok(read) => read.map_err(|e| parquet_error(path, e))?,
        Err(panic) => {
            return Err(ErrorKind::Delivery { path: path.to_owned(), message: panic }.into());
        }
    };
    let mut out = Vec::new();
    write_row(&mut out, names.iter().map(|n| Some(n.as_str())));
    Ok(Box::new(ParquetCsv { path: path.to_owned(), rows, next: 0, out, at: 0 }))
}

/// CSV text of a Parquet file, made a slice of rows at a time as it is read.
struct ParquetCsv {
    path: PathBuf,
    rows: usize,
    next: usize,
    out: Vec<u8>,
    at: usize,
}

impl Read for ParquetCsv {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.out.len() && self.next < self.rows {
            self.out.clear();
            self.at = 0;
            let take = ROWS_AT_ONCE.min(self.rows - self.next);
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
    /// Rows `from..from + take` as CSV lines into `out`.
    fn slice(&mut self, from: usize, take: usize) -> std::result::Result<(), String> {
        let fail = |e: PolarsError| format!("parquet: {e}");
        let file = std::fs::File::open(&self.path).map_err(|e| e.to_string())?;
        let decoded = crate::error::catch(|| -> PolarsResult<_> {
            let frame = ParquetReader::new(file).with_slice(Some((from, take))).finish()?;
            let columns: Vec<Vec<Option<String>>> =
                frame.columns().iter().map(cells).collect::<PolarsResult<_>>()?;
            Ok((frame.height(), columns))
        });
        let (height, columns) = decoded?.map_err(fail)?;
        for row in 0..height {
            write_row(&mut self.out, columns.iter().map(|c| c[row].as_deref()));
        }
        Ok(())
    }
}

/// A column's cells as the text a CSV export holds (see the module docs).
fn cells(column: &Column) -> PolarsResult<Vec<Option<String>>> {
    let series = column.as_materialized_series();
    Ok(match series.dtype() {
        DataType::String => series.str()?.iter().map(|v| v.map(str::to_owned)).collect(),
        DataType::Decimal(_, scale) => {
            let scale = *scale as u32;
            let physical = series.decimal()?.physical().clone();
            physical.iter().map(|v| v.map(|v| decimal_text(v, scale))).collect()
        }
        DataType::Float64 | DataType::Float32 => {
            let floats = series.cast(&DataType::Float64)?;
            floats.f64()?.iter().map(|v| v.map(|v| v.to_string())).collect()
        }
        DataType::Datetime(unit, zone) => {
            let micros = series.cast(&DataType::Datetime(TimeUnit::Microseconds, zone.clone()))?;
            let physical = micros.datetime()?.physical().clone();
            let zoned = zone.is_some();
            let _ = unit;
            physical.iter().map(|v| v.map(|v| instant_text(v, zoned))).collect()
        }
        DataType::Date => {
            let days = series.cast(&DataType::Int32)?;
            let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
            days.i32()?
                .iter()
                .map(|v| {
                    v.map(|d| {
                        (epoch + chrono::Duration::days(i64::from(d)))
                            .format("%Y-%m-%d")
                            .to_string()
                    })
                })
                .collect()
        }
        dtype if dtype.is_integer() || dtype.is_bool() => {
            let text = series.cast(&DataType::String)?;
            text.str()?.iter().map(|v| v.map(str::to_owned)).collect()
        }
        _ => (0..series.len())
            .map(|i| {
                let value = series.get(i).ok()?;
                (!value.is_null()).then(|| value.to_string())
            })
            .collect(),
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

/// Appends one CSV line: cells quoted when they hold a delimiter, a quote or a line break.
fn write_row<'a>(out: &mut Vec<u8>, cells: impl Iterator<Item = Option<&'a str>>) {
    for (i, cell) in cells.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let cell = cell.unwrap_or("");
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

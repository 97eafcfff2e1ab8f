//! A bill as rows: the header among title rows, footer rows kept as control totals, and data
//! rows handed out one at a time (or in batches for the parsing threads) with their lines.
//! Opening and sniffing live in `input`, decoding in `decode`, header detection in `header`,
//! spreadsheets in `spreadsheet`, record splitting in `split`.
//!
//! Decisions recorded here:
//! - Rows whose cells are all empty are skipped. Rows whose first non-empty cell starts with
//!   合计 / 总计 / 小计 / Total are control totals, never charges.
//! - Lines are counted as a text editor counts them; a row that spans lines (a quoted line
//!   break) is reported at its first line.
//! - Spreadsheets are read with the same rules, converted row for row to CSV first; the
//!   file's digest is of the spreadsheet's own bytes.

use std::io::{self, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::decode::{Encoding, FileCtx, Window};
use super::header::{HEADER_SEARCH_ROWS, Header, choose, map_columns, refuse_repeated_columns};
use super::input::{HashingReader, Opened, Sniffed, open_input, sniff};
use super::jsonl::is_json_lines;
use super::row::{Next, Row};
use super::spec::Profile;
use super::split::{MAX_RECORD_BYTES, MAX_RECORD_LINES, READ_BYTES, Record, SplitError, Splitter};
use super::spreadsheet::{MAX_SPREADSHEET_BYTES, is_spreadsheet, spreadsheet_as_csv};
use crate::error::{Error, ErrorKind, Location, Result};

pub use crate::charge::ControlTotal;

/// A bill file opened for reading: encoding known, header found, profile chosen.
pub struct BillSource {
    ctx: FileCtx,
    reader: Splitter<HashingReader>,
    profile: &'static Profile,
    header: Header,
    /// Rows read while looking for the header, after it (to hand out first).
    pending: std::collections::VecDeque<Record>,
    record: Record,
    control_totals: Vec<ControlTotal>,
    rows_read: u64,
}

fn is_blank(record: &Record) -> bool {
    record.iter().all(|f| f.iter().all(u8::is_ascii_whitespace))
}

/// `path` opened for splitting: a spreadsheet converted to CSV (whole, bounded), else the
/// file's bytes with its encoding, byte-order mark and delimiter sniffed; the file is hashed
/// as it is read.
fn start_reading(path: &Path, pool: &Pool) -> Result<(Splitter<HashingReader>, FileCtx)> {
    let Opened { head, mut rest, direct, consumed } = open_input(path)?;
    let parquet = head.starts_with(b"PAR1");
    let mut lines = None;
    let (hashing, read_size, sniffed) = if parquet {
        let (csv, map) = parquet_bill(path, consumed.is_some(), pool)?;
        lines = map;
        let (hasher, bytes) = digest_of(path)?;
        let hashing = HashingReader { inner: csv, hasher, bytes, hashing: false, consumed: None };
        let sniffed =
            Sniffed { encoding: Encoding::Utf8, bom: 0, seen_multibyte: true, delimiter: b',' };
        (hashing, READ_BYTES, sniffed)
    } else if is_json_lines(&head) {
        let (csv, hasher, bytes, map) = json_lines(path)?;
        lines = Some(map);
        let hashing = HashingReader { inner: csv, hasher, bytes, hashing: false, consumed: None };
        let sniffed =
            Sniffed { encoding: Encoding::Utf8, bom: 0, seen_multibyte: true, delimiter: b',' };
        (hashing, READ_BYTES, sniffed)
    } else if is_spreadsheet(path, &head) {
        let mut bytes = head;
        let room = MAX_SPREADSHEET_BYTES + 1 - bytes.len() as u64;
        (&mut rest).take(room).read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
        if bytes.len() as u64 > MAX_SPREADSHEET_BYTES {
            return Err(ErrorKind::Spreadsheet {
                path: path.to_owned(),
                message: "a spreadsheet of more than 256 MiB: export the bill as CSV".into(),
            }
            .into());
        }
        let hasher = Sha256::new_with_prefix(&bytes);
        let size = bytes.len() as u64;
        let csv = spreadsheet_as_csv(path, bytes)?;
        let hashing =
            HashingReader { inner: csv, hasher, bytes: size, hashing: false, consumed: None };
        let sniffed =
            Sniffed { encoding: Encoding::Utf8, bom: 0, seen_multibyte: true, delimiter: b',' };
        (hashing, READ_BYTES, sniffed)
    } else {
        let sniffed = sniff(path, &head)?;
        let read_size = if direct { crate::direct::TRANSFER_BYTES } else { READ_BYTES };
        let inner: Box<dyn Read + Send> = Box::new(io::Cursor::new(head).chain(rest));
        let hashing =
            HashingReader { inner, hasher: Sha256::new(), bytes: 0, hashing: true, consumed };
        (hashing, read_size, sniffed)
    };
    let Sniffed { encoding, bom, seen_multibyte, delimiter } = sniffed;
    let mut reader = Splitter::with_read_size(hashing, read_size).with_delimiter(delimiter);
    // The byte-order mark is hashed with the file, and part of no cell.
    reader.skip(bom);
    let mut ctx = FileCtx::new(path.to_owned(), encoding, seen_multibyte);
    ctx.rows = parquet;
    ctx.lines = lines;
    Ok((reader, ctx))
}

/// A JSON lines bill as CSV text (see `jsonl`), read twice: from a file, not standard input.
fn json_lines(path: &Path) -> Result<super::jsonl::Jsonl> {
    if path == Path::new(super::input::STDIN) {
        let message =
            "a JSON lines bill is read from a file (it is read twice), not standard input";
        return Err(ErrorKind::Delivery { path: path.to_owned(), message: message.into() }.into());
    }
    let open = || -> Result<Box<dyn Read + Send>> {
        let Opened { head, rest, .. } = open_input(path)?;
        Ok(Box::new(io::Cursor::new(head).chain(rest)))
    };
    super::jsonl::jsonl_as_csv(path, &open)
}

/// The profiles a file may be read with, and whether one was forced.
type Pool<'a> = (&'a [&'static Profile], bool);

/// The hash and size of the file at `path`'s bytes.
fn digest_of(path: &Path) -> Result<(Sha256, u64)> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = Sha256::new();
    let bytes = io::copy(&mut file, &mut hasher).map_err(|e| Error::io(path, e))?;
    Ok((hasher, bytes))
}

/// The columns of a Parquet bill with the schema `names` that the profile it will be read
/// with reads, when reading only them gives the same charges: the profile has a native id
/// and the file has its columns (see `parquet`). Column 0 is kept (a row's first cell).
#[cfg(feature = "store")]
fn parquet_wanted(path: &Path, names: &[String], pool: &Pool) -> Option<super::parquet::Wanted> {
    let rows = [names.to_vec()];
    let (profile, _) = choose(path, pool.0, &rows, &[1], pool.1).ok()?;
    let map = map_columns(profile.columns(), names);
    let native: Vec<usize> =
        profile.native_id_columns().iter().map(|&c| map[c]).collect::<Option<_>>()?;
    if native.is_empty() {
        return None;
    }
    let mut read: Vec<usize> = map.iter().flatten().copied().chain([0]).collect();
    read.sort_unstable();
    read.dedup();
    Some(super::parquet::Wanted { read, native })
}

/// A Parquet bill as CSV text (see `parquet`), with where its lines were read when it went
/// through JSON lines (nested columns): a regular file of its own, not `compressed`, read where
/// its footer is (an archive's member or standard input is no regular file).
fn parquet_bill(path: &Path, compressed: bool, pool: &Pool) -> Result<super::jsonl::Text> {
    if compressed || !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        let message = "a Parquet bill is read from a file of its own (not compressed, in an \
                       archive or from standard input)"
            .to_owned();
        return Err(ErrorKind::Delivery { path: path.to_owned(), message }.into());
    }
    #[cfg(feature = "store")]
    return super::parquet::parquet_as_csv(path, &|names| parquet_wanted(path, names, pool));
    #[cfg(not(feature = "store"))]
    {
        let _ = pool;
        let message = "a Parquet bill needs gpuaudit built with the store feature".to_owned();
        Err(ErrorKind::Delivery { path: path.to_owned(), message }.into())
    }
}

/// The first [`HEADER_SEARCH_ROWS`] records, and the error that stopped the reading early
/// when a row among them cannot be split: it is reported once the header is known, so that
/// its column has a name.
fn read_head(
    path: &Path,
    reader: &mut Splitter<HashingReader>,
    record: &mut Record,
) -> Result<(Vec<Record>, Option<SplitError>)> {
    let mut head = Vec::new();
    while head.len() < HEADER_SEARCH_ROWS {
        match reader.read(record) {
            Ok(true) => head.push(record.clone()),
            Ok(false) => break,
            Err(SplitError::Io(e)) => return Err(Error::io(path, e)),
            Err(e) => return Ok((head, Some(e))),
        }
    }
    Ok((head, None))
}

impl BillSource {
    /// Opens `path`, decides its encoding, finds its header among the first rows and picks the
    /// profile: `forced` if given, else the best-scoring one of `candidates`.
    pub fn open(
        path: &Path,
        forced: Option<&'static Profile>,
        candidates: &[&'static Profile],
    ) -> Result<Self> {
        let pool: Vec<&'static Profile> = match forced {
            Some(p) => vec![p],
            None => candidates.to_vec(),
        };
        let (mut reader, ctx) = start_reading(path, &(&pool, forced.is_some()))?;
        let mut record = Record::new();
        let (mut head, unsplit) = read_head(path, &mut reader, &mut record)?;
        let unsplit = match unsplit {
            Some(e) if head.iter().all(is_blank) => return Err(split_error(e, path, None)),
            unsplit => unsplit,
        };
        if head.iter().all(is_blank) {
            return Err(ErrorKind::Empty { path: path.to_owned() }.into());
        }
        let decoded: Vec<Vec<String>> = head
            .iter()
            .map(|r| {
                let line = r.position().map_or(0, |p| p.line());
                let offset = r.position().map_or(0, |p| p.byte());
                r.iter()
                    .map(|f| ctx.decode(f, line, "", offset).map(|s| s.trim().to_owned()))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<_>>()?;
        let lines: Vec<u64> = head.iter().map(|r| r.position().map_or(1, |p| p.line())).collect();
        let chosen = choose(path, &pool, &decoded, &lines, forced.is_some());
        let (profile, row_index) = match (chosen, unsplit) {
            (Ok(chosen), None) => chosen,
            (Ok((_, row)), Some(e)) => return Err(split_error(e, path, Some(&decoded[row]))),
            (Err(_), Some(e)) => return Err(split_error(e, path, None)),
            (Err(e), None) => return Err(e),
        };
        let names = decoded[row_index].clone();
        let header_line = head[row_index].position().map_or(1, |p| p.line());
        refuse_repeated_columns(path, header_line, profile.columns(), &names)?;
        if let Some((name, why)) = profile.refused_columns().iter().find_map(|r| {
            names.iter().find(|n| n.trim().eq_ignore_ascii_case(&r.name)).map(|n| (n, &r.why))
        }) {
            let location = Location::line(path, header_line).with_column(name.clone());
            return Err(ErrorKind::Malformed { location, message: why.clone() }.into());
        }
        let header = Header {
            map: map_columns(profile.columns(), &names),
            names,
            line: head[row_index].position().map_or(1, |p| p.line()),
        };
        let pending = head.drain(row_index + 1..).collect();
        Ok(BillSource {
            ctx,
            reader,
            profile,
            header,
            pending,
            record,
            control_totals: Vec::new(),
            rows_read: 0,
        })
    }

    /// Accepts only times in `window` (the default is [`Window::default`]).
    pub fn set_window(&mut self, window: Window) {
        self.ctx.window = window;
    }

    /// The profile reading this file.
    pub fn profile(&self) -> &'static Profile {
        self.profile
    }

    /// The header row.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.ctx.path
    }

    /// Data rows handed out so far (footers and blank rows not counted).
    pub fn rows_read(&self) -> u64 {
        self.rows_read
    }

    /// Footer rows seen so far.
    pub fn control_totals(&self) -> &[ControlTotal] {
        &self.control_totals
    }

    /// Bytes of the file read so far (read ahead of the rows handed out by up to 64 KiB); of
    /// a compressed file, its compressed bytes.
    pub fn bytes_read(&self) -> u64 {
        let hashing = self.reader.get_ref();
        match &hashing.consumed {
            Some(consumed) => consumed.load(std::sync::atomic::Ordering::Relaxed),
            None => hashing.bytes,
        }
    }

    /// The SHA-256 and size of the bytes read so far (the whole file once rows run out).
    pub fn digest(&self) -> (String, u64) {
        let hashing = self.reader.get_ref();
        let hex = hashing.hasher.clone().finalize().iter().map(|b| format!("{b:02x}")).collect();
        (hex, hashing.bytes)
    }

    /// Reads the next data record into `self.record`, skipping blank rows and recording
    /// footers; its line, or `None` at the end.
    ///
    /// The encoding is decided here, in file order, field by field: while the file has been
    /// ASCII, each record that is not is decoded whole, which settles UTF-8 or GB18030 before
    /// any worker thread decodes it (see [`RecordBatch::state`]).
    fn advance(&mut self) -> Result<Option<u64>> {
        loop {
            if let Some(r) = self.pending.pop_front() {
                self.record = r;
            } else if !read_record(
                &mut self.reader,
                &mut self.record,
                &self.ctx.path,
                Some(&self.header.names),
            )? {
                return Ok(None);
            }
            if is_blank(&self.record) {
                continue;
            }
            let line = self.record.position().map_or(0, |p| p.line());
            if self.ctx.undecided() && !self.record.as_slice().is_ascii() {
                for field in self.record.iter() {
                    let _ = self.ctx.decode(field, line, "", 0);
                    if !self.ctx.undecided() {
                        break;
                    }
                }
            }
            let row = self.row(line);
            // A Parquet bill has no footers (its unread cells are empty: see `parquet`).
            if let Some(label) = row.footer_label().filter(|_| !self.ctx.rows) {
                let format = self.profile.number_format();
                let amount = self
                    .profile
                    .billed_column()
                    .and_then(|col| row.amount(col, format).ok().flatten());
                let total = ControlTotal { line, label, amount };
                self.control_totals.push(total);
                continue;
            }
            self.rows_read += 1;
            return Ok(Some(line));
        }
    }

    /// The next data row, skipping blank rows and recording footers; `None` at the end.
    pub fn next_row(&mut self) -> Result<Option<Next<'_>>> {
        let Some(line) = self.advance()? else { return Ok(None) };
        Ok(Some(self.row(line).checked()))
    }

    /// The record last read, as a row at `line`.
    fn row(&self, line: u64) -> Row<'_> {
        Row {
            ctx: &self.ctx,
            record: &self.record,
            header: &self.header,
            columns: self.profile.columns(),
            line,
            whole: None,
        }
    }

    /// Fills `batch` with up to its capacity of data records; false when there were none left.
    pub(crate) fn fill(&mut self, batch: &mut RecordBatch) -> Result<bool> {
        batch.len = 0;
        batch.state = self.ctx.state();
        while batch.len < batch.records.len() {
            if self.advance()?.is_none() {
                break;
            }
            std::mem::swap(&mut self.record, &mut batch.records[batch.len]);
            batch.len += 1;
        }
        Ok(batch.len > 0)
    }

    /// The decoding context, for worker threads to fork.
    pub(crate) fn ctx(&self) -> &FileCtx {
        &self.ctx
    }
}

/// Data records read by [`BillSource::fill`], for a worker thread to parse.
pub(crate) struct RecordBatch {
    /// Buffers, reused; the first `len` hold records.
    pub(crate) records: Vec<Record>,
    /// How many records the batch holds.
    pub(crate) len: usize,
    /// The decoding state before the first record.
    pub(crate) state: (Encoding, bool),
}

impl RecordBatch {
    /// An empty batch of `capacity` records.
    pub(crate) fn new(capacity: usize) -> Self {
        RecordBatch {
            records: vec![Record::new(); capacity],
            len: 0,
            state: (Encoding::Utf8, false),
        }
    }
}

fn read_record(
    reader: &mut Splitter<HashingReader>,
    record: &mut Record,
    path: &Path,
    names: Option<&[String]>,
) -> Result<bool> {
    reader.read(record).map_err(|e| split_error(e, path, names))
}

/// The error of a file that could not be split into rows, its column named by `names`.
fn split_error(e: SplitError, path: &Path, names: Option<&[String]>) -> Error {
    let at = |line: u64, field: usize| {
        let column = names
            .and_then(|n| n.get(field))
            .filter(|n| !n.is_empty())
            .cloned()
            .unwrap_or_else(|| format!("#{}", field + 1));
        Location::line(path, line).with_column(column)
    };
    match e {
        SplitError::Io(e) => Error::io(path, e),
        SplitError::TooLong { line, field } => ErrorKind::Malformed {
            location: at(line, field),
            message: format!(
                "the row is longer than {} MiB (no bill has such rows: is this a bill?)",
                MAX_RECORD_BYTES >> 20
            ),
        }
        .into(),
        SplitError::Unclosed { line, field, at_end } => ErrorKind::Malformed {
            location: at(line, field),
            message: if at_end {
                "a quote opened here is never closed".to_owned()
            } else {
                format!("a quote opened here is not closed within {MAX_RECORD_LINES} lines")
            },
        }
        .into(),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// A CSV of about 3 MiB (not a whole number of blocks) with a byte-order mark, CRLF line
    /// ends and quoted cells running over lines.
    fn bill() -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let mut text = String::from("\u{feff}id,cost,note\r\n");
        for i in 0..60_000 {
            text.push_str(&format!("i-{i:08},{}.{:02},", i % 977, i % 100));
            text.push_str(if i % 1000 == 7 { "\"two\r\nlines, quoted\"\r\n" } else { "plain\r\n" });
        }
        file.write_all(text.as_bytes()).unwrap();
        file
    }

    fn records(mut splitter: Splitter<impl Read>) -> Vec<(Vec<Vec<u8>>, u64, u64)> {
        let mut out = Vec::new();
        let mut record = Record::new();
        while splitter.read(&mut record).unwrap() {
            let p = record.position().unwrap();
            out.push((record.iter().map(<[u8]>::to_vec).collect(), p.line(), p.byte()));
        }
        out
    }

    #[test]
    fn records_read_past_the_page_cache_are_those_read_through_it() {
        let bill = bill();
        let file = crate::direct::Reader::open(bill.path(), 0).unwrap();
        let hashing = HashingReader {
            inner: Box::new(file),
            hasher: Sha256::new(),
            bytes: 0,
            hashing: true,
            consumed: None,
        };
        let mut direct = Splitter::with_read_size(hashing, crate::direct::TRANSFER_BYTES);
        direct.skip(3);
        let mut cached = Splitter::with_read_size(std::fs::File::open(bill.path()).unwrap(), 4096);
        cached.skip(3);
        let (direct_records, cached_records) = (records(direct), records(cached));
        assert_eq!(direct_records.len(), 60_001);
        assert_eq!(direct_records, cached_records);
        assert_eq!(direct_records[0].0[0], b"id", "the byte-order mark is in no cell");
        assert_eq!((direct_records[1].1, direct_records[1].2), (2, 17));
        let quoted = &direct_records[8];
        assert_eq!(quoted.0[2], b"two\r\nlines, quoted");
        assert_eq!(direct_records[9].1, quoted.1 + 2, "the record after spans two lines later");
    }

    #[test]
    fn reading_goes_on_through_the_page_cache_when_a_direct_read_is_refused() {
        let bill = bill();
        let want = std::fs::read(bill.path()).unwrap();
        let mut file = crate::direct::Reader::open(bill.path(), 0).unwrap();
        // An odd-sized read into a buffer at an odd address: refused by a direct read.
        let mut buf = vec![0u8; 8192];
        let mut got = Vec::new();
        loop {
            let n = file.read(&mut buf[1..4000]).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[1..1 + n]);
        }
        assert!(!file.is_direct());
        assert_eq!(got.len(), want.len());
        assert!(got == want);
    }
}

//! Reading a bill file: encoding sniffing, the header row among title rows, footer rows,
//! and rows handed out one at a time with their line numbers.
//!
//! Decisions recorded here:
//! - Encoding: a UTF-8 BOM is stripped; the first 64 KiB decide between UTF-8 and GB18030.
//!   A file whose first 64 KiB are pure ASCII starts as UTF-8 and switches to GB18030 at the
//!   first field that is not UTF-8 but is GB18030 (English headers over Chinese values). CSV
//!   splitting works on raw bytes, which is safe for GB18030: its trail bytes are never
//!   `,`, `"` or a line break.
//! - Rows whose cells are all empty are skipped. Rows whose first non-empty cell starts with
//!   合计 / 总计 / 小计 / Total are control totals, never charges.
//! - Lines are counted as a text editor counts them; a row that spans lines (a quoted line
//!   break) is reported at its first line.
//! - Spreadsheets (XLSX, XLS, ODS; by name or signature): the first sheet is read with the
//!   same rules, converted row for row to CSV first (see `spreadsheet_as_csv`); the file's
//!   digest is of the spreadsheet's own bytes.

use std::borrow::Cow;
use std::cell::Cell;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::split::{MAX_RECORD_BYTES, MAX_RECORD_LINES, READ_BYTES, Record, SplitError, Splitter};
use rust_decimal::Decimal;
use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorKind, Location, NearMiss, Result, RowError};
use crate::import::profile::{Column, Profile};

/// How many leading rows may hold the header.
pub const HEADER_SEARCH_ROWS: usize = 20;
const SNIFF_BYTES: usize = 64 * 1024;

/// The text encoding a file was read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 (with or without BOM).
    Utf8,
    /// GB18030, which covers GBK and GB2312.
    Gb18030,
}

/// A control total found in a footer row (合计/总计/小计/Total).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ControlTotal {
    /// 1-based line of the footer row.
    pub line: u64,
    /// The footer's label, such as `合计`.
    pub label: String,
    /// The figure in the footer's billed-cost column, if it has one.
    pub amount: Option<Decimal>,
}

/// The header row: where it is and which column holds each of the profile's fields.
#[derive(Debug, Clone)]
pub struct Header {
    /// Trimmed header names, in file order.
    pub names: Vec<String>,
    /// 1-based line of the header row.
    pub line: u64,
    /// For each of the profile's columns, its index in the row.
    pub(crate) map: Vec<Option<usize>>,
}

/// Reads the bytes of a file once, hashing them on the way.
struct HashingReader {
    inner: Box<dyn Read + Send>,
    hasher: Sha256,
    bytes: u64,
    /// False when `inner` is not the file's bytes (a spreadsheet converted to CSV, whose
    /// digest was taken from the file beforehand).
    hashing: bool,
}

impl Read for HashingReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if self.hashing {
            self.hasher.update(&buf[..n]);
            self.bytes += n as u64;
        }
        Ok(n)
    }
}

/// Whether `path` names a spreadsheet, or `head` (the input's first bytes) starts with a ZIP
/// (XLSX, ODS) or OLE (XLS) signature.
fn is_spreadsheet(path: &Path, head: &[u8]) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    matches!(ext.as_deref(), Some("xlsx" | "xlsm" | "xlsb" | "xls" | "ods"))
        || head.starts_with(b"PK\x03\x04")
        || head.starts_with(&[0xD0, 0xCF, 0x11, 0xE0])
}

/// The name that stands for the standard input among the files of an import.
pub const STDIN: &str = "-";

/// The most bytes a spreadsheet bill may have: 256 MiB. A workbook is held in memory while it
/// is read (its parts are found through the directory at the end of the file); a bill that
/// large is better exported as CSV, which streams.
pub const MAX_SPREADSHEET_BYTES: u64 = 256 << 20;

/// The most columns a spreadsheet row may have: Excel's 16,384 (`XFD`).
const MAX_SHEET_COLUMNS: u32 = 16_384;

/// An input opened once: its first bytes read ahead (they tell a spreadsheet, the encoding
/// and the delimiter), the rest to stream. A pipe or the standard input cannot be opened
/// twice, so nothing is.
struct Opened {
    head: Vec<u8>,
    rest: Box<dyn Read + Send>,
    direct: bool,
}

fn open_input(path: &Path) -> Result<Opened> {
    let (mut rest, direct): (Box<dyn Read + Send>, bool) = if path == Path::new(STDIN) {
        (Box::new(io::stdin()), false)
    } else {
        let file =
            crate::direct::Reader::open(path, DIRECT_FROM_BYTES).map_err(|e| Error::io(path, e))?;
        let direct = file.is_direct();
        (Box::new(file), direct)
    };
    // Aligned, as a read past the page cache needs; 64 KiB is a whole number of blocks.
    let mut head = crate::direct::Aligned::new(SNIFF_BYTES);
    let mut len = 0;
    while len < SNIFF_BYTES {
        match rest.read(&mut head[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(Opened { head: head[..len].to_vec(), rest, direct })
}

fn not_a_workbook(path: &Path, cause: impl std::fmt::Display) -> Error {
    ErrorKind::Spreadsheet {
        path: path.to_owned(),
        message: format!("not a readable workbook (XLSX, XLS or ODS): {cause}"),
    }
    .into()
}

/// The first sheet of a spreadsheet as CSV text, row for row: the N-th sheet row is the N-th
/// line, so errors name the row a spreadsheet shows. Numbers stored as binary floats (the
/// only way spreadsheets keep them) are written as their shortest decimal text, which is what
/// the spreadsheet displays for up to 15 significant digits; dates as `YYYY-MM-DD HH:MM:SS`;
/// line breaks inside cells become spaces.
///
/// An XLSX sheet is streamed cell by cell on a thread of its own (its rows come as CSV
/// through a bounded channel), so a sheet whose one cell is addressed `XFD1048576` costs a
/// million empty lines, not a dense grid of 17 billion cells. XLS (at most 65,536 × 256
/// cells) and ODS sheets are read as a range.
fn spreadsheet_as_csv(path: &Path, bytes: Vec<u8>) -> Result<Box<dyn Read + Send>> {
    use calamine::{Reader, Sheets};
    let data: std::sync::Arc<[u8]> = bytes.into();
    check_zipped_parts(path, &data)?;
    let book = calamine::open_workbook_auto_from_rs(io::Cursor::new(data))
        .map_err(|e| not_a_workbook(path, e))?;
    let mut book = match book {
        Sheets::Xlsx(xlsx) => return Ok(Box::new(stream_xlsx(path, xlsx)?)),
        other => other,
    };
    let range = match book.worksheet_range_at(0) {
        Some(r) => r.map_err(|e| not_a_workbook(path, e))?,
        None => return Err(ErrorKind::Empty { path: path.to_owned() }.into()),
    };
    let (first_row, first_col) = range.start().unwrap_or((0, 0));
    let mut out = SheetCsv::default();
    for _ in 0..first_row {
        out.bytes.push(b'\n');
    }
    for row in range.rows() {
        let mut cells: Vec<String> = vec![String::new(); first_col as usize];
        cells.extend(row.iter().map(data_text));
        out.row(&cells);
    }
    Ok(Box::new(io::Cursor::new(out.bytes)))
}

/// The most bytes an XML part of a zipped workbook may inflate to: 4 GiB (a sheet of a million
/// rows of twenty cells is about 1 GB).
const MAX_PART_BYTES: u64 = 4 << 30;

/// The most bytes the shared strings of a workbook may inflate to: 512 MiB (they are held in
/// memory while the sheet is read).
const MAX_SHARED_STRINGS_BYTES: u64 = 512 << 20;

/// Reads the XML parts of a zipped workbook (XLSX, ODS) once before calamine does, in bounded
/// memory, and refuses one whose reading would take unbounded memory or time: a part that
/// inflates past [`MAX_PART_BYTES`] (shared strings past [`MAX_SHARED_STRINGS_BYTES`]), or a
/// text or tag longer than [`super::split::MAX_RECORD_BYTES`] (the XML reader holds a whole
/// text in memory: 300 MB of spaces in a 300 KB file took 900 MB). A file that is not a zip
/// is left to calamine, which says what it is not.
fn check_zipped_parts(path: &Path, data: &std::sync::Arc<[u8]>) -> Result<()> {
    let Ok(mut zip) = zip::ZipArchive::new(io::Cursor::new(data.clone())) else { return Ok(()) };
    let mut buf = vec![0u8; 64 << 10];
    for i in 0..zip.len() {
        let mut part = zip.by_index(i).map_err(|e| not_a_workbook(path, e))?;
        let name = part.name().map_err(|e| not_a_workbook(path, e))?.into_owned();
        if !name.ends_with(".xml") {
            continue;
        }
        let limit = if name.ends_with("sharedStrings.xml") {
            MAX_SHARED_STRINGS_BYTES
        } else {
            MAX_PART_BYTES
        };
        let (mut total, mut run) = (0u64, 0usize);
        loop {
            let n = match part.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(not_a_workbook(path, format!("{name}: {e}"))),
            };
            total += n as u64;
            if total > limit {
                return Err(not_a_workbook(
                    path,
                    format!("{name} inflates to more than {} MiB", limit >> 20),
                ));
            }
            for chunk in buf[..n].split_inclusive(|&b| b == b'<' || b == b'>') {
                let open = chunk.last().is_some_and(|&b| b == b'<' || b == b'>');
                run += chunk.len() - usize::from(open);
                if run > super::split::MAX_RECORD_BYTES {
                    return Err(not_a_workbook(
                        path,
                        format!("{name} holds a text or tag of more than 1 MiB"),
                    ));
                }
                if open {
                    run = 0;
                }
            }
        }
    }
    Ok(())
}

/// [`cell_text`] of a cell of a range.
fn data_text(cell: &calamine::Data) -> String {
    use calamine::{Data, DataRef};
    cell_text(match cell {
        Data::Empty => DataRef::Empty,
        Data::String(s) => DataRef::SharedString(s),
        Data::Float(f) => DataRef::Float(*f),
        Data::Int(i) => DataRef::Int(*i),
        Data::Bool(b) => DataRef::Bool(*b),
        Data::DateTime(d) => DataRef::DateTime(*d),
        Data::DateTimeIso(s) => DataRef::DateTimeIso(s.clone()),
        Data::DurationIso(s) => DataRef::DurationIso(s.clone()),
        Data::Error(e) => DataRef::Error(e.clone()),
    })
}

/// A cell's text as it goes into the CSV of its sheet.
fn cell_text(cell: calamine::DataRef<'_>) -> String {
    use calamine::DataRef;
    match cell {
        DataRef::Empty => String::new(),
        DataRef::String(s) => s.replace(['\r', '\n'], " "),
        DataRef::SharedString(s) => s.replace(['\r', '\n'], " "),
        DataRef::Float(f) => f.to_string(),
        DataRef::Int(i) => i.to_string(),
        DataRef::Bool(b) => b.to_string(),
        DataRef::DateTime(d) => d
            .as_datetime()
            .map_or_else(|| d.to_string(), |t| t.format("%Y-%m-%d %H:%M:%S").to_string()),
        DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => s,
        DataRef::Error(e) => format!("#{e:?}"),
    }
}

/// CSV text of sheet rows, written as they come.
#[derive(Default)]
struct SheetCsv {
    bytes: Vec<u8>,
}

impl SheetCsv {
    fn row(&mut self, cells: &[String]) {
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                self.bytes.push(b',');
            }
            if cell.contains([',', '"', '\n', '\r']) || (cells.len() == 1 && cell.is_empty()) {
                self.bytes.push(b'"');
                self.bytes.extend_from_slice(cell.replace('"', "\"\"").as_bytes());
                self.bytes.push(b'"');
            } else {
                self.bytes.extend_from_slice(cell.as_bytes());
            }
        }
        self.bytes.push(b'\n');
    }
}

/// CSV of sheet rows handed over a channel, as a byte stream.
struct ChannelReader {
    rx: crossbeam_channel::Receiver<Result<Vec<u8>, String>>,
    chunk: Vec<u8>,
    at: usize,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.chunk.len() {
            match self.rx.recv() {
                Ok(Ok(chunk)) => (self.chunk, self.at) = (chunk, 0),
                Ok(Err(message)) => return Err(io::Error::other(message)),
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The first sheet of an XLSX workbook as CSV, converted cell by cell on a thread of its own.
fn stream_xlsx(
    path: &Path,
    mut book: calamine::Xlsx<io::Cursor<std::sync::Arc<[u8]>>>,
) -> Result<ChannelReader> {
    use calamine::Reader;
    let Some(sheet) = book.sheet_names().first().cloned() else {
        return Err(ErrorKind::Empty { path: path.to_owned() }.into());
    };
    // The sheet is opened here, so that a broken one is reported as the workbook's error.
    drop(book.worksheet_cells_reader(&sheet).map_err(|e| not_a_workbook(path, e))?);
    let (tx, rx) = crossbeam_channel::bounded::<Result<Vec<u8>, String>>(4);
    let display = path.display().to_string();
    std::thread::spawn(move || {
        let sent = convert_xlsx(&mut book, &sheet, &tx);
        if let Err(message) = sent {
            let _ = tx.send(Err(format!("not a readable workbook (XLSX): {message} ({display})")));
        }
    });
    Ok(ChannelReader { rx, chunk: Vec::new(), at: 0 })
}

/// Writes the cells of `sheet` to `tx` as CSV rows, in chunks of about 256 KiB.
fn convert_xlsx(
    book: &mut calamine::Xlsx<io::Cursor<std::sync::Arc<[u8]>>>,
    sheet: &str,
    tx: &crossbeam_channel::Sender<Result<Vec<u8>, String>>,
) -> Result<(), String> {
    const CHUNK: usize = 256 << 10;
    let mut cells = book.worksheet_cells_reader(sheet).map_err(|e| e.to_string())?;
    let mut out = SheetCsv::default();
    // The sheet row the next line of CSV stands for, and the cells of the row being read.
    let (mut next_line, mut row, mut current): (u32, Vec<String>, Option<u32>) =
        (0, Vec::new(), None);
    let flush = |out: &mut SheetCsv, force: bool| -> Result<(), String> {
        if out.bytes.len() >= CHUNK || (force && !out.bytes.is_empty()) {
            // A closed channel means the reader stopped: the rest is not needed.
            tx.send(Ok(std::mem::take(&mut out.bytes))).map_err(|_| String::new())?;
        }
        Ok(())
    };
    loop {
        let cell = cells.next_cell().map_err(|e| e.to_string())?;
        let at = cell.as_ref().map(|c| c.get_position());
        if current.is_some() && at.map(|a| a.0) != current {
            out.row(&row);
            row.clear();
            next_line += 1;
            flush(&mut out, false)?;
        }
        let Some((r, c)) = at else { break };
        if current.is_some_and(|cur| r < cur) || r < next_line {
            return Err(format!("row {} comes after row {}", r + 1, next_line));
        }
        if c >= MAX_SHEET_COLUMNS {
            return Err(format!("a cell in column {} (the last is 16384)", c + 1));
        }
        while next_line < r {
            out.bytes.push(b'\n');
            next_line += 1;
            flush(&mut out, false)?;
        }
        current = Some(r);
        let value = cell.map(|c| cell_text(c.get_value().clone())).unwrap_or_default();
        if row.len() <= c as usize {
            row.resize(c as usize + 1, String::new());
        }
        row[c as usize] = value;
    }
    flush(&mut out, true)
}

/// Per-file decoding state, shared with the rows it hands out.
pub(crate) struct FileCtx {
    pub(crate) path: PathBuf,
    encoding: Cell<Encoding>,
    seen_multibyte: Cell<bool>,
    /// The years a time of the file may fall in.
    pub(crate) window: Window,
}

/// The years a bill's times may fall in, in the platform's zone: by default 2000 to 2100. A
/// time outside them (`0000-01-01`, a year typed as `20224`) is refused at import, where it
/// names its line, rather than stored in a month no one means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Window {
    /// The first year accepted.
    pub first_year: i32,
    /// The last year accepted.
    pub last_year: i32,
}

impl Default for Window {
    fn default() -> Self {
        Window { first_year: 2000, last_year: 2100 }
    }
}

impl Window {
    /// Whether `year` is inside the window.
    pub fn holds(&self, year: i32) -> bool {
        (self.first_year..=self.last_year).contains(&year)
    }

    /// Why a time of `year` is refused.
    pub(crate) fn refusal(&self, text: &str) -> String {
        format!(
            "{text:?} is outside the years {}–{} a bill may have (the import window)",
            self.first_year, self.last_year
        )
    }
}

impl FileCtx {
    /// The decoding state: the encoding in force and whether a multibyte UTF-8 cell was seen.
    pub(crate) fn state(&self) -> (Encoding, bool) {
        (self.encoding.get(), self.seen_multibyte.get())
    }

    /// A copy for another thread, in `state`.
    pub(crate) fn fork(&self, state: (Encoding, bool)) -> FileCtx {
        FileCtx {
            path: self.path.clone(),
            encoding: Cell::new(state.0),
            seen_multibyte: Cell::new(state.1),
            window: self.window,
        }
    }

    /// Sets the decoding state (a worker thread starting on a batch of records).
    pub(crate) fn set_state(&self, state: (Encoding, bool)) {
        self.encoding.set(state.0);
        self.seen_multibyte.set(state.1);
    }

    /// The whole record as text when every cell can be read from it without decoding each
    /// one: the record is ASCII, or the file is UTF-8 with a multibyte cell already seen (then
    /// nothing it holds can change the encoding). One validation pass per record instead of
    /// one per cell; [`Row::text`] still decodes a cell whose bounds fall inside a character.
    pub(crate) fn whole<'r>(&self, record: &'r Record) -> Option<&'r str> {
        let bytes = record.as_slice();
        let settled_utf8 = self.encoding.get() == Encoding::Utf8 && self.seen_multibyte.get();
        if settled_utf8 || bytes.is_ascii() { std::str::from_utf8(bytes).ok() } else { None }
    }

    /// Whether the encoding can still change: the file has been ASCII so far.
    fn undecided(&self) -> bool {
        self.encoding.get() == Encoding::Utf8 && !self.seen_multibyte.get()
    }

    /// Decodes one cell, switching an all-ASCII-so-far file to GB18030 where needed.
    pub(crate) fn decode<'a>(
        &self,
        bytes: &'a [u8],
        line: u64,
        column: &str,
        offset: u64,
    ) -> Result<Cow<'a, str>> {
        let encoding_error = || {
            Error::from(ErrorKind::Encoding {
                location: Location::line(&self.path, line).with_column(column),
                offset,
            })
        };
        if self.encoding.get() == Encoding::Utf8 {
            match std::str::from_utf8(bytes) {
                Ok(s) => {
                    if !self.seen_multibyte.get() && !s.is_ascii() {
                        self.seen_multibyte.set(true);
                    }
                    return Ok(Cow::Borrowed(s));
                }
                Err(_) if self.seen_multibyte.get() => return Err(encoding_error()),
                Err(_) => self.encoding.set(Encoding::Gb18030),
            }
        }
        if bytes.is_ascii() {
            // ASCII is the same in both encodings; skip the decoder.
            return Ok(Cow::Borrowed(std::str::from_utf8(bytes).map_err(|_| encoding_error())?));
        }
        encoding_rs::GB18030
            .decode_without_bom_handling_and_without_replacement(bytes)
            .ok_or_else(encoding_error)
    }
}

/// `cell.trim()`, skipping the Unicode scan when the cell starts and ends with a visible
/// ASCII character (nearly every cell).
fn trim(cell: &str) -> &str {
    match (cell.as_bytes().first(), cell.as_bytes().last()) {
        (Some(first), Some(last)) if first.is_ascii_graphic() && last.is_ascii_graphic() => cell,
        _ => cell.trim(),
    }
}

/// A bill file opened for reading: encoding known, header found, profile chosen.
pub struct BillSource {
    ctx: FileCtx,
    reader: Splitter<HashingReader>,
    profile: &'static dyn Profile,
    header: Header,
    /// Rows read while looking for the header, after it (to hand out first).
    pending: std::collections::VecDeque<Record>,
    record: Record,
    control_totals: Vec<ControlTotal>,
    rows_read: u64,
}

/// One data row of a bill, with accessors that report problems at its location.
pub struct Row<'a> {
    pub(crate) ctx: &'a FileCtx,
    pub(crate) record: &'a Record,
    pub(crate) header: &'a Header,
    pub(crate) columns: &'static [Column],
    pub(crate) line: u64,
    /// The record as text, when [`FileCtx::whole`] could read it so.
    pub(crate) whole: Option<&'a str>,
}

impl<'a> Row<'a> {
    /// 1-based line of the row.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The file the row is in.
    pub fn path(&self) -> &Path {
        &self.ctx.path
    }

    /// The years the row's times may fall in.
    pub fn window(&self) -> Window {
        self.ctx.window
    }

    /// Whether the file has the profile's column `col`.
    pub(crate) fn has(&self, col: usize) -> bool {
        self.header.map[col].is_some()
    }

    /// The header name of the profile's column `col`, or its first alias when absent.
    pub(crate) fn column_name(&self, col: usize) -> &str {
        match self.header.map[col] {
            Some(i) => &self.header.names[i],
            None => self.columns[col].aliases[0],
        }
    }

    /// An error about column `col` of this row.
    pub(crate) fn error(&self, col: usize, message: impl Into<String>) -> RowError {
        RowError {
            location: Location::line(&self.ctx.path, self.line).with_column(self.column_name(col)),
            message: message.into(),
        }
    }

    /// The trimmed text of column `col`; `None` when the column is absent or the cell empty.
    pub(crate) fn text(&self, col: usize) -> Result<Option<Cow<'a, str>>, RowError> {
        let Some(i) = self.header.map[col] else { return Ok(None) };
        self.cell(i, col)
    }

    /// The header's columns that the profile does not read, as (index, name), in the order
    /// of their names: what identity adds for rows without a native id.
    pub(crate) fn unmapped(&self) -> Vec<(usize, String)> {
        let mut out: Vec<(usize, String)> = (0..self.header.names.len())
            .filter(|i| !self.header.map.contains(&Some(*i)))
            .map(|i| (i, self.header.names[i].to_lowercase()))
            .filter(|(_, name)| !name.is_empty())
            .collect();
        out.sort_by(|a, b| a.1.cmp(&b.1));
        out
    }

    /// The trimmed text of the row's `i`-th cell, which is not one the profile reads; `None`
    /// when it is empty or missing.
    pub(crate) fn unmapped_cell(&self, i: usize) -> Result<Option<Cow<'a, str>>, RowError> {
        self.cell(i, usize::MAX)
    }

    /// The trimmed text of the row's `i`-th cell; `col` names the profile's column in errors
    /// (`usize::MAX`: the header's own name).
    fn cell(&self, i: usize, col: usize) -> Result<Option<Cow<'a, str>>, RowError> {
        if let Some(cell) = self.whole.and_then(|w| w.get(self.record.range(i)?)) {
            return Ok(Some(trim(cell)).filter(|s| !s.is_empty()).map(Cow::Borrowed));
        }
        let Some(bytes) = self.record.get(i) else { return Ok(None) };
        let offset = self.record.position().map_or(0, |p| p.byte());
        // The column is named only when there is an error (naming it costs a lookup a cell).
        let name = |row: &Self| match col {
            usize::MAX => row.header.names.get(i).cloned().unwrap_or_default(),
            _ => row.column_name(col).to_owned(),
        };
        let text =
            self.ctx.decode(bytes, self.line, "", offset).map_err(|e| match e.into_kind() {
                ErrorKind::Encoding { location, offset } => RowError {
                    location: location.with_column(name(self)),
                    message: format!("bytes at offset {offset} are neither UTF-8 nor GB18030"),
                },
                other => RowError {
                    location: Location::line(&self.ctx.path, self.line),
                    message: other.to_string(),
                },
            })?;
        Ok(match text {
            Cow::Borrowed(s) => Some(trim(s)).filter(|s| !s.is_empty()).map(Cow::Borrowed),
            Cow::Owned(s) => {
                let t = trim(&s);
                (!t.is_empty()).then(|| Cow::Owned(t.to_owned()))
            }
        })
    }

    /// Column `col` as an amount written with `separator`; `None` for an empty/`-`/`NULL` cell.
    pub(crate) fn amount(
        &self,
        col: usize,
        format: crate::parse::NumberFormat,
    ) -> Result<Option<Decimal>, RowError> {
        match self.text(col)? {
            None => Ok(None),
            Some(t) => crate::parse::parse_amount_with(&t, format).map_err(|m| self.error(col, m)),
        }
    }

    /// The label of a footer row of control totals: the first non-empty cell, when it starts
    /// with 合计 / 总计 / 小计 / Total.
    pub(crate) fn footer_label(&self) -> Option<String> {
        let first = self.record.iter().find(|f| !f.iter().all(u8::is_ascii_whitespace))?;
        if first.first().is_some_and(u8::is_ascii_digit) {
            return None; // the common case: a date or an id
        }
        let text = self.ctx.decode(first, self.line, "", 0).ok()?;
        let text = text.trim();
        let lower = text.to_ascii_lowercase();
        (["合计", "总计", "小计"].iter().any(|w| text.starts_with(w)) || lower.starts_with("total"))
            .then(|| text.to_owned())
    }

    /// All cells of the row decoded, lossily where they cannot be (for reject files).
    pub(crate) fn cells(&self) -> Vec<String> {
        self.record
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let name = self.header.names.get(i).map_or("", String::as_str);
                self.ctx
                    .decode(b, self.line, name, 0)
                    .map(Cow::into_owned)
                    .unwrap_or_else(|_| String::from_utf8_lossy(b).into_owned())
            })
            .collect()
    }
}

/// What [`BillSource::next_row`] found. Cells beyond the header's last column have no name
/// and so no meaning: they are ignored (exports often end rows with a stray cell).
pub enum Next<'a> {
    /// A data row.
    Row(Row<'a>),
    /// A row that is malformed as a whole (shorter than the header).
    Bad(RowError, Vec<String>),
}

/// Files smaller than this are read through the page cache, larger ones past it (see
/// `crate::direct`): a large file that sits in the page cache is then read from the disk
/// again (1.6 GB/s on the test machines), for a tenth less CPU time.
const DIRECT_FROM_BYTES: u64 = 64 << 20;

/// What the first bytes of a CSV bill say: its encoding, the length of its byte-order mark,
/// whether a multibyte UTF-8 character was seen, and the delimiter.
struct Sniffed {
    encoding: Encoding,
    bom: usize,
    seen_multibyte: bool,
    delimiter: u8,
}

/// The delimiter of a CSV bill: a semicolon when the line of the first rows with the most
/// semicolons has more of them than any of those lines has commas (spreadsheets in locales
/// with a decimal comma save `;`-separated files), else a comma.
fn sniff_delimiter(head: &[u8]) -> u8 {
    let lines = head.split(|&b| b == b'\n').take(HEADER_SEARCH_ROWS);
    let (mut commas, mut semicolons) = (0, 0);
    for line in lines {
        commas = commas.max(memchr::memchr_iter(b',', line).count());
        semicolons = semicolons.max(memchr::memchr_iter(b';', line).count());
    }
    if semicolons > commas { b';' } else { b',' }
}

/// Decides the encoding and the delimiter from the first bytes of a CSV bill.
fn sniff(path: &Path, head: &[u8]) -> Result<Sniffed> {
    if head.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(ErrorKind::Empty { path: path.to_owned() }.into());
    }
    let delimiter = sniff_delimiter(head);
    let sniffed =
        |encoding, bom, seen_multibyte| Ok(Sniffed { encoding, bom, seen_multibyte, delimiter });
    if head.starts_with(b"\xEF\xBB\xBF") {
        return sniffed(Encoding::Utf8, 3, false);
    }
    let cut_short = head.len() == SNIFF_BYTES;
    let utf8_valid_up_to = match std::str::from_utf8(head) {
        Ok(s) => return sniffed(Encoding::Utf8, 0, !s.is_ascii()),
        Err(e) if e.error_len().is_none() && cut_short => return sniffed(Encoding::Utf8, 0, true),
        Err(e) => e.valid_up_to(),
    };
    let mut decoder = encoding_rs::GB18030.new_decoder_without_bom_handling();
    let mut out = String::with_capacity(head.len() * 2);
    let (result, read) = decoder.decode_to_string_without_replacement(head, &mut out, !cut_short);
    match result {
        encoding_rs::DecoderResult::Malformed(bad, _) => {
            // Report where the file stops being readable in the encoding that got further.
            let offset = (read - bad as usize).max(utf8_valid_up_to);
            let before = &head[..offset];
            let line = 1 + before.iter().filter(|&&b| b == b'\n').count() as u64;
            let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let index = before[line_start..].iter().filter(|&&b| b == delimiter).count();
            let first_line = head.split(|&b| b == b'\n').next().unwrap_or_default();
            let names = String::from_utf8_lossy(first_line);
            let column = match names.split(char::from(delimiter)).nth(index) {
                Some(name) if line > 1 => name.trim().to_owned(),
                _ => format!("#{}", index + 1),
            };
            let location = Location::line(path, line).with_column(column);
            Err(ErrorKind::Encoding { location, offset: offset as u64 }.into())
        }
        _ => sniffed(Encoding::Gb18030, 0, true),
    }
}

fn is_blank(record: &Record) -> bool {
    record.iter().all(|f| f.iter().all(u8::is_ascii_whitespace))
}

impl BillSource {
    /// Opens `path`, decides its encoding, finds its header among the first rows and picks the
    /// profile: `forced` if given, else the best-scoring one of `candidates`.
    pub fn open(
        path: &Path,
        forced: Option<&'static dyn Profile>,
        candidates: &[&'static dyn Profile],
    ) -> Result<Self> {
        let Opened { head, mut rest, direct } = open_input(path)?;
        let (hashing, read_size, sniffed) = if is_spreadsheet(path, &head) {
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
            let hashing = HashingReader { inner: csv, hasher, bytes: size, hashing: false };
            let sniffed =
                Sniffed { encoding: Encoding::Utf8, bom: 0, seen_multibyte: true, delimiter: b',' };
            (hashing, READ_BYTES, sniffed)
        } else {
            let sniffed = sniff(path, &head)?;
            let read_size = if direct { crate::direct::TRANSFER_BYTES } else { READ_BYTES };
            let inner: Box<dyn Read + Send> = Box::new(io::Cursor::new(head).chain(rest));
            let hashing = HashingReader { inner, hasher: Sha256::new(), bytes: 0, hashing: true };
            (hashing, read_size, sniffed)
        };
        let Sniffed { encoding, bom, seen_multibyte, delimiter } = sniffed;
        let mut reader = Splitter::with_read_size(hashing, read_size).with_delimiter(delimiter);
        // The byte-order mark is hashed with the file, and part of no cell.
        reader.skip(bom);
        let ctx = FileCtx {
            path: path.to_owned(),
            encoding: Cell::new(encoding),
            seen_multibyte: Cell::new(seen_multibyte),
            window: Window::default(),
        };
        let mut head = Vec::new();
        let mut record = Record::new();
        // A row that cannot be split among the first ones is reported once the header is
        // known, so that its column has a name.
        let mut unsplit = None;
        while head.len() < HEADER_SEARCH_ROWS {
            match reader.read(&mut record) {
                Ok(true) => head.push(record.clone()),
                Ok(false) => break,
                Err(SplitError::Io(e)) => return Err(Error::io(path, e)),
                Err(e) => {
                    unsplit = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = unsplit.take_if(|_| head.iter().all(is_blank)) {
            return Err(split_error(e, path, None));
        }
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
        let pool: Vec<&'static dyn Profile> = match forced {
            Some(p) => vec![p],
            None => candidates.to_vec(),
        };
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
    pub fn profile(&self) -> &'static dyn Profile {
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

    /// Bytes of the file read so far (read ahead of the rows handed out by up to 64 KiB).
    pub fn bytes_read(&self) -> u64 {
        self.reader.get_ref().bytes
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
            if let Some(label) = row.footer_label() {
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

impl<'a> Row<'a> {
    /// The row as a data row, or as malformed when it is shorter than the header.
    pub(crate) fn checked(self) -> Next<'a> {
        let width = self.header.names.len();
        let found = self.record.len();
        if found < width {
            let column = self.header.names[found].clone();
            let error = RowError {
                location: Location::line(&self.ctx.path, self.line).with_column(column),
                message: format!("missing (the row has {found} fields, the header {width})"),
            };
            return Next::Bad(error, self.cells());
        }
        Next::Row(self)
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

/// For each of `columns`, the index of the first header name equal to one of its aliases.
fn map_columns(columns: &[Column], names: &[String]) -> Vec<Option<usize>> {
    columns
        .iter()
        .map(|c| {
            c.aliases.iter().find_map(|a| names.iter().position(|n| n.eq_ignore_ascii_case(a)))
        })
        .collect()
}

/// Refuses a header that holds a column the profile reads twice (under one name or two of
/// its aliases): the copies may disagree, and reading one of them would be a silent choice.
fn refuse_repeated_columns(
    path: &Path,
    line: u64,
    columns: &[Column],
    names: &[String],
) -> Result<()> {
    for c in columns {
        let found: Vec<usize> = names
            .iter()
            .enumerate()
            .filter(|(_, n)| c.aliases.iter().any(|a| n.eq_ignore_ascii_case(a)))
            .map(|(i, _)| i)
            .collect();
        if let [first, second, ..] = found[..] {
            return Err(ErrorKind::Malformed {
                location: Location::line(path, line),
                message: format!(
                    "column {} appears twice (columns {} and {})",
                    names[first],
                    first + 1,
                    second + 1
                ),
            }
            .into());
        }
    }
    Ok(())
}

/// How well a row fits a profile: columns present, and the required ones it lacks.
fn score(columns: &[Column], names: &[String]) -> (usize, Vec<String>) {
    let map = map_columns(columns, names);
    let found = map.iter().filter(|m| m.is_some()).count();
    let missing = columns
        .iter()
        .zip(&map)
        .filter(|(c, m)| c.required && m.is_none())
        .map(|(c, _)| c.aliases[0].to_owned())
        .collect();
    (found, missing)
}

/// Picks the (profile, header row) pair with the most matching columns among those that have
/// every required column.
fn choose(
    path: &Path,
    pool: &[&'static dyn Profile],
    rows: &[Vec<String>],
    lines: &[u64],
    forced: bool,
) -> Result<(&'static dyn Profile, usize)> {
    let mut best: Option<(usize, &'static dyn Profile, usize)> = None;
    let mut near: Vec<(usize, NearMiss, usize)> = Vec::new();
    for &profile in pool {
        let mut closest: Option<(usize, Vec<String>, usize)> = None;
        for (i, names) in rows.iter().enumerate() {
            let (found, missing) = score(profile.columns(), names);
            if missing.is_empty() && best.as_ref().is_none_or(|b| found > b.0) {
                best = Some((found, profile, i));
            }
            if closest.as_ref().is_none_or(|c| found > c.0) {
                closest = Some((found, missing, i));
            }
        }
        if let Some((found, missing, i)) = closest {
            near.push((found, NearMiss { profile: profile.name().to_owned(), missing }, i));
        }
    }
    if let Some((_, profile, i)) = best {
        return Ok((profile, i));
    }
    near.sort_by_key(|n| std::cmp::Reverse(n.0));
    let header_row = near.first().map_or(0, |n| n.2);
    let mut header = rows.get(header_row).cloned().unwrap_or_default();
    header.retain(|h| !h.is_empty());
    let closest: Vec<NearMiss> =
        near.into_iter().take(if forced { 1 } else { 2 }).map(|n| n.1).collect();
    let mut location = Location::line(path, lines.get(header_row).copied().unwrap_or(1));
    if let Some(column) = closest.first().and_then(|n| n.missing.first()) {
        location = location.with_column(column.clone());
    }
    Err(ErrorKind::UnknownFormat { location, header, closest }.into())
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
        let hashing =
            HashingReader { inner: Box::new(file), hasher: Sha256::new(), bytes: 0, hashing: true };
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

//! Spreadsheet bills (XLSX, XLS, ODS): the first sheet as CSV text, row for row, so that the
//! rest of import reads it like any CSV bill and errors name the row a spreadsheet shows.
//! Memory is bounded: a workbook is at most 256 MiB, its XML parts are checked for size
//! before calamine holds them, and an XLSX sheet is streamed cell by cell.

use std::io::{self, Read};
use std::path::Path;

use crate::error::{Error, ErrorKind, Result};

/// Whether `path` names a spreadsheet, or `head` (the input's first bytes) starts with a ZIP
/// (XLSX, ODS) or OLE (XLS) signature.
pub(crate) fn is_spreadsheet(path: &Path, head: &[u8]) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    matches!(ext.as_deref(), Some("xlsx" | "xlsm" | "xlsb" | "xls" | "ods"))
        || head.starts_with(b"PK\x03\x04")
        || head.starts_with(&[0xD0, 0xCF, 0x11, 0xE0])
}

/// The most bytes a spreadsheet bill may have: 256 MiB. A workbook is held in memory while it
/// is read (its parts are found through the directory at the end of the file); a bill that
/// large is better exported as CSV, which streams.
pub const MAX_SPREADSHEET_BYTES: u64 = 256 << 20;

/// The most columns a spreadsheet row may have: Excel's 16,384 (`XFD`).
pub(crate) const MAX_SHEET_COLUMNS: u32 = 16_384;

pub(crate) fn not_a_workbook(path: &Path, cause: impl std::fmt::Display) -> Error {
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
pub(crate) fn spreadsheet_as_csv(path: &Path, bytes: Vec<u8>) -> Result<Box<dyn Read + Send>> {
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
pub(crate) const MAX_PART_BYTES: u64 = 4 << 30;

/// The most bytes the shared strings of a workbook may inflate to: 512 MiB (they are held in
/// memory while the sheet is read).
pub(crate) const MAX_SHARED_STRINGS_BYTES: u64 = 512 << 20;

/// Reads the XML parts of a zipped workbook (XLSX, ODS) once before calamine does, in bounded
/// memory, and refuses one whose reading would take unbounded memory or time: a part that
/// inflates past [`MAX_PART_BYTES`] (shared strings past [`MAX_SHARED_STRINGS_BYTES`]), or a
/// text or tag longer than [`super::split::MAX_RECORD_BYTES`] (the XML reader holds a whole
/// text in memory: 300 MB of spaces in a 300 KB file took 900 MB). A file that is not a zip
/// is left to calamine, which says what it is not.
pub(crate) fn check_zipped_parts(path: &Path, data: &std::sync::Arc<[u8]>) -> Result<()> {
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
pub(crate) fn data_text(cell: &calamine::Data) -> String {
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
pub(crate) fn cell_text(cell: calamine::DataRef<'_>) -> String {
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
pub(crate) struct SheetCsv {
    bytes: Vec<u8>,
}

impl SheetCsv {
    fn row(&mut self, cells: &[String]) {
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                self.bytes.push(b',');
            }
            if cell.contains([',', '"']) {
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
pub(crate) struct ChannelReader {
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
pub(crate) fn stream_xlsx(
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
    std::thread::spawn(move || {
        let sent = convert_xlsx(&mut book, &sheet, &tx);
        if let Err(message) = sent {
            // The reader names the file: the error comes back as one reading it.
            let _ = tx.send(Err(format!("not a readable workbook (XLSX): {message}")));
        }
    });
    Ok(ChannelReader { rx, chunk: Vec::new(), at: 0 })
}

/// Writes the cells of `sheet` to `tx` as CSV rows, in chunks of about 256 KiB.
pub(crate) fn convert_xlsx(
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

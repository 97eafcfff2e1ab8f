//! Decoding cells: UTF-8 or GB18030, decided in file order; the import window of years; the
//! per-file state a row's accessors share.
//!
//! Decisions: a file whose first 64 KiB are pure ASCII starts as UTF-8 and switches to
//! GB18030 at the first field that is not UTF-8 but is GB18030 (English headers over Chinese
//! values). CSV splitting works on raw bytes, which is safe for GB18030: its trail bytes are
//! never `,`, `;`, `"` or a line break.

use std::borrow::Cow;
use std::cell::Cell;
use std::path::PathBuf;

use super::split::Record;
use crate::error::{Error, ErrorKind, Location, Result, RowProblem};

/// The text encoding a file was read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 (with or without BOM).
    Utf8,
    /// GB18030, which covers GBK and GB2312.
    Gb18030,
}

/// Per-file decoding state, shared with the rows it hands out.
pub(crate) struct FileCtx {
    pub(crate) path: PathBuf,
    encoding: Cell<Encoding>,
    seen_multibyte: Cell<bool>,
    /// The years a time of the file may fall in.
    pub(crate) window: Window,
    /// The file is a Parquet bill: its locations are rows (see [`Location::rows`]).
    pub(crate) rows: bool,
    /// The file is JSON lines: the line of the file each line of its CSV text was read from.
    pub(crate) lines: Option<std::sync::Arc<super::jsonl::LineMap>>,
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
    pub(crate) fn refusal(&self, text: &str) -> RowProblem {
        RowProblem::OutsideWindow {
            text: text.to_owned(),
            first_year: self.first_year,
            last_year: self.last_year,
        }
    }
}

impl FileCtx {
    /// The state of a file at its start: its encoding, whether a multibyte UTF-8 character
    /// was seen, the default import window.
    pub(crate) fn new(path: PathBuf, encoding: Encoding, seen_multibyte: bool) -> Self {
        FileCtx {
            path,
            encoding: Cell::new(encoding),
            seen_multibyte: Cell::new(seen_multibyte),
            window: Window::default(),
            rows: false,
            lines: None,
        }
    }

    /// Line `line` of the file, as its errors name it.
    pub(crate) fn location(&self, line: u64) -> Location {
        Location::line(&self.path, self.source_line(line)).as_rows(self.rows)
    }

    /// The line of the file that line `line` of the text read was made from (they differ for
    /// a JSON lines bill only).
    pub(crate) fn source_line(&self, line: u64) -> u64 {
        self.lines.as_ref().map_or(line, |map| map.line(line))
    }

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
            rows: self.rows,
            lines: self.lines.clone(),
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
    /// one per cell; [`super::row::Row::text`] still decodes a cell whose bounds fall inside
    /// a character.
    pub(crate) fn whole<'r>(&self, record: &'r Record) -> Option<&'r str> {
        let bytes = record.as_slice();
        let settled_utf8 = self.encoding.get() == Encoding::Utf8 && self.seen_multibyte.get();
        if settled_utf8 || bytes.is_ascii() { std::str::from_utf8(bytes).ok() } else { None }
    }

    /// Whether the encoding can still change: the file has been ASCII so far.
    pub(crate) fn undecided(&self) -> bool {
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
                location: self.location(line).with_column(column),
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
pub(crate) fn trim(cell: &str) -> &str {
    match (cell.as_bytes().first(), cell.as_bytes().last()) {
        (Some(first), Some(last)) if first.is_ascii_graphic() && last.is_ascii_graphic() => cell,
        _ => cell.trim(),
    }
}

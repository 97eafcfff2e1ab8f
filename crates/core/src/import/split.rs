//! Splitting a CSV byte stream into records: the `csv` crate's reading (RFC 4180 quoting,
//! `\n`, `\r\n` or `\r` line ends, empty lines skipped, rows of any width), faster on the rows
//! bills are made of.
//!
//! A line without a quote or a stray `\r` is split where its commas are (`memchr`, a few
//! bytes a cycle) and copied into the record whole. Any other record goes through
//! `csv-core`, the state machine under the `csv` crate, which also takes the records whose
//! quoted cells run over several lines. The fields are the `csv` crate's, record for record (a
//! property test compares them on generated files). The position of a record is its first
//! byte and the line that byte is on; the `csv` crate gave the position before the line end
//! or empty lines it skipped, so errors in CRLF files were reported a line too high.
//!
//! Limits, so that no input takes unbounded memory: a record holds at most
//! [`MAX_RECORD_BYTES`], and a quoted cell runs over at most [`MAX_RECORD_LINES`] lines. A
//! quote still open at the end of the stream, or open past that many lines, is an error
//! naming the line and the field where the record began ([`SplitError::Unclosed`]): the `csv`
//! crate would take the rest of the file into the cell, silently.
//!
//! The delimiter is a comma unless the caller says otherwise (a `;`-separated file, as
//! spreadsheets save them in locales that write a decimal comma).
//!
//! Why not `csv::Reader` alone: its state machine reads a byte at a time, and on large
//! exports that was a visible share of an import's CPU time; most bill lines have no quote.

use std::io::{self, Read};
use std::ops::Range;

use crate::direct::{ALIGN, Aligned};

use csv_core::ReadRecordResult;

/// One record: its fields, and where it starts in the file.
///
/// The fields are stored one after another with one byte between them (the comma of the
/// line, or a comma put there for a record that was unquoted), so that a record read on the
/// quick path is one copy of its line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Record {
    bytes: Vec<u8>,
    /// The end of each field in `bytes`; field `i` starts one byte after field `i - 1` ends.
    ends: Vec<usize>,
    position: Position,
}

/// Where a record starts: its 1-based line and its byte offset in the stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Position {
    line: u64,
    byte: u64,
}

impl Position {
    pub(crate) fn line(&self) -> u64 {
        self.line
    }
    pub(crate) fn byte(&self) -> u64 {
        self.byte
    }
}

impl Record {
    pub(crate) fn new() -> Self {
        Record::default()
    }

    /// Fields in the record.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Where field `i` is in [`Record::as_slice`].
    pub(crate) fn range(&self, i: usize) -> Option<Range<usize>> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] + 1 };
        Some(start..end)
    }

    /// Field `i`.
    pub(crate) fn get(&self, i: usize) -> Option<&[u8]> {
        self.range(i).map(|r| &self.bytes[r])
    }

    /// The fields with one byte between each two: what [`Record::range`] indexes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.ends.last().copied().unwrap_or(0)]
    }

    /// The fields in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// Where the record starts. Always known; an `Option` so that callers read like the `csv`
    /// crate's records.
    pub(crate) fn position(&self) -> Option<Position> {
        Some(self.position)
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }
}

/// Bytes asked of the source per read: small enough for the buffer to stay in the CPU cache
/// (larger reads of a cached file were several times slower on the 2-core machines).
pub(crate) const READ_BYTES: usize = 64 * 1024;

/// The most bytes a record may have: 1 MiB. No bill has a row of that size; a file that does
/// (a line without an end, `/dev/zero`) is refused before it takes the machine's memory.
pub(crate) const MAX_RECORD_BYTES: usize = 1 << 20;

/// The most lines a quoted cell may run over: 1,000. Notes in real bills run over a few lines.
pub(crate) const MAX_RECORD_LINES: u64 = 1000;

/// Why a stream could not be split.
#[derive(Debug)]
pub(crate) enum SplitError {
    /// The stream could not be read.
    Io(io::Error),
    /// A record of more than [`MAX_RECORD_BYTES`], starting at `line`, in its field `field`.
    TooLong {
        /// Line where the record starts.
        line: u64,
        /// Index of the field being read.
        field: usize,
    },
    /// A quote opened in field `field` of the record at `line` is not closed by the end of
    /// the stream (`at_end`) or within [`MAX_RECORD_LINES`] lines.
    Unclosed {
        /// Line where the record starts.
        line: u64,
        /// Index of the field the quote opened in.
        field: usize,
        /// Whether the stream ended with the quote open.
        at_end: bool,
    },
}

impl From<io::Error> for SplitError {
    fn from(e: io::Error) -> Self {
        SplitError::Io(e)
    }
}

/// Where a record being read by `csv-core` is, as its quoting goes (`csv-core` keeps this to
/// itself): what tells an unclosed quote at the end of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quoting {
    FieldStart,
    Unquoted,
    Quoted,
    /// A quote inside a quoted field: closing it, or the first of two.
    QuoteInQuoted,
}

impl Quoting {
    fn step(self, b: u8, delimiter: u8) -> Quoting {
        use Quoting::*;
        match (self, b) {
            (Quoted, b'"') => QuoteInQuoted,
            (Quoted, _) => Quoted,
            (QuoteInQuoted, b'"') => Quoted,
            (FieldStart, b'"') => Quoted,
            (_, b'\n' | b'\r') => FieldStart,
            (_, d) if d == delimiter => FieldStart,
            _ => Unquoted,
        }
    }

    /// The state after `bytes`: what folding [`Quoting::step`] over them gives, but skipping
    /// with `memchr` the bytes that cannot change it (a quoted cell's text, up to its next
    /// quote; an unquoted cell's, up to its end), so that a record is not read a byte at a
    /// time twice (`csv-core` already does).
    fn scan(mut self, bytes: &[u8], delimiter: u8) -> Quoting {
        let mut i = 0;
        while i < bytes.len() {
            let rest = &bytes[i..];
            match self {
                Quoting::Quoted => match memchr::memchr(b'"', rest) {
                    Some(k) => (self, i) = (Quoting::QuoteInQuoted, i + k + 1),
                    None => return Quoting::Quoted,
                },
                Quoting::Unquoted => match memchr::memchr3(delimiter, b'\n', b'\r', rest) {
                    Some(k) => (self, i) = (Quoting::FieldStart, i + k + 1),
                    None => return Quoting::Unquoted,
                },
                Quoting::FieldStart | Quoting::QuoteInQuoted => {
                    (self, i) = (self.step(rest[0], delimiter), i + 1);
                }
            }
        }
        self
    }
}

/// Reads [`Record`]s from a byte stream.
pub(crate) struct Splitter<R> {
    inner: R,
    buf: Aligned,
    /// Unread bytes are `buf[pos..end]`.
    pos: usize,
    end: usize,
    /// Whether `inner` has no more bytes.
    eof: bool,
    /// Offset in the stream of `buf[0]` (negative when the first bytes read were moved up).
    base: i64,
    /// Bytes at the start of the stream that are no part of any record (a byte-order mark).
    skip: usize,
    /// Line of `buf[pos]`.
    line: u64,
    /// Bytes asked of `inner` per read.
    read_size: usize,
    core: csv_core::Reader,
    /// The field delimiter.
    delimiter: u8,
    /// `csv-core`'s output for the record it is reading.
    out: Vec<u8>,
    out_ends: Vec<usize>,
}

impl<R: Read> Splitter<R> {
    /// A splitter reading `read` bytes at a time: `crate::direct::TRANSFER_BYTES` for a file
    /// read past the page cache (the tests make it small).
    pub(crate) fn with_read_size(inner: R, read: usize) -> Self {
        Splitter {
            inner,
            buf: Aligned::new((2 * read.max(1)).next_multiple_of(ALIGN)),
            pos: 0,
            end: 0,
            eof: false,
            base: 0,
            skip: 0,
            line: 1,
            read_size: read.max(1),
            core: csv_core::Reader::new(),
            delimiter: b',',
            out: vec![0; 1024],
            out_ends: vec![0; 64],
        }
    }

    /// Splits fields at `delimiter` instead of a comma.
    pub(crate) fn with_delimiter(mut self, delimiter: u8) -> Self {
        self.delimiter = delimiter;
        self.core = csv_core::ReaderBuilder::new().delimiter(delimiter).build();
        self
    }

    pub(crate) fn get_ref(&self) -> &R {
        &self.inner
    }

    /// Leaves the stream's first `bytes` out of every record (they still count in offsets).
    pub(crate) fn skip(&mut self, bytes: usize) {
        self.skip = bytes;
    }

    /// Reads the next record into `record`; false at the end of the stream.
    pub(crate) fn read(&mut self, record: &mut Record) -> Result<bool, SplitError> {
        while self.skip > 0 {
            if self.end - self.pos < self.skip && !self.eof {
                self.fill()?;
                continue;
            }
            let skipped = self.skip.min(self.end - self.pos);
            self.pos += skipped;
            self.skip = 0;
        }
        loop {
            let unread = &self.buf[self.pos..self.end];
            let Some(newline) = memchr::memchr(b'\n', unread) else {
                if self.eof {
                    // The last line, without a line end: csv-core knows how a stream ends.
                    return self.read_quoted(record);
                }
                if unread.len() > MAX_RECORD_BYTES {
                    return Err(SplitError::TooLong { line: self.line, field: 0 });
                }
                self.fill()?;
                continue;
            };
            let mut line = &unread[..newline];
            if let [rest @ .., b'\r'] = line {
                line = rest;
            }
            if line.is_empty() {
                self.pos += newline + 1;
                self.line += 1;
                continue;
            }
            if line.len() > MAX_RECORD_BYTES {
                return Err(SplitError::TooLong { line: self.line, field: 0 });
            }
            if memchr::memchr2(b'"', b'\r', line).is_some() {
                return self.read_quoted(record);
            }
            record.clear();
            record.bytes.extend_from_slice(line);
            record.ends.extend(memchr::memchr_iter(self.delimiter, line));
            record.ends.push(line.len());
            record.position = Position { line: self.line, byte: self.offset(self.pos) };
            self.pos += newline + 1;
            self.line += 1;
            return Ok(true);
        }
    }

    /// Reads one record with `csv-core` from `buf[pos]`, reading more of the stream as needed.
    fn read_quoted(&mut self, record: &mut Record) -> Result<bool, SplitError> {
        let (mut out_len, mut ends_len) = (0, 0);
        let mut start: Option<Position> = None;
        let mut quoting = Quoting::FieldStart;
        loop {
            let input = &self.buf[self.pos..self.end];
            let (result, read, written, ended) = self.core.read_record(
                input,
                &mut self.out[out_len..],
                &mut self.out_ends[ends_len..],
            );
            // csv-core skips empty lines before a record: the record starts at its first byte.
            let skipped = input[..read].iter().take_while(|b| matches!(b, b'\n' | b'\r')).count();
            if start.is_none() && skipped < read {
                let lines = memchr::memchr_iter(b'\n', &input[..skipped]).count() as u64;
                start = Some(Position {
                    line: self.line + lines,
                    byte: self.offset(self.pos + skipped),
                });
            }
            self.line += memchr::memchr_iter(b'\n', &input[..read]).count() as u64;
            let delimiter = self.delimiter;
            quoting = quoting.scan(&input[..read], delimiter);
            self.pos += read;
            out_len += written;
            ends_len += ended;
            let first_line = start.map_or(self.line, |s| s.line);
            if out_len > MAX_RECORD_BYTES {
                return Err(SplitError::TooLong { line: first_line, field: ends_len });
            }
            if self.line - first_line > MAX_RECORD_LINES {
                let at_end = false;
                return Err(SplitError::Unclosed { line: first_line, field: ends_len, at_end });
            }
            match result {
                ReadRecordResult::InputEmpty => {
                    if self.eof {
                        continue; // an empty input tells csv-core the stream ended
                    }
                    self.fill()?;
                }
                ReadRecordResult::OutputFull => {
                    let grown = self.out.len() * 2;
                    self.out.resize(grown, 0);
                }
                ReadRecordResult::OutputEndsFull => {
                    let grown = self.out_ends.len() * 2;
                    self.out_ends.resize(grown, 0);
                }
                ReadRecordResult::Record => {
                    if self.eof && self.pos == self.end && quoting == Quoting::Quoted {
                        let line = start.map_or(self.line, |s| s.line);
                        let field = ends_len.saturating_sub(1);
                        return Err(SplitError::Unclosed { line, field, at_end: true });
                    }
                    record.clear();
                    let mut from = 0;
                    for &end in &self.out_ends[..ends_len] {
                        record.bytes.extend_from_slice(&self.out[from..end]);
                        record.ends.push(record.bytes.len());
                        record.bytes.push(b',');
                        from = end;
                    }
                    record.position = start.unwrap_or_default();
                    return Ok(true);
                }
                ReadRecordResult::End => return Ok(false),
            }
        }
    }

    /// The offset in the stream of `buf[at]`.
    fn offset(&self, at: usize) -> u64 {
        (self.base + at as i64) as u64
    }

    /// Reads more of the stream after the unread bytes, which first move to just before a
    /// multiple of [`ALIGN`]: reads land at aligned places, as a read past the page cache
    /// needs. Grows the buffer when one record fills it.
    fn fill(&mut self) -> io::Result<()> {
        let unread = self.end - self.pos;
        let end = unread.next_multiple_of(ALIGN);
        if self.buf.len() < end + self.read_size {
            self.buf = self.buf.grown((end + self.read_size).max(2 * self.buf.len()));
        }
        let pos = end - unread;
        self.buf.copy_within(self.pos..self.end, pos);
        self.base += self.pos as i64 - pos as i64;
        (self.pos, self.end) = (pos, end);
        let room = self.read_size;
        loop {
            match self.inner.read(&mut self.buf[self.end..self.end + room]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
#[path = "split_tests.rs"]
mod tests;

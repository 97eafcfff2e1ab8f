//! Opening a bill once: the file (past the page cache when large), a pipe or standard input;
//! its first bytes read ahead to tell a spreadsheet, the encoding and the delimiter; its bytes
//! hashed on the way (the digest the ledger records).
//!
//! Decisions: a UTF-8 BOM is stripped; the first 64 KiB decide between UTF-8 and GB18030 (see
//! `decode`); the delimiter is a semicolon when the first lines hold more of them than of
//! commas (spreadsheets in decimal-comma locales save `;`-separated files).

use std::io::{self, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::decode::Encoding;
use super::header::HEADER_SEARCH_ROWS;
use crate::error::{Error, ErrorKind, Location, Result};

pub(crate) const SNIFF_BYTES: usize = 64 * 1024;

/// Reads the bytes of a file once, hashing them on the way.
pub(crate) struct HashingReader {
    pub(crate) inner: Box<dyn Read + Send>,
    pub(crate) hasher: Sha256,
    pub(crate) bytes: u64,
    /// False when `inner` is not the file's bytes (a spreadsheet converted to CSV, whose
    /// digest was taken from the file beforehand).
    pub(crate) hashing: bool,
    /// For a compressed bill, the compressed bytes read so far (progress is measured in them).
    pub(crate) consumed: Option<super::delivery::Consumed>,
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

/// The name that stands for the standard input among the files of an import.
pub const STDIN: &str = "-";

/// An input opened once: its first bytes read ahead (they tell a spreadsheet, the encoding
/// and the delimiter), the rest to stream. A pipe or the standard input cannot be opened
/// twice, so nothing is.
pub(crate) struct Opened {
    pub(crate) head: Vec<u8>,
    pub(crate) rest: Box<dyn Read + Send>,
    pub(crate) direct: bool,
    /// For a compressed bill, the compressed bytes read so far.
    pub(crate) consumed: Option<super::delivery::Consumed>,
}

/// Opens `path` (a file, standard input, or a zip archive's member named
/// `archive.zip!member.csv`) and reads its first bytes; a gzip stream is decompressed as it
/// is read, and its first decompressed bytes are the head (see `delivery`).
pub(crate) fn open_input(path: &Path) -> Result<Opened> {
    let (mut rest, direct): (Box<dyn Read + Send>, bool) = if path == Path::new(STDIN) {
        (Box::new(io::stdin()), false)
    } else if let Some((archive, member)) = super::delivery::member_of(path) {
        (super::delivery::open_member(&archive, &member)?, false)
    } else {
        let file =
            crate::direct::Reader::open(path, DIRECT_FROM_BYTES).map_err(|e| Error::io(path, e))?;
        let direct = file.is_direct();
        (Box::new(file), direct)
    };
    let head = read_head(path, &mut rest)?;
    if super::delivery::is_gzip(&head) || super::delivery::is_zstd(&head) {
        let (mut rest, consumed) = if super::delivery::is_gzip(&head) {
            super::delivery::gunzip(head, rest)
        } else {
            super::delivery::unzstd(path, head, rest)?
        };
        let head = read_head(path, &mut rest)?;
        return Ok(Opened { head, rest, direct: false, consumed: Some(consumed) });
    }
    Ok(Opened { head, rest, direct, consumed: None })
}

/// The first [`SNIFF_BYTES`] of `rest` (fewer when it is shorter).
fn read_head(path: &Path, rest: &mut Box<dyn Read + Send>) -> Result<Vec<u8>> {
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
    Ok(head[..len].to_vec())
}

/// Files smaller than this are read through the page cache, larger ones past it (see
/// `crate::direct`): a large file that sits in the page cache is then read from the disk
/// again, for less CPU time (the disk moves the bytes, not the kernel's copy).
pub(crate) const DIRECT_FROM_BYTES: u64 = 64 << 20;

/// What the first bytes of a CSV bill say: its encoding, the length of its byte-order mark,
/// whether a multibyte UTF-8 character was seen, and the delimiter.
pub(crate) struct Sniffed {
    pub(crate) encoding: Encoding,
    pub(crate) bom: usize,
    pub(crate) seen_multibyte: bool,
    pub(crate) delimiter: u8,
}

/// The delimiter of a CSV bill: a semicolon when the line of the first rows with the most
/// semicolons has more of them than any of those lines has commas (spreadsheets in locales
/// with a decimal comma save `;`-separated files), else a comma.
pub(crate) fn sniff_delimiter(head: &[u8]) -> u8 {
    let lines = head.split(|&b| b == b'\n').take(HEADER_SEARCH_ROWS);
    let (mut commas, mut semicolons) = (0, 0);
    for line in lines {
        commas = commas.max(memchr::memchr_iter(b',', line).count());
        semicolons = semicolons.max(memchr::memchr_iter(b';', line).count());
    }
    if semicolons > commas { b';' } else { b',' }
}

/// Decides the encoding and the delimiter from the first bytes of a CSV bill.
pub(crate) fn sniff(path: &Path, head: &[u8]) -> Result<Sniffed> {
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

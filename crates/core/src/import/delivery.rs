//! Bills as the platforms deliver them: gzip-compressed, in zip archives, in folders (with an
//! AWS Data Exports or CUR manifest that says which files are the export).
//!
//! Decisions:
//! - Compression is told by content (the first bytes), never by name: a gzip stream (one
//!   member or several, as AWS writes them) or a zstd stream (with the store feature) is
//!   decompressed as it is read, on the reader
//!   thread, so a bill of any size imports in bounded memory. The ledger records the digest
//!   and size of the decompressed bill, so the same export delivered as CSV or as `.csv.gz` is
//!   the same file to the ledger (and its charges have the same ids either way).
//! - A zip archive that is not a workbook (no `[Content_Types].xml`, no ODS `mimetype`) is a
//!   parcel of bills: each member whose name is a bill's (see [`is_bill_name`]) is imported as
//!   a source of its own, named `archive.zip!member.csv` in the ledger and in every error;
//!   members in folders of their own, in name order. Stored and deflated members are read; an
//!   encrypted one, or another method, is refused. A member's CRC is checked as it is read.
//! - Bombs: a gzip stream or zip member that inflates to more than [`MAX_INFLATION`] times its
//!   compressed size (past the first [`INFLATION_FREE_BYTES`]) is refused, as is a member
//!   whose declared sizes say so before a byte is read, and an archive of more than
//!   [`MAX_MEMBERS`] members. Real bills compress 5 to 50 times; a kilobyte inflating to
//!   gigabytes is not a bill.
//! - A folder is walked in path order (byte order of the names), recursing; a file whose name
//!   is not a bill's is skipped with a note, hidden files and folders silently. When the walk
//!   finds manifests (`…Manifest.json`: AWS Data Exports list `dataFiles`, legacy CUR
//!   `reportKeys`), exactly the files they list are imported (a listed file is matched by the
//!   end of its key: its name and as many of its folders as the walk has), every other bill in
//!   the walk is skipped with a note naming the manifest, and a listed file that is missing is
//!   an error: the export is incomplete. A listed part is found in either form: the
//!   manifest's `…csv.gz` decompressed by the user to `…csv` (or the other way round, and the
//!   same for `.zst`) is that part; with both forms present the first in path order is read
//!   and the other skipped with a note; a part missing in every form is the error, naming it.
//! - A zip archive or a folder cannot come from standard input; a gzip stream can.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, ErrorKind, Result};

/// The most a compressed bill may inflate, as a multiple of its compressed size.
pub const MAX_INFLATION: u64 = 250;

/// The most members a zip archive of bills may have.
pub const MAX_MEMBERS: usize = 10_000;

/// What a compressed bill may inflate to whatever its compressed size: 64 MiB.
pub const INFLATION_FREE_BYTES: u64 = 64 << 20;

/// What separates an archive's path from its member's in the name of a member.
pub const MEMBER_SEPARATOR: char = '!';

/// The gzip magic bytes.
pub(crate) fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b])
}

/// The zstd magic bytes.
pub(crate) fn is_zstd(head: &[u8]) -> bool {
    head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
}

/// An input given to an import that is not imported, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why it was not imported.
    pub reason: String,
}

/// The bills of an import's inputs: files as given, the members of zip archives of bills, the
/// bills of folders; and what was skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bills {
    /// The bills to import, in order.
    pub bills: Vec<PathBuf>,
    /// What was skipped, with why.
    pub skipped: Vec<Skipped>,
}

/// Whether a file name is a bill's: CSV or text, a workbook, Parquet, a gzip, zstd or zip of
/// them.
pub fn is_bill_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let name = name.strip_suffix(".gz").or_else(|| name.strip_suffix(".zst")).unwrap_or(&name);
    [".csv", ".txt", ".tsv", ".xlsx", ".xlsm", ".xls", ".ods", ".zip", ".parquet"]
        .iter()
        .any(|e| name.ends_with(e))
}

/// The bills of `inputs` (see the module docs).
pub fn bills_of(inputs: &[PathBuf]) -> Result<Bills> {
    let mut out = Bills::default();
    for input in inputs {
        if input.is_dir() {
            folder(input, &mut out)?;
        } else {
            file(input, &mut out)?;
        }
    }
    Ok(out)
}

/// A file given or found: a zip archive of bills becomes its members, anything else is a bill.
fn file(path: &Path, out: &mut Bills) -> Result<()> {
    if path == Path::new(super::input::STDIN) || !is_zip(path)? {
        out.bills.push(path.to_owned());
        return Ok(());
    }
    // A workbook by its name or its parts, or a damaged zip: the spreadsheet reader says
    // what is wrong with it.
    let named_workbook = path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        ["xlsx", "xlsm", "xlsb", "ods"].contains(&e.to_ascii_lowercase().as_str())
    });
    let named_zip = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("zip"));
    let archive = match open_archive(path) {
        Ok(archive) if !named_workbook && !is_workbook(&archive) => archive,
        Err(e) if named_zip => return Err(e),
        _ => {
            out.bills.push(path.to_owned());
            return Ok(());
        }
    };
    if archive.len() > MAX_MEMBERS {
        let message = format!("holds {} members, more than the {MAX_MEMBERS} read", archive.len());
        return Err(delivery_error(path, message));
    }
    let mut names: Vec<String> = archive
        .file_names()
        .map(|n| n.map(|n| n.into_owned()))
        .collect::<zip::result::ZipResult<_>>()
        .map_err(|e| archive_error(path, e))?;
    names.sort();
    for name in names {
        let member = PathBuf::from(format!("{}{MEMBER_SEPARATOR}{name}", path.display()));
        if name.ends_with('/') {
            continue;
        }
        let base = name.rsplit('/').next().unwrap_or(&name);
        if base.starts_with('.') || name.starts_with("__MACOSX/") {
            continue;
        }
        if !is_bill_name(base) || base.to_ascii_lowercase().ends_with(".zip") {
            let reason = "not a bill (by its name)".to_owned();
            out.skipped.push(Skipped { path: member, reason });
            continue;
        }
        out.bills.push(member);
    }
    Ok(())
}

/// Whether `path` is a regular file that starts as a zip archive does (a pipe or a device is
/// never probed: it could be read only once).
fn is_zip(path: &Path) -> Result<bool> {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return Ok(false);
    }
    let mut magic = [0u8; 4];
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let n = file.read(&mut magic).map_err(|e| Error::io(path, e))?;
    Ok(n == 4 && magic == *b"PK\x03\x04")
}

fn open_archive(path: &Path) -> Result<zip::ZipArchive<File>> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    zip::ZipArchive::new(file).map_err(|e| archive_error(path, e))
}

fn archive_error(path: &Path, e: impl std::fmt::Display) -> Error {
    delivery_error(path, format!("not a readable zip archive: {e}"))
}

fn delivery_error(path: &Path, message: String) -> Error {
    ErrorKind::Delivery { path: path.to_owned(), message }.into()
}

/// Whether a zip archive is a workbook (XLSX or ODS) rather than a parcel of bills.
fn is_workbook(archive: &zip::ZipArchive<File>) -> bool {
    archive.file_names_raw().any(|n| n == b"[Content_Types].xml" || n == b"mimetype")
}

/// The bills of a folder, walked in path order; with manifests, only the files they list.
fn folder(dir: &Path, out: &mut Bills) -> Result<()> {
    let mut files = Vec::new();
    walk(dir, &mut files)?;
    files.sort();
    let (manifests, files): (Vec<PathBuf>, Vec<PathBuf>) =
        files.into_iter().partition(|f| file_name(f).ends_with("Manifest.json"));
    let mut listed: Vec<(PathBuf, String)> = Vec::new();
    for manifest in &manifests {
        for key in manifest_keys(manifest)? {
            listed.push((manifest.clone(), key));
        }
    }
    // Where each listed part was read from: a part may be present in either form (the
    // manifest's `…csv.gz` decompressed to `…csv`, or the other way round), and is read once.
    let mut found: Vec<Option<PathBuf>> = vec![None; listed.len()];
    for path in files {
        let name = file_name(&path);
        if !is_bill_name(&name) {
            out.skipped.push(Skipped { path, reason: "not a bill (by its name)".into() });
            continue;
        }
        if manifests.is_empty() {
            file(&path, out)?;
            continue;
        }
        let relative = path.strip_prefix(dir).unwrap_or(&path);
        let exact = listed.iter().position(|(_, key)| key_names(key, relative));
        let other_form = || listed.iter().position(|(_, key)| key_names_in_any_form(key, relative));
        match exact.or_else(other_form) {
            Some(i) => match &found[i] {
                Some(first) => {
                    let reason = format!(
                        "another form of {}, which was read from {}",
                        listed[i].1,
                        first.display()
                    );
                    out.skipped.push(Skipped { path, reason });
                }
                None => {
                    found[i] = Some(path.clone());
                    file(&path, out)?;
                }
            },
            None => {
                let names: Vec<String> =
                    manifests.iter().map(|m| m.display().to_string()).collect();
                let reason = format!("not listed in {}", names.join(", "));
                out.skipped.push(Skipped { path, reason });
            }
        }
    }
    if let Some(i) = found.iter().position(Option::is_none) {
        let (manifest, key) = &listed[i];
        let message = format!(
            "lists {key}, which is not in {} in any form (compressed or not): the export is incomplete",
            dir.display()
        );
        return Err(delivery_error(manifest, message));
    }
    Ok(())
}

/// The compressions a part may have been delivered with and then undone (or done).
const COMPRESSED: [&str; 3] = [".gz", ".zst", ".zstd"];

/// [`key_names`] for a file that is the key's part in another form: the same name but for a
/// compression suffix on one side (`export-00001.csv.gz` listed, `export-00001.csv` present).
fn key_names_in_any_form(key: &str, relative: &Path) -> bool {
    let strip = |s: &str| -> String {
        COMPRESSED.iter().find_map(|c| s.strip_suffix(c)).unwrap_or(s).to_owned()
    };
    let file = relative.to_string_lossy();
    key_names(&strip(key), Path::new(&strip(&file)))
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Every file under `dir` but hidden ones (and those in hidden folders).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        if file_name(&path).starts_with('.') {
            continue;
        }
        let kind = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if kind.is_dir() {
            walk(&path, out)?;
        } else if kind.is_file() || path.is_file() {
            out.push(path);
        }
    }
    Ok(())
}

/// The files a manifest lists: `dataFiles` (AWS Data Exports) or `reportKeys` (CUR).
fn manifest_keys(path: &Path) -> Result<Vec<String>> {
    let bad = |m: String| delivery_error(path, m);
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let json: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| bad(format!("not a manifest: {e}")))?;
    let keys = json.get("dataFiles").or_else(|| json.get("reportKeys"));
    let Some(keys) = keys.and_then(|k| k.as_array()) else {
        return Err(bad("a manifest lists its files under dataFiles or reportKeys".into()));
    };
    keys.iter()
        .map(|k| {
            k.as_str().map(str::to_owned).ok_or_else(|| bad(format!("{k} is not a file name")))
        })
        .collect()
}

/// Whether manifest key `key` (an S3 URI or key) names the file at `relative` (its path in
/// the walked folder): they agree on the file's name and on every folder both have.
fn key_names(key: &str, relative: &Path) -> bool {
    let key = key.strip_prefix("s3://").unwrap_or(key);
    let key: Vec<&str> = key.split('/').filter(|p| !p.is_empty()).collect();
    let file: Vec<String> =
        relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    let shared = key.len().min(file.len());
    shared > 0
        && key[key.len() - shared..].iter().zip(&file[file.len() - shared..]).all(|(k, f)| k == f)
}

/// The archive and member a member's name (`archive.zip!member.csv`) stands for, when `path`
/// is one: it does not exist as a file and what is before the separator does.
pub(crate) fn member_of(path: &Path) -> Option<(PathBuf, String)> {
    if path.exists() {
        return None;
    }
    let text = path.to_str()?;
    let mut at = text.len();
    while let Some(i) = text[..at].rfind(MEMBER_SEPARATOR) {
        let archive = Path::new(&text[..i]);
        if archive.is_file() {
            return Some((archive.to_owned(), text[i + 1..].to_owned()));
        }
        at = i;
    }
    None
}

/// A reader of member `name` of zip archive `archive`, decompressed, its CRC checked, its
/// inflation bounded.
pub(crate) fn open_member(archive: &Path, name: &str) -> Result<Box<dyn Read + Send>> {
    let member_path = PathBuf::from(format!("{}{MEMBER_SEPARATOR}{name}", archive.display()));
    let mut zip = open_archive(archive)?;
    let (start, compressed, method, crc, encrypted) = {
        let index = zip
            .index_for_name(name)
            .ok_or_else(|| archive_error(archive, format!("no member {name:?}")))?;
        let member = zip.by_index_raw(index).map_err(|e| archive_error(archive, e))?;
        let start = member.data_start().ok_or_else(|| archive_error(archive, "no data offset"))?;
        let declared = member.size();
        let limit = member.compressed_size().saturating_mul(MAX_INFLATION);
        if declared > INFLATION_FREE_BYTES && declared > limit {
            return Err(delivery_error(&member_path, bomb_message()));
        }
        (start, member.compressed_size(), member.compression(), member.crc32(), member.encrypted())
    };
    if encrypted {
        return Err(archive_error(&member_path, "the member is encrypted"));
    }
    let mut file = File::open(archive).map_err(|e| Error::io(archive, e))?;
    file.seek(SeekFrom::Start(start)).map_err(|e| Error::io(archive, e))?;
    let raw = file.take(compressed);
    let inflated: Box<dyn Read + Send> = match method {
        zip::CompressionMethod::Stored => Box::new(raw),
        zip::CompressionMethod::Deflated => Box::new(flate2::read::DeflateDecoder::new(raw)),
        other => {
            return Err(archive_error(
                &member_path,
                format!("compression method {other} is not read"),
            ));
        }
    };
    let checked = CrcChecked { inner: inflated, crc: flate2::Crc::new(), want: crc };
    let consumed = Arc::new(AtomicU64::new(compressed));
    Ok(Box::new(Bounded { inner: checked, consumed, out: 0, free: INFLATION_FREE_BYTES }))
}

/// The compressed bytes a decompressing reader has read so far (what a progress bar shows
/// against the file's size).
pub(crate) type Consumed = Arc<AtomicU64>;

/// `head` and `rest`, a gzip stream, decompressed as it is read, its inflation bounded; and
/// its count of compressed bytes read.
pub(crate) fn gunzip(
    head: Vec<u8>,
    rest: Box<dyn Read + Send>,
) -> (Box<dyn Read + Send>, Consumed) {
    let consumed = Arc::new(AtomicU64::new(0));
    let counted = Counted { inner: io::Cursor::new(head).chain(rest), consumed: consumed.clone() };
    let inflated = flate2::read::MultiGzDecoder::new(counted);
    let bounded =
        Bounded { inner: inflated, consumed: consumed.clone(), out: 0, free: INFLATION_FREE_BYTES };
    (Box::new(bounded), consumed)
}

/// `head` and `rest`, a zstd stream, decompressed as it is read, its inflation bounded (with
/// the store feature, which builds zstd for polars' Parquet reader anyway).
pub(crate) fn unzstd(
    path: &Path,
    head: Vec<u8>,
    rest: Box<dyn Read + Send>,
) -> Result<(Box<dyn Read + Send>, Consumed)> {
    #[cfg(feature = "store")]
    {
        let consumed = Arc::new(AtomicU64::new(0));
        let counted =
            Counted { inner: io::Cursor::new(head).chain(rest), consumed: consumed.clone() };
        let inflated = zstd::stream::read::Decoder::new(counted).map_err(|e| Error::io(path, e))?;
        let bounded = Bounded {
            inner: inflated,
            consumed: consumed.clone(),
            out: 0,
            free: INFLATION_FREE_BYTES,
        };
        Ok((Box::new(bounded), consumed))
    }
    #[cfg(not(feature = "store"))]
    {
        let _ = (head, rest);
        let message = "a zstd-compressed bill needs gpuaudit built with the store feature";
        Err(delivery_error(path, message.to_owned()))
    }
}

/// Counts the compressed bytes read.
struct Counted<R> {
    inner: R,
    consumed: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Refuses to inflate more than [`MAX_INFLATION`] times the compressed bytes read.
struct Bounded<R> {
    inner: R,
    consumed: Arc<AtomicU64>,
    out: u64,
    /// What may be inflated whatever the ratio.
    free: u64,
}

fn bomb_message() -> String {
    format!(
        "inflates to more than {MAX_INFLATION} times its compressed size (a zip bomb?): refused"
    )
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.out += n as u64;
        let limit = self.consumed.load(Ordering::Relaxed).saturating_mul(MAX_INFLATION);
        if self.out > self.free && self.out > limit {
            return Err(io::Error::other(bomb_message()));
        }
        Ok(n)
    }
}

/// Checks a zip member's CRC-32 at its end.
struct CrcChecked<R> {
    inner: R,
    crc: flate2::Crc,
    want: u32,
}

impl<R: Read> Read for CrcChecked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc.update(&buf[..n]);
        if n == 0 && !buf.is_empty() && self.crc.sum() != self.want {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the member's CRC-32 does not match: the archive is damaged",
            ));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_keys_name_files_by_their_end() {
        let file = Path::new("data/BILLING_PERIOD=2024-05/export-00001.csv.gz");
        assert!(key_names(
            "s3://bucket/p/export/data/BILLING_PERIOD=2024-05/export-00001.csv.gz",
            file
        ));
        assert!(key_names("export-00001.csv.gz", file));
        assert!(!key_names(
            "s3://bucket/p/export/data/BILLING_PERIOD=2024-04/export-00001.csv.gz",
            file
        ));
        assert!(!key_names("export-00002.csv.gz", file));
        let plain = Path::new("data/BILLING_PERIOD=2024-05/export-00001.csv");
        assert!(!key_names("export-00001.csv.gz", plain));
        assert!(key_names_in_any_form("export-00001.csv.gz", plain));
        assert!(key_names_in_any_form("export-00001.csv", file));
        assert!(!key_names_in_any_form("export-00001.parquet", plain));
        assert!(!key_names_in_any_form("export-00002.csv.gz", plain));
    }

    #[test]
    fn a_stream_inflating_past_the_limit_is_refused_once_past_the_free_bytes() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![b'x'; 4 << 20]).unwrap();
        let compressed = gz.finish().unwrap();
        let consumed = Arc::new(AtomicU64::new(0));
        let counted =
            Counted { inner: io::Cursor::new(compressed.clone()), consumed: consumed.clone() };
        let inflated = flate2::read::MultiGzDecoder::new(counted);
        let mut bounded = Bounded { inner: inflated, consumed, out: 0, free: 1 << 20 };
        let err = io::copy(&mut bounded, &mut io::sink()).unwrap_err();
        assert!(err.to_string().contains("zip bomb"), "{err}");
        // The same stream within the free bytes reads whole.
        let (mut whole, read) = gunzip(compressed.clone(), Box::new(io::empty()));
        assert_eq!(io::copy(&mut whole, &mut io::sink()).unwrap(), 4 << 20);
        assert_eq!(read.load(Ordering::Relaxed), compressed.len() as u64, "compressed bytes read");
    }

    #[test]
    fn bill_names() {
        for name in
            ["a.csv", "B.CSV.GZ", "x.xlsx", "y.zip", "z.txt.gz", "e-1.snappy.parquet", "c.csv.zst"]
        {
            assert!(is_bill_name(name), "{name}");
        }
        for name in ["README.md", "manifest.json", "a.gz", "notes", "a.zst"] {
            assert!(!is_bill_name(name), "{name}");
        }
    }
}

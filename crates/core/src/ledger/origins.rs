//! The files and lines of a window's rows read when asked for, from the part files (and
//! look-back files) the rows were read from: `reconcile` reads a month of millions of
//! charges without them and names a few thousand (see `crate::window::Elsewhere`).
//!
//! Decisions:
//! - A read that leaves them for later records, for each part file's share of the window,
//!   the window's place of its first row, the file and the place among the file's rows the
//!   share starts at, and which of its rows were kept (none recorded when all were): a few
//!   words a part file, not sixteen bytes a row.
//! - Asked for some rows, it reads the `source_file` and `source_line` columns of the files
//!   that hold them (a few at once, as a window's read) and takes those rows' values; the
//!   columns of a file are not kept.
//! - A file that can no longer be read, or holds fewer rows than it did, is an error naming
//!   its batch (as when the window was read): never a location made up.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use polars_arrow::array::{Array, DictionaryArray, Utf8ViewArray};

use super::backend::Backend;
use super::reader::{read_parquet, read_parts_by};
use crate::error::{Error, Result};
use crate::window::Elsewhere;

/// A part file's share of a window, as recorded while it was read.
#[derive(Debug)]
struct Share {
    /// The window's place of its first row kept.
    first: u32,
    /// How many of its rows were kept.
    count: u32,
    /// The read (file) it is of, and the place among that file's rows it starts at.
    read: (u32, u32),
    /// The places among the share's rows of those kept, when some were left out.
    kept: Option<Vec<u32>>,
}

/// The shares of a window being read.
#[derive(Debug, Default)]
pub(super) struct Later {
    shares: Vec<Share>,
}

impl Later {
    /// Records a share of `count` rows kept at window places `first…`, of read `read` from
    /// its row `from`, of which those at `kept` (all, if `None`) were kept.
    pub(super) fn add(
        &mut self,
        first: usize,
        count: usize,
        (read, from): (usize, usize),
        kept: Option<Vec<u32>>,
    ) {
        // A window holds at most `u32::MAX` rows (`Window::append_kept` refuses more).
        let word = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        if count > 0 {
            let (first, count, read) = (word(first), word(count), (word(read), word(from)));
            self.shares.push(Share { first, count, read, kept });
        }
    }

    /// What reads the recorded rows' files and lines, from the files of `reads` (batch,
    /// name) in `backend`.
    pub(super) fn reading(self, backend: &Backend, reads: &[(&str, &str)]) -> Arc<dyn Elsewhere> {
        let reads = reads.iter().map(|&(b, n)| (b.to_owned(), n.to_owned())).collect();
        Arc::new(Fetch { backend: backend.clone(), reads, shares: self.shares })
    }
}

/// Reads the files and lines of rows from the files they were read from.
#[derive(Debug)]
struct Fetch {
    backend: Backend,
    /// The files the window was read from (batch, name), by read.
    reads: Vec<(String, String)>,
    /// In the order of their window places.
    shares: Vec<Share>,
}

impl Fetch {
    /// The read and the place among its file's rows of the row at window place `place`.
    fn locate(&self, place: u32) -> Option<(u32, usize)> {
        let at = self.shares.partition_point(|s| s.first <= place).checked_sub(1)?;
        let share = &self.shares[at];
        let k = (place - share.first) as usize;
        if k >= share.count as usize {
            return None;
        }
        let k = match &share.kept {
            Some(kept) => *kept.get(k)? as usize,
            None => k,
        };
        Some((share.read.0, share.read.1 as usize + k))
    }
}

impl Elsewhere for Fetch {
    fn fetch(&self, places: &[u32]) -> Result<Vec<Option<(String, u64)>>> {
        // Per read, the places among its file's rows wanted, with where each answer goes.
        let mut wanted: BTreeMap<u32, Vec<(usize, usize)>> = BTreeMap::new();
        for (i, &place) in places.iter().enumerate() {
            if let Some((read, row)) = self.locate(place) {
                wanted.entry(read).or_default().push((i, row));
            }
        }
        let reads: Vec<u32> = wanted.keys().copied().collect();
        let files: Vec<(&str, &str)> = reads
            .iter()
            .filter_map(|&r| self.reads.get(r as usize))
            .map(|(b, n)| (b.as_str(), n.as_str()))
            .collect();
        if files.len() != reads.len() {
            return Err(Error::ledger(Path::new(""), "a row's file is not one the window read"));
        }
        let mut out = vec![None; places.len()];
        let read = |i: usize, path: &Path| {
            let rows = &wanted[&reads[i]];
            // The files as keys into their dictionary where the file allows (`keyed`): not
            // a text for every row.
            let (keyed, mut columns) = super::keyed::read(path, vec!["source_file".to_owned()]);
            columns.push("source_line".to_owned());
            let df = read_parquet(path, Some(columns))?;
            let files = keyed.get("source_file");
            lines_of(&df, files, rows).map_err(|m| Error::ledger(path, m))
        };
        read_parts_by(&self.backend, &files, read, |lines| {
            for (i, line) in lines {
                out[i] = Some(line);
            }
        })?;
        Ok(out)
    }
}

/// A file and a line, with the place of the answer it is.
type Answer = (usize, (String, u64));

/// The file and line of each row `(answer, row)` of `rows` in `df`'s columns (its files in
/// `keyed`, when they were read as keys): those rows' values alone.
fn lines_of(
    df: &polars::prelude::DataFrame,
    keyed: Option<&[DictionaryArray<u32>]>,
    rows: &[(usize, usize)],
) -> std::result::Result<Vec<Answer>, String> {
    use polars::prelude::DataType;
    let column = |name: &str| df.column(name).map_err(|e| format!("column {name}: {e}"));
    let lines = column("source_line")?.cast(&DataType::Int64);
    let lines = lines.map_err(|e| format!("column source_line: {e}"))?;
    let lines = lines.i64().map_err(|e| format!("column source_line: {e}"))?;
    let texts = match keyed {
        Some(_) => None,
        None => Some(column("source_file")?.str().map_err(|e| format!("column source_file: {e}"))?),
    };
    let mut out = Vec::with_capacity(rows.len());
    for &(i, row) in rows {
        if row >= df.height() {
            return Err(format!("holds {} charges, fewer than when it was read", df.height()));
        }
        let file = match (keyed, texts) {
            (Some(chunks), _) => key_at(chunks, row)?,
            (None, Some(texts)) => texts.get(row),
            (None, None) => None,
        };
        let (Some(file), Some(line)) = (file, lines.get(row)) else {
            return Err(format!("row {row}: no source_file or source_line"));
        };
        out.push((i, (file.to_owned(), line as u64)));
    }
    Ok(out)
}

/// The text of row `row` of a column read as keys into its dictionary (`None` for a null).
fn key_at(
    chunks: &[DictionaryArray<u32>],
    mut row: usize,
) -> std::result::Result<Option<&str>, String> {
    for chunk in chunks {
        if row >= chunk.len() {
            row -= chunk.len();
            continue;
        }
        if !Array::is_valid(chunk.keys(), row) {
            return Ok(None);
        }
        let key = chunk.keys().value(row) as usize;
        let texts = chunk.values().as_any().downcast_ref::<Utf8ViewArray>();
        return match texts.filter(|t| key < t.len()) {
            Some(texts) => Ok(Array::is_valid(texts, key).then(|| texts.value(key))),
            None => Err("column source_file: a key past its dictionary".to_owned()),
        };
    }
    Err("column source_file: fewer values than rows".to_owned())
}

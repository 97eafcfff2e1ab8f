//! Where rows were read, for a window read without their files and lines: read again when a
//! use asks, for the rows it names (DESIGN.md: evidence texts are read only for what ends up
//! in the output). A store's `reconcile` reads a month of millions of charges to name a few
//! thousand lines; keeping every row's file and line took a tenth of its time and memory.

use super::{Row, Window};

/// Reads again where rows of a window were read: a store's window read without their files
/// and lines (`Store::reconcile`).
pub(crate) trait Elsewhere: std::fmt::Debug + Send + Sync {
    /// The file and line of the rows at `places` (their [`Row::pos`]), in order; `None` for
    /// a place it does not know (a row read with its file and line).
    fn fetch(&self, places: &[u32]) -> crate::Result<Vec<Option<(String, u64)>>>;
}

impl Window {
    /// The file (empty for none) and line (0 for none) where each row at `places` (their
    /// [`Row::pos`]) was read ([`Window::lines_of`] of those rows; a place of no row has
    /// none).
    pub(crate) fn lines_at(&self, places: &[u32]) -> crate::Result<Vec<(String, u64)>> {
        let row = |place: u32| {
            let row = self.rows.get(place as usize).filter(|r| r.pos == place);
            // Not at its place only in a window reordered since it was read.
            row.or_else(|| self.rows.iter().find(|r| r.pos == place))
        };
        let rows: Vec<Option<&Row>> = places.iter().map(|&p| row(p)).collect();
        let found: Vec<&Row> = rows.iter().flatten().copied().collect();
        let mut read = self.lines_of(&found)?.into_iter();
        Ok(rows.iter().map(|r| r.and_then(|_| read.next()).unwrap_or_default()).collect())
    }

    /// The file (empty for none) and line (0 for none) where each of `rows`, rows of this
    /// window, was read: as the window keeps it, or, for rows read without it, read again
    /// from where the rows were, all at once.
    pub(crate) fn lines_of(&self, rows: &[&Row]) -> crate::Result<Vec<(String, u64)>> {
        let Some(elsewhere) = &self.elsewhere else {
            return Ok(rows.iter().map(|r| self.line_of(r)).collect());
        };
        let fetched = elsewhere.fetch(&rows.iter().map(|r| r.pos).collect::<Vec<_>>())?;
        Ok(rows.iter().zip(fetched).map(|(r, f)| f.unwrap_or_else(|| self.line_of(r))).collect())
    }

    /// The file (empty for none) and line (0 for none) the window keeps for `row`.
    pub(crate) fn line_of(&self, row: &Row) -> (String, u64) {
        let origin = self.origin(row);
        (self.texts.opt(origin.file).unwrap_or("").to_owned(), origin.line)
    }

    /// Whether the files and lines of some rows are read only when asked for
    /// ([`Window::lines_of`]).
    pub(crate) fn reads_lines_later(&self) -> bool {
        self.elsewhere.is_some()
    }
}

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
    /// [`Row::pos`]) was read: as the window keeps it, or, for rows read without it, read
    /// again from where the rows were, all at once.
    pub(crate) fn lines_at(&self, places: &[u32]) -> crate::Result<Vec<(String, u64)>> {
        let own = |place: u32| {
            let row = self.rows.get(place as usize).filter(|r| r.pos == place);
            let row = row.or_else(|| self.rows.iter().find(|r| r.pos == place));
            row.map_or_else(Default::default, |r| {
                let origin = self.origin(r);
                (self.texts.opt(origin.file).unwrap_or("").to_owned(), origin.line)
            })
        };
        let Some(elsewhere) = &self.elsewhere else {
            return Ok(places.iter().map(|&p| own(p)).collect());
        };
        let fetched = elsewhere.fetch(places)?;
        Ok(places.iter().zip(fetched).map(|(&p, f)| f.unwrap_or_else(|| own(p))).collect())
    }

    /// [`Window::lines_at`] of rows of this window.
    pub(crate) fn lines_of(&self, rows: &[&Row]) -> crate::Result<Vec<(String, u64)>> {
        self.lines_at(&rows.iter().map(|r| r.pos).collect::<Vec<_>>())
    }

    /// Whether the files and lines of some rows are read only when asked for
    /// ([`Window::lines_at`]).
    pub(crate) fn reads_lines_later(&self) -> bool {
        self.elsewhere.is_some()
    }
}

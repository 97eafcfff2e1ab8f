//! One data row of a bill, with accessors that decode its cells and report problems at its
//! location (`file:line: column`), and the columns a profile reads.

use std::borrow::Cow;
use std::path::Path;

use rust_decimal::Decimal;

use super::decode::{FileCtx, Window, trim};
use super::header::Header;
use super::split::Record;
use crate::error::{ErrorKind, RowError, RowProblem};

/// One column a profile reads: a key naming it, the header names it goes by, and whether a
/// file without it is not of this format.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// The profile's name for the column (a ledger field or a format-specific one).
    pub key: &'static str,
    /// Header names, matched after trimming, ASCII case ignored. The first is shown in errors.
    pub aliases: &'static [&'static str],
    /// Whether the column must be present for a file to be of this format.
    pub required: bool,
}

/// Columns profiles read since charge identities were fixed (the sub account, the accounts'
/// names, the provider that gives a FOCUS row its platform): a row's content identity still
/// hashes their cells as cells the profile does not read, so that reading them changed no
/// charge's id (`tests/cli/real.rs` re-imports into a ledger written before).
pub(crate) const HASHED_AS_CELLS: [&str; 10] = [
    "sub_account",
    "account_name",
    "sub_account_name",
    "provider",
    "product_code",
    "operation",
    "x_usage_type",
    "x_operation",
    "sku_price_id",
    "meter_id",
];

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
    pub(crate) fn error(&self, col: usize, problem: RowProblem) -> RowError {
        let location = self.ctx.location(self.line);
        RowError::new(location.with_column(self.column_name(col)), problem)
    }

    /// The trimmed text of column `col`; `None` when the column is absent or the cell empty.
    pub(crate) fn text(&self, col: usize) -> Result<Option<Cow<'a, str>>, RowError> {
        let Some(i) = self.header.map[col] else { return Ok(None) };
        self.cell(i, col)
    }

    /// The header's columns that the profile does not read, as (index, name), in the order
    /// of their names: what identity adds for rows without a native id.
    pub(crate) fn unmapped(&self) -> Vec<(usize, String)> {
        let read_as_field = |i: usize| {
            self.header
                .map
                .iter()
                .zip(self.columns)
                .any(|(m, c)| *m == Some(i) && !HASHED_AS_CELLS.contains(&c.key))
        };
        let mut out: Vec<(usize, String)> = (0..self.header.names.len())
            .filter(|i| !read_as_field(*i))
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
                ErrorKind::Encoding { location, offset } => {
                    RowError::new(location.with_column(name(self)), RowProblem::Encoding { offset })
                }
                other => RowError::new(
                    self.ctx.location(self.line),
                    RowProblem::Unreadable(other.to_string()),
                ),
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
            Some(t) => crate::parse::parse_amount_with(&t, format)
                .map_err(|m| self.error(col, RowProblem::Amount(m))),
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

/// What [`crate::import::BillSource::next_row`] found. Cells beyond the header's last column have no name
/// and so no meaning: they are ignored (exports often end rows with a stray cell).
pub enum Next<'a> {
    /// A data row.
    Row(Row<'a>),
    /// A row that is malformed as a whole (shorter than the header).
    Bad(RowError, Vec<String>),
}

impl<'a> Row<'a> {
    /// The row as a data row, or as malformed when it is shorter than the header.
    pub(crate) fn checked(self) -> Next<'a> {
        let width = self.header.names.len();
        let found = self.record.len();
        if found < width {
            let column = self.header.names[found].clone();
            let location = self.ctx.location(self.line).with_column(column);
            let error = RowError::new(location, RowProblem::Missing { found, width });
            return Next::Bad(error, self.cells());
        }
        Next::Row(self)
    }
}

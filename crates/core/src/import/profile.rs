//! The [`Profile`] trait and the static registry of built-in profiles.
//!
//! A profile knows one bill format: the aliases of its columns (never positions), its time
//! zone, and how a row becomes a [`Charge`]. Detection scores every profile against the first
//! rows of a file (see `source`).

use chrono_tz::Tz;

use crate::charge::Charge;
use crate::error::RowError;
use crate::import::source::Row;

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

/// A charge read from a row, with the row's native id when the format has one.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The charge; its `id` is filled in by the reader.
    pub charge: Charge,
    /// The format's own row id (流水号 …), which then alone decides identity.
    pub native_id: Option<String>,
    /// For a row without a native id: a hash of its non-empty cells in columns the profile
    /// does not read, by header name (`None` when there are none). Part of the row's content
    /// identity, so that rows differing only there (a FOCUS export's own `Id`) stay apart
    /// across the files of a split export.
    pub unmapped: Option<u128>,
}

impl Parsed {
    /// A charge with every field empty, for a parser to fill in place.
    pub(crate) fn blank() -> Self {
        Parsed { charge: Charge::blank(), native_id: None, unmapped: None }
    }
}

/// Turns the rows of one file into charges. One parser reads one file.
pub trait RowParser {
    /// Reads one row. `Ok(None)` means the row is kept for [`RowParser::finish`] (profiles
    /// that need the whole file, such as AutoDL's coverage rule) or carries no charge.
    fn parse(&mut self, row: &Row<'_>) -> Result<Option<Parsed>, RowError>;

    /// [`RowParser::parse`] into `out`, which a parser may fill in place, reusing its
    /// strings (the reader calls this, with the same `out` for every row of a thread).
    /// True when `out` holds the row's charge; false as when `parse` gives `Ok(None)`.
    fn parse_into(&mut self, row: &Row<'_>, out: &mut Option<Parsed>) -> Result<bool, RowError> {
        let parsed = self.parse(row)?;
        let found = parsed.is_some();
        if found {
            *out = parsed;
        }
        Ok(found)
    }

    /// Hands out what the parser kept back, once the file has been read.
    fn finish(&mut self) -> Vec<Parsed> {
        Vec::new()
    }
}

/// One bill format.
pub trait Profile: Sync {
    /// Short stable name, used by `--profile`.
    fn name(&self) -> &'static str;
    /// The ledger's `platform` of the charges the profile reads (its name unless it says
    /// otherwise).
    fn platform(&self) -> &'static str {
        self.name()
    }
    /// One line saying what the format is.
    fn description(&self) -> &'static str;
    /// The columns the profile reads.
    fn columns(&self) -> &'static [Column];
    /// Index in [`Profile::columns`] of the billed-cost column (read from footer rows).
    fn billed_column(&self) -> Option<usize>;
    /// The zone naive times are in, and where days and months are cut.
    fn zone(&self) -> Tz;
    /// A parser for one file.
    fn parser(&self) -> Box<dyn RowParser + '_>;
    /// Whether each row is read on its own (no rule looks at other rows): the rows of a big
    /// file are then parsed on several threads. When false, one parser sees every row in order.
    fn rows_independent(&self) -> bool {
        false
    }
    /// The money a row's unit price times its quantity comes to.
    fn unit_price_of(&self) -> crate::import::spec::UnitPriceOf {
        crate::import::spec::UnitPriceOf::ListCost
    }
    /// How the format writes numbers.
    fn number_format(&self) -> crate::parse::NumberFormat {
        crate::parse::NumberFormat::default()
    }
    /// The profile as data, when it is defined by a profile file.
    fn as_spec(&self) -> Option<&crate::import::spec::SpecProfile> {
        None
    }
}

impl std::fmt::Debug for dyn Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Profile({})", self.name())
    }
}

/// Every built-in profile, in detection order (compiled from `crates/core/profiles/*.toml`).
pub fn profiles() -> &'static [&'static dyn Profile] {
    crate::import::spec::builtin()
}

/// The built-in profile called `name`.
pub fn profile_by_name(name: &str) -> Option<&'static dyn Profile> {
    profiles().iter().copied().find(|p| p.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_are_unique_and_found_by_name() {
        for p in profiles() {
            assert_eq!(profile_by_name(p.name()).map(|q| q.name()), Some(p.name()));
            assert!(p.columns().iter().any(|c| c.required), "{} has a required column", p.name());
        }
        assert!(profile_by_name("nope").is_none());
    }
}

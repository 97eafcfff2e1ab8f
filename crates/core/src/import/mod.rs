//! Import: bill files in, validated [`Charge`]s out.
//!
//! This module owns encoding sniffing, header detection, footer control totals, the
//! [`Profile`] registry and charge identity. It knows nothing of storage: charges and
//! rejected rows go to a [`Sink`], so the same reader feeds the Parquet store, a test, or a
//! finance tool that keeps its own storage.
//!
//! Reading streams: one row is decoded at a time. What grows with the file is only the count
//! of identical rows per content hash (for identity) and, for AutoDL, its compute rows (the
//! coverage rule needs the whole file; AutoDL logs are small).

mod profile;
mod source;
pub mod spec;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use rust_decimal::Decimal;

pub use profile::{Column, Parsed, Profile, RowParser, profile_by_name, profiles};
pub use source::{BillSource, ControlTotal, Encoding, HEADER_SEARCH_ROWS, Header, Next, Row};

use crate::charge::{Charge, ChargeId, YearMonth};
use crate::error::{ErrorKind, Result, RowError};

/// Where the reader sends what it finds.
pub trait Sink {
    /// A valid charge, its id set.
    fn charge(&mut self, charge: Charge) -> Result<()>;
    /// A row that could not be read, with its decoded cells.
    fn reject(&mut self, error: RowError, cells: Vec<String>) -> Result<()>;
    /// Called once per file, before its rows, with the file and its header names.
    fn begin_file(&mut self, _path: &Path, _header: &[String]) -> Result<()> {
        Ok(())
    }
}

/// What reading one file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// The file as named.
    pub path: String,
    /// The profile that read it.
    pub profile: &'static str,
    /// Data rows read (footers and blank rows not counted).
    pub rows_read: u64,
    /// Charges handed to the sink.
    pub charges: u64,
    /// Rows rejected.
    pub rejected: u64,
    /// Footer control totals.
    pub control_totals: Vec<ControlTotal>,
    /// What the file's spend rows add up to, per currency.
    pub totals: BTreeMap<String, Decimal>,
    /// Billing months of the file's charges.
    pub months: BTreeSet<YearMonth>,
    /// SHA-256 of the file, hex.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
}

/// Resolves `--profile NAME` against the built-in registry.
pub fn find_profile(name: &str) -> Result<&'static dyn Profile> {
    profile_by_name(name).ok_or_else(|| {
        let known: Vec<&str> = profiles().iter().map(|p| p.name()).collect();
        ErrorKind::UnknownProfile { name: name.to_owned(), known: known.join(", ") }.into()
    })
}

/// Reads one bill file into `sink`, choosing the profile by its header unless `profile` is
/// given. Row problems go to [`Sink::reject`]; file-level problems (unreadable, empty,
/// unknown format, bad encoding in the header) are returned as errors.
pub fn read_bill(
    path: &Path,
    profile: Option<&'static dyn Profile>,
    sink: &mut dyn Sink,
) -> Result<FileReport> {
    read_bill_among(path, profile, &[], sink)
}

/// [`read_bill`], detecting the profile among `candidates` (the built-in profiles when empty).
pub fn read_bill_among(
    path: &Path,
    profile: Option<&'static dyn Profile>,
    candidates: &[&'static dyn Profile],
    sink: &mut dyn Sink,
) -> Result<FileReport> {
    let candidates = if candidates.is_empty() { profiles() } else { candidates };
    let mut source = BillSource::open(path, profile, candidates)?;
    let profile = source.profile();
    sink.begin_file(path, &source.header().names)?;
    let mut parser = profile.parser();
    let mut ids = IdAssigner::default();
    let mut charges = 0u64;
    let mut rejected = 0u64;
    let mut totals: BTreeMap<String, Decimal> = BTreeMap::new();
    let mut months: BTreeSet<YearMonth> = BTreeSet::new();
    let mut tally = |c: &Charge| {
        if c.is_spend() {
            *totals.entry(c.currency.clone()).or_default() += c.billed_cost;
        }
        months.insert(c.billing_period);
    };
    while let Some(next) = source.next_row()? {
        match next {
            Next::Bad(error, cells) => {
                rejected += 1;
                sink.reject(error, cells)?;
            }
            Next::Row(row) => match parser.parse(&row) {
                Ok(Some(parsed)) => {
                    charges += 1;
                    tally(&parsed.charge);
                    sink.charge(ids.assign(parsed))?;
                }
                Ok(None) => {}
                Err(error) => {
                    rejected += 1;
                    let cells = row.cells();
                    sink.reject(error, cells)?;
                }
            },
        }
    }
    for parsed in parser.finish() {
        charges += 1;
        tally(&parsed.charge);
        sink.charge(ids.assign(parsed))?;
    }
    let (sha256, size) = source.digest();
    Ok(FileReport {
        path: path.display().to_string(),
        profile: profile.name(),
        rows_read: source.rows_read(),
        charges,
        rejected,
        control_totals: source.control_totals().to_vec(),
        totals,
        months,
        sha256,
        size,
    })
}

/// A bill read whole into memory.
#[derive(Debug, Clone)]
pub struct Bill {
    /// Its charges, in the order read.
    pub charges: Vec<Charge>,
    /// What reading it found.
    pub report: FileReport,
}

/// Reads a whole bill into memory, failing with [`ErrorKind::InvalidRows`] if any row is
/// invalid. For finance tooling that keeps its own storage.
///
/// ```no_run
/// let bill = gpuaudit_core::parse_bill("bills/autodl-2024-05.csv".as_ref(), None)?;
/// let spend: rust_decimal::Decimal =
///     bill.charges.iter().filter(|c| c.is_spend()).map(|c| c.billed_cost).sum();
/// # Ok::<(), gpuaudit_core::Error>(())
/// ```
pub fn parse_bill(path: &Path, profile: Option<&'static dyn Profile>) -> Result<Bill> {
    let mut sink = Collect::default();
    let report = read_bill(path, profile, &mut sink)?;
    if !sink.errors.is_empty() {
        return Err(ErrorKind::InvalidRows { total: report.rejected, errors: sink.errors }.into());
    }
    Ok(Bill { charges: sink.charges, report })
}

#[derive(Default)]
pub(crate) struct Collect {
    pub(crate) charges: Vec<Charge>,
    pub(crate) errors: Vec<RowError>,
}

impl Sink for Collect {
    fn charge(&mut self, charge: Charge) -> Result<()> {
        self.charges.push(charge);
        Ok(())
    }
    fn reject(&mut self, error: RowError, _cells: Vec<String>) -> Result<()> {
        if self.errors.len() < crate::error::MAX_LISTED_ROW_ERRORS {
            self.errors.push(error);
        }
        Ok(())
    }
}

/// Gives each parsed row its [`ChargeId`]: native, or content plus occurrence in the file.
///
/// The occurrence number of a row is found by trying occurrence 0, 1, … until the id is not
/// among the ids this file already gave: identical rows are rare, so this keeps one 16-byte
/// id per row instead of a counter per distinct content.
#[derive(Default)]
struct IdAssigner {
    given: HashSet<u128, crate::charge::IdKeys>,
}

impl IdAssigner {
    fn assign(&mut self, parsed: Parsed) -> Charge {
        let Parsed { mut charge, native_id } = parsed;
        charge.id = match native_id {
            Some(native) => {
                ChargeId::from_native(&charge.platform, charge.account.as_deref(), &native)
            }
            None => {
                let key = ChargeId::content_key(&charge);
                let mut occurrence = 0;
                let mut id = ChargeId::from_content(key, occurrence);
                while !self.given.insert(id.0) {
                    occurrence += 1;
                    id = ChargeId::from_content(key, occurrence);
                }
                id
            }
        };
        charge
    }
}

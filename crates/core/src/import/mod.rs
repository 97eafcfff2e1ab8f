//! Import: bill files in, validated [`Charge`]s out.
//!
//! This module owns encoding sniffing, header detection, footer control totals, the
//! [`Profile`] registry and charge identity. It knows nothing of storage: charges and
//! rejected rows go to a [`Sink`], so the same reader feeds the Parquet store, a test, or a
//! finance tool that keeps its own storage.
//!
//! Reading streams, as a pipeline over bounded batches of records:
//! - a reader thread reads the file (a large one past the page cache, see `crate::direct`),
//!   splits it into CSV records (`split`: the commas of a line without quotes found with
//!   `memchr`, quoted records read by `csv-core`), hashes its bytes on the way, skips blank
//!   rows, keeps footers as control totals and decides the encoding, in file order;
//! - parsing threads (as many as the machine has cores, at most four; one when the profile's
//!   rows depend on each other) turn batches of records into charges and their id seeds;
//! - the calling thread takes the batches back in file order, gives ids (the occurrence of
//!   identical rows needs file order; ids live in an [`IdIndex`] the sink owns), and hands
//!   charges and rejects to the [`Sink`].
//!
//! A sink takes each batch in its own form ([`Sink::Batch`]), built on the parsing threads
//! while the charges are still in the CPU's cache: the ledger's is its Parquet columns, so
//! that only each charge's [`Facts`] and id cross to the calling thread (moving and freeing
//! half a kilobyte a row across threads cost more than building the columns); a program that
//! reads a bill whole keeps a `Vec<Charge>` ([`parse_bill`]).
//!
//! At most 8 batches of 2,048 records exist at once; the id index is bounded too (see
//! [`crate::ids`]). What grows with the file is, for AutoDL only, its compute rows (the
//! coverage rule needs the whole file; AutoDL logs are small).

mod decode;
pub mod delivery;
mod header;
mod input;
mod jsonl;
#[cfg(feature = "store")]
mod parquet;
#[cfg(feature = "store")]
pub(crate) use parquet::{Claims, pages_claim};
mod pipeline;
mod profile;
mod row;
mod source;
pub mod spec;
mod spend;
mod split;
mod spreadsheet;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rust_decimal::Decimal;

pub use decode::{Encoding, Window};
pub use header::{HEADER_SEARCH_ROWS, Header, export_advice};
pub use input::STDIN;
pub use profile::{profile_by_name, profiles};
pub use row::{Column, Next, Row};
pub use source::{BillSource, ControlTotal};
pub use spec::{NoGpu, Parsed, Profile};
pub use spreadsheet::MAX_SPREADSHEET_BYTES;

use std::sync::Arc;

pub(crate) use pipeline::deliver_bill;

use crate::charge::{Category, Charge, ChargeId, YearMonth};
use crate::error::{ErrorKind, Result, RowError};
use crate::ids::IdIndex;

/// Where the reader sends what it finds: the one protocol between the import pipeline and
/// whatever keeps the charges (the ledger's column builder, a `Vec<Charge>` for a program
/// that reads a bill whole, a test).
///
/// The parsing threads build each batch in the sink's own form while its charges are still
/// in the CPU's cache ([`Sink::new_batch`], [`Sink::push`], [`Sink::seal`]); the calling
/// thread then hands over, in file order, each charge's [`Facts`] with its id
/// ([`Sink::charge`]) and, after them, the batch ([`Sink::batch`]).
pub trait Sink {
    /// A batch of charges in the sink's form, made on a parsing thread.
    type Batch: Send;
    /// An empty batch with room for `capacity` charges (on a parsing thread).
    fn new_batch(capacity: usize) -> Self::Batch;
    /// Takes one charge of a batch (on a parsing thread; its id is not known yet).
    fn push(batch: &mut Self::Batch, charge: &Charge);
    /// Finishes a batch on the parsing thread, before it is handed to the calling thread.
    fn seal(_batch: &mut Self::Batch) -> Result<()> {
        Ok(())
    }
    /// Called once per file, before its rows, with the file and its header names.
    fn begin_file(&mut self, _path: &Path, _header: &[String]) -> Result<()> {
        Ok(())
    }
    /// The ids seen so far, and the serial of the file being read (from 1; see [`IdIndex`]),
    /// for a sink that deduplicates across files. By default each file is read with ids of
    /// its own: `new` is then false only for a native id repeated within the file.
    fn ids(&mut self) -> Option<(&mut IdIndex, u32)> {
        None
    }
    /// A charge of the next batch, in file order: its facts, its id, and whether the id is
    /// new (false when it was known: from the ledger, an earlier file of the batch, or the
    /// same native id earlier in this file).
    fn charge(&mut self, facts: &Facts, id: ChargeId, new: bool) -> Result<()>;
    /// The batch whose charges were just handed to [`Sink::charge`], in the same order.
    fn batch(&mut self, batch: Self::Batch) -> Result<()>;
    /// A row that could not be read, with its decoded cells.
    fn reject(&mut self, error: RowError, cells: Vec<String>) -> Result<()>;
    /// The billed cost and number of the new spend charges of one category and currency of
    /// the last batch: added up once a batch rather than a charge at a time.
    fn spent(&mut self, _spend: Spend<'_>) -> Result<()> {
        Ok(())
    }
    /// Where to report how far reading has got.
    fn progress(&self) -> Option<Progress> {
        None
    }
}

/// Amounts rounded to the ledger's 12 decimals ([`crate::parse::read_amount`]): those of a
/// row ([`Parsed::rounded`]), or of a file's rows in one currency ([`FileReport::rounded`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rounding {
    /// How many amounts (money and quantities) were rounded.
    pub amounts: u64,
    /// The bill's billed costs minus the ledger's, summed (exact to the 28th decimal of each
    /// amount; each at most half a unit of the 12th decimal).
    pub billed_off: Decimal,
}

impl Rounding {
    /// Adds `other`'s amounts and difference; a difference that does not fit is an error.
    pub(crate) fn add(&mut self, other: &Rounding) -> Result<()> {
        self.amounts += other.amounts;
        self.billed_off =
            crate::money::add(self.billed_off, other.billed_off, "a file's rounding")?;
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
    /// The platform of its charges.
    pub platform: &'static str,
    /// The zone its naive times are in, and its platform's days and months cut in.
    pub zone: chrono_tz::Tz,
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
    /// Per currency, the file's amounts that had more decimals than the ledger keeps (12),
    /// rounded half to even, and what that took off its billed costs: the bill's total is
    /// [`FileReport::totals`] plus that difference.
    pub rounded: BTreeMap<String, Rounding>,
    /// SHA-256 of the file, hex.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
}

/// Resolves `--profile NAME` against the built-in registry.
pub fn find_profile(name: &str) -> Result<&'static Profile> {
    profile_by_name(name).ok_or_else(|| {
        let known: Vec<&str> = profiles().iter().map(|p| p.name()).collect();
        ErrorKind::UnknownProfile { name: name.to_owned(), known: known.join(", ") }.into()
    })
}

/// Reads one bill file into `sink`, choosing the profile by its header unless `profile` is
/// given. Row problems go to [`Sink::reject`]; file-level problems (unreadable, empty,
/// unknown format, bad encoding in the header) are returned as errors.
pub fn read_bill<S: Sink>(
    path: &Path,
    profile: Option<&'static Profile>,
    sink: &mut S,
) -> Result<FileReport> {
    read_bill_among(path, profile, &[], sink)
}

/// [`read_bill`], detecting the profile among `candidates` (the built-in profiles when empty).
///
/// The file is read by a pipeline (see the module docs): one thread reads CSV records, one
/// or more parse them, and the calling thread hands the charges to `sink` in file order.
pub fn read_bill_among<S: Sink>(
    path: &Path,
    profile: Option<&'static Profile>,
    candidates: &[&'static Profile],
    sink: &mut S,
) -> Result<FileReport> {
    deliver_bill(path, profile, candidates, Window::default(), sink)
}

/// The new spend charges of one platform, category and currency of a batch (see
/// [`Sink::spent`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spend<'a> {
    /// The platform.
    pub platform: &'static str,
    /// The category.
    pub category: Category,
    /// The currency.
    pub currency: &'a str,
    /// Their billed cost.
    pub billed: Decimal,
    /// How many.
    pub charges: u64,
}

/// How far reading a file has got: called on the reading thread with the file, the bytes
/// read so far and the file's size, after each batch of records and once at the end. The
/// library never prints: a program draws its progress bar from this.
#[derive(Clone)]
pub struct Progress(pub Arc<ReportProgress>);

/// The function behind [`Progress`]: file, bytes read, file size.
pub type ReportProgress = dyn Fn(&Path, u64, u64) + Send + Sync;

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress(..)")
    }
}

/// What a sink is told of each charge on the calling thread (the charge itself is in the
/// batch): where it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// The charge's platform.
    pub platform: &'static str,
    /// Its billing month.
    pub billing_period: YearMonth,
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
/// invalid, and links the charges whose resource is one of its compute instances to it
/// ([`crate::link_to_instances`]; call it again on charges of several bills). For finance
/// tooling that keeps its own storage.
///
/// ```no_run
/// let bill = gpuaudit_core::parse_bill("bills/autodl-2024-05.csv".as_ref(), None)?;
/// let spend = bill.charges.iter().filter(|c| c.is_spend()).map(|c| c.billed_cost);
/// let spend = gpuaudit_core::money::sum(spend, "the bill's spend")?;
/// # Ok::<(), gpuaudit_core::Error>(())
/// ```
pub fn parse_bill(path: &Path, profile: Option<&'static Profile>) -> Result<Bill> {
    let mut sink = Collect::default();
    let report = read_bill(path, profile, &mut sink)?;
    if !sink.errors.is_empty() {
        return Err(ErrorKind::InvalidRows { total: report.rejected, errors: sink.errors }.into());
    }
    let mut charges = sink.charges;
    crate::charge::link_to_instances(&mut charges);
    Ok(Bill { charges, report })
}

/// A sink that keeps every charge whole, known or not: the caller reads one bill as it is.
#[derive(Default)]
pub(crate) struct Collect {
    pub(crate) charges: Vec<Charge>,
    pub(crate) errors: Vec<RowError>,
    /// The ids of the charges of the batch on its way, in order.
    ids: Vec<ChargeId>,
}

impl Sink for Collect {
    type Batch = Vec<Charge>;
    fn new_batch(capacity: usize) -> Vec<Charge> {
        Vec::with_capacity(capacity)
    }
    fn push(batch: &mut Vec<Charge>, charge: &Charge) {
        batch.push(charge.clone());
    }
    fn charge(&mut self, _facts: &Facts, id: ChargeId, _new: bool) -> Result<()> {
        self.ids.push(id);
        Ok(())
    }
    fn batch(&mut self, batch: Vec<Charge>) -> Result<()> {
        for (mut charge, id) in batch.into_iter().zip(self.ids.drain(..)) {
            charge.id = id;
            self.charges.push(charge);
        }
        Ok(())
    }
    fn reject(&mut self, error: RowError, _cells: Vec<String>) -> Result<()> {
        if self.errors.len() < crate::error::MAX_LISTED_ROW_ERRORS {
            self.errors.push(error);
        }
        Ok(())
    }
}

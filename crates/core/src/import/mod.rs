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
//! The ledger does not take whole charges: its sink has the parsing threads build each
//! batch's Parquet columns while the charges are still in the CPU's cache (`Encoder`),
//! drops the charges there, and sees only each charge's `Facts` on the calling thread;
//! moving and freeing half a kilobyte a row across threads cost more than building the
//! columns (`benches/vs_duckdb.py` measures the import).
//!
//! At most 8 batches of 2,048 records exist at once; the id index is bounded too (see
//! [`crate::ids`]). What grows with the file is, for AutoDL only, its compute rows (the
//! coverage rule needs the whole file; AutoDL logs are small).

mod decode;
mod header;
mod input;
mod pipeline;
mod profile;
mod source;
pub mod spec;
mod spend;
mod split;
mod spreadsheet;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rust_decimal::Decimal;

pub use decode::{Encoding, Window};
pub use header::{HEADER_SEARCH_ROWS, Header};
pub use input::STDIN;
pub use profile::{Column, Parsed, Profile, RowParser, profile_by_name, profiles};
pub use source::{BillSource, ControlTotal, Next, Row};
pub use spreadsheet::MAX_SPREADSHEET_BYTES;

use std::sync::Arc;

pub(crate) use pipeline::deliver_bill;

use crate::charge::{Category, Charge, ChargeId, YearMonth};
use crate::error::{ErrorKind, Result, RowError};
use crate::ids::IdIndex;

/// Where the reader sends what it finds.
pub trait Sink {
    /// A valid charge, its id set; `new` is false when the id was known (from the ledger, an
    /// earlier file of the batch, or the same native id earlier in this file).
    fn charge(&mut self, charge: Charge, new: bool) -> Result<()>;
    /// The ids seen so far, and the serial of the file being read (from 1; see [`IdIndex`]),
    /// for a sink that deduplicates across files. By default each file is read with ids of
    /// its own: `new` is then false only for a native id repeated within the file.
    fn ids(&mut self) -> Option<(&mut IdIndex, u32)> {
        None
    }
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
///
/// The file is read by a pipeline (see the module docs): one thread reads CSV records, one
/// or more parse them, and the calling thread hands the charges to `sink` in file order.
pub fn read_bill_among(
    path: &Path,
    profile: Option<&'static dyn Profile>,
    candidates: &[&'static dyn Profile],
    sink: &mut dyn Sink,
) -> Result<FileReport> {
    let mut whole = Whole(sink, IdIndex::in_memory());
    deliver_bill(path, profile, candidates, Window::default(), &mut whole)
}

/// What the pipeline hands its charges to: a [`Sink`] of whole charges, or (the ledger) a
/// sink that takes each batch in its own form, made on the parsing threads ([`Encoder`]),
/// and only the [`Facts`] of each charge on the calling thread.
pub(crate) trait Deliver {
    /// See [`Sink::begin_file`].
    fn begin_file(&mut self, path: &Path, header: &[String]) -> Result<()>;
    /// See [`Sink::ids`].
    fn ids(&mut self) -> (&mut IdIndex, u32);
    /// See [`Sink::reject`].
    fn reject(&mut self, error: RowError, cells: Vec<String>) -> Result<()>;
    /// How to encode batches on the parsing threads; `None` for whole charges.
    fn encoding(&self) -> Option<NewEncoder>;
    /// A charge, in file order: whole when there is no encoding, else only its facts.
    fn charge(
        &mut self,
        facts: &Facts,
        charge: Option<Charge>,
        id: ChargeId,
        new: bool,
    ) -> Result<()>;
    /// Where to report how far reading has got.
    fn progress(&self) -> Option<Progress> {
        None
    }
    /// The encoded form of the charges handed to [`Deliver::charge`] since the last call.
    fn encoded(&mut self, _encoded: Encoded) -> Result<()> {
        Ok(())
    }
    /// The billed cost and number of the new spend charges of one category and currency
    /// among those handed to [`Deliver::charge`] since the last batch: added up once a batch
    /// rather than a charge at a time.
    fn spent(&mut self, _spend: Spend<'_>) -> Result<()> {
        Ok(())
    }
}

/// See [`Deliver::spent`].
// The ledger reads it; without it nothing does.
#[cfg_attr(not(feature = "store"), allow(dead_code))]
pub(crate) struct Spend<'a> {
    pub(crate) platform: &'static str,
    pub(crate) category: Category,
    pub(crate) currency: &'a str,
    pub(crate) billed: Decimal,
    pub(crate) charges: u64,
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

/// A batch of charges in a sink's own form.
pub(crate) type Encoded = Box<dyn std::any::Any + Send>;
/// Makes an empty [`Encoder`] with room for so many charges.
pub(crate) type NewEncoder = fn(usize) -> Box<dyn Encoder>;

/// Takes the charges of a batch one at a time, on a parsing thread, while they are in the
/// CPU's cache; they are dropped right after, on the thread that made them.
pub(crate) trait Encoder: Send {
    /// Takes one charge (its id is not known yet).
    fn push(&mut self, charge: &Charge);
    /// The batch, encoded.
    fn finish(self: Box<Self>) -> Result<Encoded>;
}

/// What the sink needs of a charge handed over in encoded form: where it is stored (totals
/// come once a batch, through [`Deliver::spent`]).
// The ledger reads them; without it nothing does.
#[cfg_attr(not(feature = "store"), allow(dead_code))]
pub(crate) struct Facts {
    pub(crate) platform: &'static str,
    pub(crate) billing_period: YearMonth,
}

/// A [`Sink`] of whole charges, as the pipeline sees it, with ids of its own for a sink that
/// keeps none.
struct Whole<'a>(&'a mut dyn Sink, IdIndex);

impl Deliver for Whole<'_> {
    fn begin_file(&mut self, path: &Path, header: &[String]) -> Result<()> {
        self.0.begin_file(path, header)
    }
    fn ids(&mut self) -> (&mut IdIndex, u32) {
        match self.0.ids() {
            Some(ids) => ids,
            None => (&mut self.1, 1),
        }
    }
    fn reject(&mut self, error: RowError, cells: Vec<String>) -> Result<()> {
        self.0.reject(error, cells)
    }
    fn encoding(&self) -> Option<NewEncoder> {
        None
    }
    fn charge(&mut self, _: &Facts, charge: Option<Charge>, id: ChargeId, new: bool) -> Result<()> {
        match charge {
            Some(mut charge) => {
                charge.id = id;
                self.0.charge(charge, new)
            }
            None => Ok(()),
        }
    }
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
pub fn parse_bill(path: &Path, profile: Option<&'static dyn Profile>) -> Result<Bill> {
    let mut sink = Collect::default();
    let report = read_bill(path, profile, &mut sink)?;
    if !sink.errors.is_empty() {
        return Err(ErrorKind::InvalidRows { total: report.rejected, errors: sink.errors }.into());
    }
    let mut charges = sink.charges;
    crate::charge::link_to_instances(&mut charges);
    Ok(Bill { charges, report })
}

#[derive(Default)]
pub(crate) struct Collect {
    pub(crate) charges: Vec<Charge>,
    pub(crate) errors: Vec<RowError>,
}

impl Sink for Collect {
    /// Every charge is kept, known or not: the caller reads one bill as it is.
    fn charge(&mut self, charge: Charge, _new: bool) -> Result<()> {
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

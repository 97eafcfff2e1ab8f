//! Import: bill files in, validated [`Charge`]s out.
//!
//! This module owns encoding sniffing, header detection, footer control totals, the
//! [`Profile`] registry and charge identity. It knows nothing of storage: charges and
//! rejected rows go to a [`Sink`], so the same reader feeds the Parquet store, a test, or a
//! finance tool that keeps its own storage.
//!
//! Reading streams, as a pipeline over bounded batches of records:
//! - a reader thread splits the file into CSV records (hashing its bytes on the way), skips
//!   blank rows, keeps footers as control totals and decides the encoding, in file order;
//! - parsing threads (as many as the machine has cores, at most four; one when the profile's
//!   rows depend on each other) turn batches of records into charges and their id seeds;
//! - the calling thread takes the batches back in file order, gives ids (the occurrence of
//!   identical rows needs file order), and hands charges and rejects to the [`Sink`].
//!
//! At most [`BATCHES_IN_FLIGHT`] batches of [`BATCH_ROWS`] records exist at once. What grows
//! with the file is only the set of content ids the file gave (for identity; 16 bytes a row)
//! and, for AutoDL, its compute rows (the coverage rule needs the whole file; AutoDL logs are
//! small).

mod profile;
mod source;
pub mod spec;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rust_decimal::Decimal;

pub use profile::{Column, Parsed, Profile, RowParser, profile_by_name, profiles};
pub use source::{BillSource, ControlTotal, Encoding, HEADER_SEARCH_ROWS, Header, Next, Row};

use crossbeam_channel as channel;
use source::{FileCtx, RecordBatch};

use crate::charge::{Charge, ChargeId, YearMonth};
use crate::error::{ErrorKind, Result, RowError};
use crate::ids::{Claim, IdIndex};

/// Where the reader sends what it finds.
pub trait Sink {
    /// A valid charge, its id set; `new` is false when the id was known (from the ledger, an
    /// earlier file of the batch, or the same native id earlier in this file).
    fn charge(&mut self, charge: Charge, new: bool) -> Result<()>;
    /// The ids seen so far, and the serial of the file being read (from 1; see [`IdIndex`]).
    fn ids(&mut self) -> (&mut IdIndex, u32);
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
///
/// The file is read by a pipeline (see the module docs): one thread reads CSV records, one
/// or more parse them, and the calling thread hands the charges to `sink` in file order.
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
    let workers = if profile.rows_independent() {
        std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_WORKERS)
    } else {
        1
    };
    let header = source.header().clone();
    let state = source.ctx().state();
    let contexts: Vec<_> = (0..workers).map(|_| source.ctx().fork(state)).collect();
    let (pool_tx, pool_rx) = channel::bounded(BATCHES_IN_FLIGHT);
    for _ in 0..BATCHES_IN_FLIGHT {
        let slot = Slot { records: RecordBatch::new(BATCH_ROWS), outcomes: Vec::new() };
        let _ = pool_tx.send(slot);
    }
    let (work_tx, work_rx) = channel::bounded::<(u64, Slot)>(workers);
    let (done_tx, done_rx) = channel::unbounded::<FromWorker>();
    let tally = std::thread::scope(|scope| {
        let reader = {
            let source = &mut source;
            scope.spawn(move || -> Result<()> {
                for seq in 0.. {
                    let Ok(mut slot) = pool_rx.recv() else { return Ok(()) };
                    if !source.fill(&mut slot.records)? || work_tx.send((seq, slot)).is_err() {
                        return Ok(());
                    }
                }
                Ok(())
            })
        };
        for (worker, ctx) in contexts.into_iter().enumerate() {
            let (work_rx, done_tx, header) = (work_rx.clone(), done_tx.clone(), &header);
            scope.spawn(move || {
                let mut parser = profile.parser();
                for (seq, mut slot) in work_rx {
                    parse_batch(&mut *parser, &ctx, header, profile, &mut slot);
                    if done_tx.send(FromWorker::Batch(seq, slot)).is_err() {
                        return;
                    }
                }
                let kept = parser.finish().into_iter().map(|p| (seed(&p), p)).collect();
                let _ = done_tx.send(FromWorker::Finish(worker, kept));
            });
        }
        drop((work_rx, done_tx));
        let tally = consume(done_rx, pool_tx, sink);
        let read = reader.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        read.and(tally)
    })?;
    let (sha256, size) = source.digest();
    Ok(FileReport {
        path: path.display().to_string(),
        profile: profile.name(),
        rows_read: source.rows_read(),
        charges: tally.charges,
        rejected: tally.rejected,
        control_totals: source.control_totals().to_vec(),
        totals: tally.totals,
        months: tally.months,
        sha256,
        size,
    })
}

/// Records per batch handed to a parsing thread.
const BATCH_ROWS: usize = 2048;
/// Batches between the reader and the sink at any time: what bounds the pipeline's memory.
const BATCHES_IN_FLIGHT: usize = 8;
/// Parsing threads at most.
const MAX_WORKERS: usize = 4;

/// What became of one record.
// Charges are nearly every outcome: boxing them would cost an allocation a row.
#[allow(clippy::large_enum_variant)]
enum Outcome {
    /// A charge, with what its id is made from.
    Charge(IdSeed, Parsed),
    /// A row that could not be read, with its cells.
    Reject(RowError, Vec<String>),
    /// A row the parser kept back, or that carries no charge.
    Nothing,
}

/// A batch of records and what became of each, passed from the reader to a worker to the
/// calling thread and back to the reader: its buffers are reused, never freed and allocated
/// again (fresh memory costs page faults the kernel must zero).
struct Slot {
    records: RecordBatch,
    outcomes: Vec<Outcome>,
}

enum FromWorker {
    /// A batch parsed, with its sequence number.
    Batch(u64, Slot),
    /// What a worker's parser kept back until the end of the file.
    Finish(usize, Vec<(IdSeed, Parsed)>),
}

/// The part of a charge's id that does not depend on the rows before it.
enum IdSeed {
    Native(ChargeId),
    Content(u128),
}

fn seed(parsed: &Parsed) -> IdSeed {
    let c = &parsed.charge;
    match &parsed.native_id {
        Some(native) => {
            IdSeed::Native(ChargeId::from_native(&c.platform, c.account.as_deref(), native))
        }
        None => IdSeed::Content(ChargeId::content_key(c)),
    }
}

fn parse_batch(
    parser: &mut dyn RowParser,
    ctx: &FileCtx,
    header: &Header,
    profile: &dyn Profile,
    slot: &mut Slot,
) {
    let batch = &slot.records;
    ctx.set_state(batch.state);
    let columns = profile.columns();
    slot.outcomes.clear();
    slot.outcomes.extend(batch.records[..batch.len].iter().map(|record| {
        let line = record.position().map_or(0, |p| p.line());
        let row = Row { ctx, record, header, columns, line };
        match row.checked() {
            Next::Bad(error, cells) => Outcome::Reject(error, cells),
            Next::Row(row) => match parser.parse(&row) {
                Ok(Some(parsed)) => Outcome::Charge(seed(&parsed), parsed),
                Ok(None) => Outcome::Nothing,
                Err(error) => Outcome::Reject(error, row.cells()),
            },
        }
    }));
}

/// What the calling thread counted while handing charges to the sink.
#[derive(Default)]
struct Tally {
    charges: u64,
    rejected: u64,
    totals: BTreeMap<String, Decimal>,
    months: BTreeSet<YearMonth>,
}

impl Tally {
    fn charge(&mut self, seed: IdSeed, parsed: Parsed, sink: &mut dyn Sink) -> Result<()> {
        let c = &parsed.charge;
        self.charges += 1;
        if c.is_spend() {
            match self.totals.get_mut(&c.currency) {
                Some(total) => *total += c.billed_cost,
                None => {
                    self.totals.insert(c.currency.clone(), c.billed_cost);
                }
            }
        }
        self.months.insert(c.billing_period);
        let mut charge = parsed.charge;
        let (index, file) = sink.ids();
        let new = match seed {
            IdSeed::Native(id) => {
                charge.id = id;
                index.claim(id.0, file)? == Claim::New
            }
            // The occurrence number of a row among identical rows of the file: the first
            // occurrence this file has not given yet. Identical rows are rare, so this keeps
            // one id per row instead of a counter per distinct content.
            IdSeed::Content(key) => (0..)
                .find_map(|occurrence| {
                    let id = ChargeId::from_content(key, occurrence);
                    match index.claim(id.0, file) {
                        Ok(Claim::Given) => None,
                        Ok(claim) => {
                            charge.id = id;
                            Some(Ok(claim == Claim::New))
                        }
                        Err(e) => Some(Err(e)),
                    }
                })
                .unwrap_or(Ok(false))?,
        };
        sink.charge(charge, new)
    }
}

/// Hands the workers' outcomes to `sink` in file order, returning each batch's buffers to
/// the reader; then what the parsers kept back, worker by worker.
fn consume(
    done: channel::Receiver<FromWorker>,
    pool: channel::Sender<Slot>,
    sink: &mut dyn Sink,
) -> Result<Tally> {
    let mut tally = Tally::default();
    let mut next = 0u64;
    let mut waiting: BTreeMap<u64, Slot> = BTreeMap::new();
    let mut kept = Vec::new();
    for message in done {
        match message {
            FromWorker::Batch(seq, slot) => {
                waiting.insert(seq, slot);
            }
            FromWorker::Finish(worker, rows) => kept.push((worker, rows)),
        }
        while let Some(mut slot) = waiting.remove(&next) {
            next += 1;
            for outcome in slot.outcomes.drain(..) {
                match outcome {
                    Outcome::Charge(seed, parsed) => tally.charge(seed, parsed, sink)?,
                    Outcome::Reject(error, cells) => {
                        tally.rejected += 1;
                        sink.reject(error, cells)?;
                    }
                    Outcome::Nothing => {}
                }
            }
            // The reader may have stopped: then the buffers are simply dropped.
            let _ = pool.send(slot);
        }
    }
    kept.sort_by_key(|(worker, _)| *worker);
    for (seed, parsed) in kept.into_iter().flat_map(|(_, rows)| rows) {
        tally.charge(seed, parsed, sink)?;
    }
    Ok(tally)
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

pub(crate) struct Collect {
    pub(crate) charges: Vec<Charge>,
    pub(crate) errors: Vec<RowError>,
    ids: IdIndex,
}

impl Default for Collect {
    fn default() -> Self {
        Collect { charges: Vec::new(), errors: Vec::new(), ids: IdIndex::in_memory() }
    }
}

impl Sink for Collect {
    /// Every charge is kept, known or not: the caller reads one bill as it is.
    fn charge(&mut self, charge: Charge, _new: bool) -> Result<()> {
        self.charges.push(charge);
        Ok(())
    }
    fn ids(&mut self) -> (&mut IdIndex, u32) {
        (&mut self.ids, 1)
    }
    fn reject(&mut self, error: RowError, _cells: Vec<String>) -> Result<()> {
        if self.errors.len() < crate::error::MAX_LISTED_ROW_ERRORS {
            self.errors.push(error);
        }
        Ok(())
    }
}

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
//! columns (measured with `perf`, see `benches/vs_duckdb.py`).
//!
//! At most 8 batches of 2,048 records exist at once; the id index is bounded too (see
//! [`crate::ids`]). What grows with the file is, for AutoDL only, its compute rows (the
//! coverage rule needs the whole file; AutoDL logs are small).

mod decode;
mod header;
mod input;
mod profile;
mod source;
pub mod spec;
mod split;
mod spreadsheet;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rust_decimal::Decimal;

pub use decode::{Encoding, Window};
pub use header::{HEADER_SEARCH_ROWS, Header};
pub use input::STDIN;
pub use profile::{Column, Parsed, Profile, RowParser, profile_by_name, profiles};
pub use source::{BillSource, ControlTotal, Next, Row};
pub use spreadsheet::MAX_SPREADSHEET_BYTES;

use crossbeam_channel as channel;
use decode::FileCtx;
use source::RecordBatch;

use std::sync::Arc;

use crate::charge::{Category, Charge, ChargeId, YearMonth};
use crate::error::{ErrorKind, Result, RowError};
use crate::ids::{Claim, IdIndex};
use crate::money;

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

/// [`Facts`] as a parsing thread records them: the currency is an index into its batch's
/// [`Slot::currencies`] (a shared `Arc` would cost two atomic operations a row, on two cores).
struct RowFacts {
    billing_period: YearMonth,
    category: Category,
    spend: bool,
    billed_cost: Decimal,
    currency: u32,
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

/// [`read_bill_among`] into any [`Deliver`].
pub(crate) fn deliver_bill(
    path: &Path,
    profile: Option<&'static dyn Profile>,
    candidates: &[&'static dyn Profile],
    window: Window,
    sink: &mut dyn Deliver,
) -> Result<FileReport> {
    let candidates = if candidates.is_empty() { profiles() } else { candidates };
    let mut source = BillSource::open(path, profile, candidates)?;
    source.set_window(window);
    let profile = source.profile();
    sink.begin_file(path, &source.header().names)?;
    let encoding = sink.encoding();
    let progress = sink.progress();
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
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
        let slot = Slot::new(BATCH_ROWS);
        let _ = pool_tx.send(slot);
    }
    let (work_tx, work_rx) = channel::bounded::<(u64, Slot)>(workers);
    let (done_tx, done_rx) = channel::unbounded::<FromWorker>();
    let tally = std::thread::scope(|scope| {
        let reader = {
            let source = &mut source;
            scope.spawn(move || -> Result<()> {
                let report = |source: &BillSource| {
                    if let Some(Progress(report)) = &progress {
                        report(path, source.bytes_read().min(size), size);
                    }
                };
                for seq in 0.. {
                    let Ok(mut slot) = pool_rx.recv() else { return Ok(()) };
                    let more = source.fill(&mut slot.records)?;
                    report(source);
                    if !more || work_tx.send((seq, slot)).is_err() {
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
                let mut scratch = None;
                for (seq, mut slot) in work_rx {
                    let parser = &mut *parser;
                    parse_batch(parser, &mut scratch, &ctx, header, profile, encoding, &mut slot);
                    if done_tx.send(FromWorker::Batch(seq, slot)).is_err() {
                        return;
                    }
                }
                let mut kept = Slot::new(0);
                deliver_rows(parser.finish(), encoding, &mut kept);
                let _ = done_tx.send(FromWorker::Finish(worker, kept));
            });
        }
        drop((work_rx, done_tx));
        let tally = consume(done_rx, pool_tx, profile.platform(), sink);
        let read = reader.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        read.and(tally)
    })
    .map_err(|e| match e.into_kind() {
        // A total of the file's figures that does not fit: say which file.
        ErrorKind::Overflow { what } => {
            crate::Error::from(ErrorKind::Overflow { what: format!("{}: {what}", path.display()) })
        }
        other => crate::Error::from(other),
    })?;
    let (sha256, size) = source.digest();
    Ok(FileReport {
        path: path.display().to_string(),
        profile: profile.name(),
        platform: profile.platform(),
        zone: profile.zone(),
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
enum Outcome {
    /// A charge, with what its id is made from, its facts, and itself unless it was encoded
    /// (boxed: the ledger's path, which encodes, then moves a hundred bytes a row, not 600).
    Charge(IdSeed, RowFacts, Option<Box<Parsed>>),
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
    /// The currencies of the batch's charges, in order of appearance.
    currencies: Vec<String>,
    /// The batch's charges in the sink's form, when the sink has an [`Encoder`].
    encoded: Option<Result<Encoded>>,
}

impl Slot {
    fn new(records: usize) -> Self {
        Slot {
            records: RecordBatch::new(records),
            outcomes: Vec::new(),
            currencies: Vec::new(),
            encoded: None,
        }
    }
}

enum FromWorker {
    /// A batch parsed, with its sequence number.
    Batch(u64, Slot),
    /// What a worker's parser kept back until the end of the file.
    Finish(usize, Slot),
}

/// The part of a charge's id that does not depend on the rows before it, made on the
/// parsing threads: the native id, or the content key with the id of its first occurrence
/// (nearly every row's id, so the calling thread seldom hashes).
enum IdSeed {
    Native(ChargeId),
    Content(u128, ChargeId),
}

fn seed(parsed: &Parsed) -> IdSeed {
    let c = &parsed.charge;
    match &parsed.native_id {
        Some(native) => {
            IdSeed::Native(ChargeId::from_native(&c.platform, c.account.as_deref(), native))
        }
        None => {
            let key = ChargeId::content_key_with(c, parsed.unmapped);
            IdSeed::Content(key, ChargeId::from_content(key, 0))
        }
    }
}

fn parse_batch(
    parser: &mut dyn RowParser,
    scratch: &mut Option<Parsed>,
    ctx: &FileCtx,
    header: &Header,
    profile: &'static dyn Profile,
    encoding: Option<NewEncoder>,
    slot: &mut Slot,
) {
    let batch = std::mem::replace(&mut slot.records, RecordBatch::new(0));
    ctx.set_state(batch.state);
    let columns = profile.columns();
    let mut out = Outcomes::start(encoding, slot);
    for record in &batch.records[..batch.len] {
        let line = record.position().map_or(0, |p| p.line());
        let row = Row { ctx, record, header, columns, line, whole: ctx.whole(record) };
        let outcome = match row.checked() {
            Next::Bad(error, cells) => Outcome::Reject(error, cells),
            Next::Row(row) => match parser.parse_into(&row, scratch) {
                Ok(true) => match scratch {
                    Some(parsed) => out.charge(Cow::Borrowed(parsed)),
                    None => Outcome::Nothing,
                },
                Ok(false) => Outcome::Nothing,
                Err(error) => Outcome::Reject(error, row.cells()),
            },
        };
        out.slot.outcomes.push(outcome);
    }
    out.finish();
    slot.records = batch;
}

/// Fills `slot` with the outcomes of `rows`, charges the parser kept back until the end.
fn deliver_rows(rows: Vec<Parsed>, encoding: Option<NewEncoder>, slot: &mut Slot) {
    let mut out = Outcomes::start(encoding, slot);
    for parsed in rows {
        let outcome = out.charge(Cow::Owned(parsed));
        out.slot.outcomes.push(outcome);
    }
    out.finish();
}

/// A slot being filled with outcomes on a parsing thread, and the encoder of its charges.
struct Outcomes<'s> {
    slot: &'s mut Slot,
    encoder: Option<Box<dyn Encoder>>,
}

impl<'s> Outcomes<'s> {
    fn start(encoding: Option<NewEncoder>, slot: &'s mut Slot) -> Self {
        slot.currencies.clear();
        slot.outcomes.clear();
        Outcomes { slot, encoder: encoding.map(|new| new(BATCH_ROWS)) }
    }

    /// The outcome of a charge: encoded here when the sink has an encoding, else handed on
    /// whole (copied when borrowed: the parser keeps it to fill it again).
    fn charge(&mut self, parsed: Cow<'_, Parsed>) -> Outcome {
        let c = &parsed.charge;
        let currencies = &mut self.slot.currencies;
        let currency = match currencies.iter().rposition(|cur| *cur == c.currency) {
            Some(i) => i,
            None => {
                currencies.push(c.currency.clone());
                currencies.len() - 1
            }
        };
        let facts = RowFacts {
            billing_period: c.billing_period,
            category: c.category,
            spend: c.is_spend(),
            billed_cost: c.billed_cost,
            currency: currency as u32,
        };
        let seed = seed(&parsed);
        match &mut self.encoder {
            Some(encoder) => {
                encoder.push(c);
                Outcome::Charge(seed, facts, None)
            }
            None => Outcome::Charge(seed, facts, Some(Box::new(parsed.into_owned()))),
        }
    }

    fn finish(self) {
        self.slot.encoded = self.encoder.map(|e| e.finish());
    }
}

/// What the calling thread counted while handing charges to the sink.
#[derive(Default)]
struct Tally {
    /// The profile's name, the platform of every charge.
    platform: &'static str,
    charges: u64,
    rejected: u64,
    totals: BTreeMap<String, Decimal>,
    months: BTreeSet<YearMonth>,
}

impl Tally {
    fn charge(
        &mut self,
        seed: IdSeed,
        facts: Facts,
        parsed: Option<Box<Parsed>>,
        sink: &mut dyn Deliver,
    ) -> Result<bool> {
        self.charges += 1;
        let (index, file) = sink.ids();
        let (id, new) = match seed {
            IdSeed::Native(id) => (id, index.claim(id.0, file)? == Claim::New),
            // The occurrence number of a row among identical rows of the file: the first
            // occurrence this file has not given yet. Identical rows are rare, so this keeps
            // one id per row instead of a counter per distinct content.
            IdSeed::Content(key, first) => (0..)
                .find_map(|occurrence| {
                    let id = if occurrence == 0 {
                        first
                    } else {
                        ChargeId::from_content(key, occurrence)
                    };
                    match index.claim(id.0, file) {
                        Ok(Claim::Given) => None,
                        Ok(claim) => Some(Ok((id, claim == Claim::New))),
                        Err(e) => Some(Err(e)),
                    }
                })
                .unwrap_or(Ok((ChargeId(0), false)))?,
        };
        sink.charge(&facts, parsed.map(|p| p.charge), id, new)?;
        Ok(new)
    }

    /// Hands a slot's outcomes to `sink`, then its encoded batch.
    fn slot(&mut self, slot: &mut Slot, sink: &mut dyn Deliver) -> Result<()> {
        let first_ids = slot.outcomes.iter().filter_map(|outcome| match outcome {
            Outcome::Charge(IdSeed::Native(id) | IdSeed::Content(_, id), ..) => Some(id.0),
            _ => None,
        });
        sink.ids().0.warm(first_ids);
        // Spend of the batch by currency, category and whether the charge is new, and the last
        // month seen: added up once a batch. The file's totals take every charge of a
        // currency, the sink's only the new ones.
        let categories = Category::ALL.len();
        let mut spend = vec![(Decimal::ZERO, 0u64); slot.currencies.len() * categories * 2];
        let mut month = None;
        for outcome in slot.outcomes.drain(..) {
            match outcome {
                Outcome::Charge(seed, row, parsed) => {
                    let currency = row.currency as usize;
                    if month != Some(row.billing_period) {
                        month = Some(row.billing_period);
                        self.months.insert(row.billing_period);
                    }
                    let facts =
                        Facts { platform: self.platform, billing_period: row.billing_period };
                    let new = self.charge(seed, facts, parsed, sink)?;
                    if row.spend {
                        let group = (currency * categories + row.category as usize) * 2;
                        let group = &mut spend[group + usize::from(new)];
                        group.0 = money::add(group.0, row.billed_cost, "a file's spend")?;
                        group.1 += 1;
                    }
                }
                Outcome::Reject(error, cells) => {
                    self.rejected += 1;
                    sink.reject(error, cells)?;
                }
                Outcome::Nothing => {}
            }
        }
        for (currency, groups) in slot.currencies.iter().zip(spend.chunks(categories * 2)) {
            for (&category, known_new) in Category::ALL.iter().zip(groups.chunks(2)) {
                let (billed, charges) = known_new[1];
                if charges > 0 {
                    let platform = self.platform;
                    sink.spent(Spend { platform, category, currency, billed, charges })?;
                }
            }
            if groups.iter().all(|g| g.1 == 0) {
                continue;
            }
            let amount = money::sum(groups.iter().map(|g| g.0), "a file's spend")?;
            match self.totals.get_mut(currency.as_str()) {
                Some(total) => *total = money::add(*total, amount, "a file's spend")?,
                None => {
                    self.totals.insert(currency.clone(), amount);
                }
            }
        }
        match slot.encoded.take() {
            Some(encoded) => sink.encoded(encoded?),
            None => Ok(()),
        }
    }
}

/// Hands the workers' outcomes to `sink` in file order, returning each batch's buffers to
/// the reader; then what the parsers kept back, worker by worker.
fn consume(
    done: channel::Receiver<FromWorker>,
    pool: channel::Sender<Slot>,
    platform: &'static str,
    sink: &mut dyn Deliver,
) -> Result<Tally> {
    let mut tally = Tally { platform, ..Tally::default() };
    let mut next = 0u64;
    let mut waiting: BTreeMap<u64, Slot> = BTreeMap::new();
    let mut kept = Vec::new();
    for message in done {
        match message {
            FromWorker::Batch(seq, slot) => {
                waiting.insert(seq, slot);
            }
            FromWorker::Finish(worker, slot) => kept.push((worker, slot)),
        }
        while let Some(mut slot) = waiting.remove(&next) {
            next += 1;
            tally.slot(&mut slot, sink)?;
            // The reader may have stopped: then the buffers are simply dropped.
            let _ = pool.send(slot);
        }
    }
    kept.sort_by_key(|(worker, _)| *worker);
    for (_, mut slot) in kept {
        tally.slot(&mut slot, sink)?;
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

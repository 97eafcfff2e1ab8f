//! The import pipeline over bounded batches of records (the module docs of `import` say how
//! it runs): a reader thread, parsing threads, and the calling thread that gives ids in file
//! order and hands charges to the sink.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crossbeam_channel as channel;
use rust_decimal::Decimal;

use super::decode::FileCtx;
use super::row::{Next, Row};
use super::source::{BillSource, RecordBatch};
use super::spec::Parser;
use super::spend::SpendTable;
use super::{Facts, FileReport, Header, Parsed, Profile, Progress, Sink, Spend, Window, profiles};
use crate::charge::{Category, ChargeId, YearMonth};
use crate::error::{ErrorKind, Result, RowError};
use crate::ids::{Claim, IdIndex};
use crate::money;

/// [`Facts`] as a parsing thread records them: the currency is an index into its batch's
/// [`Slot::currencies`] (a shared `Arc` would cost two atomic operations a row, on two cores).
struct RowFacts {
    billing_period: YearMonth,
    category: Category,
    spend: bool,
    billed_cost: Decimal,
    currency: u32,
    rounded: super::Rounding,
}

/// [`super::read_bill_among`], in the import window `window`.
pub(crate) fn deliver_bill<S: Sink>(
    path: &Path,
    profile: Option<&'static Profile>,
    candidates: &[&'static Profile],
    window: Window,
    sink: &mut S,
) -> Result<FileReport> {
    let candidates = if candidates.is_empty() { profiles() } else { candidates };
    let mut source = BillSource::open(path, profile, candidates)?;
    source.set_window(window);
    let profile = source.profile();
    sink.begin_file(path, &source.header().names)?;
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
        let slot = Slot::<S::Batch>::new(BATCH_ROWS);
        let _ = pool_tx.send(slot);
    }
    let (work_tx, work_rx) = channel::bounded::<(u64, Slot<S::Batch>)>(workers);
    let (done_tx, done_rx) = channel::unbounded::<FromWorker<S::Batch>>();
    let tally = std::thread::scope(|scope| {
        let reader = {
            let source = &mut source;
            let progress = progress.map(|Progress(report)| {
                move |source: &BillSource| report(path, source.bytes_read().min(size), size)
            });
            scope.spawn(move || read_batches(source, pool_rx, work_tx, progress))
        };
        for (worker, ctx) in contexts.into_iter().enumerate() {
            let (work_rx, done_tx, header) = (work_rx.clone(), done_tx.clone(), &header);
            scope
                .spawn(move || parse_batches::<S>(worker, profile, &ctx, header, work_rx, done_tx));
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
        rounded: tally.rounded,
        sha256,
        size,
    })
}

/// The reading thread: fills the free batches of `pool` with the records of `source`, in
/// order, and hands them to the parsing threads numbered by their place in the file.
fn read_batches<B>(
    source: &mut BillSource,
    pool: channel::Receiver<Slot<B>>,
    work: channel::Sender<(u64, Slot<B>)>,
    progress: Option<impl Fn(&BillSource)>,
) -> Result<()> {
    for seq in 0.. {
        let Ok(mut slot) = pool.recv() else { return Ok(()) };
        let more = source.fill(&mut slot.records)?;
        if let Some(report) = &progress {
            report(source);
        }
        if !more || work.send((seq, slot)).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// A parsing thread: parses the batches it is handed into charges and rejects, and at the
/// end of the file hands over what its parser kept back.
fn parse_batches<S: Sink>(
    worker: usize,
    profile: &'static Profile,
    ctx: &FileCtx,
    header: &Header,
    work: channel::Receiver<(u64, Slot<S::Batch>)>,
    done: channel::Sender<FromWorker<S::Batch>>,
) {
    let mut parser = profile.parser();
    let mut scratch = None;
    for (seq, mut slot) in work {
        parse_batch::<S>(&mut parser, &mut scratch, ctx, header, profile, &mut slot);
        if done.send(FromWorker::Batch(seq, slot)).is_err() {
            return;
        }
    }
    let mut kept = Slot::new(0);
    deliver_rows::<S>(parser.finish(), &mut kept);
    let _ = done.send(FromWorker::Finish(worker, kept));
}

/// Records per batch handed to a parsing thread.
const BATCH_ROWS: usize = 2048;

/// Batches between the reader and the sink at any time: what bounds the pipeline's memory.
const BATCHES_IN_FLIGHT: usize = 8;

/// Parsing threads at most.
const MAX_WORKERS: usize = 4;

/// What became of one record.
enum Outcome {
    /// A charge (in the slot's batch), with what its id is made from and its facts.
    Charge(IdSeed, RowFacts),
    /// A row that could not be read, with its cells.
    Reject(RowError, Vec<String>),
    /// A row the parser kept back, or that carries no charge.
    Nothing,
}

/// A batch of records and what became of each, passed from the reader to a worker to the
/// calling thread and back to the reader: its buffers are reused, never freed and allocated
/// again (fresh memory costs page faults the kernel must zero).
struct Slot<B> {
    records: RecordBatch,
    outcomes: Vec<Outcome>,
    /// The (platform, currency) groups of the batch's charges, in order of appearance: the
    /// platform is the profile's, or the one a row names (gpuaudit's own FOCUS export).
    currencies: Vec<(&'static str, String)>,
    /// The batch's charges in the sink's form, sealed on the parsing thread.
    batch: Option<Result<B>>,
}

impl<B> Slot<B> {
    fn new(records: usize) -> Self {
        Slot {
            records: RecordBatch::new(records),
            outcomes: Vec::new(),
            currencies: Vec::new(),
            batch: None,
        }
    }
}

enum FromWorker<B> {
    /// A batch parsed, with its sequence number.
    Batch(u64, Slot<B>),
    /// What a worker's parser kept back until the end of the file.
    Finish(usize, Slot<B>),
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
    let platform = parsed.identity_platform.unwrap_or(&c.platform);
    match &parsed.native_id {
        Some(native) => {
            IdSeed::Native(ChargeId::from_native(platform, c.account.as_deref(), native))
        }
        None => {
            let key = ChargeId::content_key_as(platform, c, parsed.unmapped);
            IdSeed::Content(key, ChargeId::from_content(key, 0))
        }
    }
}

fn parse_batch<S: Sink>(
    parser: &mut Parser<'_>,
    scratch: &mut Option<Parsed>,
    ctx: &FileCtx,
    header: &Header,
    profile: &'static Profile,
    slot: &mut Slot<S::Batch>,
) {
    let batch = std::mem::replace(&mut slot.records, RecordBatch::new(0));
    ctx.set_state(batch.state);
    let columns = profile.columns();
    let mut out = Outcomes::<S>::start(slot);
    for record in &batch.records[..batch.len] {
        let line = record.position().map_or(0, |p| p.line());
        let row = Row { ctx, record, header, columns, line, whole: ctx.whole(record) };
        let outcome = match row.checked() {
            Next::Bad(error, cells) => Outcome::Reject(error, cells),
            Next::Row(row) => match parser.parse_into(&row, scratch) {
                Ok(true) => match scratch {
                    Some(parsed) => out.charge(parsed),
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
fn deliver_rows<S: Sink>(rows: Vec<Parsed>, slot: &mut Slot<S::Batch>) {
    let mut out = Outcomes::<S>::start(slot);
    for parsed in &rows {
        let outcome = out.charge(parsed);
        out.slot.outcomes.push(outcome);
    }
    out.finish();
}

/// A slot being filled with outcomes on a parsing thread, and the sink's batch of its
/// charges.
struct Outcomes<'s, S: Sink> {
    slot: &'s mut Slot<S::Batch>,
    batch: S::Batch,
}

impl<'s, S: Sink> Outcomes<'s, S> {
    fn start(slot: &'s mut Slot<S::Batch>) -> Self {
        slot.currencies.clear();
        slot.outcomes.clear();
        Outcomes { slot, batch: S::new_batch(BATCH_ROWS) }
    }

    /// The outcome of a charge, which goes into the sink's batch here, while it is in the
    /// CPU's cache.
    fn charge(&mut self, parsed: &Parsed) -> Outcome {
        let c = &parsed.charge;
        let currencies = &mut self.slot.currencies;
        let found = currencies.iter().rposition(|(p, cur)| *cur == c.currency && *p == c.platform);
        let currency = match found {
            Some(i) => i,
            None => {
                // The parser let only a platform name it could keep through (a few).
                let platform = crate::platforms::kept_name(&c.platform).unwrap_or("");
                currencies.push((platform, c.currency.clone()));
                currencies.len() - 1
            }
        };
        let facts = RowFacts {
            billing_period: c.billing_period,
            category: c.category,
            spend: c.is_spend(),
            billed_cost: c.billed_cost,
            currency: currency as u32,
            rounded: parsed.rounded,
        };
        let seed = seed(parsed);
        S::push(&mut self.batch, c);
        Outcome::Charge(seed, facts)
    }

    fn finish(self) {
        let mut batch = self.batch;
        self.slot.batch = Some(S::seal(&mut batch).map(|()| batch));
    }
}

/// What the calling thread counted while handing charges to the sink.
struct Tally {
    /// The profile's name, the platform of its charges (unless a row names its own).
    platform: &'static str,
    charges: u64,
    rejected: u64,
    totals: BTreeMap<String, Decimal>,
    months: BTreeSet<YearMonth>,
    rounded: BTreeMap<String, super::Rounding>,
    /// The file's ids, for a sink that keeps none.
    own_ids: IdIndex,
    /// Per content met more than once in the file, the next occurrence to try.
    next_occurrence: rustc_hash::FxHashMap<u128, u32>,
}

impl Tally {
    fn charge<S: Sink>(&mut self, seed: IdSeed, facts: Facts, sink: &mut S) -> Result<bool> {
        self.charges += 1;
        let (index, file) = match sink.ids() {
            Some(ids) => ids,
            None => (&mut self.own_ids, 1),
        };
        let (id, new) = match seed {
            IdSeed::Native(id) => (id, index.claim(id.0, file)? == Claim::New),
            // The occurrence number of a row among identical rows of the file: the first
            // occurrence this file has not given yet, tried from the one after the last this
            // content was given (remembered only for contents met twice, which are rare): the
            // k-th of n identical rows is found in one probe, not k (n² probes in all).
            IdSeed::Content(key, first) => {
                let start = self.next_occurrence.get(&key).copied().unwrap_or(0);
                let found = (start..)
                    .find_map(|occurrence| {
                        let id = if occurrence == 0 {
                            first
                        } else {
                            ChargeId::from_content(key, occurrence)
                        };
                        match index.claim(id.0, file) {
                            Ok(Claim::Given) => None,
                            Ok(claim) => Some(Ok((id, claim == Claim::New, occurrence))),
                            Err(e) => Some(Err(e)),
                        }
                    })
                    .unwrap_or(Ok((ChargeId(0), false, u32::MAX)))?;
                if found.2 > 0 && found.2 < u32::MAX {
                    self.next_occurrence.insert(key, found.2 + 1);
                }
                (found.0, found.1)
            }
        };
        sink.charge(&facts, id, new)?;
        Ok(new)
    }

    /// Hands a slot's outcomes to `sink`, then its batch.
    fn slot<S: Sink>(&mut self, slot: &mut Slot<S::Batch>, sink: &mut S) -> Result<()> {
        let first_ids = slot.outcomes.iter().filter_map(|outcome| match outcome {
            Outcome::Charge(IdSeed::Native(id) | IdSeed::Content(_, id), ..) => Some(id.0),
            _ => None,
        });
        match sink.ids() {
            Some((index, _)) => index.warm(first_ids),
            None => self.own_ids.warm(first_ids),
        }
        let mut spend = SpendTable::new(slot.currencies.len());
        let mut month = None;
        for outcome in slot.outcomes.drain(..) {
            match outcome {
                Outcome::Charge(seed, row) => {
                    let currency = row.currency as usize;
                    let platform = slot.currencies.get(currency).map_or(self.platform, |g| g.0);
                    if month != Some(row.billing_period) {
                        month = Some(row.billing_period);
                        self.months.insert(row.billing_period);
                    }
                    let facts = Facts { platform, billing_period: row.billing_period };
                    let new = self.charge(seed, facts, sink)?;
                    if row.rounded.amounts > 0 {
                        let currency = slot.currencies.get(currency).map_or("", |g| g.1.as_str());
                        self.rounded.entry(currency.to_owned()).or_default().add(&row.rounded)?;
                    }
                    if row.spend {
                        spend.add(currency, row.category, new, row.billed_cost)?;
                    }
                }
                Outcome::Reject(error, cells) => {
                    self.rejected += 1;
                    sink.reject(error, cells)?;
                }
                Outcome::Nothing => {}
            }
        }
        for (n, (platform, currency)) in slot.currencies.iter().enumerate() {
            for (category, billed, charges) in spend.new_of(n) {
                let platform = *platform;
                sink.spent(Spend { platform, category, currency, billed, charges })?;
            }
            let Some(amount) = spend.total_of(n)? else { continue };
            match self.totals.get_mut(currency.as_str()) {
                Some(total) => *total = money::add(*total, amount, "a file's spend")?,
                None => {
                    self.totals.insert(currency.clone(), amount);
                }
            }
        }
        match slot.batch.take() {
            Some(batch) => sink.batch(batch?),
            None => Ok(()),
        }
    }
}

/// Hands the workers' outcomes to `sink` in file order, returning each batch's buffers to
/// the reader; then what the parsers kept back, worker by worker.
fn consume<S: Sink>(
    done: channel::Receiver<FromWorker<S::Batch>>,
    pool: channel::Sender<Slot<S::Batch>>,
    platform: &'static str,
    sink: &mut S,
) -> Result<Tally> {
    let mut tally = Tally {
        platform,
        charges: 0,
        rejected: 0,
        totals: BTreeMap::new(),
        months: BTreeSet::new(),
        rounded: BTreeMap::new(),
        own_ids: IdIndex::in_memory(),
        next_occurrence: Default::default(),
    };
    let mut next = 0u64;
    let mut waiting: BTreeMap<u64, Slot<S::Batch>> = BTreeMap::new();
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

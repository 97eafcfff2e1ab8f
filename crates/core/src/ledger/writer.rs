//! Writing a batch: charges buffered per partition and flushed as Parquet part files by a
//! thread of their own (which publishes each, see `backend`), rejected rows kept as CSV; the
//! commit is in `commit`.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use polars::prelude::{BooleanChunked, DataFrame};

use super::backend::{Backend, make_parent};
use super::columns::{self, FrameBuilder};
use super::log::State;
use super::manifest::{LookBack, PartFile, SourceFile};
use super::rollup::Rollup;
use super::{FLUSH_ROWS, ImportOptions, ROLLUPS, Store, Totals, io, look_back, part};
use crate::charge::{Charge, ChargeId, YearMonth};
use crate::error::{Error, ErrorKind, MAX_LISTED_ROW_ERRORS, Result, RowError};
use crate::ids::IdIndex;
use crate::import::{self, Facts, Sink, Spend};

/// The first row problems of a batch, kept for the error message.
#[derive(Default)]
pub(super) struct Failure {
    pub(super) errors: Vec<RowError>,
    pub(super) total: u64,
}

/// A charge counted by [`Writer::add`], waiting for its columns.
struct Pending {
    id: u128,
    keep: bool,
    month: YearMonth,
    platform: &'static str,
}

/// A batch being written.
pub struct Writer {
    pub(super) store: Store,
    /// The ledger as the writer found it (and, at commit, as it is when it commits).
    pub(super) state: State,
    /// Every id of the ledger and of the batch so far.
    pub(super) known: IdIndex,
    /// Serial of the file being read (0 stands for the committed ledger).
    pub(super) file: u32,
    pub(super) batch: String,
    buffers: BTreeMap<(YearMonth, String), Vec<DataFrame>>,
    /// What is known of the charges whose columns have not come yet.
    pending: Vec<Pending>,
    pub(super) parts: Vec<PartFile>,
    pub(super) rejects: Vec<String>,
    pub(super) sources: Vec<SourceFile>,
    pub(super) totals: Totals,
    parquet: Option<ParquetThread>,
    /// The rollup of the part files written so far.
    pub(super) rollup: Rollup,
    /// The rollup file written at commit, relative to the ledger folder.
    pub(super) rollup_file: Option<String>,
    /// The look-back files written (see `look_back`), known once the Parquet thread ends.
    pub(super) look_back: Vec<LookBack>,
    /// The commit upgrades a ledger of before commits (see `log`).
    pub(super) upgraded: bool,
}

/// Columns waiting to be written: the name of their part file, the frame and its partition.
type ParquetJob = (String, DataFrame, YearMonth, String);

/// The thread that turns buffered charges into Parquet part files, one batch behind parsing,
/// sums them into the batch's rollup and writes the batch's look-back files.
struct ParquetThread {
    jobs: std::sync::mpsc::SyncSender<ParquetJob>,
    thread: std::thread::JoinHandle<Result<(Rollup, Vec<LookBack>)>>,
}

impl ParquetThread {
    fn start(backend: Backend, batch: &str) -> Self {
        // One part file may wait while another is written, so parsing does not stall when a
        // write takes longer than a flush's worth of parsing (the writer's compression and file
        // output run on this one thread). Memory holds at most three flushes' worth.
        let (jobs, queue) = std::sync::mpsc::sync_channel::<ParquetJob>(1);
        let mut look_back = look_back::Writing::new(backend.clone(), batch);
        let thread = std::thread::spawn(move || {
            let mut rollup = Rollup::new();
            let written = || -> Result<()> {
                for (name, mut frame, month, platform) in queue {
                    let path = backend.stage(&name);
                    rollup.add_frame(month, &platform, &frame).map_err(|source| {
                        Error::from(ErrorKind::Parquet { path: path.clone(), source })
                    })?;
                    make_parent(&path)?;
                    write_part(&path, &mut frame)?;
                    backend.publish(&name)?;
                    look_back.add(month, &platform, &frame)?;
                }
                Ok(())
            };
            match written() {
                Ok(()) => Ok((rollup, look_back.finish()?)),
                Err(e) => {
                    look_back.abort();
                    Err(e)
                }
            }
        });
        ParquetThread { jobs, thread }
    }
}

/// Writes one part file, past the page cache (see `crate::direct`), and syncs it to disk.
fn write_part(path: &Path, frame: &mut DataFrame) -> Result<()> {
    let parquet_error = |source| Error::from(ErrorKind::Parquet { path: path.to_owned(), source });
    // Gathered in large writes: the Parquet writer makes a call per Thrift field of every
    // page header (tens of thousands of one-byte writes per part file).
    let mut file = io(path, crate::direct::Writer::create_new(path))?;
    part::write(&mut file, frame).map_err(parquet_error)?;
    let file = io(path, file.finish())?;
    io(path, file.sync_all())
}

/// A batch of charges as the ledger keeps them: their columns, built on a parsing thread
/// while the charges are in the CPU's cache, and turned into a frame there too.
pub(crate) enum Columns {
    /// Charges are being added.
    Building(FrameBuilder),
    /// Sealed: the frame of the batch.
    Built(DataFrame),
    /// Between the two.
    Moved,
}

impl Writer {
    /// A writer of batch `batch` of `store`, as of `state`, with the ids it names in `known`.
    pub(super) fn new(store: Store, state: State, known: IdIndex, batch: String) -> Self {
        Writer {
            store,
            state,
            known,
            file: 0,
            batch,
            buffers: BTreeMap::new(),
            pending: Vec::new(),
            parts: Vec::new(),
            rejects: Vec::new(),
            sources: Vec::new(),
            totals: Totals::new(),
            parquet: None,
            rollup: Rollup::new(),
            rollup_file: None,
            look_back: Vec::new(),
            upgraded: false,
        }
    }

    /// Counts a charge of the file being read; a new one is written when `write`.
    fn add(&mut self, facts: &Facts, id: ChargeId, new: bool, write: bool) {
        self.pending.push(Pending {
            id: id.0,
            keep: new && write,
            month: facts.billing_period,
            platform: facts.platform,
        });
    }

    /// Adds the spend of new charges of a batch to the totals.
    fn add_spend(&mut self, spend: Spend) -> Result<()> {
        // Keys are looked up borrowed: no allocation once a group exists.
        let found = self.totals.iter_mut().find(|((p, c, cur), _)| {
            *c == spend.category && cur == spend.currency && p == spend.platform
        });
        let total = match found {
            Some((_, total)) => total,
            None => self
                .totals
                .entry((spend.platform.to_owned(), spend.category, spend.currency.to_owned()))
                .or_default(),
        };
        total.0 = crate::money::add(total.0, spend.billed, "the batch's spend")?;
        total.1 += spend.charges;
        Ok(())
    }

    /// Takes the columns of the charges counted since the last call: the new ones go to
    /// their partitions' buffers, the rest are dropped.
    fn add_frame(&mut self, frame: DataFrame) -> Result<()> {
        let mut pending = std::mem::take(&mut self.pending);
        let added = self.add_rows(frame, &pending);
        // The list is kept for the next batch: growing a new one cost a dozen reallocations.
        pending.clear();
        self.pending = pending;
        added
    }

    /// [`Writer::add_frame`] for the charges `pending` counted.
    fn add_rows(&mut self, frame: DataFrame, pending: &[Pending]) -> Result<()> {
        if !pending.iter().any(|p| p.keep) {
            return Ok(());
        }
        let frame_error =
            |e: polars::prelude::PolarsError| Error::ledger(self.store.root(), e.to_string());
        if frame.height() != pending.len() {
            return Err(Error::ledger(self.store.root(), "columns and charges out of step"));
        }
        let ids: Vec<u128> = pending.iter().map(|p| p.id).collect();
        let frame = columns::with_ids(frame, &ids).map_err(frame_error)?;
        let mut keys: Vec<(YearMonth, &'static str)> = Vec::new();
        for p in pending.iter().filter(|p| p.keep) {
            if !keys.contains(&(p.month, p.platform)) {
                keys.push((p.month, p.platform));
            }
        }
        for (month, platform) in keys {
            let mask: BooleanChunked = pending
                .iter()
                .map(|p| p.keep && p.month == month && p.platform == platform)
                .collect();
            let part = if mask.all() {
                frame.clone()
            } else {
                frame.filter(&mask).map_err(frame_error)?
            };
            let found = self.buffers.iter_mut().find(|((m, p), _)| *m == month && p == platform);
            match found {
                Some((_, frames)) => frames.push(part),
                None => {
                    self.buffers.insert((month, platform.to_owned()), vec![part]);
                }
            }
        }
        let buffered: usize = self.buffers.values().flatten().map(DataFrame::height).sum();
        if buffered >= FLUSH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands every buffered partition to the Parquet thread, which writes it as a part file
    /// while parsing goes on (the machines have two cores).
    pub(super) fn flush(&mut self) -> Result<()> {
        for ((month, platform), frames) in std::mem::take(&mut self.buffers) {
            let mut frames = frames.into_iter();
            let Some(mut frame) = frames.next() else { continue };
            for more in frames {
                frame
                    .vstack_mut_owned(more)
                    .map_err(|e| Error::ledger(self.store.root(), e.to_string()))?;
            }
            let dir = format!("charges/month={month}/platform={platform}");
            let rel = format!("{dir}/{}-{:04}.parquet", self.batch, self.parts.len());
            self.parts.push(PartFile {
                path: rel.clone(),
                month: month.to_string(),
                platform: platform.clone(),
                rows: frame.height() as u64,
            });
            let backend = &self.store.backend;
            let batch = &self.batch;
            let parquet =
                self.parquet.get_or_insert_with(|| ParquetThread::start(backend.clone(), batch));
            if parquet.jobs.send((rel, frame, month, platform)).is_err() {
                // The thread stopped on an error: `finish_parquet` reports it.
                return self.finish_parquet();
            }
        }
        Ok(())
    }

    /// Waits for the Parquet thread to write what it was given, and takes its rollup; its
    /// first error, if any.
    pub(super) fn finish_parquet(&mut self) -> Result<()> {
        match self.parquet.take() {
            None => Ok(()),
            Some(ParquetThread { jobs, thread, .. }) => {
                drop(jobs);
                let (rollup, look_back) = thread.join().unwrap_or_else(|_| {
                    Err(Error::ledger(self.store.root(), "the Parquet writer thread panicked"))
                })?;
                self.rollup.absorb(rollup);
                self.look_back.extend(look_back);
                Ok(())
            }
        }
    }

    /// Writes the batch's rollup under `rollups/` (when it is whole and not empty); the
    /// manifest names it at commit.
    pub(super) fn write_rollup(&mut self) -> Result<()> {
        if !self.rollup.is_whole() || self.parts.is_empty() {
            return Ok(());
        }
        let name = format!("{ROLLUPS}/{}.parquet", self.batch);
        let path = self.store.backend.stage(&name);
        make_parent(&path)?;
        self.rollup_file = Some(name.clone());
        self.rollup.write(&path)?;
        self.store.backend.publish(&name)
    }

    fn start_rejects(&mut self, path: &Path, header: &[String]) -> Result<RejectFile> {
        let name = path.file_name().map_or_else(|| "input".into(), |n| n.to_string_lossy());
        let rel = format!("rejects/{}/{:03}-{name}", self.batch, self.sources.len());
        let full = self.store.backend.stage(&rel);
        make_parent(&full)?;
        self.rejects.push(rel.clone());
        let file = io(&full, File::create(&full))?;
        // Rows keep their width, whatever it is: a short or long row is the most common bad row.
        let mut csv =
            csv::WriterBuilder::new().flexible(true).from_writer(std::io::BufWriter::new(file));
        let mut head = vec!["line".to_owned(), "column".to_owned(), "reason".to_owned()];
        head.extend(header.iter().cloned());
        csv.write_record(&head).map_err(|e| csv_error(&full, e))?;
        Ok(RejectFile { path: full, name: rel, csv })
    }

    pub(super) fn finish_rejects(&mut self, rejects: RejectFile) -> Result<()> {
        let RejectFile { path, name, csv } = rejects;
        let file = csv
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        io(&path, file.sync_all())?;
        self.store.backend.publish(&name)
    }

    /// Removes what this batch wrote; no commit names it.
    pub(super) fn abort(&mut self) {
        self.buffers.clear();
        let _ = self.finish_parquet();
        for name in self.written() {
            self.store.backend.unstage(name);
        }
        self.parts.clear();
        self.rejects.clear();
        self.rollup_file = None;
        self.look_back.clear();
    }
}

impl Writer {
    /// Every file the batch has written so far.
    pub(super) fn written(&self) -> impl Iterator<Item = &String> {
        let look_back = self.look_back.iter().flat_map(LookBack::names);
        let parts = self.parts.iter().map(|p| &p.path);
        parts.chain(&self.rejects).chain(&self.rollup_file).chain(look_back)
    }
}

impl Drop for Writer {
    /// Removes the writer's scratch files, and the scratch folder when no other is left.
    fn drop(&mut self) {
        self.known = IdIndex::in_memory();
        let _ = std::fs::remove_dir(
            self.store.backend.scratch(&self.batch).parent().unwrap_or(Path::new("")),
        );
    }
}

/// An I/O error at `name` when `GPUAUDIT_FAILPOINT` says so (tests of a failed commit: a full
/// disk or a permission error at the last step).
pub(super) fn failpoint_error(name: &str) -> std::io::Result<()> {
    if std::env::var_os("GPUAUDIT_FAILPOINT").is_some_and(|v| v == name) {
        return Err(std::io::Error::other(format!("failpoint {name}")));
    }
    Ok(())
}

/// Aborts the process at `name` when `GPUAUDIT_FAILPOINT` says so (crash tests).
pub(super) fn failpoint(name: &str) {
    if std::env::var_os("GPUAUDIT_FAILPOINT").is_some_and(|v| v == name) {
        std::process::abort();
    }
}

fn csv_error(path: &Path, e: csv::Error) -> Error {
    match e.into_kind() {
        csv::ErrorKind::Io(io) => Error::io(path, io),
        other => Error::ledger(path, format!("cannot write rejects: {other:?}")),
    }
}

pub(super) struct RejectFile {
    path: PathBuf,
    name: String,
    csv: csv::Writer<std::io::BufWriter<File>>,
}

/// Feeds one file's charges and rejects into the batch.
pub(super) struct BatchSink<'a> {
    pub(super) writer: &'a mut Writer,
    pub(super) options: &'a ImportOptions,
    pub(super) new: u64,
    pub(super) duplicates: u64,
    pub(super) failure: &'a mut Failure,
    pub(super) rejects: Option<RejectFile>,
    pub(super) header: Vec<String>,
    pub(super) path: PathBuf,
}

impl Sink for BatchSink<'_> {
    type Batch = Columns;

    fn new_batch(capacity: usize) -> Columns {
        Columns::Building(FrameBuilder::new(capacity))
    }

    fn push(batch: &mut Columns, charge: &Charge) {
        if let Columns::Building(builder) = batch {
            builder.push(charge);
        }
    }

    fn seal(batch: &mut Columns) -> Result<()> {
        if let Columns::Building(builder) = std::mem::replace(batch, Columns::Moved) {
            let frame = builder
                .finish()
                .map_err(|source| ErrorKind::Parquet { path: PathBuf::from("charges"), source })?;
            *batch = Columns::Built(frame);
        }
        Ok(())
    }

    fn begin_file(&mut self, _path: &Path, header: &[String]) -> Result<()> {
        self.header = header.to_vec();
        Ok(())
    }

    fn ids(&mut self) -> Option<(&mut IdIndex, u32)> {
        Some((&mut self.writer.known, self.writer.file))
    }

    fn progress(&self) -> Option<import::Progress> {
        self.options.progress.clone()
    }

    fn charge(&mut self, facts: &Facts, id: ChargeId, new: bool) -> Result<()> {
        if new {
            self.new += 1;
        } else {
            self.duplicates += 1;
        }
        let write = !self.options.dry_run && self.failure.total == 0;
        self.writer.add(facts, id, new, write);
        Ok(())
    }

    fn spent(&mut self, spend: Spend) -> Result<()> {
        self.writer.add_spend(spend)
    }

    fn batch(&mut self, batch: Columns) -> Result<()> {
        match batch {
            Columns::Built(frame) => self.writer.add_frame(frame),
            _ => Err(Error::ledger(self.writer.store.root(), "a batch of charges came unsealed")),
        }
    }

    fn reject(&mut self, error: RowError, cells: Vec<String>) -> Result<()> {
        if !self.options.skip_invalid {
            if self.failure.errors.len() < MAX_LISTED_ROW_ERRORS {
                self.failure.errors.push(error);
            }
            self.failure.total += 1;
            return Ok(());
        }
        if self.options.dry_run {
            return Ok(());
        }
        if self.rejects.is_none() {
            self.rejects = Some(self.writer.start_rejects(&self.path, &self.header)?);
        }
        if let Some(rejects) = &mut self.rejects {
            let mut record = vec![
                error.location.line.to_string(),
                error.location.column.clone().unwrap_or_default(),
                error.problem.to_string(),
            ];
            record.extend(cells);
            rejects.csv.write_record(&record).map_err(|e| csv_error(&rejects.path, e))?;
        }
        Ok(())
    }
}

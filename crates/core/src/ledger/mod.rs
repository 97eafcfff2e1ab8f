//! The embedded ledger: a folder of Hive-partitioned Parquet files and a manifest.
//!
//! ```text
//! .gpuaudit/
//!   LOCK                                   advisory lock, one writer at a time
//!   manifest.json                          committed batches
//!   charges/month=YYYY-MM/platform=P/<batch>-<n>.parquet
//!   rejects/<batch>/<n>-<file>.csv         rows not imported, with why (--skip-invalid)
//! ```
//!
//! Decisions:
//! - A batch is committed only by atomically replacing `manifest.json` (temp file, fsync,
//!   rename, fsync of the folder). Readers read only files the manifest names, so a crash at
//!   any instant leaves the ledger as before the batch or after it. Files no manifest names
//!   are removed by the next writer, under the lock.
//! - One `import` is one batch. A batch that adds no charge and rejects no row is not
//!   recorded: the manifest stays byte for byte as it was.
//! - Deduplication: the ids of every committed charge are loaded (only the `id` column) when
//!   a writer starts, into an [`IdIndex`] that holds at most [`crate::ids::IN_MEMORY`] ids in
//!   memory and spills the rest to sorted runs under `tmp/<batch>/` (removed when the writer
//!   ends, or by the next writer after a crash); a charge whose id is known, from the ledger or
//!   earlier in the same batch, is a duplicate.
//! - Charges are buffered per partition and flushed as Parquet part files every
//!   [`FLUSH_ROWS`] rows, written by a second thread while parsing goes on. Memory is bounded
//!   whatever the size of the input: the id index (two maps of about 35 MB, a 32 MiB filter
//!   once it spills), three buffers of [`FLUSH_ROWS`] charges and the import pipeline's
//!   batches (measured with the CLI, whose allocator keeps freed memory: 172–202 MB peak for
//!   a 100 MB FOCUS export, 298–335 MB for 1 GB, 314–316 MB for 3 GB).
//! - Part files are written by the `part` module, which chooses each column's encoding from
//!   what the ledger knows of it, past the page cache (`crate::direct`), and compressed with
//!   LZ4 (the `LZ4_RAW` codec; DuckDB, polars and Spark read it), but for the ids, which LZ4
//!   cannot shrink. zstd made the files half the size but cost a tenth of an import's CPU
//!   time: the ledger of a 1 GB FOCUS export is 211 MB so, 108 MB with zstd.
//! - The partition month is the charge's billing period.
//! - Part files are written under `tmp/<batch>/` and moved into their partitions only at
//!   commit, just before the manifest is replaced: a program that reads
//!   `charges/**/*.parquet` directly (DuckDB) never sees a batch while it is being written,
//!   and after a crash sees an orphan only if the crash fell between those moves and the
//!   manifest (the next writer removes it).
//! - Setting the environment variable `GPUAUDIT_FAILPOINT` to `before-publish` (Parquet
//!   files written, not moved) or `before-commit` (moved, manifest not replaced) aborts the
//!   process there: the crash tests use them to prove that such a crash loses nothing and
//!   that the ledger shows nothing of the batch. `manifest-rename` makes replacing the
//!   manifest fail (as a full disk would): the batch's part files are then moved back out of
//!   `charges/` (removed), and the import fails with the ledger as it was.

mod columns;
mod part;
mod repair;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::Utc;
use polars::prelude::{BooleanChunked, DataFrame, ParquetReader, SerReader};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

pub use columns::COLUMNS;
use columns::FrameBuilder;
pub use repair::{Problem, Verified};

use crate::charge::{Category, Charge, ChargeId, YearMonth};
use crate::error::{Error, ErrorKind, MAX_LISTED_ROW_ERRORS, Result, RowError};
use crate::ids::IdIndex;
use crate::import::{self, ControlTotal, Deliver, Facts, FileReport, Profile, Spend};

/// Rows buffered before a part file is written.
pub const FLUSH_ROWS: usize = 32_768;

/// The default ledger folder, relative to the working directory.
pub const DEFAULT_DIR: &str = ".gpuaudit";

const MANIFEST: &str = "manifest.json";
const MANIFEST_TMP: &str = "manifest.json.tmp";
const LOCK: &str = "LOCK";
/// Scratch files of a writer (spilled id runs), removed when it ends or by the next writer.
const TMP: &str = "tmp";

/// The list of committed batches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version of the manifest (1).
    pub version: u32,
    /// Batches, oldest first.
    pub batches: Vec<Batch>,
}

/// One committed import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    /// Unique id: UTC time and a random suffix.
    pub id: String,
    /// When it was committed (RFC 3339, UTC).
    pub created: String,
    /// The files read.
    pub sources: Vec<SourceFile>,
    /// Charges added.
    pub rows: u64,
    /// Billing months the batch added charges to.
    pub months: Vec<String>,
    /// Parquet files written, relative to the ledger folder.
    pub files: Vec<PartFile>,
    /// Reject files written, relative to the ledger folder.
    pub rejects: Vec<String>,
}

/// A bill file read by a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    /// The path as given on the command line.
    pub path: String,
    /// SHA-256 of its bytes, hex.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// The profile that read it.
    pub profile: String,
    /// The platform of its charges (absent in ledgers made before it was recorded: the
    /// profile's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// The zone the profile cut its days and months in (IANA name; absent in ledgers made
    /// before it was recorded: a built-in profile's zone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Data rows read.
    pub rows_read: u64,
    /// Charges new to the ledger.
    pub new: u64,
    /// Charges already in the ledger.
    pub duplicates: u64,
    /// Rows rejected.
    pub rejected: u64,
    /// Footer control totals.
    pub control_totals: Vec<ControlTotal>,
    /// What the file's spend rows add up to, per currency (all rows read, new or not).
    #[serde(default)]
    pub totals: BTreeMap<String, Decimal>,
    /// Billing months of the file's rows.
    #[serde(default)]
    pub months: Vec<String>,
}

/// One Parquet part file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartFile {
    /// Path relative to the ledger folder.
    pub path: String,
    /// Billing month of its charges.
    pub month: String,
    /// Platform of its charges.
    pub platform: String,
    /// Number of charges.
    pub rows: u64,
}

/// How to import.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Read every file with this profile instead of detecting one.
    pub profile: Option<&'static dyn Profile>,
    /// The profiles detection chooses among (the built-in ones when empty).
    pub candidates: Vec<&'static dyn Profile>,
    /// Import the valid rows and write the invalid ones under `rejects/`.
    pub skip_invalid: bool,
    /// Read and count, write nothing.
    pub dry_run: bool,
    /// Where to report how far reading each file has got (a progress bar).
    pub progress: Option<import::Progress>,
    /// The years a bill's times may fall in (2000–2100 by default).
    pub window: import::Window,
    /// The most charge ids held in memory before they spill to scratch files
    /// ([`crate::ids::IN_MEMORY`] when `None`): lower it to bound memory further.
    pub ids_in_memory: Option<usize>,
}

/// What importing one file did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOutcome {
    /// What reading it found.
    pub report: FileReport,
    /// Charges new to the ledger.
    pub new: u64,
    /// Charges already in the ledger (or earlier in this batch).
    pub duplicates: u64,
}

/// Billed totals of new charges: (platform, category, currency) → (billed cost, charges).
pub type Totals = BTreeMap<(String, Category, String), (Decimal, u64)>;

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportOutcome {
    /// The batch committed; `None` for a dry run or when nothing was new.
    pub batch: Option<String>,
    /// Per file, in the order given.
    pub files: Vec<FileOutcome>,
    /// Spend of the new charges (payments left out).
    pub totals: Totals,
}

/// A ledger folder.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// Which charges to load.
#[derive(Debug, Clone, Default)]
pub struct LoadFilter {
    /// Only these billing months (all when empty).
    pub months: Vec<YearMonth>,
}

fn io<T>(path: &Path, r: std::io::Result<T>) -> Result<T> {
    r.map_err(|e| Error::io(path, e))
}

fn sync_dir(path: &Path) -> Result<()> {
    io(path, File::open(path).and_then(|d| d.sync_all()))
}

impl Store {
    /// The ledger at `root` (nothing is read or created yet).
    pub fn open(root: impl Into<PathBuf>) -> Self {
        Store { root: root.into() }
    }

    /// The ledger folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The committed batches; an empty manifest when the ledger does not exist yet.
    pub fn manifest(&self) -> Result<Manifest> {
        let path = self.root.join(MANIFEST);
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| Error::ledger(&path, format!("unreadable manifest: {e}"))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Ok(Manifest { version: 1, batches: Vec::new() })
            }
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// The zone of each platform of the ledger, as the profiles that imported it said (the
    /// newest file's wins). Files imported before zones were recorded say nothing: combine
    /// with [`crate::zones::Zones::with_profiles`] of the profiles in use.
    pub fn zones(&self) -> Result<crate::zones::Zones> {
        let mut zones = crate::zones::Zones::none();
        for source in self.manifest()?.batches.iter().flat_map(|b| &b.sources) {
            let platform = source.platform.as_deref().unwrap_or(&source.profile);
            if let Some(zone) = source.zone.as_deref().and_then(|z| z.parse().ok()) {
                zones.insert(platform, zone);
            }
        }
        Ok(zones)
    }

    /// Loads the committed charges that pass `filter`, in batch and file order, each charge
    /// whose resource is a compute instance among them linked to it
    /// ([`crate::link_to_instances`]).
    pub fn load(&self, filter: &LoadFilter) -> Result<Vec<Charge>> {
        let months: HashSet<String> = filter.months.iter().map(ToString::to_string).collect();
        let mut charges = Vec::new();
        for batch in self.manifest()?.batches {
            for part in batch.files {
                if !months.is_empty() && !months.contains(&part.month) {
                    continue;
                }
                let path = self.root.join(&part.path);
                let mut read = read_parquet(&path, None)
                    .and_then(|df| columns::from_frame(&df).map_err(|m| Error::ledger(&path, m)))
                    .map_err(|e| unreadable(e, &batch.id))?;
                charges.append(&mut read);
            }
        }
        crate::charge::link_to_instances(&mut charges);
        Ok(charges)
    }

    /// Takes the writer's lock (waiting for another writer to finish), sweeps files left by
    /// a crashed writer and loads the known ids.
    pub fn writer(&self) -> Result<Writer> {
        self.writer_keeping(crate::ids::IN_MEMORY, false)
    }

    /// [`Store::writer`], holding at most `ids_in_memory` ids in memory. A dry run writes
    /// nothing to the ledger, not even the lock (the ledger may be read-only): it reads the
    /// committed ids without the lock, and spills ids to the system's temporary folder.
    fn writer_keeping(&self, ids_in_memory: usize, dry_run: bool) -> Result<Writer> {
        let lock = if dry_run { None } else { Some(self.lock()?) };
        let manifest = self.manifest()?;
        if !dry_run {
            self.sweep(&manifest)?;
        }
        let batch = format!(
            "{}-{:08x}",
            Utc::now().format("%Y%m%dT%H%M%S%.6fZ"),
            std::process::id() ^ (Utc::now().timestamp_subsec_nanos())
        );
        let scratch = if dry_run {
            std::env::temp_dir().join(format!("gpuaudit-dry-run-{batch}"))
        } else {
            self.root.join(TMP).join(&batch)
        };
        let mut known = IdIndex::spilling(scratch, ids_in_memory);
        let parts = manifest.batches.iter().flat_map(|b| b.files.iter().map(move |p| (b, p)));
        for (batch, part) in parts {
            let path = self.root.join(&part.path);
            let unreadable = |e| unreadable(e, &batch.id);
            let df = read_parquet(&path, Some(vec!["id".into()])).map_err(unreadable)?;
            let ids = df
                .column("id")
                .and_then(|c| c.str().cloned())
                .map_err(|e| unreadable(Error::ledger(&path, e.to_string())))?;
            for id in ids.iter().flatten() {
                let id = u128::from_str_radix(id, 16).map_err(|_| {
                    unreadable(Error::ledger(&path, format!("bad charge id {id:?}")))
                })?;
                known.claim(id, 0)?;
            }
        }
        Ok(Writer {
            root: self.root.clone(),
            _lock: lock,
            manifest,
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
        })
    }

    /// Takes the writer's lock, waiting for another writer to finish; creates the ledger
    /// folder first. Released when the file is dropped.
    fn lock(&self) -> Result<File> {
        io(&self.root, fs::create_dir_all(&self.root))?;
        let path = self.root.join(LOCK);
        let lock =
            io(&path, fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path))?;
        io(&path, lock.lock())?;
        Ok(lock)
    }

    /// Removes files under `charges/` and `rejects/` that no committed batch names, and a
    /// leftover temporary manifest.
    fn sweep(&self, manifest: &Manifest) -> Result<()> {
        let named: HashSet<PathBuf> = manifest
            .batches
            .iter()
            .flat_map(|b| b.files.iter().map(|p| &p.path).chain(&b.rejects))
            .map(|p| self.root.join(p))
            .collect();
        for top in ["charges", "rejects", TMP] {
            remove_unnamed(&self.root.join(top), &named)?;
        }
        let tmp = self.root.join(MANIFEST_TMP);
        if tmp.exists() {
            io(&tmp, fs::remove_file(&tmp))?;
        }
        Ok(())
    }

    /// Imports `files` as one batch. See the module docs for what is atomic.
    pub fn import(&self, files: &[PathBuf], options: &ImportOptions) -> Result<ImportOutcome> {
        let in_memory = options.ids_in_memory.unwrap_or(crate::ids::IN_MEMORY).max(1);
        let mut writer = if options.dry_run && !self.root.join(MANIFEST).exists() {
            Writer::detached(&self.root)
        } else {
            self.writer_keeping(in_memory, options.dry_run)?
        };
        let mut outcomes = Vec::new();
        let mut failure = Failure::default();
        for path in files {
            writer.file += 1;
            let mut sink = BatchSink {
                writer: &mut writer,
                options,
                new: 0,
                duplicates: 0,
                failure: &mut failure,
                rejects: None,
                header: Vec::new(),
                path: path.clone(),
            };
            let read = import::deliver_bill(
                path,
                options.profile,
                &options.candidates,
                options.window,
                &mut sink,
            );
            let report = match read {
                Ok(report) => report,
                Err(e) => {
                    writer.abort();
                    return Err(e);
                }
            };
            let (new, duplicates) = (sink.new, sink.duplicates);
            if let Some(rejects) = sink.rejects.take() {
                writer.finish_rejects(rejects)?;
            }
            writer.sources.push(SourceFile {
                path: report.path.clone(),
                sha256: report.sha256.clone(),
                size: report.size,
                profile: report.profile.to_owned(),
                platform: Some(report.platform.to_owned()),
                zone: Some(report.zone.name().to_owned()),
                rows_read: report.rows_read,
                new,
                duplicates,
                rejected: report.rejected,
                control_totals: report.control_totals.clone(),
                totals: report.totals.clone(),
                months: report.months.iter().map(ToString::to_string).collect(),
            });
            outcomes.push(FileOutcome { report, new, duplicates });
        }
        if failure.total > 0 {
            writer.abort();
            return Err(
                ErrorKind::InvalidRows { errors: failure.errors, total: failure.total }.into()
            );
        }
        let totals = writer.totals.clone();
        if options.dry_run {
            writer.abort();
            return Ok(ImportOutcome { batch: None, files: outcomes, totals });
        }
        let batch = writer.commit()?;
        Ok(ImportOutcome { batch, files: outcomes, totals })
    }
}

/// The error of a committed file that cannot be read, with the way out: which batch it is
/// part of, and how to take that batch out.
fn unreadable(e: Error, batch: &str) -> Error {
    let repair = format!(
        "; the file is part of batch {batch}: `gpuaudit ledger --remove {batch}` takes the batch \
         out (import its bills again after), `gpuaudit ledger --verify` checks every file"
    );
    match e.into_kind() {
        ErrorKind::Ledger { path, message } => Error::ledger(path, message + &repair),
        ErrorKind::Parquet { path, source } => {
            Error::ledger(path, format!("parquet: {source}{repair}"))
        }
        ErrorKind::Io { path, source } => Error::ledger(path, format!("{source}{repair}")),
        other => other.into(),
    }
}

fn remove_unnamed(dir: &Path, named: &HashSet<PathBuf>) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries {
        let path = io(dir, entry)?.path();
        if path.is_dir() {
            remove_unnamed(&path, named)?;
            // Only succeeds when empty; a non-empty folder is still in use.
            let _ = fs::remove_dir(&path);
        } else if !named.contains(&path) {
            io(&path, fs::remove_file(&path))?;
        }
    }
    Ok(())
}

fn read_parquet(path: &Path, columns: Option<Vec<String>>) -> Result<polars::prelude::DataFrame> {
    let file = io(path, File::open(path))?;
    ParquetReader::new(file)
        .with_columns(columns)
        .finish()
        .map_err(|source| ErrorKind::Parquet { path: path.to_owned(), source }.into())
}

/// The first row problems of a batch, kept for the error message.
#[derive(Default)]
struct Failure {
    errors: Vec<RowError>,
    total: u64,
}

/// A charge counted by [`Writer::add`], waiting for its columns.
struct Pending {
    id: u128,
    keep: bool,
    month: YearMonth,
    platform: &'static str,
}

/// A batch being written, holding the ledger's lock.
pub struct Writer {
    root: PathBuf,
    /// The advisory lock, released on drop; `None` for a dry run on a missing ledger.
    _lock: Option<File>,
    manifest: Manifest,
    /// Every id of the ledger and of the batch so far.
    known: IdIndex,
    /// Serial of the file being read (0 stands for the committed ledger).
    file: u32,
    batch: String,
    buffers: BTreeMap<(YearMonth, String), Vec<DataFrame>>,
    /// What is known of the charges whose columns have not come yet.
    pending: Vec<Pending>,
    parts: Vec<PartFile>,
    rejects: Vec<String>,
    sources: Vec<SourceFile>,
    totals: Totals,
    parquet: Option<ParquetThread>,
}

/// Columns waiting to be written, and where.
type ParquetJob = (PathBuf, DataFrame);

/// The thread that turns buffered charges into Parquet part files, one batch behind parsing.
struct ParquetThread {
    jobs: std::sync::mpsc::SyncSender<ParquetJob>,
    thread: std::thread::JoinHandle<Result<()>>,
}

impl ParquetThread {
    fn start() -> Self {
        // One part file may wait while another is written, so parsing does not stall when a
        // write takes longer than a flush's worth of parsing (the writer's LZ4 and file
        // output run on this one thread). Memory holds at most three flushes' worth.
        let (jobs, queue) = std::sync::mpsc::sync_channel::<ParquetJob>(1);
        let thread = std::thread::spawn(move || {
            for (path, mut frame) in queue {
                write_part(&path, &mut frame)?;
            }
            Ok(())
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

/// The columns of a batch of charges, made on a parsing thread.
impl import::Encoder for FrameBuilder {
    fn push(&mut self, charge: &Charge) {
        FrameBuilder::push(self, charge);
    }
    fn finish(self: Box<Self>) -> Result<import::Encoded> {
        let frame = FrameBuilder::finish(*self)
            .map_err(|source| ErrorKind::Parquet { path: PathBuf::from("charges"), source })?;
        Ok(Box::new(frame))
    }
}

fn new_frame_builder(capacity: usize) -> Box<dyn import::Encoder> {
    Box::new(FrameBuilder::new(capacity))
}

impl Writer {
    /// A writer for a dry run on a ledger that does not exist: nothing is created.
    fn detached(root: &Path) -> Self {
        Writer {
            root: root.to_owned(),
            _lock: None,
            manifest: Manifest { version: 1, batches: Vec::new() },
            known: IdIndex::spilling(
                std::env::temp_dir().join(format!("gpuaudit-dry-run-{}", std::process::id())),
                crate::ids::IN_MEMORY,
            ),
            file: 0,
            batch: "dry-run".into(),
            buffers: BTreeMap::new(),
            pending: Vec::new(),
            parts: Vec::new(),
            rejects: Vec::new(),
            sources: Vec::new(),
            totals: Totals::new(),
            parquet: None,
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
            |e: polars::prelude::PolarsError| Error::ledger(&self.root, e.to_string());
        if frame.height() != pending.len() {
            return Err(Error::ledger(&self.root, "columns and charges out of step"));
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
    fn flush(&mut self) -> Result<()> {
        for ((month, platform), frames) in std::mem::take(&mut self.buffers) {
            let mut frames = frames.into_iter();
            let Some(mut frame) = frames.next() else { continue };
            for more in frames {
                frame
                    .vstack_mut_owned(more)
                    .map_err(|e| Error::ledger(&self.root, e.to_string()))?;
            }
            let dir = format!("charges/month={month}/platform={platform}");
            let rel = format!("{dir}/{}-{:04}.parquet", self.batch, self.parts.len());
            let path = self.staging(self.parts.len());
            if let Some(staging) = path.parent() {
                io(staging, fs::create_dir_all(staging))?;
            }
            self.parts.push(PartFile {
                path: rel,
                month: month.to_string(),
                platform,
                rows: frame.height() as u64,
            });
            let parquet = self.parquet.get_or_insert_with(ParquetThread::start);
            if parquet.jobs.send((path, frame)).is_err() {
                // The thread stopped on an error: `finish_parquet` reports it.
                return self.finish_parquet();
            }
        }
        Ok(())
    }

    /// Where part file `n` is written before the batch is committed: under `tmp/`, so that
    /// a program reading `charges/**/*.parquet` directly never sees a batch being written.
    fn staging(&self, n: usize) -> PathBuf {
        self.root.join(TMP).join(&self.batch).join(format!("part-{n:04}.parquet"))
    }

    /// Moves the written part files to their partitions, and makes the moves durable.
    fn publish(&self) -> Result<()> {
        for (n, part) in self.parts.iter().enumerate() {
            let target = self.root.join(&part.path);
            if let Some(dir) = target.parent() {
                io(dir, fs::create_dir_all(dir))?;
            }
            io(&target, fs::rename(self.staging(n), &target))?;
        }
        // Each partition folder once: a batch has a part file every FLUSH_ROWS rows, and
        // syncing the same folder after each of them took a millisecond a time.
        let dirs: BTreeSet<&Path> =
            self.parts.iter().filter_map(|p| Path::new(&p.path).parent()).collect();
        for dir in dirs {
            sync_dir(&self.root.join(dir))?;
        }
        Ok(())
    }

    /// Waits for the Parquet thread to write what it was given; its first error, if any.
    fn finish_parquet(&mut self) -> Result<()> {
        match self.parquet.take() {
            None => Ok(()),
            Some(ParquetThread { jobs, thread, .. }) => {
                drop(jobs);
                thread.join().unwrap_or_else(|_| {
                    Err(Error::ledger(&self.root, "the Parquet writer thread panicked"))
                })
            }
        }
    }

    fn start_rejects(&mut self, path: &Path, header: &[String]) -> Result<RejectFile> {
        let name = path.file_name().map_or_else(|| "input".into(), |n| n.to_string_lossy());
        let rel = format!("rejects/{}/{:03}-{name}", self.batch, self.sources.len());
        let full = self.root.join(&rel);
        if let Some(dir) = full.parent() {
            io(dir, fs::create_dir_all(dir))?;
        }
        self.rejects.push(rel);
        let file = io(&full, File::create(&full))?;
        // Rows keep their width, whatever it is: a short or long row is the most common bad row.
        let mut csv =
            csv::WriterBuilder::new().flexible(true).from_writer(std::io::BufWriter::new(file));
        let mut head = vec!["line".to_owned(), "column".to_owned(), "reason".to_owned()];
        head.extend(header.iter().cloned());
        csv.write_record(&head).map_err(|e| csv_error(&full, e))?;
        Ok(RejectFile { path: full, csv })
    }

    fn finish_rejects(&mut self, rejects: RejectFile) -> Result<()> {
        let RejectFile { path, csv } = rejects;
        let file = csv
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        io(&path, file.sync_all())
    }

    /// Removes what this batch wrote; the manifest was never touched.
    fn abort(&mut self) {
        self.buffers.clear();
        let _ = self.finish_parquet();
        for n in 0..self.parts.len() {
            let _ = fs::remove_file(self.staging(n));
        }
        let written = self.parts.iter().map(|p| &p.path).chain(&self.rejects);
        for rel in written {
            let path = self.root.join(rel);
            let _ = fs::remove_file(&path);
            // Remove the folders this batch created, when it left them empty.
            let mut dir = path.parent();
            while let Some(d) = dir.filter(|d| *d != self.root) {
                if fs::remove_dir(d).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
        self.parts.clear();
        self.rejects.clear();
    }

    /// Writes what is buffered and commits the batch by replacing the manifest. Returns the
    /// batch id, or `None` when the batch added nothing (then nothing changes).
    fn commit(mut self) -> Result<Option<String>> {
        let written = self.flush().and_then(|()| self.finish_parquet());
        if let Err(e) = written {
            self.abort();
            return Err(e);
        }
        if self.parts.is_empty() && self.rejects.is_empty() {
            return Ok(None);
        }
        failpoint("before-publish");
        if let Err(e) = self.publish() {
            self.abort();
            return Err(e);
        }
        let months: BTreeSet<String> = self.parts.iter().map(|p| p.month.clone()).collect();
        let batch = Batch {
            id: self.batch.clone(),
            created: Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            sources: std::mem::take(&mut self.sources),
            rows: self.parts.iter().map(|p| p.rows).sum(),
            months: months.into_iter().collect(),
            files: self.parts.clone(),
            rejects: self.rejects.clone(),
        };
        let mut manifest = std::mem::take(&mut self.manifest);
        manifest.version = 1;
        manifest.batches.push(batch);
        failpoint("before-commit");
        if let Err(e) = replace_manifest(&self.root, &manifest) {
            // The manifest was not replaced: the batch's files go, so that nothing reading
            // `charges/**` directly counts rows no manifest names.
            let _ = fs::remove_file(self.root.join(MANIFEST_TMP));
            self.abort();
            return Err(e);
        }
        self.parts.clear();
        self.rejects.clear();
        sync_dir(&self.root)?;
        Ok(Some(self.batch.clone()))
    }
}

/// Writes `manifest` to a temporary file of the ledger at `root`, syncs it and renames it
/// over `manifest.json` (the caller syncs the folder).
fn replace_manifest(root: &Path, manifest: &Manifest) -> Result<()> {
    let tmp = root.join(MANIFEST_TMP);
    let bytes = serde_json::to_vec_pretty(manifest)
        .map_err(|e| Error::ledger(&tmp, format!("cannot encode manifest: {e}")))?;
    let mut file = io(&tmp, File::create(&tmp))?;
    io(&tmp, file.write_all(&bytes).and_then(|()| file.sync_all()))?;
    failpoint_error("manifest-rename").map_err(|e| Error::io(&tmp, e))?;
    let target = root.join(MANIFEST);
    io(&target, fs::rename(&tmp, &target))
}

impl Drop for Writer {
    /// Removes the writer's scratch files, and the scratch folder when no other is left.
    fn drop(&mut self) {
        self.known = IdIndex::in_memory();
        let _ = fs::remove_dir(self.root.join(TMP));
    }
}

/// An I/O error at `name` when `GPUAUDIT_FAILPOINT` says so (tests of a failed commit: a full
/// disk or a permission error at the last step).
fn failpoint_error(name: &str) -> std::io::Result<()> {
    if std::env::var_os("GPUAUDIT_FAILPOINT").is_some_and(|v| v == name) {
        return Err(std::io::Error::other(format!("failpoint {name}")));
    }
    Ok(())
}

/// Aborts the process at `name` when `GPUAUDIT_FAILPOINT` says so (crash tests).
fn failpoint(name: &str) {
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

struct RejectFile {
    path: PathBuf,
    csv: csv::Writer<std::io::BufWriter<File>>,
}

/// Feeds one file's charges and rejects into the batch.
struct BatchSink<'a> {
    writer: &'a mut Writer,
    options: &'a ImportOptions,
    new: u64,
    duplicates: u64,
    failure: &'a mut Failure,
    rejects: Option<RejectFile>,
    header: Vec<String>,
    path: PathBuf,
}

impl Deliver for BatchSink<'_> {
    fn begin_file(&mut self, _path: &Path, header: &[String]) -> Result<()> {
        self.header = header.to_vec();
        Ok(())
    }

    fn ids(&mut self) -> (&mut IdIndex, u32) {
        (&mut self.writer.known, self.writer.file)
    }

    fn encoding(&self) -> Option<import::NewEncoder> {
        Some(new_frame_builder)
    }

    fn progress(&self) -> Option<import::Progress> {
        self.options.progress.clone()
    }

    fn charge(&mut self, facts: &Facts, _: Option<Charge>, id: ChargeId, new: bool) -> Result<()> {
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

    fn encoded(&mut self, encoded: import::Encoded) -> Result<()> {
        match encoded.downcast::<DataFrame>() {
            Ok(frame) => self.writer.add_frame(*frame),
            Err(_) => Err(Error::ledger(&self.writer.root, "a batch came encoded in another form")),
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
                error.message.clone(),
            ];
            record.extend(cells);
            rejects.csv.write_record(&record).map_err(|e| csv_error(&rejects.path, e))?;
        }
        Ok(())
    }
}

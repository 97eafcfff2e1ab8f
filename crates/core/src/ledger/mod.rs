//! The embedded ledger: a folder of Hive-partitioned Parquet files and a manifest.
//!
//! ```text
//! .gpuaudit/
//!   LOCK                                   advisory lock, one writer at a time
//!   manifest.json                          committed batches
//!   charges/month=YYYY-MM/platform=P/<batch>-<n>.parquet
//!   rollups/<batch>.parquet                the batch's spend by every key a summary asks for
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
//!   batches (the README's Development section gives the peak memory of the benchmark).
//! - Part files are written by the `part` module, which chooses each column's encoding from
//!   what the ledger knows of it, past the page cache (`crate::direct`), and compressed with
//!   LZ4 (the `LZ4_RAW` codec; DuckDB, polars and Spark read it), but for the ids, which LZ4
//!   cannot shrink: zstd makes the files about half the size, for about a tenth more of an
//!   import's CPU time, and import speed is what this ledger is chosen for.
//! - The partition month is the charge's billing period.
//! - Each batch writes a rollup (see `rollup`) and records its spend by month, platform and
//!   currency in the manifest, so that `summary` and the overview read neither the charges
//!   (`query`). Both are derived data: `verify` checks the rollup against the part files.
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

mod cases;
mod columns;
mod export;
mod manifest;
mod part;
mod query;
mod reader;
mod repair;
mod rollup;
mod schema;
mod writer;

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use chrono::Utc;
use rust_decimal::Decimal;

pub use cases::Review;
pub use export::ExportFormat;
pub use manifest::{Batch, Manifest, PartFile, SourceFile, Spend};
pub use query::Overview;
pub use repair::{Problem, Verified};
pub use schema::COLUMNS;
pub use writer::Writer;
use writer::{BatchSink, Failure};

use crate::charge::{Category, YearMonth};
use crate::error::{Error, ErrorKind, Result};
use crate::ids::IdIndex;
use crate::import::{self, FileReport, Profile};

/// Rows buffered before a part file is written.
pub const FLUSH_ROWS: usize = 32_768;

/// The default ledger folder, relative to the working directory.
pub const DEFAULT_DIR: &str = ".gpuaudit";

const MANIFEST: &str = "manifest.json";
const MANIFEST_TMP: &str = "manifest.json.tmp";
const LOCK: &str = "LOCK";
/// The folder of the batches' rollups (see `rollup`).
const ROLLUPS: &str = "rollups";
/// Scratch files of a writer (spilled id runs), removed when it ends or by the next writer.
const TMP: &str = "tmp";

/// How to import.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Read every file with this profile instead of detecting one.
    pub profile: Option<&'static Profile>,
    /// The profiles detection chooses among (the built-in ones when empty).
    pub candidates: Vec<&'static Profile>,
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
    /// The file's footer totals that disagree with what its rows add up to (the file is
    /// imported all the same; reconcile reports them as R005).
    pub footer_mismatches: Vec<crate::reconcile::FooterTotal>,
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
    /// Inputs that were not imported (files of a folder that are not bills, or that its
    /// manifest does not list), with why.
    pub skipped: Vec<import::delivery::Skipped>,
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
        self.claim_committed_ids(&manifest, &mut known)?;
        Ok(Writer::new(self.root.clone(), lock, manifest, known, batch))
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
            .flat_map(|b| b.files.iter().map(|p| &p.path).chain(&b.rejects).chain(&b.rollup))
            .map(|p| self.root.join(p))
            .collect();
        for top in ["charges", "rejects", ROLLUPS, TMP] {
            remove_unnamed(&self.root.join(top), &named)?;
        }
        let tmp = self.root.join(MANIFEST_TMP);
        if tmp.exists() {
            io(&tmp, fs::remove_file(&tmp))?;
        }
        Ok(())
    }

    /// Imports `files` as one batch: bill files, compressed or not, zip archives of bills and
    /// folders of them (see [`import::delivery`]). See the module docs for what is atomic.
    pub fn import(&self, files: &[PathBuf], options: &ImportOptions) -> Result<ImportOutcome> {
        let bills = import::delivery::bills_of(files)?;
        if bills.bills.is_empty()
            && let Some(first) = files.first()
        {
            let message = "holds no bill".to_owned();
            return Err(ErrorKind::Delivery { path: first.clone(), message }.into());
        }
        let mut outcome = self.import_bills(&bills.bills, options)?;
        outcome.skipped = bills.skipped;
        Ok(outcome)
    }

    /// [`Store::import`] of the bills found.
    fn import_bills(&self, files: &[PathBuf], options: &ImportOptions) -> Result<ImportOutcome> {
        let in_memory = options.ids_in_memory.unwrap_or(crate::ids::IN_MEMORY).max(1);
        let mut writer = self.writer_keeping(in_memory, options.dry_run)?;
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
            let footer_mismatches = crate::reconcile::footers_of(
                &report.path,
                report.platform,
                &report.control_totals,
                &report.totals,
            )
            .into_iter()
            .filter(|f| f.expected != f.actual)
            .collect();
            outcomes.push(FileOutcome { report, new, duplicates, footer_mismatches });
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
            return Ok(ImportOutcome { batch: None, files: outcomes, totals, skipped: vec![] });
        }
        let batch = writer.commit()?;
        Ok(ImportOutcome { batch, files: outcomes, totals, skipped: vec![] })
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

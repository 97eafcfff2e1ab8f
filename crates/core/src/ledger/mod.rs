//! The embedded ledger: Hive-partitioned Parquet files and numbered commit objects, in a
//! local folder or (feature `cloud`) on an object store.
//!
//! ```text
//! <ledger>/
//!   _commits/<n>.json                      commit n: a batch added or removed (see `log`)
//!   _commits/<n>.checkpoint.json           every batch as of commit n
//!   charges/month=YYYY-MM/platform=P/<batch>-<n>.parquet
//!   rollups/<batch>.parquet                the batch's spend by every key a summary asks for
//!   look-back/month=YYYY-MM/platform=P/<batch>-<n>.parquet, <batch>.facts.parquet
//!                                          what waste and reconcile read of the partition
//!                                          when they audit another month (see `look_back`)
//!   rejects/<batch>/<n>-<file>.csv         rows not imported, with why (--skip-invalid)
//!   _symlink_format_manifest/month=YYYY-MM/platform=P/manifest
//!                                          the committed part files of the partition, one URL
//!                                          a line (Hive symlink manifests, see `sql`)
//! ```
//!
//! Decisions:
//! - A batch is committed only by creating the next numbered commit object, create-only
//!   (see `log`): no lock, no rename, the same protocol on a local folder and on an object
//!   store. Readers read only files the commits name, so a crash at any instant leaves the
//!   ledger as before the batch or after it; any number of writers may import at once.
//! - Part files, rollups, look-back files and rejects are written once, under names holding the batch id, at
//!   their final place (an object store's are uploaded as each is written). A file no commit
//!   names is removed by a later writer only once it is older than [`sweep_after`] (a day;
//!   `GPUAUDIT_SWEEP_AFTER` in seconds): a younger one may be a concurrent writer's, about to
//!   be committed. A program that globs `charges/**/*.parquet` may therefore see a batch
//!   being written or a crashed one: engines read the symlink manifests or the file lists of
//!   `gpuaudit sql ddl`, which name only committed files.
//! - One `import` is one batch. A batch that adds no charge and rejects no row is not
//!   recorded: no commit is made.
//! - Deduplication: the ids of every committed charge are loaded (only the `id` column) when
//!   a writer starts, into an [`IdIndex`] that holds at most [`crate::ids::IN_MEMORY`] ids in
//!   memory and spills the rest to sorted runs in a scratch folder (`tmp/<batch>/` of a local
//!   ledger, the cache folder of an object store's), removed when the writer ends. A charge
//!   whose id is known, from the ledger or earlier in the same batch, is a duplicate. A writer
//!   that loses the race for a commit number reads the batches committed meanwhile: when none
//!   holds one of its charges it commits as the next number; when one does (the same bill
//!   imported twice at once), or a batch was removed meanwhile, it takes its files back and
//!   imports its bills again against the new state, so that every charge lands once and each
//!   file's count of new charges is true.
//! - Charges are buffered per partition and flushed as Parquet part files every
//!   [`FLUSH_ROWS`] rows, written by a second thread while parsing goes on. Memory is bounded
//!   whatever the size of the input: the id index (two maps of about 35 MB, a 32 MiB filter
//!   once it spills), three buffers of [`FLUSH_ROWS`] charges and the import pipeline's
//!   batches (the README's Development section gives the peak memory of the benchmark).
//! - Part files are written by the `part` module, which chooses each column's encoding from
//!   what the ledger knows of it, past the page cache (`crate::direct`), compressed with the
//!   codec every engine the ledger is read by reads (see `part`).
//! - The partition month is the charge's billing period.
//! - Each batch writes a rollup (see `rollup`) and records its spend by month, platform and
//!   currency in its commit, so that `summary` and the overview read neither the charges
//!   (`query`). Both are derived data: `verify` checks the rollup against the part files.
//! - Each batch writes, per partition, look-back files (see `look_back`): its compute
//!   charges and charges with a balance, and what its other charges tell. `waste` and
//!   `reconcile` read them for the months around the audited one, instead of the part files
//!   (most of a look-back month is disks, IPs and traffic, of which they keep only spans and
//!   first sightings). Derived data too: `verify` recomputes them from the part files.
//! - Setting the environment variable `GPUAUDIT_FAILPOINT` to `before-publish` (Parquet
//!   files written, not committed) or `before-commit` (the commit about to be created) aborts
//!   the process there: the crash tests use them to prove that such a crash loses nothing
//!   and that the ledger shows nothing of the batch. `commit-create` makes creating the
//!   commit fail (as a full disk would): the batch's files are then removed, and the import
//!   fails with the ledger as it was.

mod backend;
mod cases;
mod columns;
mod commit;
mod export;
mod inventory;
mod keyed;
mod log;
mod look_back;
#[cfg(test)]
mod look_back_tests;
mod manifest;
mod mantissa;
mod origins;
mod part;
mod query;
mod reader;
mod rebuild;
#[cfg(feature = "cloud")]
mod remote;
mod repair;
mod rollup;
mod rows;
mod schema;
mod sql;
mod writer;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::Utc;
use rust_decimal::Decimal;

use backend::Backend;
pub use cases::Review;
use commit::Committed;
pub use export::ExportFormat;
pub use inventory::read_inventory;
pub use manifest::{Batch, LookBack, LookBackFile, Manifest, PartFile, SourceFile, Spend};
pub use query::Overview;
pub use rebuild::{Rebuilt, Repaired, is_derived_file};
pub use repair::{Problem, Verified};
pub use schema::COLUMNS;
pub use sql::Dialect;
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

/// The list of batches of a ledger written before commits (see `log`).
const MANIFEST: &str = "manifest.json";
const MANIFEST_TMP: &str = "manifest.json.tmp";
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

/// A ledger: a local folder or an object store.
#[derive(Debug, Clone)]
pub struct Store {
    backend: Backend,
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

/// How old a file no commit names must be before a writer removes it: a day, or
/// `GPUAUDIT_SWEEP_AFTER` seconds.
pub fn sweep_after() -> Duration {
    let seconds = std::env::var("GPUAUDIT_SWEEP_AFTER").ok().and_then(|s| s.parse().ok());
    Duration::from_secs(seconds.unwrap_or(24 * 3600))
}

/// The most times an import starts again after losing the race for a commit to a batch that
/// holds some of its charges.
const ATTEMPTS: u32 = 64;

impl Store {
    /// The ledger in the local folder `root` (nothing is read or created yet).
    pub fn open(root: impl Into<PathBuf>) -> Self {
        Store { backend: Backend::Local(root.into()) }
    }

    /// The ledger at `location`: a folder (a path or `file://…`), or with the `cloud`
    /// feature an object store (`s3://bucket/prefix`, `gs://…`, `az://…`; `endpoint` for an
    /// S3-compatible store). A scheme this build does not read is an error
    /// ([`ErrorKind::Location`]), never a local folder named after it.
    pub fn at(location: &str, endpoint: Option<&str>) -> Result<Self> {
        let Some((scheme, rest)) = location.split_once("://") else {
            return Ok(Store::open(location));
        };
        if scheme == "file" {
            return Ok(Store::open(rest));
        }
        let _ = endpoint;
        #[cfg(feature = "cloud")]
        if remote::SCHEMES.contains(&scheme) {
            let remote = remote::Remote::open(location, endpoint)?;
            return Ok(Store { backend: Backend::Remote(std::sync::Arc::new(remote)) });
        }
        let message = if ["s3", "s3a", "gs", "az", "abfs", "abfss"].contains(&scheme) {
            format!(
                "this gpuaudit was built without object stores: {scheme}:// ledgers need the `cloud` feature (cargo install gpuaudit-cli --features cloud)"
            )
        } else {
            format!(
                "unknown scheme {scheme}://: a ledger is a folder, file://…, s3://…, gs://… or az://…"
            )
        };
        Err(ErrorKind::Location { location: location.to_owned(), message }.into())
    }

    /// The ledger folder (an object store's URL).
    pub fn root(&self) -> &Path {
        self.backend.root()
    }

    /// Sweeps files left by crashed writers (see [`sweep_after`]) and loads the known ids.
    pub fn writer(&self) -> Result<Writer> {
        self.writer_keeping(crate::ids::IN_MEMORY, false)
    }

    /// [`Store::writer`], holding at most `ids_in_memory` ids in memory. A dry run writes
    /// nothing to the ledger (it may be read-only), and spills ids to the system's temporary
    /// folder.
    fn writer_keeping(&self, ids_in_memory: usize, dry_run: bool) -> Result<Writer> {
        let state = log::read(&self.backend)?;
        if !dry_run {
            self.backend.ensure()?;
            self.sweep(&state.manifest)?;
        }
        let batch = format!(
            "{}-{:08x}",
            Utc::now().format("%Y%m%dT%H%M%S%.6fZ"),
            std::process::id() ^ (Utc::now().timestamp_subsec_nanos())
        );
        let scratch = if dry_run {
            std::env::temp_dir().join(format!("gpuaudit-dry-run-{batch}"))
        } else {
            self.backend.scratch(&batch)
        };
        let mut known = IdIndex::spilling(scratch, ids_in_memory);
        self.claim_committed_ids(&state.manifest, &mut known)?;
        Ok(Writer::new(self.clone(), state, known, batch))
    }

    /// Removes files under `charges/`, `rejects/`, `rollups/`, `look-back/`, `inventory/` and `tmp/` that no committed
    /// batch names and that are older than [`sweep_after`], temporary files of crashed
    /// create-only writes as old, and a temporary manifest left by a gpuaudit of before
    /// commits.
    fn sweep(&self, manifest: &Manifest) -> Result<()> {
        let named: HashSet<&str> =
            manifest.batches.iter().flat_map(Batch::names).map(String::as_str).collect();
        let old = SystemTime::now().checked_sub(sweep_after()).unwrap_or(SystemTime::UNIX_EPOCH);
        for top in ["charges", "rejects", ROLLUPS, look_back::LOOK_BACK, inventory::INVENTORY, TMP]
        {
            for file in self.backend.list(top)? {
                if !named.contains(file.name.as_str()) && file.modified <= old {
                    self.backend.delete(&file.name)?;
                }
            }
        }
        // A local create-only write that crashed leaves its temporary file (`.<name>.….tmp`,
        // which no reader takes for a commit or a manifest).
        for top in [log::COMMITS, sql::SYMLINKS] {
            for file in self.backend.list(top)? {
                let base = file.name.rsplit('/').next().unwrap_or("");
                if base.starts_with('.') && base.ends_with(".tmp") && file.modified <= old {
                    self.backend.delete(&file.name)?;
                }
            }
        }
        if let Some(root) = self.backend.folder() {
            let tmp = root.join(MANIFEST_TMP);
            if tmp.is_file()
                && std::fs::metadata(&tmp).and_then(|m| m.modified()).is_ok_and(|m| m <= old)
            {
                io(&tmp, std::fs::remove_file(&tmp))?;
            }
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
        for attempt in 1.. {
            match self.import_once(files, options)? {
                Some(outcome) => return Ok(outcome),
                None if attempt < ATTEMPTS => {
                    // Lost the race to a batch with some of the same charges: again, after a
                    // pause that keeps writers of the same bill from racing in step.
                    let jitter = u64::from(Utc::now().timestamp_subsec_nanos() % 50);
                    std::thread::sleep(Duration::from_millis(
                        10 + jitter * u64::from(attempt.min(8)),
                    ));
                }
                None => break,
            }
        }
        let message = format!(
            "gave up after {ATTEMPTS} attempts: other writers kept committing the same charges"
        );
        Err(Error::ledger(self.root(), message))
    }

    /// One attempt of [`Store::import_bills`]: `None` when the commit lost to a batch that
    /// holds some of the same charges (nothing of this attempt is left in the ledger).
    fn import_once(
        &self,
        files: &[PathBuf],
        options: &ImportOptions,
    ) -> Result<Option<ImportOutcome>> {
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
            return Ok(Some(ImportOutcome {
                batch: None,
                files: outcomes,
                totals,
                skipped: vec![],
            }));
        }
        match writer.commit()? {
            Committed::Done(batch) => {
                Ok(Some(ImportOutcome { batch, files: outcomes, totals, skipped: vec![] }))
            }
            Committed::Lost => Ok(None),
        }
    }
}

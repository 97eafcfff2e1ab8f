//! A way back: taking a batch out of the ledger, and checking every committed file.
//!
//! - [`Store::remove_batch`] commits like an import: it creates the next commit, one that
//!   removes the batch (reading the state again when another writer took the number), then
//!   deletes the batch's files, which no commit names any more. It reads no part file, so it
//!   repairs a ledger whose files cannot be read.
//! - [`Store::verify`] checks every file the manifest names: it exists, reads as a part file
//!   of the ledger's schema, has the rows the manifest says, and holds ids no other charge
//!   has; and that the batch's rollup reads and sums to what its part files hold, and its
//!   look-back files hold what its part files would give them (see `look_back`); and that
//!   each partition's symlink manifest lists its committed files. It writes nothing.

use polars::prelude::DataFrame;

use super::log::{self, Commit};
use super::reader::read_parquet;
use super::rollup::Rollup;
use super::{Batch, PartFile, Store, columns};
use crate::error::{Error, Result};
use crate::ids::{Claim, IdIndex};

/// One thing [`Store::verify`] found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file concerned, relative to the ledger folder.
    pub file: String,
    /// The batch that names it.
    pub batch: String,
    /// What is wrong.
    pub message: String,
}

/// What [`Store::verify`] checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verified {
    /// Batches in the manifest.
    pub batches: usize,
    /// Part files checked.
    pub files: usize,
    /// Charges read.
    pub charges: u64,
    /// What is wrong, in manifest order; empty when all is well.
    pub problems: Vec<Problem>,
    /// Partitions (`month=M/platform=P`) whose symlink manifest, which Athena and Trino
    /// read, does not list exactly their committed files: an import killed after its commit
    /// leaves them one batch behind ([`Store::write_manifests`] repairs them). A ledger of
    /// before commits has none until its first commit.
    pub stale_manifests: Vec<String>,
}

impl Store {
    /// Takes batch `id` out of the ledger, atomically; returns what it held.
    pub fn remove_batch(&self, id: &str) -> Result<Batch> {
        for _ in 0..super::ATTEMPTS {
            let mut state = log::read(&self.backend)?;
            let removed = self.batch_of(&state.manifest, id)?.clone();
            let upgraded = state.legacy;
            if upgraded {
                log::checkpoint(&self.backend, 0, &state.manifest)?;
            }
            let commit = Commit::removing(state.head + 1, id);
            if !log::create(&self.backend, &commit)? {
                continue;
            }
            state.apply(&commit);
            let partitions =
                removed.files.iter().map(|p| (p.month.clone(), p.platform.clone())).collect();
            super::commit::after_commit(&self.backend, &mut state, partitions, upgraded)?;
            // Dead now: its files go at once (a reader of the state before the removal that
            // still reads them is told a file is missing, never given a wrong answer).
            for name in removed.names() {
                self.backend.delete(name)?;
            }
            return Ok(removed);
        }
        Err(Error::ledger(self.root(), "gave up: other writers kept committing"))
    }

    /// Batch `id` of `manifest`, or an error naming the batches there are.
    pub(super) fn batch_of<'m>(
        &self,
        manifest: &'m super::Manifest,
        id: &str,
    ) -> Result<&'m Batch> {
        manifest.batches.iter().find(|b| b.id == id).ok_or_else(|| {
            let known: Vec<&str> = manifest.batches.iter().map(|b| b.id.as_str()).collect();
            let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
            Error::ledger(self.root(), format!("no batch {id:?}; batches: {known}"))
        })
    }

    /// Checks every file the manifest names (see the module docs).
    pub fn verify(&self) -> Result<Verified> {
        let state = log::read(&self.backend)?;
        let manifest = &state.manifest;
        let scratch = std::env::temp_dir().join(format!("gpuaudit-verify-{}", std::process::id()));
        let mut ids = IdIndex::spilling(scratch, crate::ids::IN_MEMORY);
        let mut out = Verified { batches: manifest.batches.len(), ..Verified::default() };
        for batch in &manifest.batches {
            let problem = |file: &str, message: String| Problem {
                file: file.to_owned(),
                batch: batch.id.clone(),
                message,
            };
            let mut rows = 0;
            let mut rollup = Rollup::unlimited(true);
            let mut look_back = super::look_back::Check::new(batch);
            for part in &batch.files {
                out.files += 1;
                rows += part.rows;
                let path = self.backend.local(&part.path).ok().filter(|p| p.is_file());
                let Some(path) = path else {
                    out.problems.push(problem(&part.path, "is missing".into()));
                    look_back.add(part, None);
                    continue;
                };
                let read = read_parquet(&path, None).map_err(|e| e.to_string());
                look_back.add(part, read.as_ref().ok());
                let charges = match read
                    .and_then(|df| add_to(&mut rollup, part, &df).map(|()| df))
                    .and_then(|df| columns::from_frame(&df))
                {
                    Ok(charges) => charges,
                    Err(e) => {
                        out.problems.push(problem(&part.path, format!("cannot be read: {e}")));
                        continue;
                    }
                };
                out.charges += charges.len() as u64;
                if charges.len() as u64 != part.rows {
                    let m =
                        format!("holds {} charges, the manifest says {}", charges.len(), part.rows);
                    out.problems.push(problem(&part.path, m));
                }
                let mut repeated = 0u64;
                for c in &charges {
                    if ids.claim(c.id.0, 1)? == Claim::Given {
                        repeated += 1;
                    }
                    let month = c.billing_period.to_string();
                    if month != part.month || c.platform != part.platform {
                        let m = format!(
                            "holds a charge of {month}/{} in the partition {}/{}",
                            c.platform, part.month, part.platform
                        );
                        out.problems.push(problem(&part.path, m));
                        break;
                    }
                }
                if repeated > 0 {
                    let m = format!("holds {repeated} charge ids that the ledger already has");
                    out.problems.push(problem(&part.path, m));
                }
            }
            if rows != batch.rows {
                let m = format!("its files hold {rows} charges, the batch says {}", batch.rows);
                out.problems.push(problem(log::COMMITS, m));
            }
            // A part file already found wrong explains a rollup that does not match it.
            let parts_ok = out.problems.iter().all(|p| p.batch != batch.id);
            if let Some(m) = self.rollup_problem(batch, parts_ok.then_some(&rollup)) {
                out.problems.push(problem(batch.rollup.as_deref().unwrap_or(log::COMMITS), m));
            }
            for (file, message) in look_back.problems(&self.backend) {
                out.problems.push(problem(&file, message));
            }
            for reject in &batch.rejects {
                if !self.backend.local(reject).is_ok_and(|p| p.is_file()) {
                    out.problems.push(problem(reject, "is missing".into()));
                }
            }
        }
        if !state.legacy {
            out.stale_manifests = super::sql::stale_symlinks(&self.backend, manifest)?;
        }
        Ok(out)
    }

    /// What is wrong with `batch`'s rollup file, `computed` being the rollup of its part
    /// files (when they all read): missing, unreadable, or summing to something else.
    fn rollup_problem(&self, batch: &Batch, computed: Option<&Rollup>) -> Option<String> {
        let rel = batch.rollup.as_deref()?;
        let path = match self.backend.local(rel) {
            Ok(path) if path.is_file() => path,
            _ => return Some("is missing".into()),
        };
        let mut read = Rollup::unlimited(true);
        if let Err(e) = read.read(&path, &Default::default()) {
            return Some(format!("cannot be read: {e}"));
        }
        computed
            .filter(|computed| read.rows() != computed.rows())
            .map(|_| "does not sum to what the batch's part files hold".into())
    }
}

/// Adds part file `part`'s frame to `rollup`.
fn add_to(rollup: &mut Rollup, part: &PartFile, df: &DataFrame) -> Result<(), String> {
    let month = part.month.parse()?;
    rollup.add_frame(month, &part.platform, df).map_err(|e| e.to_string())
}

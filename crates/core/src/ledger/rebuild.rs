//! Rebuilding a batch's derived files, its rollup and look-back files, from its part files;
//! and the repair `gpuaudit ledger --repair` runs.
//!
//! Both are derived data (see `rollup` and `look_back`): the batch's part files decide what
//! they hold. A damaged one (a disk error, a copy to an object store cut short) made every
//! read that needs it an error, and the only way out `verify` knew was to take the whole
//! batch out (`ledger --remove`) and import its bills again, which a user may no longer
//! have. [`Store::rebuild_derived`] writes them again from the part files, as the import
//! wrote them; [`Store::repair`] rebuilds those of every batch `verify` finds one of them
//! wrong in, writes stale symlink manifests again, and verifies once more.
//!
//! Decisions:
//! - Only derived files are rebuilt. A part file that cannot be read is an error naming it
//!   and its batch: its charges are the ledger's only copy of them, and `ledger --remove`
//!   stays the way out (`repair` leaves such a batch as it is and reports it).
//! - The files rebuilt must be those the batch's commit records (the same names, the same
//!   part files' shares in each, as many charges left out), or nothing is written and the
//!   error says so. No commit is made: the commits already name these files.
//! - Each file is written whole aside (under the ledger's scratch folder), then replaces the
//!   old one at once (`Backend::replace`: renamed over locally, put whole on an object
//!   store): a reader at that moment reads the old file or the new one, never half.
//! - A batch's sound derived files are written again too, with what they held.
//! - The part files are read one at a time, as `verify` reads them: memory holds one part
//!   file's charges and the rollup, never the batch. A batch removed meanwhile leaves the
//!   files written unnamed by any commit: the sweep removes them as any other such file.

use super::backend::{Backend, make_parent};
use super::columns::{self, FrameBuilder};
use super::look_back;
use super::look_back::LOOK_BACK;
use super::reader::{read_parquet, unreadable};
use super::rollup::Rollup;
use super::{ROLLUPS, Store, Verified, log};
use crate::error::{Error, ErrorKind, Result};

/// What [`Store::rebuild_derived`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebuilt {
    /// The batch.
    pub batch: String,
    /// The files written again, relative to the ledger folder.
    pub files: Vec<String>,
}

/// What [`Store::repair`] did, and what is left wrong.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Repaired {
    /// The batches whose derived files were rebuilt.
    pub rebuilt: Vec<Rebuilt>,
    /// How many partitions' symlink manifests were written again.
    pub manifests: usize,
    /// [`Store::verify`] after the repair: what no repair of derived files mends.
    pub left: Verified,
}

impl Store {
    /// Writes batch `id`'s rollup and look-back files again from its part files (see the
    /// module docs); what it wrote.
    pub fn rebuild_derived(&self, id: &str) -> Result<Rebuilt> {
        let state = log::read(&self.backend)?;
        let batch = self.batch_of(&state.manifest, id)?;
        let scratch = self.backend.scratch(&format!("rebuild-{id}-{}", std::process::id()));
        let aside = Backend::Local(scratch.clone());
        let written = rebuild_aside(&self.backend, &aside, batch);
        let replaced = written.and_then(|files| {
            for name in &files {
                let path = scratch.join(name);
                let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
                self.backend.replace(name, &bytes)?;
            }
            Ok(Rebuilt { batch: batch.id.clone(), files })
        });
        let _ = std::fs::remove_dir_all(&scratch);
        replaced
    }

    /// Verifies the ledger, rebuilds the derived files of every batch found with one of
    /// them wrong (and only derived files wrong), writes the symlink manifests again if one
    /// is stale, and verifies again (see the module docs).
    pub fn repair(&self) -> Result<Repaired> {
        let found = self.verify()?;
        let mut out = Repaired::default();
        for batch in found.rebuildable() {
            out.rebuilt.push(self.rebuild_derived(batch)?);
        }
        if !found.stale_manifests.is_empty() {
            out.manifests = self.write_manifests()?;
        }
        out.left = self.verify()?;
        Ok(out)
    }
}

/// Whether `path`, as an error names a ledger's file (a path under its folder, or an
/// object's URL), is a derived file: `rollups/<batch>.parquet` or a file under
/// `look-back/month=…/platform=…/`. [`Store::rebuild_derived`] writes such a file again.
pub fn is_derived_file(path: &std::path::Path) -> bool {
    let up = |n: usize| path.ancestors().nth(n).and_then(|p| p.file_name());
    up(1).is_some_and(|d| d == ROLLUPS) || up(3).is_some_and(|d| d == LOOK_BACK)
}

impl super::Problem {
    /// Whether it is in a derived file (a rollup or look-back file), which
    /// [`Store::rebuild_derived`] writes again.
    pub fn in_derived_file(&self) -> bool {
        is_derived_file(std::path::Path::new(&self.file))
    }
}

impl Verified {
    /// The batches with problems, all of them in derived files: those [`Store::repair`]
    /// rebuilds (a batch with a part file wrong has no other copy of its charges), in the
    /// order of their first problem.
    pub fn rebuildable(&self) -> Vec<&str> {
        let mut batches: Vec<&str> = Vec::new();
        for p in &self.problems {
            if !batches.contains(&p.batch.as_str()) {
                batches.push(&p.batch);
            }
        }
        batches.retain(|b| {
            self.problems.iter().filter(|p| p.batch == *b).all(super::Problem::in_derived_file)
        });
        batches
    }
}

/// Writes `batch`'s derived files, read from `backend`, into `aside`; their names.
fn rebuild_aside(backend: &Backend, aside: &Backend, batch: &super::Batch) -> Result<Vec<String>> {
    let mut rollup = Rollup::new();
    let mut look_back = look_back::Writing::new(aside.clone(), &batch.id);
    let mut each = || -> Result<()> {
        for part in &batch.files {
            let path = backend.local(&part.path).map_err(|e| unreadable(e, &batch.id))?;
            let frame = read_parquet(&path, None).map_err(|e| unreadable(e, &batch.id))?;
            // As the import made it: the charges' columns, the enums as codes.
            let bad = |m: String| unreadable(Error::ledger(&path, m), &batch.id);
            let charges = columns::from_frame(&frame).map_err(bad)?;
            let mut builder = FrameBuilder::new(charges.len());
            charges.iter().for_each(|c| builder.push(c));
            let ids: Vec<u128> = charges.iter().map(|c| c.id.0).collect();
            let parquet = |source| Error::from(ErrorKind::Parquet { path: path.clone(), source });
            let frame =
                builder.finish().and_then(|f| columns::with_ids(f, &ids)).map_err(parquet)?;
            let month = part.month.parse().map_err(bad)?;
            rollup.add_frame(month, &part.platform, &frame).map_err(parquet)?;
            look_back.add(month, &part.platform, &frame)?;
        }
        Ok(())
    };
    if let Err(e) = each() {
        look_back.abort();
        return Err(e);
    }
    let made = look_back.finish()?;
    let commits = backend.shown(log::COMMITS);
    if made != batch.look_back {
        return Err(Error::ledger(
            commits,
            format!(
                "batch {}: its part files do not give the look-back files its commit records; \
                 `gpuaudit ledger --remove {}` takes the batch out",
                batch.id, batch.id
            ),
        ));
    }
    let mut files = Vec::new();
    if let Some(name) = &batch.rollup {
        if !rollup.is_whole() {
            let m = format!("batch {}: its part files give no rollup to write", batch.id);
            return Err(Error::ledger(commits, m));
        }
        let path = aside.stage(name);
        make_parent(&path)?;
        rollup.write(&path)?;
        files.push(name.clone());
    }
    files.extend(batch.look_back.iter().flat_map(super::LookBack::names).cloned());
    Ok(files)
}

//! Inventory snapshots in the ledger: each `gpuaudit inventory import` is a batch of its own
//! (no charges), committed as an import is (see `log`), listed by `ledger` and removed by
//! `ledger --remove` like one; its snapshots are JSON files under `inventory/`, which the
//! batch names.

use chrono::Utc;

use super::Store;
use super::log::{self, Commit};
use super::manifest::{Batch, SourceFile};
use crate::error::{Error, Result};
use crate::inventory::Snapshot;

/// The folder of inventory files.
pub(crate) const INVENTORY: &str = "inventory";

/// Reads `paths` as inventory snapshots (each taken at the time its file says, else `at`),
/// with the record of each file for the batch. The first file that cannot be read is the
/// error, naming it and where in it.
pub fn read_inventory(
    paths: &[std::path::PathBuf],
    at: Option<chrono::DateTime<Utc>>,
) -> Result<(Vec<Snapshot>, Vec<SourceFile>)> {
    use sha2::{Digest, Sha256};
    let (mut snapshots, mut sources) = (Vec::new(), Vec::new());
    for path in paths {
        let snap = crate::inventory::parse(path, at)?;
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let items =
            snap.volumes.len() + snap.instances.len() + snap.addresses.len() + snap.snapshots.len();
        sources.push(SourceFile {
            path: path.display().to_string(),
            sha256: format!("{:x}", Sha256::digest(&bytes)),
            size: bytes.len() as u64,
            profile: snap.command.clone(),
            platform: Some(snap.platform.clone()),
            zone: None,
            rows_read: items as u64,
            new: items as u64,
            duplicates: 0,
            rejected: 0,
            control_totals: Vec::new(),
            totals: Default::default(),
            months: Vec::new(),
        });
        snapshots.push(snap);
    }
    Ok((snapshots, sources))
}

impl Store {
    /// Adds `snapshots` (each read from the file of `sources` at the same place) as one
    /// batch; returns its id. Nothing is committed when one of them cannot be written.
    pub fn add_inventory(
        &self,
        snapshots: &[Snapshot],
        sources: Vec<SourceFile>,
    ) -> Result<String> {
        self.backend.ensure()?;
        let id = format!(
            "{}-{:08x}",
            Utc::now().format("%Y%m%dT%H%M%S%.6fZ"),
            std::process::id() ^ Utc::now().timestamp_subsec_nanos()
        );
        let mut files = Vec::with_capacity(snapshots.len());
        for (i, snap) in snapshots.iter().enumerate() {
            let name = format!("{INVENTORY}/{id}-{i}.json");
            let bytes = serde_json::to_vec(snap)
                .map_err(|e| Error::ledger(self.backend.shown(&name), e.to_string()))?;
            self.backend.put(&name, &bytes)?;
            files.push(name);
        }
        self.backend.settle(files.iter().map(String::as_str))?;
        let mut batch = Batch {
            id: id.clone(),
            created: super::commit::now(),
            sources,
            rows: 0,
            months: Vec::new(),
            files: Vec::new(),
            rejects: Vec::new(),
            rollup: None,
            spend: None,
            look_back: Vec::new(),
            inventory: files,
        };
        for _ in 0..super::ATTEMPTS {
            let mut state = log::read(&self.backend)?;
            let upgraded = state.legacy;
            if upgraded {
                log::checkpoint(&self.backend, 0, &state.manifest)?;
            }
            let commit = Commit::adding(state.head + 1, batch.clone());
            if !log::create(&self.backend, &commit)? {
                batch.created = super::commit::now();
                continue;
            }
            state.apply(&commit);
            super::commit::after_commit(&self.backend, &mut state, Default::default(), upgraded)?;
            return Ok(id);
        }
        for name in &batch.inventory {
            self.backend.delete(name)?;
        }
        Err(Error::ledger(self.root(), "gave up: other writers kept committing"))
    }

    /// Every inventory snapshot of the ledger, in batch order.
    pub fn inventory_snapshots(&self) -> Result<Vec<Snapshot>> {
        let manifest = self.manifest()?;
        let mut out = Vec::new();
        for batch in &manifest.batches {
            for name in &batch.inventory {
                let bytes = self.backend.read(name)?.ok_or_else(|| {
                    Error::ledger(
                        self.backend.shown(name),
                        format!("missing; batch {} names it", batch.id),
                    )
                })?;
                let snap: Snapshot = serde_json::from_slice(&bytes).map_err(|e| {
                    Error::ledger(self.backend.shown(name), format!("unreadable: {e}"))
                })?;
                out.push(snap);
            }
        }
        Ok(out)
    }
}

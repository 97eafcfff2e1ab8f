//! Committing a batch (see `log` for the protocol, the module docs for what is atomic): the
//! batch's files are all written and published before its commit is created; a writer that
//! loses the race for the commit number catches up with the commits made meanwhile; after
//! the commit, the symlink manifests of the partitions it touched are rewritten and, every
//! [`super::log::CHECKPOINT_EVERY`] commits, a checkpoint is written.

use std::collections::BTreeSet;

use chrono::Utc;

use super::backend::Backend;
use super::log::{self, Commit, State};
use super::manifest::Batch;
use super::writer::{Writer, failpoint, failpoint_error};
use crate::error::{Error, Result};
use crate::ids::Claim;

/// What [`Writer::commit`] did.
pub(super) enum Committed {
    /// Committed this batch (`None`: it added nothing, and nothing was written).
    Done(Option<String>),
    /// Another writer committed some of the same charges first (or removed a batch): the
    /// batch was taken back, the import starts again.
    Lost,
}

impl Writer {
    /// Writes what is buffered and commits the batch by creating the next commit.
    pub(super) fn commit(mut self) -> Result<Committed> {
        let written = self
            .flush()
            .and_then(|()| self.finish_parquet())
            .and_then(|()| self.write_rollup())
            .and_then(|()| self.settle())
            .and_then(|()| self.upgrade_legacy());
        if let Err(e) = written {
            self.abort();
            return Err(e);
        }
        if self.parts.is_empty() && self.rejects.is_empty() {
            return Ok(Committed::Done(None));
        }
        failpoint("before-publish");
        let mut batch = self.record();
        failpoint("before-commit");
        loop {
            let commit = Commit::adding(self.state.head + 1, batch.clone());
            let name = log::commit_name(commit.commit);
            let created = failpoint_error("commit-create")
                .map_err(|e| Error::io(self.store.backend.shown(&name), e))
                .and_then(|()| log::create(&self.store.backend, &commit));
            match created
                .and_then(|created| if created { Ok(None) } else { self.catch_up().map(Some) })
            {
                Ok(None) => {
                    self.state.apply(&commit);
                    break;
                }
                Ok(Some(true)) => batch.created = now(),
                Ok(Some(false)) => {
                    self.abort();
                    return Ok(Committed::Lost);
                }
                Err(e) => {
                    self.abort();
                    return Err(e);
                }
            }
        }
        self.parts.clear();
        self.rejects.clear();
        self.rollup_file = None;
        self.look_back.clear();
        let partitions =
            batch.files.iter().map(|p| (p.month.clone(), p.platform.clone())).collect();
        after_commit(&self.store.backend, &mut self.state, partitions, self.upgraded).map_err(
            |e| {
                let m = format!(
                    "batch {} is committed, but writing the engines' file lists failed: {e}",
                    batch.id
                );
                Error::ledger(self.store.root(), m)
            },
        )?;
        Ok(Committed::Done(Some(batch.id)))
    }

    /// The record of the batch in its commit.
    fn record(&mut self) -> Batch {
        let months: BTreeSet<String> = self.parts.iter().map(|p| p.month.clone()).collect();
        Batch {
            id: self.batch.clone(),
            created: now(),
            sources: std::mem::take(&mut self.sources),
            rows: self.parts.iter().map(|p| p.rows).sum(),
            months: months.into_iter().collect(),
            files: self.parts.clone(),
            rejects: self.rejects.clone(),
            rollup: self.rollup_file.clone(),
            spend: self.rollup.spend(),
            look_back: self.look_back.clone(),
            inventory: Vec::new(),
        }
    }

    /// Makes the batch's files durable where that is the writer's job (a local folder's).
    fn settle(&self) -> Result<()> {
        self.store.backend.settle(self.written().map(String::as_str))
    }

    /// A ledger of before commits gets checkpoint 0, holding its batches with their
    /// rollups, before its first commit (see `log`).
    fn upgrade_legacy(&mut self) -> Result<()> {
        if !self.state.legacy {
            return Ok(());
        }
        let mut base = self.state.manifest.clone();
        self.store.upgrade_batches(&mut base)?;
        log::checkpoint(&self.store.backend, 0, &base)?;
        self.state.manifest = base;
        self.state.legacy = false;
        // Every partition of the old batches gets its symlink manifest with this commit.
        self.upgraded = true;
        Ok(())
    }

    /// Reads the commits made since the writer's state: `true` when none touches this
    /// batch's charges (then the state is theirs and the batch may take the next number).
    fn catch_up(&mut self) -> Result<bool> {
        let missed = log::after(&self.store.backend, self.state.head)?;
        if missed.is_empty() {
            let name = log::commit_name(self.state.head + 1);
            return Err(Error::ledger(
                self.store.backend.shown(&name),
                "exists but cannot be read",
            ));
        }
        for commit in &missed {
            if commit.remove.is_some() {
                return Ok(false);
            }
            if let Some(batch) = &commit.add {
                for part in &batch.files {
                    for id in self.store.part_ids(&batch.id, part)? {
                        // Known: held by a file of this batch (the ledger's would be Given).
                        if self.known.claim(id, 0)? == Claim::Known {
                            return Ok(false);
                        }
                    }
                }
            }
            self.state.apply(commit);
        }
        Ok(true)
    }
}

/// What follows a commit (an import's or a removal's): at its turn a checkpoint, then the
/// symlink manifests of the `partitions` it touched, or of every partition when it upgraded
/// a ledger of before commits (see `log`).
pub(super) fn after_commit(
    backend: &Backend,
    state: &mut State,
    mut partitions: BTreeSet<(String, String)>,
    upgraded: bool,
) -> Result<()> {
    if upgraded {
        let all = state.manifest.batches.iter().flat_map(|b| &b.files);
        partitions.extend(all.map(|p| (p.month.clone(), p.platform.clone())));
    }
    if state.head.is_multiple_of(log::CHECKPOINT_EVERY) {
        log::checkpoint(backend, state.head, &state.manifest)?;
    }
    super::sql::write_symlinks(backend, state, &partitions)
}

pub(super) fn now() -> String {
    Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

//! The ledger's commits: numbered objects created once, the only commit point.
//!
//! ```text
//! _commits/00000000000000000001.json              commit 1: one batch added, or one removed
//! _commits/00000000000000000016.checkpoint.json   every batch as of commit 16
//! ```
//!
//! - A batch is committed by creating commit `head + 1` with a create-only put
//!   ([`super::backend::Backend::create`]). Two writers that read the same head race for the
//!   same name; one wins, and the other reads the commits it missed, re-checks its ids
//!   against them (`writer`) and tries `head + 1` again. Nothing is locked or renamed, so the
//!   protocol is the same on a local folder and on an object store.
//! - The state of the ledger is the newest checkpoint and the commits after it, read in
//!   order until the next number is missing. Every [`CHECKPOINT_EVERY`] commits the writer of
//!   the commit also writes a checkpoint (derived data: if it is never written, readers read
//!   more commits).
//! - A ledger written before commits (a `manifest.json`, replaced by rename under a lock) is
//!   read as it is; its first commit writes checkpoint 0 holding its batches (upgraded with
//!   their rollups, see `query`) and the ledger is read from the commits from then on. An
//!   older gpuaudit cannot write such a ledger any more.

use serde::{Deserialize, Serialize};

use super::backend::Backend;
use super::{Batch, MANIFEST, Manifest};
use crate::error::{Error, Result};

/// The folder of commit objects.
pub(crate) const COMMITS: &str = "_commits";
/// A checkpoint is written at every commit number divisible by this.
pub(crate) const CHECKPOINT_EVERY: u64 = 16;
/// The format version of commits and checkpoints.
const VERSION: u32 = 2;

/// One commit: a batch added or a batch removed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Commit {
    /// Format version (2).
    pub(crate) version: u32,
    /// Its number.
    pub(crate) commit: u64,
    /// The batch it adds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) add: Option<Batch>,
    /// The batch it removes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) remove: Option<String>,
}

impl Commit {
    pub(crate) fn adding(commit: u64, batch: Batch) -> Self {
        Commit { version: VERSION, commit, add: Some(batch), remove: None }
    }

    pub(crate) fn removing(commit: u64, batch: &str) -> Self {
        Commit { version: VERSION, commit, add: None, remove: Some(batch.to_owned()) }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Checkpoint {
    version: u32,
    commit: u64,
    batches: Vec<Batch>,
}

/// The ledger as of its newest commit.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    /// The committed batches.
    pub(crate) manifest: Manifest,
    /// The number of the newest commit (0 before the first).
    pub(crate) head: u64,
    /// Read from a `manifest.json` of before commits, not yet upgraded.
    pub(crate) legacy: bool,
}

impl State {
    /// The state after `commit`.
    pub(crate) fn apply(&mut self, commit: &Commit) {
        if let Some(batch) = &commit.add
            && !self.manifest.batches.iter().any(|b| b.id == batch.id)
        {
            self.manifest.batches.push(batch.clone());
        }
        if let Some(id) = &commit.remove {
            self.manifest.batches.retain(|b| &b.id != id);
        }
        self.head = commit.commit;
        self.legacy = false;
    }
}

pub(crate) fn commit_name(n: u64) -> String {
    format!("{COMMITS}/{n:020}.json")
}

fn checkpoint_name(n: u64) -> String {
    format!("{COMMITS}/{n:020}.checkpoint.json")
}

/// The number of a commit or checkpoint file, and whether it is a checkpoint.
fn number_of(name: &str) -> Option<(u64, bool)> {
    let file = name.strip_prefix(COMMITS)?.strip_prefix('/')?;
    if let Some(n) = file.strip_suffix(".checkpoint.json") {
        return n.parse().ok().map(|n| (n, true));
    }
    file.strip_suffix(".json")?.parse().ok().map(|n| (n, false))
}

fn decode<T: for<'a> Deserialize<'a>>(backend: &Backend, name: &str, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes)
        .map_err(|e| Error::ledger(backend.shown(name), format!("unreadable: {e}")))
}

/// The ledger's state: its newest checkpoint and the commits after it.
pub(crate) fn read(backend: &Backend) -> Result<State> {
    let listed = backend.list(COMMITS)?;
    let numbers: Vec<(u64, bool)> = listed.iter().filter_map(|l| number_of(&l.name)).collect();
    if numbers.is_empty() {
        return read_legacy(backend);
    }
    let newest = numbers.iter().map(|(n, _)| *n).max().unwrap_or(0);
    let checkpoint = numbers.iter().filter(|(_, c)| *c).map(|(n, _)| *n).max();
    let mut state = match checkpoint {
        Some(n) => {
            let name = checkpoint_name(n);
            let bytes = backend
                .read(&name)?
                .ok_or_else(|| Error::ledger(backend.shown(&name), "vanished while read"))?;
            let read: Checkpoint = decode(backend, &name, &bytes)?;
            State {
                manifest: Manifest { version: 1, batches: read.batches },
                head: n,
                legacy: false,
            }
        }
        None => {
            State { manifest: Manifest { version: 1, batches: vec![] }, head: 0, legacy: false }
        }
    };
    let listed: Vec<u64> =
        numbers.iter().filter(|(n, c)| !c && *n > state.head).map(|(n, _)| *n).collect();
    for commit in fetched(backend, &listed)? {
        if commit.commit != state.head + 1 {
            break;
        }
        state.apply(&commit);
    }
    for commit in after(backend, state.head)? {
        state.apply(&commit);
    }
    if state.head < newest {
        let missing = commit_name(state.head + 1);
        return Err(Error::ledger(
            backend.shown(&missing),
            format!("is missing (commit {newest} is there)"),
        ));
    }
    Ok(state)
}

/// The commits numbered `listed` (those a listing found), in order, read a few at once: on an
/// object store each is a request, and a checkpoint leaves up to [`CHECKPOINT_EVERY`] of them.
fn fetched(backend: &Backend, listed: &[u64]) -> Result<Vec<Commit>> {
    let mut listed = listed.to_vec();
    listed.sort_unstable();
    let read = |n: u64| read_commit(backend, n);
    let mut out = Vec::with_capacity(listed.len());
    for chunk in listed.chunks(8) {
        let got: Vec<Result<Option<Commit>>> = if backend.folder().is_some() || chunk.len() == 1 {
            chunk.iter().map(|&n| read(n)).collect()
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = chunk.iter().map(|&n| scope.spawn(move || read(n))).collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(Error::ledger(backend.shown(COMMITS), "a reader panicked"))
                        })
                    })
                    .collect()
            })
        };
        for commit in got {
            match commit? {
                Some(commit) => out.push(commit),
                None => return Ok(out),
            }
        }
    }
    Ok(out)
}

/// Commit `n`; `None` when there is none.
fn read_commit(backend: &Backend, n: u64) -> Result<Option<Commit>> {
    let name = commit_name(n);
    let Some(bytes) = backend.read(&name)? else { return Ok(None) };
    let commit: Commit = decode(backend, &name, &bytes)?;
    if commit.commit != n {
        let m = format!("says it is commit {}", commit.commit);
        return Err(Error::ledger(backend.shown(&name), m));
    }
    Ok(Some(commit))
}

/// The commits after `head`, in order, up to the first number not there.
pub(crate) fn after(backend: &Backend, head: u64) -> Result<Vec<Commit>> {
    let mut out = Vec::new();
    while let Some(commit) = read_commit(backend, head + 1 + out.len() as u64)? {
        out.push(commit);
    }
    Ok(out)
}

/// A ledger of before commits: its `manifest.json` (an empty ledger when there is none).
fn read_legacy(backend: &Backend) -> Result<State> {
    match backend.read(MANIFEST)? {
        Some(bytes) => {
            let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| {
                Error::ledger(backend.shown(MANIFEST), format!("unreadable manifest: {e}"))
            })?;
            Ok(State { manifest, head: 0, legacy: true })
        }
        None => {
            Ok(State { manifest: Manifest { version: 1, batches: vec![] }, head: 0, legacy: false })
        }
    }
}

/// Creates `commit` (numbered `head + 1` of the state it was made from): `false` when
/// another writer took that number first.
pub(crate) fn create(backend: &Backend, commit: &Commit) -> Result<bool> {
    let name = commit_name(commit.commit);
    let bytes = serde_json::to_vec_pretty(commit)
        .map_err(|e| Error::ledger(backend.shown(&name), format!("cannot encode: {e}")))?;
    backend.create(&name, &bytes)
}

/// Writes checkpoint `n` holding `manifest`'s batches, unless one is there already (the
/// content of a checkpoint is fixed by the commits before it).
pub(crate) fn checkpoint(backend: &Backend, n: u64, manifest: &Manifest) -> Result<()> {
    let name = checkpoint_name(n);
    let checkpoint = Checkpoint { version: VERSION, commit: n, batches: manifest.batches.clone() };
    let bytes = serde_json::to_vec(&checkpoint)
        .map_err(|e| Error::ledger(backend.shown(&name), format!("cannot encode: {e}")))?;
    backend.create(&name, &bytes).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_as_numbers_and_read_back() {
        assert!(commit_name(9) < commit_name(10));
        assert_eq!(number_of(&commit_name(42)), Some((42, false)));
        assert_eq!(number_of(&checkpoint_name(16)), Some((16, true)));
        assert_eq!(number_of("_commits/.00000000000000000001.json.1-2.tmp"), None);
        assert_eq!(number_of("_commits/notes.txt"), None);
    }
}

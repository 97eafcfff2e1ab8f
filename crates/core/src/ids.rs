//! The set of charge ids an import has seen, in bounded memory.
//!
//! Deduplication needs every id of the ledger and of the batch; a 10 GB export has some fifty
//! million rows. An [`IdIndex`] keeps the most recent ids in a hash map of fixed capacity
//! ([`IN_MEMORY`] ids, about 35 MB). When the map is full and the index has a spill folder, its
//! ids are sorted and written to a run file (20 bytes an id), a sparse fence of every
//! [`FENCE`]-th id stays in memory, and every id goes into a fixed 32 MiB blocked Bloom filter.
//! A thread of its own does that, while the index goes on with a second map (so that the
//! import pipeline never stops for a spill); until the run is written, the
//! spilled ids are looked up in the map they were spilled from.
//! A lookup that misses the maps asks the filter, and only when the filter says "maybe" reads
//! one block of a run, newest run first. Memory is thus bounded whatever the size of the file
//! or of the ledger: two maps + filter + fences (16 bytes per 256 ids) + the runs held in
//! memory.
//! Without a spill folder the map simply grows (what [`crate::parse_bill`] does: it holds the
//! charges in memory anyway).
//!
//! A fresh import finds nothing in the runs and reads none. A file imported again finds every
//! id there: a run read from more than a thousand times is then read whole into memory (at
//! most 128 MB of runs), and a known id found in it takes its new owner in place, so the map
//! does not fill up with the file's ids again (a read of a block per id costs far more than a
//! lookup in memory; README, Development, gives the re-import figures).
//!
//! Each id carries the serial of the last file that claimed it (0: committed before the
//! batch), which tells the three answers of [`IdIndex::claim`] apart: new, known from before,
//! or already given by this very file (for the occurrence number of identical rows).
//!
//! Run files live in the spill folder and are removed when the index is dropped; the ledger
//! also removes leftovers of a crashed writer under its lock.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
#[cfg(not(unix))]
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

use crate::charge::IdKeys;
use crate::error::{Error, Result};

/// Ids held in the hash map before it is spilled: 7/8 of 2^20, so the map's table is exactly
/// 2^20 slots of 33 bytes.
pub const IN_MEMORY: usize = (1 << 20) / 8 * 7;
/// Ids of a run between two fence entries kept in memory.
pub const FENCE: usize = 256;
/// Bytes of the Bloom filter, allocated at the first spill.
const BLOOM_BYTES: usize = 32 << 20;
/// The filter is made of 512-bit blocks: one cache line a lookup.
const BLOCK_WORDS: usize = 8;
const ENTRY: usize = 20;

/// What claiming an id for a file found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Nobody had the id: it is now the file's.
    New,
    /// The id was committed before, or given by another file of the batch; it is now marked
    /// as given by this file too.
    Known,
    /// This file already gave the id.
    Given,
}

struct Run {
    file: File,
    path: PathBuf,
    len: usize,
    /// The id of every [`FENCE`]-th entry.
    fence: Vec<u128>,
    /// Blocks of this run read so far.
    reads: usize,
    /// The whole run, once it has been hit often enough to be worth holding in memory.
    loaded: Option<Vec<u8>>,
}

/// Block reads after which a run is read whole into memory. A file imported again finds
/// every id known (reading a block of every newer run on the way), and a system call per id
/// costs many lookups in memory. The filter keeps a fresh import from reading runs at all: it
/// loads nothing.
const LOAD_AFTER_READS: usize = 1024;
/// Bytes of runs held in memory at most (6.7 M ids); runs beyond it are read a block a time.
const LOADED_BYTES: usize = 128 << 20;

/// Where `id` is among `entries` (sorted entries of a run), if it is there.
fn find(entries: &[u8], id: u128) -> Option<usize> {
    let at = |i: usize| -> &[u8] { &entries[i * ENTRY..(i + 1) * ENTRY] };
    let key = |e: &[u8]| u128::from_le_bytes(e[..16].try_into().unwrap_or_default());
    let (mut low, mut high) = (0, entries.len() / ENTRY);
    while low < high {
        let mid = (low + high) / 2;
        match key(at(mid)).cmp(&id) {
            std::cmp::Ordering::Less => low = mid + 1,
            std::cmp::Ordering::Greater => high = mid,
            std::cmp::Ordering::Equal => return Some(mid),
        }
    }
    None
}

/// Bytes of runs held in memory.
fn loaded_bytes(runs: &[Run]) -> usize {
    runs.iter().filter_map(|r| r.loaded.as_ref()).map(Vec::len).sum()
}

/// Reads `buffer.len()` bytes of `file` at `offset`.
/// The owner recorded in entry `i` of `entries`.
fn owner(entries: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(entries[i * ENTRY + 16..(i + 1) * ENTRY].try_into().unwrap_or_default())
}

fn read_at(file: &mut File, buffer: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buffer, offset)
    }
    #[cfg(not(unix))]
    {
        file.seek(SeekFrom::Start(offset))?;
        file.read_exact(buffer)
    }
}

type Map = HashMap<u128, u32, IdKeys>;

/// Ids seen so far, with the file that last claimed each. See the module docs.
pub struct IdIndex {
    map: Map,
    /// The map last spilled, while a thread writes it as a run: looked up after `map`.
    spilling: Option<Spilling>,
    /// An emptied map, kept for the next spill (its table is already in memory).
    spare: Option<Map>,
    /// Ids the map may hold before it spills.
    limit: usize,
    spill_dir: Option<PathBuf>,
    /// The filter's words, shared with the spilling thread, which sets the bits of its ids.
    bloom: Arc<[AtomicU64]>,
    runs: Vec<Run>,
    buffer: Vec<u8>,
}

/// A spill in progress: the map being written, and the thread writing it.
struct Spilling {
    map: Arc<Map>,
    path: PathBuf,
    thread: JoinHandle<Result<(Run, Arc<[AtomicU64]>)>>,
}

impl std::fmt::Debug for IdIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdIndex")
            .field("in_memory", &self.map.len())
            .field("runs", &self.runs.len())
            .finish()
    }
}

impl IdIndex {
    /// An index that keeps every id in memory.
    pub fn in_memory() -> Self {
        Self::new(None, usize::MAX)
    }

    /// An index that holds at most `limit` ids in memory (usually [`IN_MEMORY`]) and spills
    /// the rest to run files in `dir` (created when first needed).
    pub fn spilling(dir: PathBuf, limit: usize) -> Self {
        Self::new(Some(dir), limit.max(1))
    }

    fn new(spill_dir: Option<PathBuf>, limit: usize) -> Self {
        IdIndex {
            map: HashMap::default(),
            spilling: None,
            spare: None,
            limit,
            spill_dir,
            bloom: Arc::new([]),
            runs: Vec::new(),
            buffer: Vec::new(),
        }
    }

    /// Ids held in memory (but those being spilled), and run files written or being written.
    pub fn sizes(&self) -> (usize, usize) {
        (self.map.len(), self.runs.len() + usize::from(self.spilling.is_some()))
    }

    /// Waits for a spill in progress, and takes its run.
    fn settle(&mut self) -> Result<()> {
        let Some(Spilling { map, path, thread }) = self.spilling.take() else { return Ok(()) };
        let run = thread.join().unwrap_or_else(|_| {
            Err(Error::io(&path, std::io::Error::other("the thread writing the ids panicked")))
        });
        // The thread has dropped its handle on the map: keep the table for the next spill.
        if let Ok(mut map) = Arc::try_unwrap(map) {
            map.clear();
            self.spare = Some(map);
        }
        let (run, bloom) = run?;
        self.runs.push(run);
        self.bloom = bloom;
        Ok(())
    }

    /// Blocks read from run files (the filter's false positives and the true hits).
    #[cfg(test)]
    fn run_reads(&self) -> u64 {
        self.runs.iter().map(|r| r.reads as u64).sum()
    }

    /// Looks `ids` up without claiming them, so that claiming them next finds their map
    /// slots and filter blocks in the CPU cache: one lookup waits for memory, while lookups
    /// of different ids in a row overlap (the caller hands a batch of ids first).
    pub fn warm(&self, ids: impl Iterator<Item = u128>) {
        let blocks = self.bloom.len() / BLOCK_WORDS;
        let spilled = self.spilling.as_ref().map(|s| &s.map);
        for id in ids {
            std::hint::black_box(self.map.get(&id));
            if let Some(spilled) = spilled {
                std::hint::black_box(spilled.get(&id));
            }
            if blocks > 0 {
                let (block, _) = Self::bloom_bits(id, blocks);
                std::hint::black_box(self.bloom[block * BLOCK_WORDS].load(Ordering::Relaxed));
            }
        }
    }

    /// Claims `id` for file `file` (a serial; 0 for what was committed before).
    pub fn claim(&mut self, id: u128, file: u32) -> Result<Claim> {
        if let Some(owner) = self.map.get_mut(&id) {
            if *owner == file {
                return Ok(Claim::Given);
            }
            *owner = file;
            return Ok(Claim::Known);
        }
        if self.spilling.as_ref().is_some_and(|s| s.thread.is_finished()) {
            self.settle()?;
        }
        // An id of the map being spilled: its new owner goes into the map, like one of a run.
        let spilled = self.spilling.as_ref().and_then(|s| s.map.get(&id).copied());
        let found = match spilled {
            Some(owner) => Some((owner, false)),
            None => self.search_runs(id, file)?,
        };
        let claim = match found {
            Some((owner, _)) if owner == file => return Ok(Claim::Given),
            // Found in a run held in memory: the new owner was written there.
            Some((_, true)) => return Ok(Claim::Known),
            Some((_, false)) => Claim::Known,
            None => Claim::New,
        };
        if self.map.len() >= self.limit {
            self.spill()?;
        }
        if self.map.capacity() == 0 && self.spill_dir.is_some() {
            // Sized once: growing by doubling would copy the table and touch fresh pages.
            self.map = self.spare.take().unwrap_or_default();
            self.map.reserve(self.limit);
        }
        self.map.insert(id, file);
        Ok(claim)
    }

    /// The filter block of `id` and its seven bits there. The block grows with the id's high
    /// bits, so that a run's ids, sorted, set their bits in one sweep through the filter
    /// (taken at random, each block was a cache miss: a tenth of a spill's time).
    fn bloom_bits(id: u128, blocks: usize) -> (usize, [u32; 7]) {
        let high = (id >> 64) as u64;
        let low = id as u64;
        let block = ((u128::from(high) * blocks as u128) >> 64) as usize;
        let mut bits = [0u32; 7];
        for (i, b) in bits.iter_mut().enumerate() {
            *b = ((low >> (9 * i)) & 511) as u32;
        }
        (block, bits)
    }

    fn bloom_may_hold(&self, id: u128) -> bool {
        if self.bloom.is_empty() {
            return false;
        }
        let (block, bits) = Self::bloom_bits(id, self.bloom.len() / BLOCK_WORDS);
        let words = &self.bloom[block * BLOCK_WORDS..][..BLOCK_WORDS];
        bits.iter()
            .all(|&b| words[(b / 64) as usize].load(Ordering::Relaxed) & (1 << (b % 64)) != 0)
    }

    /// The owner of `id` in the runs, newest first, and whether `file` was recorded as its
    /// new owner there (runs held in memory are updated in place; a file imported again
    /// then adds nothing to the map, which would otherwise spill its ids once more).
    fn search_runs(&mut self, id: u128, file: u32) -> Result<Option<(u32, bool)>> {
        if !self.bloom_may_hold(id) {
            return Ok(None);
        }
        let IdIndex { runs, buffer, .. } = self;
        for i in (0..runs.len()).rev() {
            let block = runs[i].fence.partition_point(|&f| f <= id);
            if block == 0 {
                continue;
            }
            let start = (block - 1) * FENCE;
            let count = FENCE.min(runs[i].len - start);
            let size = runs[i].len * ENTRY;
            if runs[i].loaded.is_none()
                && runs[i].reads >= LOAD_AFTER_READS
                && loaded_bytes(runs) + size <= LOADED_BYTES
            {
                let run = &mut runs[i];
                let mut bytes = vec![0; size];
                read_at(&mut run.file, &mut bytes, 0).map_err(|e| Error::io(&run.path, e))?;
                run.loaded = Some(bytes);
            }
            let run = &mut runs[i];
            match &mut run.loaded {
                Some(bytes) => {
                    let block = &mut bytes[start * ENTRY..(start + count) * ENTRY];
                    if let Some(i) = find(block, id) {
                        let was = owner(block, i);
                        block[i * ENTRY + 16..(i + 1) * ENTRY].copy_from_slice(&file.to_le_bytes());
                        return Ok(Some((was, true)));
                    }
                }
                None => {
                    run.reads += 1;
                    buffer.resize(count * ENTRY, 0);
                    read_at(&mut run.file, buffer, (start * ENTRY) as u64)
                        .map_err(|e| Error::io(&run.path, e))?;
                    if let Some(i) = find(buffer, id) {
                        return Ok(Some((owner(buffer, i), false)));
                    }
                }
            }
        }
        Ok(None)
    }

    /// Hands the map to a thread that writes its ids, sorted, to a new run file and sets
    /// their bits in the filter, and goes on with an empty map: the ids being written are
    /// looked up in the handed map until the run is done: sorting and writing a full map on
    /// the calling thread would stop the whole import pipeline.
    fn spill(&mut self) -> Result<()> {
        let Some(dir) = self.spill_dir.clone() else { return Ok(()) };
        self.settle()?;
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let path = dir.join(format!("ids-{:04}.run", self.runs.len()));
        let map = Arc::new(std::mem::take(&mut self.map));
        let (bloom, handed, at) = (Arc::clone(&self.bloom), Arc::clone(&map), path.clone());
        let thread = std::thread::spawn(move || {
            // The first run makes the filter, off this thread too (32 MiB to zero).
            let bloom = if bloom.is_empty() {
                (0..BLOOM_BYTES / 8).map(|_| AtomicU64::new(0)).collect()
            } else {
                bloom
            };
            write_run(&handed, &bloom, at).map(|run| (run, bloom))
        });
        self.spilling = Some(Spilling { map, path, thread });
        Ok(())
    }
}

/// Writes the ids of `map`, sorted, to a new run file at `path`, and sets their bits in the
/// filter `bloom` (which the calling thread may be reading: until the run is taken, the ids'
/// own map answers for them).
fn write_run(map: &Map, bloom: &[AtomicU64], path: PathBuf) -> Result<Run> {
    let mut entries: Vec<(u128, u32)> = map.iter().map(|(&id, &owner)| (id, owner)).collect();
    entries.sort_unstable_by_key(|e| e.0);
    let blocks = bloom.len() / BLOCK_WORDS;
    // Past the page cache (see `crate::direct`): a fresh import never reads its runs.
    let mut out = crate::direct::Writer::create_new(&path).map_err(|e| Error::io(&path, e))?;
    let mut fence = Vec::with_capacity(entries.len() / FENCE + 1);
    for (i, &(id, owner)) in entries.iter().enumerate() {
        if i % FENCE == 0 {
            fence.push(id);
        }
        let (block, bits) = IdIndex::bloom_bits(id, blocks);
        let mut masks = [0u64; BLOCK_WORDS];
        for b in bits {
            masks[(b / 64) as usize] |= 1 << (b % 64);
        }
        // A load and a store, not an atomic `or` (a locked instruction, which made this loop
        // several times slower): the spilling thread is the filter's only writer, one spill at
        // a time, and a reader that misses a bit being set finds the id in its map instead.
        let words = &bloom[block * BLOCK_WORDS..][..BLOCK_WORDS];
        for (word, mask) in words.iter().zip(masks) {
            if mask != 0 {
                word.store(word.load(Ordering::Relaxed) | mask, Ordering::Relaxed);
            }
        }
        out.write_all(&id.to_le_bytes())
            .and_then(|()| out.write_all(&owner.to_le_bytes()))
            .map_err(|e| Error::io(&path, e))?;
    }
    out.finish().map_err(|e| Error::io(&path, e))?;
    // Read back a block at a time, which a file opened past the page cache would refuse.
    let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
    Ok(Run { file, path, len: entries.len(), fence, reads: 0, loaded: None })
}

impl Drop for IdIndex {
    fn drop(&mut self) {
        if let Some(spilling) = &self.spilling {
            let path = spilling.path.clone();
            if self.settle().is_err() {
                let _ = std::fs::remove_file(path);
            }
        }
        for run in self.runs.drain(..) {
            let _ = std::fs::remove_file(&run.path);
        }
        if let Some(dir) = &self.spill_dir {
            // Only succeeds when empty.
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> u128 {
        xxhash_rust::xxh3::xxh3_128(&n.to_le_bytes())
    }

    #[test]
    fn claims_tell_new_known_and_given_apart_across_spills() {
        let dir = tempfile::tempdir().unwrap();
        let spill = dir.path().join("spill");
        let mut index = IdIndex::spilling(spill.clone(), IN_MEMORY);
        let total = IN_MEMORY as u64 * 2 + 1000;
        for n in 0..total {
            assert_eq!(index.claim(id(n), 1).unwrap(), Claim::New, "id {n}");
        }
        assert_eq!(index.sizes().1, 2, "two runs spilled");
        assert_eq!(index.run_reads(), 0, "new ids never read a run: the filter says no");
        assert!(index.sizes().0 <= IN_MEMORY);
        // Spilled (first run), spilled (second run) and in-memory ids, same file: given.
        for n in [0, IN_MEMORY as u64 + 5, total - 1] {
            assert_eq!(index.claim(id(n), 1).unwrap(), Claim::Given, "id {n}");
        }
        // (The last spill may still be writing its run: its ids were found in its map.)
        index.settle().unwrap();
        assert!(index.spilling.is_none());
        // A file imported again: its ids are known. The runs are read a block per id until
        // they have been read often enough, then held in memory.
        let reads = index.run_reads();
        for n in 10..(10 + 3 * LOAD_AFTER_READS as u64) {
            assert_eq!(index.claim(id(n), 3).unwrap(), Claim::Known, "id {n}");
        }
        assert!(index.runs.iter().all(|r| r.loaded.is_some()), "the runs are in memory");
        let most = 2 * LOAD_AFTER_READS as u64;
        assert!(index.run_reads() - reads <= most, "{} reads", index.run_reads() - reads);
        for n in 10..(10 + 3 * LOAD_AFTER_READS as u64) {
            assert_eq!(index.claim(id(n), 3).unwrap(), Claim::Given, "id {n}, again");
        }
        // Another file: known, and then given by that file.
        assert_eq!(index.claim(id(7), 2).unwrap(), Claim::Known);
        assert_eq!(index.claim(id(7), 2).unwrap(), Claim::Given);
        assert_eq!(index.claim(id(total + 1), 2).unwrap(), Claim::New);
        let files = std::fs::read_dir(&spill).unwrap().count();
        assert_eq!(files, 2);
        drop(index);
        assert!(!spill.exists(), "run files are removed with the index");
    }

    #[test]
    fn ids_being_spilled_are_found_while_their_run_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = IdIndex::spilling(dir.path().join("spill"), 1000);
        // Spills every thousand ids; each id is looked up right after, whichever of the map,
        // the map being spilled or a run holds it then.
        for n in 0..20_000u64 {
            assert_eq!(index.claim(id(n), 1).unwrap(), Claim::New, "id {n}");
            let back = n.saturating_sub(999);
            assert_eq!(index.claim(id(back), 1).unwrap(), Claim::Given, "id {back} at {n}");
        }
        for n in (0..20_000u64).step_by(7) {
            assert_eq!(index.claim(id(n), 2).unwrap(), Claim::Known, "id {n}");
            assert_eq!(index.claim(id(n), 2).unwrap(), Claim::Given, "id {n}, again");
        }
        index.settle().unwrap();
        assert_eq!(index.sizes().1, index.runs.len());
    }

    #[test]
    fn an_in_memory_index_never_spills() {
        let mut index = IdIndex::in_memory();
        for n in 0..(IN_MEMORY as u64 + 10) {
            assert_eq!(index.claim(id(n), 0).unwrap(), Claim::New);
        }
        assert_eq!(index.sizes(), (IN_MEMORY + 10, 0));
    }
}

//! The set of charge ids an import has seen, in bounded memory.
//!
//! Deduplication needs every id of the ledger and of the batch; a 10 GB export has some fifty
//! million rows. An [`IdIndex`] keeps the most recent ids in a hash map of fixed capacity
//! ([`IN_MEMORY`] ids, about 35 MB). When the map is full and the index has a spill folder, its
//! ids are sorted and written to a run file (20 bytes an id), a sparse fence of every
//! [`FENCE`]-th id stays in memory, and every id goes into a fixed 32 MiB blocked Bloom filter.
//! A lookup that misses the map asks the filter, and only when the filter says "maybe" reads
//! one block of a run, newest run first. Memory is thus bounded whatever the size of the file
//! or of the ledger: map + filter + fences (16 bytes per 256 ids) + the runs held in memory.
//! Without a spill folder the map simply grows (what [`crate::parse_bill`] does: it holds the
//! charges in memory anyway).
//!
//! A fresh import finds nothing in the runs and reads none. A file imported again finds every
//! id there: a run read from more than a thousand times is then read whole into memory (at
//! most 128 MB of runs), and a known id found in it takes its new owner in place, so the map
//! does not fill up with the file's ids again (measured: re-importing a 1 GB export took 43 s
//! reading a block per id, 10.6 s so).
//!
//! Each id carries the serial of the last file that claimed it (0: committed before the
//! batch), which tells the three answers of [`IdIndex::claim`] apart: new, known from before,
//! or already given by this very file (for the occurrence number of identical rows).
//!
//! Run files live in the spill folder and are removed when the index is dropped; the ledger
//! also removes leftovers of a crashed writer under its lock.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
#[cfg(not(unix))]
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

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
/// every id known (reading a block of every newer run on the way), and a read per id cost
/// 2.7 µs of system time here (43 s for 4.3 M ids), where a lookup in memory costs a fraction
/// of that. The filter keeps a fresh import from reading runs at all: it loads nothing.
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

/// Ids seen so far, with the file that last claimed each. See the module docs.
pub struct IdIndex {
    map: HashMap<u128, u32, IdKeys>,
    /// Ids the map may hold before it spills.
    limit: usize,
    spill_dir: Option<PathBuf>,
    bloom: Vec<u64>,
    runs: Vec<Run>,
    buffer: Vec<u8>,
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
            limit,
            spill_dir,
            bloom: Vec::new(),
            runs: Vec::new(),
            buffer: Vec::new(),
        }
    }

    /// Ids held in memory, and run files written.
    pub fn sizes(&self) -> (usize, usize) {
        (self.map.len(), self.runs.len())
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
        for id in ids {
            std::hint::black_box(self.map.get(&id));
            if blocks > 0 {
                let (block, _) = Self::bloom_bits(id, blocks);
                std::hint::black_box(self.bloom[block * BLOCK_WORDS]);
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
        let claim = match self.search_runs(id, file)? {
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
            self.map.reserve(self.limit);
        }
        self.map.insert(id, file);
        Ok(claim)
    }

    fn bloom_bits(id: u128, blocks: usize) -> (usize, [u32; 7]) {
        let high = (id >> 64) as u64;
        let low = id as u64;
        let block = (high as usize) & (blocks - 1);
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
        bits.iter().all(|&b| words[(b / 64) as usize] & (1 << (b % 64)) != 0)
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

    /// Writes the map's ids, sorted, to a new run file and empties the map.
    fn spill(&mut self) -> Result<()> {
        let Some(dir) = &self.spill_dir else { return Ok(()) };
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let path = dir.join(format!("ids-{:04}.run", self.runs.len()));
        let mut entries: Vec<(u128, u32)> = self.map.drain().collect();
        entries.sort_unstable_by_key(|e| e.0);
        if self.bloom.is_empty() {
            self.bloom = vec![0; BLOOM_BYTES / 8];
        }
        let blocks = self.bloom.len() / BLOCK_WORDS;
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        let mut fence = Vec::with_capacity(entries.len() / FENCE + 1);
        for (i, &(id, owner)) in entries.iter().enumerate() {
            if i % FENCE == 0 {
                fence.push(id);
            }
            let (block, bits) = Self::bloom_bits(id, blocks);
            let words = &mut self.bloom[block * BLOCK_WORDS..][..BLOCK_WORDS];
            for b in bits {
                words[(b / 64) as usize] |= 1 << (b % 64);
            }
            out.write_all(&id.to_le_bytes())
                .and_then(|()| out.write_all(&owner.to_le_bytes()))
                .map_err(|e| Error::io(&path, e))?;
        }
        let file = out.into_inner().map_err(|e| Error::io(&path, e.into_error()))?;
        self.runs.push(Run { file, path, len: entries.len(), fence, reads: 0, loaded: None });
        Ok(())
    }
}

impl Drop for IdIndex {
    fn drop(&mut self) {
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
    fn an_in_memory_index_never_spills() {
        let mut index = IdIndex::in_memory();
        for n in 0..(IN_MEMORY as u64 + 10) {
            assert_eq!(index.claim(id(n), 0).unwrap(), Claim::New);
        }
        assert_eq!(index.sizes(), (IN_MEMORY + 10, 0));
    }
}

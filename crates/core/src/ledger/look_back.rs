//! Look-back files: what `waste` and `reconcile` read of the months around the one they audit.
//!
//! Both read the audited month and the months around it (the look-back), but of the
//! look-back they keep only its compute charges and, for `reconcile`, the charges with a
//! running balance (see `cases`); of the others (disks, IPs, traffic: most of a window) the
//! rules read only what a [`crate::window::LeftOut`] holds: per platform the time they
//! cover, per resource when it was first charged, and how many there are. So at commit each
//! batch also writes, per partition (month and platform) it added to:
//!
//! ```text
//! look-back/month=<YYYY-MM>/platform=<p>/<batch>.parquet        the partition's compute charges
//!                                                               and charges with a balance
//! look-back/month=<YYYY-MM>/platform=<p>/<batch>.facts.parquet  what its other charges tell
//! ```
//!
//! and its commit records them ([`LookBack`]: which part files hold how many of the kept
//! charges, and how many were left out). A window read for an audit reads, for a partition
//! whose month is not the audited one, these two files instead of the partition's part
//! files, and gets the same rows in the same order (the rows file holds them in the order of
//! the part files, one row group each, and the reader puts each part file's share back in
//! that part file's place), and the same [`crate::window::LeftOut`] (a `LeftOut` is minima,
//! maxima and a count, which do not depend on the order they are taken in). Nothing else
//! changes: the findings, discrepancies and their evidence are the same, byte for byte.
//!
//! Decisions:
//! - A partition of which fewer than a quarter of the charges would be left out keeps no
//!   look-back files (reading them would save little; they would copy most of the
//!   partition), and a batch written before look-back files has none: its part files are
//!   read, as before.
//! - The rows file has every column of a part file, so each use reads of it the columns it
//!   reads of a part file.
//! - The files are written as the part files are, a part file's share at a time, on the
//!   batch's Parquet thread: an import's memory holds the facts (a few words a resource),
//!   never the rows.
//! - They are derived data, like the rollup: `verify` recomputes both from the part files
//!   and reports any difference; removing a batch, an aborted import and the sweep of
//!   files no commit names handle them like the rollup.
//! - Engines reading `charges/` (DuckDB, Spark, Athena) never see them.

use polars::prelude::*;
use rustc_hash::FxHashMap;

use super::backend::{Backend, make_parent};
use super::columns::{Read, instants};
use super::manifest::{Batch, LookBack, LookBackFile};
use super::{io, part, schema};
use crate::charge::{Category, YearMonth};
use crate::error::{Error, ErrorKind, Result};
use crate::window::{LeftOut, Micros, Texts};

/// The folder of the look-back files.
pub(super) const LOOK_BACK: &str = "look-back";

/// A partition keeps look-back files when at least this share of its charges (1/n) would
/// be left out.
const LEFT_OUT_AT_LEAST: u64 = 4;

/// What the charges a look-back file leaves out tell, of one partition.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Facts {
    /// Per resource met (never an empty one), by its place in `index`: the first start and
    /// last end of its charges left out (`(MAX, MIN)` while none is).
    resources: Vec<(i64, i64)>,
    /// Each resource's place in `resources` (its text kept once: an export may have a
    /// resource for every few charges).
    index: FxHashMap<Box<str>, u32>,
    /// The earliest start and the latest end of them all.
    span: Option<(i64, i64)>,
    /// How many.
    rows: u64,
}

/// "No resource" (a null or empty one) while a frame's resources are mapped.
const NO_RESOURCE: u32 = u32::MAX;

impl Facts {
    /// Takes in what the charges of `frame` (a batch's frame, or a part file's) that a
    /// look-back file leaves out tell; returns which charges it keeps: compute, and those
    /// with a balance (exactly what `waste` and `reconcile` keep of a look-back month).
    pub(super) fn split(
        &mut self,
        frame: &DataFrame,
    ) -> std::result::Result<BooleanChunked, String> {
        let named = ["category", "charge_start", "charge_end"];
        let r = Read::of(frame, named.iter().filter_map(|n| schema::column_named(n)))?;
        let category = r.text("category")?;
        let (start, end) = (r.micros("charge_start")?, r.micros("charge_end")?);
        let balance = frame.column("balance_after").map_err(|e| e.to_string())?.is_not_null();
        let compute = Category::Compute.as_str();
        let resource = super::rows::mapped(frame, "resource_id", |text| {
            if text.is_empty() {
                return Ok(NO_RESOURCE);
            }
            if let Some(&at) = self.index.get(text) {
                return Ok(at);
            }
            let at = u32::try_from(self.resources.len()).map_err(|_| "too many resources")?;
            self.index.insert(text.into(), at);
            self.resources.push((i64::MAX, i64::MIN));
            Ok(at)
        })?;
        let mut keep = Vec::with_capacity(frame.height());
        for (i, (c, b)) in category.iter().zip(balance.iter()).enumerate() {
            let kept = *c == Some(compute) || b == Some(true);
            keep.push(kept);
            if kept {
                continue;
            }
            let (s, e) = (start[i].0, end[i].0);
            let span = self.span.get_or_insert((s, e));
            *span = (span.0.min(s), span.1.max(e));
            if let Some(at) = resource[i].filter(|&at| at != NO_RESOURCE) {
                let seen = &mut self.resources[at as usize];
                *seen = (seen.0.min(s), seen.1.max(e));
            }
            self.rows += 1;
        }
        Ok(BooleanChunked::from_slice("keep".into(), &keep))
    }

    /// The facts as their file holds them: the span first (no resource), then each
    /// resource, by text.
    pub(super) fn listed(&self) -> Vec<Fact> {
        let span = self.span.map(|(s, e)| (None, Micros(s), Micros(e)));
        let mut resources: Vec<Fact> = (self.index.iter())
            .map(|(r, &at)| (r, self.resources[at as usize]))
            .filter(|(_, s)| s.0 <= s.1)
            .map(|(r, s)| (Some(r.to_string()), Micros(s.0), Micros(s.1)))
            .collect();
        resources.sort();
        span.into_iter().chain(resources).collect()
    }

    /// [`Facts::listed`] as a frame.
    fn frame(&self) -> PolarsResult<DataFrame> {
        let rows = self.listed();
        DataFrame::new_infer_height(vec![
            Column::new("resource".into(), rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>()),
            Column::new("first_start".into(), rows.iter().map(|r| r.1.0).collect::<Vec<_>>()),
            Column::new("last_end".into(), rows.iter().map(|r| r.2.0).collect::<Vec<_>>()),
        ])
    }
}

/// What a facts file holds: per row, a resource (none for the span of them all), its first
/// start and its last end.
pub(super) type Fact = (Option<String>, Micros, Micros);

/// The facts of a facts file's frame.
pub(super) fn facts_of(df: &DataFrame) -> std::result::Result<Vec<Fact>, String> {
    let fail = |e: PolarsError| e.to_string();
    let resource = df.column("resource").and_then(|c| c.str().cloned()).map_err(fail)?;
    let int = |name: &str| -> std::result::Result<Vec<Option<i64>>, String> {
        let column = df.column(name).and_then(|c| c.cast(&DataType::Int64)).map_err(fail)?;
        Ok(column.i64().map_err(fail)?.iter().collect())
    };
    let (start, end) = (int("first_start")?, int("last_end")?);
    let range = instants();
    let instant = |v: Option<i64>, name: &str| match v {
        Some(v) if range.contains(&v) => Ok(Micros(v)),
        _ => Err(format!("{name}: missing or invalid instant")),
    };
    let mut out = Vec::with_capacity(df.height());
    for (i, r) in resource.iter().enumerate() {
        let (s, e) = (instant(start[i], "first_start")?, instant(end[i], "last_end")?);
        out.push((r.map(str::to_owned), s, e));
    }
    Ok(out)
}

/// Takes into `left_out` (a window's, whose texts are `texts`) what `facts` of a partition
/// of platform `platform` tell, as if its `rows` charges left out had been added.
pub(super) fn merge(
    left_out: &mut LeftOut,
    texts: &mut Texts,
    platform: &str,
    facts: &[Fact],
    rows: u64,
) {
    let p = texts.sym(platform);
    for (resource, start, end) in facts {
        match resource {
            None => {
                let span = left_out.spans.entry(p).or_insert((*start, *end));
                *span = (span.0.min(*start), span.1.max(*end));
            }
            Some(r) if !r.is_empty() => {
                let seen = left_out.first_seen.entry((p, texts.sym(r))).or_insert(*start);
                *seen = (*seen).min(*start);
            }
            Some(_) => {}
        }
    }
    left_out.rows += rows;
}

/// One partition's look-back files being written.
struct Partition {
    month: YearMonth,
    platform: String,
    /// The names of its files but for their ending.
    name: String,
    /// The rows file being written, and where (the staged file).
    stream: Option<(part::Stream<crate::direct::Writer>, std::path::PathBuf)>,
    /// Its rows files, the last one the one being written.
    files: Vec<LookBackFile>,
    total: u64,
    facts: Facts,
}

/// A rows file takes the shares of part files until it holds this many rows (a file is
/// read, and decoded, on one thread: several keep the reader threads busy). The crate's
/// own tests make small files, to read several per partition.
const FILE_ROWS: u64 = if cfg!(test) { 1 << 10 } else { 1 << 16 };

impl Partition {
    /// The rows file to write the next share to: a new one after one of [`FILE_ROWS`].
    fn stream(
        &mut self,
        backend: &Backend,
        kept: &DataFrame,
    ) -> Result<&mut part::Stream<crate::direct::Writer>> {
        let full = self.files.last().is_none_or(|f| f.charges() >= FILE_ROWS);
        if full {
            self.end()?;
            let name = format!("{}-{:04}.parquet", self.name, self.files.len());
            let path = backend.stage(&name);
            make_parent(&path)?;
            let parquet = |source| Error::from(ErrorKind::Parquet { path: path.clone(), source });
            let file = io(&path, crate::direct::Writer::create_new(&path))?;
            let stream = part::Stream::new(file, kept).map_err(parquet)?;
            self.files.push(LookBackFile { path: name, rows: Vec::new() });
            self.stream = Some((stream, path));
        }
        let Some((stream, _)) = &mut self.stream else {
            return Err(Error::ledger(backend.stage(&self.name), "no look-back file open"));
        };
        Ok(stream)
    }

    /// Ends the rows file being written, if any, and syncs it.
    fn end(&mut self) -> Result<()> {
        let Some((stream, path)) = self.stream.take() else { return Ok(()) };
        let parquet = |source| Error::from(ErrorKind::Parquet { path: path.clone(), source });
        let file = stream.end().map_err(parquet)?;
        let file = io(&path, file.finish())?;
        io(&path, file.sync_all())
    }

    /// The names of the files written or to be written.
    fn names(&self) -> impl Iterator<Item = String> + '_ {
        let rows = self.files.iter().map(|f| f.path.clone());
        rows.chain(std::iter::once(self.facts_name()))
    }

    /// The name of its facts file.
    fn facts_name(&self) -> String {
        format!("{}.facts.parquet", self.name)
    }
}

/// The look-back files of a batch being written (on its Parquet thread), partition by
/// partition, a part file's share at a time.
pub(super) struct Writing {
    backend: Backend,
    batch: String,
    partitions: Vec<Partition>,
}

impl Writing {
    pub(super) fn new(backend: Backend, batch: &str) -> Self {
        Writing { backend, batch: batch.to_owned(), partitions: Vec::new() }
    }

    /// Takes in the part file of partition (`month`, `platform`) whose charges are `frame`.
    pub(super) fn add(
        &mut self,
        month: YearMonth,
        platform: &str,
        frame: &DataFrame,
    ) -> Result<()> {
        let found = self.partitions.iter().position(|p| p.month == month && p.platform == platform);
        let at = match found {
            Some(at) => at,
            None => {
                let name = format!("{LOOK_BACK}/month={month}/platform={platform}/{}", self.batch);
                let p = Partition {
                    month,
                    platform: platform.to_owned(),
                    name,
                    stream: None,
                    files: Vec::new(),
                    total: 0,
                    facts: Facts::default(),
                };
                self.partitions.push(p);
                self.partitions.len() - 1
            }
        };
        let p = &mut self.partitions[at];
        let path = self.backend.stage(&p.name);
        let keep = p.facts.split(frame).map_err(|m| Error::ledger(&path, m))?;
        let parquet = |source| Error::from(ErrorKind::Parquet { path: path.clone(), source });
        // On this thread: polars' parallel filter hands each column to its pool.
        let mut kept = frame.filter_seq(&keep).map_err(parquet)?;
        p.stream(&self.backend, &kept)?.write(&mut kept).map_err(parquet)?;
        if let Some(file) = p.files.last_mut() {
            file.rows.push(kept.height() as u64);
        }
        p.total += frame.height() as u64;
        Ok(())
    }

    /// Ends the files and publishes those worth keeping (see the module docs); what the
    /// batch's commit records of them.
    pub(super) fn finish(mut self) -> Result<Vec<LookBack>> {
        let mut out = Vec::new();
        let partitions = std::mem::take(&mut self.partitions);
        let mut names = Vec::new();
        let finished = partitions.into_iter().try_for_each(|mut p| {
            names.extend(p.names());
            p.end()?;
            if p.facts.rows == 0 || p.facts.rows * LEFT_OUT_AT_LEAST < p.total {
                p.names().for_each(|n| self.backend.unstage(&n));
                return Ok(());
            }
            let facts = p.facts_name();
            write_facts(&self.backend.stage(&facts), &p.facts)?;
            for name in p.names() {
                self.backend.publish(&name)?;
            }
            out.push(LookBack {
                month: p.month.to_string(),
                platform: p.platform,
                files: p.files,
                facts,
                left_out: p.facts.rows,
            });
            Ok(())
        });
        match finished {
            Ok(()) => Ok(out),
            Err(e) => {
                names.iter().for_each(|n| self.backend.unstage(n));
                Err(e)
            }
        }
    }

    /// Removes what was written.
    pub(super) fn abort(mut self) {
        for mut p in std::mem::take(&mut self.partitions) {
            drop(p.stream.take());
            p.names().for_each(|n| self.backend.unstage(&n));
        }
    }
}

/// Writes `facts` as a facts file at `path` and syncs it.
fn write_facts(path: &std::path::Path, facts: &Facts) -> Result<()> {
    let parquet = |source| Error::from(ErrorKind::Parquet { path: path.to_owned(), source });
    let mut frame = facts.frame().map_err(parquet)?;
    make_parent(path)?;
    let mut file = io(path, std::fs::File::create(path))?;
    ParquetWriter::new(&mut file).finish(&mut frame).map_err(parquet)?;
    io(path, file.sync_all())
}

/// The look-backs of `batch` whose rows files name as many part files as the batch holds of
/// their partitions (any other is not read: its part files are).
fn whole(batch: &Batch) -> Vec<&LookBack> {
    let parts_of = |l: &LookBack| {
        batch.files.iter().filter(|p| p.month == l.month && p.platform == l.platform).count()
    };
    batch.look_back.iter().filter(|l| parts_of(l) == l.parts()).collect()
}

/// What a window reads, in order: the files, and where each part file's rows come from.
#[derive(Debug, Default)]
pub(super) struct Plan<'m> {
    /// How many rows it reads.
    pub rows: usize,
    /// The files read (batch and name), in the order their first rows go.
    pub reads: Vec<(&'m str, &'m str)>,
    /// The month of each read.
    pub months: Vec<&'m str>,
    /// Of each read of a look-back rows file, how many rows it holds.
    pub shares: Vec<Option<u64>>,
    /// The part files, in order: which read holds their rows, and, of a look-back file,
    /// how many of its rows are theirs (they follow the shares of the part files before).
    pub slots: Vec<(usize, Option<u64>)>,
    /// The look-back files read, and their batches: what their facts tell goes with them.
    pub look_backs: Vec<(&'m str, &'m LookBack)>,
}

impl<'m> Plan<'m> {
    fn read(&mut self, batch: &'m str, name: &'m str, month: &'m str, rows: Option<u64>) -> usize {
        self.reads.push((batch, name));
        self.months.push(month);
        self.shares.push(rows);
        self.reads.len() - 1
    }
}

/// The plan of reading the part files of `batches` of `months` (all when empty), of those
/// of a month but `audited` (when some) from their partitions' look-back files.
pub(super) fn plan<'m>(
    batches: &'m [Batch],
    months: &std::collections::HashSet<String>,
    audited: Option<YearMonth>,
) -> Plan<'m> {
    let audited = audited.map(|m| m.to_string());
    let mut plan = Plan::default();
    for batch in batches {
        // The look-backs begun: the next part file's share (its file and place there), and
        // the read of that file.
        let mut begun: Vec<(&LookBack, (usize, usize), usize)> = Vec::new();
        let whole = if audited.is_some() { whole(batch) } else { Vec::new() };
        let wanted = batch.files.iter().filter(|p| months.is_empty() || months.contains(&p.month));
        for part in wanted {
            let look_back = audited.as_ref().filter(|m| **m != part.month).and_then(|_| {
                whole.iter().copied().find(|l| l.month == part.month && l.platform == part.platform)
            });
            let Some(l) = look_back else {
                let read = plan.read(&batch.id, &part.path, &part.month, None);
                plan.slots.push((read, None));
                plan.rows += part.rows as usize;
                continue;
            };
            let at = match begun.iter().position(|(o, _, _)| std::ptr::eq(*o, l)) {
                Some(at) => at,
                None => {
                    plan.look_backs.push((&batch.id, l));
                    begun.push((l, (0, 0), usize::MAX));
                    begun.len() - 1
                }
            };
            let (_, (file, share), read) = &mut begun[at];
            // `whole` saw that the files hold a share for every part file.
            while l.files[*file].rows.len() <= *share {
                (*file, *share) = (*file + 1, 0);
                *read = usize::MAX;
            }
            let f = &l.files[*file];
            if *read == usize::MAX {
                *read = plan.read(&batch.id, &f.path, &l.month, Some(f.charges()));
            }
            let rows = f.rows[*share];
            plan.slots.push((*read, Some(rows)));
            plan.rows += rows as usize;
            *share += 1;
        }
    }
    plan
}

/// What `verify` checks of a batch's look-back files: that they hold what its part files
/// would give them.
pub(super) struct Check<'b> {
    batch: &'b Batch,
    /// Per look-back of the batch: the facts and kept rows of its part files so far, and
    /// whether one could not be read.
    computed: Vec<(Facts, Vec<DataFrame>, bool)>,
}

impl<'b> Check<'b> {
    pub(super) fn new(batch: &'b Batch) -> Self {
        let computed = batch.look_back.iter().map(|_| (Facts::default(), Vec::new(), false));
        Check { batch, computed: computed.collect() }
    }

    /// Takes in part file `part`'s frame, `None` if it could not be read.
    pub(super) fn add(&mut self, part: &super::PartFile, frame: Option<&DataFrame>) {
        let of = |l: &&LookBack| l.month == part.month && l.platform == part.platform;
        let Some(at) = self.batch.look_back.iter().position(|l| of(&l)) else { return };
        let (facts, kept, failed) = &mut self.computed[at];
        let split = frame.map(|f| facts.split(f).map(|keep| f.filter(&keep)));
        match split {
            Some(Ok(Ok(frame))) => kept.push(frame),
            _ => *failed = true,
        }
    }

    /// What is wrong: per file, the message.
    pub(super) fn problems(self, backend: &Backend) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (l, (facts, kept, failed)) in self.batch.look_back.iter().zip(self.computed) {
            let mut kept = kept.into_iter();
            for f in &l.files {
                let read =
                    backend.local(&f.path).and_then(|p| super::reader::read_parquet(&p, None));
                let want: Vec<DataFrame> = kept.by_ref().take(f.rows.len()).collect();
                let message = match read {
                    Err(e) => format!("cannot be read: {e}"),
                    Ok(read) if read.height() as u64 != f.charges() => {
                        format!(
                            "holds {} charges, the manifest says {}",
                            read.height(),
                            f.charges()
                        )
                    }
                    Ok(_) if failed => continue,
                    Ok(read) => {
                        let same = want.len() == f.rows.len()
                            && want.iter().zip(&f.rows).all(|(w, &n)| w.height() as u64 == n)
                            && same_rows(&read, &want);
                        if same {
                            continue;
                        }
                        "does not hold the compute charges and charges with a balance of its part files".into()
                    }
                };
                out.push((f.path.clone(), message));
            }
            let read = backend.local(&l.facts).and_then(|p| super::reader::read_parquet(&p, None));
            let message = match read.map_err(|e| e.to_string()).and_then(|df| facts_of(&df)) {
                Err(e) => format!("cannot be read: {e}"),
                Ok(_) if failed => continue,
                Ok(read) if read == facts.listed() && l.left_out == facts.rows => continue,
                Ok(_) => "does not tell what the other charges of its part files tell".into(),
            };
            out.push((l.facts.clone(), message));
        }
        out
    }
}

/// Whether `read` holds the rows of `want`, in order.
fn same_rows(read: &DataFrame, want: &[DataFrame]) -> bool {
    let mut all = match want.first() {
        Some(first) => first.clone(),
        None => return read.height() == 0,
    };
    for more in &want[1..] {
        if all.vstack_mut(more).is_err() {
            return false;
        }
    }
    read.equals_missing(&all)
}

//! Reading the ledger: the manifest, the zones files were imported in, and the charges of
//! the committed part files. A part file that cannot be read is an error that names its
//! batch and the way out (`gpuaudit ledger --remove`), never a dead ledger.

use std::collections::HashSet;
use std::fs::File;
use std::path::Path;

use polars::prelude::{ParallelStrategy, ParquetReader, SerReader};

use super::{LoadFilter, Manifest, PartFile, Store, columns, io, log, look_back, rows};
use crate::charge::{Charge, ChargeId, YearMonth};
use crate::error::{Error, ErrorKind, Result};
use crate::ids::IdIndex;
use crate::window::{Row, Side, Texts};

impl Store {
    /// The committed batches; an empty manifest when the ledger does not exist yet.
    pub fn manifest(&self) -> Result<Manifest> {
        Ok(log::read(&self.backend)?.manifest)
    }

    /// The number of the ledger's newest commit (0 before the first).
    pub fn head(&self) -> Result<u64> {
        Ok(log::read(&self.backend)?.head)
    }

    /// The zone of each platform of the ledger, as the profiles that imported it said (the
    /// newest file's wins). Files imported before zones were recorded say nothing: combine
    /// with [`crate::platforms::Platforms::of_profiles`] of the profiles in use.
    pub fn platforms(&self) -> Result<crate::platforms::Platforms> {
        let mut zones = crate::platforms::Platforms::none();
        for source in self.manifest()?.batches.iter().flat_map(|b| &b.sources) {
            let platform = source.platform.as_deref().unwrap_or(&source.profile);
            if let Some(zone) = source.zone.as_deref().and_then(|z| z.parse().ok()) {
                zones.set_zone(platform, zone);
            }
        }
        Ok(zones)
    }

    /// Loads the committed charges that pass `filter`, in batch and file order, each charge
    /// whose resource is a compute instance among them linked to it
    /// ([`crate::link_to_instances`]).
    pub fn load(&self, filter: &LoadFilter) -> Result<Vec<Charge>> {
        let manifest = self.manifest()?;
        let (rows, parts, _) = self.parts_of(&manifest, filter)?;
        // Room for every charge at once: growing the vector by doubling copied it (a charge
        // is some 430 bytes) and left up to half of it unused.
        let mut charges = Vec::with_capacity(rows);
        read_parts_in_order(&self.backend, &parts, None, columns::from_frame, |mut read| {
            charges.append(&mut read);
        })?;
        crate::charge::link_to_instances(&mut charges);
        Ok(charges)
    }

    /// The charges that pass `filter` as the rules read them ([`crate::window::Row`]s, texts
    /// shared, the columns no rule reads left unread), in batch and file order, linked to
    /// their instances as [`Store::load`] links them: what [`Store::audit`] and
    /// [`Store::reconcile`] read.
    pub fn load_rows(&self, filter: &LoadFilter) -> Result<crate::window::Window> {
        self.load_window(filter, true)
    }

    /// [`Store::load_rows`], with the rows' [`crate::window::Amounts`] only if `amounts`
    /// (the waste rules read none of them).
    pub fn load_window(&self, filter: &LoadFilter, amounts: bool) -> Result<crate::window::Window> {
        self.load_window_keeping(filter, amounts, &|_, _| true)
    }

    /// [`Store::load_window`] of the rows that pass `keep`, and of every compute row (the
    /// linking follows them), linked among themselves; what the others tell is in the
    /// window's [`crate::window::Window::left_out`].
    pub fn load_window_keeping(
        &self,
        filter: &LoadFilter,
        amounts: bool,
        keep: &dyn Fn(&crate::window::Row, Option<&crate::window::Amounts>) -> bool,
    ) -> Result<crate::window::Window> {
        self.load_lean(filter, Reading::all(amounts), keep)
    }

    /// [`Store::load_window_keeping`] reading of the rows what `reading` says (and always
    /// every compute row).
    pub(super) fn load_lean(
        &self,
        filter: &LoadFilter,
        reading: Reading<'_>,
        keep: &dyn Fn(&crate::window::Row, Option<&crate::window::Amounts>) -> bool,
    ) -> Result<crate::window::Window> {
        let keep = |r: &crate::window::Row, a: Option<&crate::window::Amounts>| {
            r.category == crate::charge::Category::Compute || keep(r, a)
        };
        let mut window = self.load_rows_unlinked(filter, reading, &keep)?;
        crate::window::link_rows(&mut window.rows);
        Ok(window)
    }

    /// [`Store::load_window`] without the linking: for a caller that reads several windows
    /// out of one read and links each as [`Store::load_rows`] would.
    pub(super) fn load_rows_unlinked(
        &self,
        filter: &LoadFilter,
        reading: Reading<'_>,
        keep: &dyn Fn(&crate::window::Row, Option<&crate::window::Amounts>) -> bool,
    ) -> Result<crate::window::Window> {
        let manifest = self.manifest()?;
        let months: HashSet<String> = filter.months.iter().map(ToString::to_string).collect();
        let plan = look_back::plan(&manifest.batches, &months, reading.look_back);
        let ids = reading.ids.is_none_or(|months| !months.is_empty());
        let mut window = crate::window::Window::with_capacity(plan.rows, reading.amounts, ids);
        let wanted: Vec<rows::Wanted> = plan.months.iter().map(|m| reading.of(m)).collect();
        // The texts the rows map read as their dictionaries' keys where the file allows
        // (`keyed`), the other columns (and any text it leaves) by polars.
        let read = |i: usize, path: &Path| {
            let (keys, rest): (Vec<String>, Vec<String>) = rows::row_columns(wanted[i])
                .map(|c| c.name.to_owned())
                .partition(|n| rows::MAPPED.contains(&n.as_str()));
            let (keyed, left) = super::keyed::read(path, keys);
            let df = read_parquet(path, Some(rest.into_iter().chain(left).collect()))?;
            let decoded = rows::rows_from_frame(&df, &keyed, wanted[i]).and_then(|read| match plan
                .shares[i]
            {
                Some(said) if read.0.len() as u64 != said => {
                    Err(format!("holds {} charges, the manifest says {said}", read.0.len()))
                }
                _ => Ok((i, read)),
            });
            decoded.map_err(|m| Error::ledger(path, m))
        };
        let mut failed = None;
        let mut slots = Slots::new(&plan.slots);
        // Where each row read without its file and line is, to read them when asked for.
        let mut later = reading.lines_later.then(super::origins::Later::default);
        read_parts_by(&self.backend, &plan.reads, read, |(i, read)| {
            slots.take(i, read, &mut |(read, from), rows, a, texts| {
                let first = window.rows.len();
                match window.append_kept(rows, a, texts, keep) {
                    Err(e) => failed = failed.take().or(Some(e)),
                    Ok(kept) => match &mut later {
                        Some(later) if !wanted[read].lines => {
                            later.add(first, window.rows.len() - first, (read, from), kept);
                        }
                        _ => {}
                    },
                }
            });
        })?;
        if let Some(later) = later {
            window.elsewhere = Some(later.reading(&self.backend, &plan.reads));
        }
        self.merge_facts(&plan, &mut window)?;
        // The ledger keeps each charge once.
        window.distinct_ids = true;
        match failed {
            Some(message) => Err(ErrorKind::Overflow { what: message }.into()),
            None => Ok(window),
        }
    }

    /// Takes into `window`'s rows left out what the facts files of the look-back files of
    /// `plan` tell.
    fn merge_facts(
        &self,
        plan: &look_back::Plan<'_>,
        window: &mut crate::window::Window,
    ) -> Result<()> {
        let (facts, of): (Vec<(&str, &str)>, Vec<&super::LookBack>) =
            plan.look_backs.iter().map(|&(batch, l)| ((batch, l.facts.as_str()), l)).unzip();
        let mut next = of.into_iter();
        read_parts_in_order(&self.backend, &facts, None, look_back::facts_of, |facts| {
            if let Some(l) = next.next() {
                let (left_out, texts) = (&mut window.left_out, &mut window.texts);
                look_back::merge(left_out, texts, &l.platform, &facts, l.left_out);
            }
        })
    }

    /// The part files of `manifest` that `filter` reads, with their batches and months, in
    /// batch and file order, by name; and how many charges they hold.
    pub(super) fn parts_of<'m>(
        &self,
        manifest: &'m Manifest,
        filter: &LoadFilter,
    ) -> Result<Parts<'m>> {
        let months: HashSet<String> = filter.months.iter().map(ToString::to_string).collect();
        let plan = look_back::plan(&manifest.batches, &months, None);
        Ok((plan.rows, plan.reads, plan.months))
    }

    /// Claims in `known` the id of every charge of the committed part files (only the `id`
    /// column is read), as the ids of file 0: the ledger's.
    pub(super) fn claim_committed_ids(
        &self,
        manifest: &Manifest,
        known: &mut IdIndex,
    ) -> Result<()> {
        // Read on the reader threads (an object store's files are downloaded a few at once),
        // claimed here in order.
        let parts: Vec<(&str, &str)> = manifest
            .batches
            .iter()
            .flat_map(|b| b.files.iter().map(move |p| (b.id.as_str(), p.path.as_str())))
            .collect();
        let mut failed = None;
        read_parts_in_order(&self.backend, &parts, Some(&["id"]), ids_of, |ids| {
            for id in ids {
                if failed.is_none()
                    && let Err(e) = known.claim(id, 0)
                {
                    failed = Some(e);
                }
            }
        })?;
        failed.map_or(Ok(()), Err)
    }

    /// The charge ids of part file `part` of batch `batch` (only the `id` column is read).
    pub(super) fn part_ids(&self, batch: &str, part: &PartFile) -> Result<Vec<u128>> {
        let unreadable = |e| unreadable(e, batch);
        let path = self.backend.local(&part.path).map_err(unreadable)?;
        let df = read_parquet(&path, Some(vec!["id".into()])).map_err(unreadable)?;
        ids_of(&df).map_err(|m| unreadable(Error::ledger(&path, m)))
    }
}

/// The charge ids of a frame's `id` column.
fn ids_of(df: &polars::prelude::DataFrame) -> std::result::Result<Vec<u128>, String> {
    let ids = df.column("id").and_then(|c| c.str().cloned()).map_err(|e| e.to_string())?;
    ids.iter()
        .flatten()
        .map(|id| {
            ChargeId::from_hex(id).map(|c| c.0).ok_or_else(|| format!("bad charge id {id:?}"))
        })
        .collect()
}

/// Part files to read: how many charges they hold, each's batch and name, and each's month.
pub(super) type Parts<'m> = (usize, Vec<(&'m str, &'m str)>, Vec<&'m str>);

/// What a window reads of its rows beyond what every use reads (see [`rows::Wanted`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Reading<'a> {
    /// The four amounts of every row.
    pub amounts: bool,
    /// Of the amounts, only the quantity.
    pub quantity_only: bool,
    /// The unit and GPU count of every row.
    pub usage: bool,
    /// The months whose rows' charge ids are read: every month if `None`.
    pub ids: Option<&'a [YearMonth]>,
    /// The months whose rows' files and lines are read: every month if `None`.
    pub lines: Option<&'a [YearMonth]>,
    /// Whether the files and lines of the rows of the other months are read when asked for
    /// ([`crate::window::Window::lines_at`]; see `origins`).
    pub lines_later: bool,
    /// The month audited, when of every other month the window keeps only compute rows
    /// and rows with a balance (or fewer): then those months are read from the batches'
    /// look-back files where they have them (see `look_back`).
    pub look_back: Option<YearMonth>,
}

impl Reading<'_> {
    /// Every column of a row, and the amounts if `amounts`.
    pub(super) fn all(amounts: bool) -> Reading<'static> {
        Reading {
            amounts,
            quantity_only: false,
            usage: true,
            ids: None,
            lines: None,
            lines_later: false,
            look_back: None,
        }
    }

    /// What is read of the rows of a part file of `month` (a month as the manifest writes it).
    fn of(&self, month: &str) -> rows::Wanted {
        let month = month.parse::<YearMonth>().ok();
        let read = |months: Option<&[YearMonth]>| {
            months.is_none_or(|months| month.is_some_and(|m| months.contains(&m)))
        };
        let (ids, lines) = (read(self.ids), read(self.lines));
        let (amounts, quantity_only, usage) = (self.amounts, self.quantity_only, self.usage);
        rows::Wanted { amounts, quantity_only, ids, lines, usage }
    }
}

/// What is handed a part file's rows (see [`Slots::take`]): the read they are of and the
/// place of the first among its rows, the rows, what was read beside them, their texts.
type Append<'a> = dyn FnMut((usize, usize), Vec<Row>, Side, &Texts) + 'a;

/// The rows of the reads of a [`look_back::Plan`], handed on in the order of its part files:
/// a part file's rows as they are read, a look-back file's a part file's share at a time.
struct Slots<'p> {
    slots: &'p [(usize, Option<u64>)],
    /// The next part file to hand on.
    next: usize,
    /// The reads taken whose rows are not all handed on, and how many of them are.
    taken: std::collections::HashMap<usize, (rows::PartRows, usize)>,
}

impl<'p> Slots<'p> {
    fn new(slots: &'p [(usize, Option<u64>)]) -> Self {
        Slots { slots, next: 0, taken: Default::default() }
    }

    /// Takes the rows of read `i`, and hands `append` those of every part file now read
    /// (with the read they are of and the place of the first among its rows).
    fn take(&mut self, i: usize, read: rows::PartRows, append: &mut Append<'_>) {
        self.taken.insert(i, (read, 0));
        while let Some(&(read, of)) = self.slots.get(self.next) {
            let Some((rows, done)) = self.taken.get_mut(&read) else { return };
            match of {
                None => {
                    let Some(((rows, side, texts), _)) = self.taken.remove(&read) else { return };
                    append((read, 0), rows, side, &texts);
                }
                Some(n) => {
                    let (from, to) = (*done, (*done + n as usize).min(rows.0.len()));
                    let side = crate::window::Side {
                        amounts: share(&rows.1.amounts, from, to),
                        ids: share(&rows.1.ids, from, to),
                        origins: share(&rows.1.origins, from, to),
                        usage: share(&rows.1.usage, from, to),
                    };
                    append((read, from), rows.0[from..to].to_vec(), side, &rows.2);
                    *done = to;
                    if to == rows.0.len() {
                        self.taken.remove(&read);
                    }
                }
            }
            self.next += 1;
        }
    }
}

/// `v[from..to]`, or none when `v` holds none (rows read without them).
fn share<T: Clone>(v: &[T], from: usize, to: usize) -> Vec<T> {
    v.get(from..to).map(<[T]>::to_vec).unwrap_or_default()
}

/// Part files read at once, at most this many.
const READERS: usize = 4;

/// Reads the charges of `parts` (batch, name) on a few threads (decoding a part file into
/// charges is most of a load, and each is independent; an object store's files are
/// downloaded there too, a few at once), handing each part's charges to `take` in the order
/// of `parts`. The first part that cannot be read is the error, naming its batch.
pub(super) fn read_parts_in_order<T: Send>(
    backend: &super::backend::Backend,
    parts: &[(&str, &str)],
    columns: Option<&[&str]>,
    decode: impl Fn(&polars::prelude::DataFrame) -> std::result::Result<T, String> + Sync,
    take: impl FnMut(T),
) -> Result<()> {
    let columns: Option<Vec<String>> = columns.map(|c| c.iter().map(|n| (*n).to_owned()).collect());
    let read = |_: usize, path: &Path| {
        let df = read_parquet(path, columns.clone())?;
        decode(&df).map_err(|m| Error::ledger(path, m))
    };
    read_parts_by(backend, parts, read, take)
}

/// [`read_parts_in_order`] with each part `i` read from its local file by `read(i, path)`.
pub(super) fn read_parts_by<T: Send>(
    backend: &super::backend::Backend,
    parts: &[(&str, &str)],
    read: impl Fn(usize, &Path) -> Result<T> + Sync,
    mut take: impl FnMut(T),
) -> Result<()> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let readers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, READERS);
    let next = AtomicUsize::new(0);
    let (tx, rx) = crossbeam_channel::bounded::<(usize, Result<T>)>(readers);
    let read = &read;
    std::thread::scope(|scope| {
        for _ in 0..readers.min(parts.len()) {
            let (tx, next) = (tx.clone(), &next);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((batch, name)) = parts.get(i) else { return };
                    let read = backend
                        .local(name)
                        .and_then(|path| read(i, &path))
                        .map_err(|e| unreadable(e, batch));
                    if tx.send((i, read)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        // Parts finish out of order by a part or two: those ahead wait here.
        let mut ahead = std::collections::BTreeMap::new();
        let mut wanted = 0;
        for (i, read) in rx {
            ahead.insert(i, read);
            while let Some(read) = ahead.remove(&wanted) {
                take(read?);
                wanted += 1;
            }
        }
        Ok(())
    })
}

/// The error of a committed file that cannot be read, naming the batch that names it (the
/// way out is to take that batch out).
pub(super) fn unreadable(e: Error, batch: &str) -> Error {
    let batch = batch.to_owned();
    let (path, message) = match e.into_kind() {
        ErrorKind::Ledger { path, message } => (path, message),
        ErrorKind::Parquet { path, source } => (path, format!("parquet: {source}")),
        ErrorKind::Io { path, source } => (path, source.to_string()),
        other => return other.into(),
    };
    ErrorKind::Unreadable { path, batch, message }.into()
}

pub(super) fn read_parquet(
    path: &Path,
    columns: Option<Vec<String>>,
) -> Result<polars::prelude::DataFrame> {
    let file = io(path, File::open(path))?;
    // polars' decoder panics on some damaged files: a damaged part is an error like any.
    // Part files are read several at once (`read_parts_by`), each on one thread: polars'
    // own parallel read of a file's columns handed each small part to its pool and back,
    // two milliseconds a file whatever its size (two thirds of reading a window).
    crate::error::catch(|| {
        let mut reader = ParquetReader::new(file);
        // A part file written before a column was added ([`super::schema::LATE`]) does not
        // have it: it is not asked for, and reads as nulls (`columns::read_column`).
        let columns = match columns {
            Some(mut names) if names.iter().any(|n| super::schema::LATE.contains(&n.as_str())) => {
                let schema = reader.schema()?;
                names.retain(|n| {
                    !super::schema::LATE.contains(&n.as_str()) || schema.contains(n.as_str())
                });
                Some(names)
            }
            other => other,
        };
        reader.read_parallel(ParallelStrategy::None).with_columns(columns).finish()
    })
    .map_err(|panic| Error::ledger(path, panic))?
    .map_err(|source| ErrorKind::Parquet { path: path.to_owned(), source }.into())
}

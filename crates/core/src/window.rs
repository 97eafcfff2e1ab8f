//! The charges the rules read, compactly: [`Row`]s, whose texts are shared.
//!
//! A window of charges (a month and its look-back) is read by the waste rules and the
//! reconciliation checks. As [`Charge`]s each charge holds eleven texts of its own, most of
//! them the same as the row before's (platform, currency, file, account, the resource's ids
//! hourly); a window of ten million charges took 7 GB, and clearing the memory took half the
//! time of an audit. A [`Row`] holds the same facts the rules use, each text a four-byte
//! [`Sym`] of its [`Window`]'s [`Texts`], where each text is kept once; it leaves out what
//! no rule or report reads (the resource's name, the region).
//!
//! A row is 64 bytes (a test holds it there), the compact form DESIGN.md asks for:
//!
//! - texts as syms, category, kind and pricing as one-byte codes;
//! - what few uses read beside the window, by the row's place, and only when read: where it
//!   was read ([`Window::origin`]: the evidence of a finding, a check's discrepancy) and what
//!   it measured ([`Window::usage`]: the cost report). Every pass of a rule over the rows
//!   reads every byte of them, and the kernel clears every page of them once: with these
//!   in the row (88 bytes) `waste` over a window of ten million charges took 1.63 s and
//!   880 MB, without them 1.44 s and 750 MB (medians of three, alternating);
//! - its instants as [`Micros`], microseconds since the epoch as the ledger keeps them,
//!   compared and subtracted as integers;
//! - its billed cost as the decimal's 96-bit mantissa and a byte of sign and scale
//!   ([`Row::billed_cost`] gives it back exactly, digits and scale as read): not a fixed
//!   scale, since a bill's figures carry their own and outputs print them as given;
//! - its id and its four optional amounts beside it, in the window ([`Window::id`],
//!   [`Window::amounts`]): only the evidence a finding shows reads an id, a store reads ids
//!   for the audited month only, and the waste rules read no amount.
//!
//! This module owns the row and its texts; it must not know where rows come from (the ledger
//! reads them from its columns, [`rows_of`] makes them from charges).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::num::NonZeroU32;
use std::sync::Arc;

use rust_decimal::Decimal;

use crate::charge::{Category, ChargeId, Kind, Pricing, YearMonth};

#[path = "window_micros.rs"]
mod micros;
pub use micros::Micros;

#[path = "window_amounts.rs"]
mod amounts;
pub use amounts::Amounts;
pub(crate) use amounts::packed;
#[cfg(feature = "store")]
pub(crate) use amounts::{Packed, pack};
use amounts::{SPILLED, Stored, decimal_of};

#[path = "window_charges.rs"]
mod charges;
#[path = "window_left_out.rs"]
mod left_out;
#[path = "window_link.rs"]
mod link;
#[path = "window_origins.rs"]
mod origins;
#[path = "window_said.rs"]
mod said;
pub use charges::{amounts_of, in_text_order, origin_of, row_of, rows_of, usage_of};
pub use left_out::LeftOut;
pub use link::link_rows;
pub(crate) use origins::Elsewhere;

/// A text of a window: its index in the window's [`Texts`] (four bytes; `Option<Sym>` too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(NonZeroU32);

/// The texts of a window, each kept once.
#[derive(Debug, Default, Clone)]
pub struct Texts {
    texts: Vec<Arc<str>>,
    index: HashMap<Arc<str>, Sym>,
    last: Option<Sym>,
}

impl Texts {
    /// The text `sym` stands for.
    pub fn get(&self, sym: Sym) -> &str {
        self.texts.get(sym.0.get() as usize - 1).map_or("", |t| t)
    }

    /// [`Texts::get`] of a text that may be absent.
    pub fn opt(&self, sym: Option<Sym>) -> Option<&str> {
        sym.map(|s| self.get(s))
    }

    /// The sym of `text`, kept if new. A text equal to the last one asked for is found
    /// without hashing (columns repeat their values row after row).
    pub fn sym(&mut self, text: &str) -> Sym {
        if let Some(last) = self.last
            && self.get(last) == text
        {
            return last;
        }
        let sym = match self.index.get(text) {
            Some(&sym) => sym,
            None => {
                let n = u32::try_from(self.texts.len() + 1).unwrap_or(u32::MAX);
                let sym = Sym(NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN));
                let text: Arc<str> = text.into();
                self.texts.push(text.clone());
                self.index.insert(text, sym);
                sym
            }
        };
        self.last = Some(sym);
        sym
    }

    /// [`Texts::sym`] of a text that may be absent.
    pub fn sym_opt(&mut self, text: Option<&str>) -> Option<Sym> {
        text.map(|t| self.sym(t))
    }

    /// The sym of `text`, if these texts hold it.
    pub fn find(&self, text: &str) -> Option<Sym> {
        self.index.get(text).copied()
    }

    /// `sym` of `other` as a sym of these texts.
    fn adopt(&mut self, other: &Texts, sym: Sym, memo: &mut Vec<Option<Sym>>) -> Sym {
        let i = sym.0.get() as usize - 1;
        if memo.len() <= i {
            memo.resize(i + 1, None);
        }
        match memo[i] {
            Some(mine) => mine,
            None => *memo[i].insert(self.sym(other.get(sym))),
        }
    }
}

/// Where a row was read ([`Window::origin`]): kept by the window beside the row, since only
/// the evidence of a finding, a check's discrepancy and a few rules read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RowOrigin {
    /// The source file, as the charge records it: none when empty or not read.
    pub file: Option<Sym>,
    /// Its line: 0 when not read.
    pub line: u64,
    /// The bill's words for the item: none when empty.
    pub item: Option<Sym>,
    /// The bill's words for what was used (its usage type): none when empty.
    pub usage_type: Option<Sym>,
}

/// What a row measured ([`Window::usage`]): kept by the window beside the row, read only by
/// the cost report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Unit of the quantity.
    pub unit: Option<Sym>,
    /// Number of GPUs.
    pub gpu_count: Option<u16>,
    /// The service the bill names.
    pub service: Option<Sym>,
}

/// A charge as the rules read it: the fields of [`Charge`] they use, its texts as [`Sym`]s
/// of its window's [`Texts`]. Its id is kept beside it, by the window ([`Window::id`]): only
/// the evidence a finding shows reads it, and a store reads it for the audited month only.
/// Its billed cost is kept in 13 bytes where a [`Decimal`] takes 16 ([`Row::billed_cost`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// Platform.
    pub platform: Sym,
    /// Billing account.
    pub account: Option<Sym>,
    /// Billing period.
    pub billing_period: YearMonth,
    /// Start of the time paid for (UTC, inclusive).
    pub charge_start: Micros,
    /// End of the time paid for (UTC, exclusive).
    pub charge_end: Micros,
    /// The resource charged.
    pub resource_id: Option<Sym>,
    /// The instance it belongs to.
    pub instance_id: Option<Sym>,
    /// Category.
    pub category: Category,
    /// Kind.
    pub kind: Kind,
    /// Pricing.
    pub pricing: Pricing,
    /// GPU model.
    pub gpu_model: Option<Sym>,
    /// The row's place in its window, where its [`Amounts`], id, origin and usage are
    /// ([`Window::amounts`], [`Window::id`], [`Window::origin`], [`Window::usage`]).
    pub(crate) pos: u32,
    /// Billed cost's 96-bit mantissa, low word first (see [`Row::billed_cost`]).
    pub(crate) cost: [u32; 3],
    /// Billed cost's sign (the high bit) and scale (the low five), as [`Decimal`] keeps them.
    pub(crate) cost_flags: u8,
    /// Currency.
    pub currency: Sym,
}

impl Row {
    /// Billed cost, exactly as it was given (the same digits and scale; a negative zero too).
    pub fn billed_cost(&self) -> Decimal {
        decimal_of(self.cost, self.cost_flags >> 7 != 0, u32::from(self.cost_flags & 0x1f))
    }

    /// Adds the billed cost to `sum` ([`money::Sum::add`], the same sum or error naming
    /// `what`), from its mantissa as the row keeps it.
    #[inline]
    pub(crate) fn add_cost_to(&self, sum: &mut crate::money::Sum, what: &str) -> crate::Result<()> {
        let [low, mid, high] = self.cost.map(i128::from);
        let m = low | mid << 32 | high << 64;
        let m = if self.cost_flags >> 7 != 0 { -m } else { m };
        sum.add_mantissa((m, u32::from(self.cost_flags & 0x1f)), || self.billed_cost(), what)
    }

    /// The end of the time paid for, one second later where the row's platform is among
    /// `closing` (its bills end an hour at `hh:59:59`, meaning the next `hh:00:00`) and the
    /// end is one second before a half hour: [`crate::platforms::Platforms::closing`].
    pub fn end_closing(&self, closing: &[Sym]) -> Micros {
        let end = self.charge_end;
        let half_hour = 1_800_000_000;
        if closing.contains(&self.platform)
            && end > self.charge_start
            && end.0.rem_euclid(half_hour) == half_hour - 1_000_000
        {
            Micros(end.0 + 1_000_000)
        } else {
            end
        }
    }

    /// Whether the billed cost is more than zero: `billed_cost() > 0`, read from how the row
    /// keeps it (the rules ask it of every row).
    pub fn billed_positive(&self) -> bool {
        self.cost_flags >> 7 == 0 && self.cost != [0, 0, 0]
    }

    /// Sets the billed cost (see [`Row::billed_cost`]).
    pub fn set_billed_cost(&mut self, d: Decimal) {
        (self.cost, self.cost_flags) = packed(d);
    }

    /// Whether the row is spend (every kind but a payment).
    pub fn is_spend(&self) -> bool {
        self.kind != Kind::Payment
    }

    /// Makes the row's texts syms of `mine` instead of `theirs`.
    fn adopt(&mut self, mine: &mut Texts, theirs: &Texts, memo: &mut Vec<Option<Sym>>) {
        let mut adopt = |s: Sym| mine.adopt(theirs, s, memo);
        self.platform = adopt(self.platform);
        self.account = self.account.map(&mut adopt);
        self.resource_id = self.resource_id.map(&mut adopt);
        self.instance_id = self.instance_id.map(&mut adopt);
        self.gpu_model = self.gpu_model.map(&mut adopt);
        self.currency = adopt(self.currency);
    }
}

/// The place of a row [`Window::append_keeping`] leaves out, before it is taken out (a
/// window's places are below `u32::MAX`).
const LEFT_OUT: u32 = u32::MAX;

/// `id` as a window keeps it, two words (a `u128` would align its vector to 16 bytes).
fn id_words(id: ChargeId) -> [u64; 2] {
    [(id.0 >> 64) as u64, id.0 as u64]
}

/// What a window keeps beside the rows appended to it ([`Window::append_keeping`]): their
/// amounts, ids, origins and usage, one per row, or none for rows read without them.
#[derive(Debug, Default)]
pub struct Side {
    /// The rows' amounts.
    pub amounts: Vec<Amounts>,
    /// The rows' ids.
    pub ids: Vec<ChargeId>,
    /// Where the rows were read.
    pub origins: Vec<RowOrigin>,
    /// What the rows measured.
    pub usage: Vec<Usage>,
}

/// A window of charges: its rows, their texts, and unless the window was read without
/// them, their [`Amounts`] (the waste rules read none of the four: a window of ten million
/// rows is half a gigabyte smaller without them).
#[derive(Debug, Default, Clone)]
pub struct Window {
    /// The texts the rows name.
    pub texts: Texts,
    /// The rows, in order.
    pub rows: Vec<Row>,
    /// The rows' amounts, by [`Row::pos`]; empty when the window was read without them.
    amounts: Vec<Stored>,
    /// The amounts of the rows a [`Stored`] cannot hold.
    spilled: Vec<Amounts>,
    /// The rows' ids, as two words each, by [`Row::pos`] ([`Window::id`]); shorter than the
    /// rows, or empty, when some or all were read without them.
    ids: Vec<[u64; 2]>,
    /// The rows' items, by [`Row::pos`] ([`Window::origin`]); shorter, or empty, as the ids.
    items: Vec<Option<Sym>>,
    /// The rows' usage types, by [`Row::pos`], as the items.
    usage_types: Vec<Option<Sym>>,
    /// The rows' files (a sym's number, 0 for none) and lines, by [`Row::pos`]: of the rows
    /// read with them only.
    lines: Vec<[u64; 2]>,
    /// The rows' usage, by [`Row::pos`]: of the rows read with it only.
    usage: Vec<Usage>,
    /// What the rows left out of the window tell (nothing, unless it was read keeping only
    /// some: [`Window::append_keeping`]).
    pub left_out: LeftOut,
    /// Whether no two rows are the same charge (a ledger's window: the ledger keeps each
    /// charge once), so that a row's place stands for its charge.
    pub(crate) distinct_ids: bool,
    /// Where the files and lines of rows read without them are read when asked for
    /// ([`Window::lines_of`]; a subset of the window has none).
    pub(crate) elsewhere: Option<Arc<dyn Elsewhere>>,
}

impl Window {
    /// An empty window with room for `rows` rows (and their amounts, if `amounts`; their
    /// ids, if `ids`).
    ///
    /// The room for ids is zeroed memory the program has not touched: a row's id is written
    /// when a row with one is appended, so the ids of rows read without them (a store's
    /// look-back months, appended a part file at a time) take pages that are never touched,
    /// and so never take memory.
    pub fn with_capacity(rows: usize, amounts: bool, ids: bool) -> Window {
        Window {
            texts: Texts::default(),
            rows: Vec::with_capacity(rows),
            amounts: Vec::with_capacity(if amounts { rows } else { 0 }),
            spilled: Vec::new(),
            ids: if ids { vec![[0, 0]; rows] } else { Vec::new() },
            items: Vec::new(),
            usage_types: Vec::new(),
            lines: Vec::new(),
            usage: Vec::new(),
            left_out: LeftOut::default(),
            distinct_ids: false,
            elsewhere: None,
        }
    }

    /// Appends `rows`, whose texts are `texts`', their `amounts` (one per row, or none for a
    /// window read without them) and their `ids` (one per row, or none for rows read without
    /// them). A window holds at most `u32::MAX` rows.
    pub fn append(
        &mut self,
        rows: Vec<Row>,
        amounts: Vec<Amounts>,
        ids: Vec<ChargeId>,
        texts: &Texts,
    ) -> Result<(), String> {
        let side = Side { amounts, ids, ..Side::default() };
        self.append_keeping(rows, side, texts, &|_, _| true)
    }

    /// [`Window::append`] of the rows that pass `keep` (given each row and its amounts, if
    /// read); what the others tell is added to [`Window::left_out`].
    pub fn append_keeping(
        &mut self,
        rows: Vec<Row>,
        side: Side,
        texts: &Texts,
        keep: &dyn Fn(&Row, Option<&Amounts>) -> bool,
    ) -> Result<(), String> {
        self.append_kept(rows, side, texts, keep).map(drop)
    }

    /// [`Window::append_keeping`], telling which rows it kept: `None` if all, else their
    /// places among `rows`.
    pub(crate) fn append_kept(
        &mut self,
        rows: Vec<Row>,
        side: Side,
        texts: &Texts,
        keep: &dyn Fn(&Row, Option<&Amounts>) -> bool,
    ) -> Result<Option<Vec<u32>>, String> {
        if u32::try_from(self.rows.len() + rows.len()).is_err() {
            return Err(format!("a window of more than {} charges", u32::MAX));
        }
        // The rows are made the window's where they are (texts, places), in the order rows
        // were appended one at a time before (the texts' syms are numbered as they were),
        // then copied in at once.
        let mut memo = vec![None; texts.texts.len()];
        let mut amounts = side.amounts.into_iter();
        let mut ids = side.ids.into_iter();
        let mut origins = side.origins.into_iter();
        let mut usage = side.usage.into_iter();
        let (mut rows, mut pos, mut all) = (rows, self.rows.len(), true);
        for r in &mut rows {
            r.adopt(&mut self.texts, texts, &mut memo);
            let (a, id) = (amounts.next(), ids.next());
            let (origin, used) = (origins.next(), usage.next());
            if !keep(r, a.as_ref()) {
                self.left_out.add(r, &self.texts);
                (r.pos, all) = (LEFT_OUT, false);
                continue;
            }
            r.pos = pos as u32;
            pos += 1;
            if let Some(id) = id {
                self.keep_id(pos - 1, id);
            }
            if let Some(a) = a {
                self.keep(a);
            }
            let mine = &mut self.texts;
            let mut adopt = |s: Option<Sym>| s.map(|s| mine.adopt(texts, s, &mut memo));
            let origin = origin.map(|o| RowOrigin {
                file: adopt(o.file),
                item: adopt(o.item),
                usage_type: adopt(o.usage_type),
                ..o
            });
            let used = used.map(|u| Usage { unit: adopt(u.unit), service: adopt(u.service), ..u });
            if let Some(origin) = origin {
                self.keep_origin(pos - 1, origin);
            }
            if let Some(used) = used {
                self.keep_usage(pos - 1, used);
            }
        }
        let mut kept = None;
        if !all {
            let at = rows.iter().enumerate().filter(|(_, r)| r.pos != LEFT_OUT);
            kept = Some(at.map(|(i, _)| i as u32).collect());
            rows.retain(|r| r.pos != LEFT_OUT);
        }
        self.rows.extend_from_slice(&rows);
        Ok(kept)
    }

    /// Keeps `origin` as the origin of the row at `pos`.
    fn keep_origin(&mut self, pos: usize, origin: RowOrigin) {
        let room = self.rows.capacity();
        if origin.item.is_some() {
            put(&mut self.items, pos, origin.item, room);
        }
        if origin.usage_type.is_some() {
            put(&mut self.usage_types, pos, origin.usage_type, room);
        }
        if origin.file.is_some() || origin.line != 0 {
            let file = origin.file.map_or(0, |f| u64::from(f.0.get()));
            put(&mut self.lines, pos, [file, origin.line], room);
        }
    }

    /// Keeps `usage` as the usage of the row at `pos`.
    fn keep_usage(&mut self, pos: usize, usage: Usage) {
        if usage != Usage::default() {
            let room = self.rows.capacity();
            put(&mut self.usage, pos, usage, room);
        }
    }

    /// Where `row`, a row of this window, was read: as much of it as was read.
    pub fn origin(&self, row: &Row) -> RowOrigin {
        let pos = row.pos as usize;
        let [file, line] = self.lines.get(pos).copied().unwrap_or_default();
        let file = u32::try_from(file).ok().and_then(NonZeroU32::new).map(Sym);
        RowOrigin { file, line, item: self.item_sym(row), usage_type: self.usage_type_sym(row) }
    }

    /// [`Window::origin`]'s usage type alone.
    pub(crate) fn usage_type_sym(&self, row: &Row) -> Option<Sym> {
        self.usage_types.get(row.pos as usize).copied().flatten()
    }

    /// The bill's words for what `row`, a row of this window, used ("" for none).
    pub fn usage_type(&self, row: &Row) -> &str {
        self.texts.opt(self.usage_type_sym(row)).unwrap_or("")
    }

    /// [`Window::origin`]'s item alone, without reading the file and line.
    pub(crate) fn item_sym(&self, row: &Row) -> Option<Sym> {
        self.items.get(row.pos as usize).copied().flatten()
    }

    /// The bill's words for the item of `row`, a row of this window ("" for none).
    pub fn item(&self, row: &Row) -> &str {
        self.texts.opt(self.item_sym(row)).unwrap_or("")
    }

    /// What `row`, a row of this window, measured: none of it when read without it.
    pub fn usage(&self, row: &Row) -> Usage {
        self.usage.get(row.pos as usize).copied().unwrap_or_default()
    }

    /// Keeps `id` as the id of the row at `pos`.
    fn keep_id(&mut self, pos: usize, id: ChargeId) {
        if self.ids.len() <= pos {
            self.ids.resize(pos + 1, [0, 0]);
        }
        self.ids[pos] = id_words(id);
    }

    /// The id of `row`, a row of this window: 0 when it was read without it.
    pub fn id(&self, row: &Row) -> ChargeId {
        self.id_at(row.pos)
    }

    /// The id of the row appended at `place` (its `pos`), read without the row: [`Window::id`]
    /// of `rows[place]` while every row is still at that place, as a caller that checked so
    /// knows (see `waste::Context`).
    pub(crate) fn id_at(&self, place: u32) -> ChargeId {
        let [high, low] = self.ids.get(place as usize).copied().unwrap_or_default();
        ChargeId((u128::from(high) << 64) | u128::from(low))
    }

    /// Keeps `a` as the next row's amounts.
    fn keep(&mut self, a: Amounts) {
        if a.mantissas.iter().all(|m| m[2] == 0) {
            let low = a.mantissas.map(|m| [m[0], m[1]]);
            self.amounts.push(Stored { low, meta: a.meta });
        } else {
            let place = u32::try_from(self.spilled.len()).unwrap_or(u32::MAX);
            self.spilled.push(a);
            self.amounts.push(Stored { low: [[place, 0]; 4], meta: SPILLED });
        }
    }

    /// The amounts of `row`, a row of this window: none of them when the window was read
    /// without its amounts.
    pub fn amounts(&self, row: &Row) -> Amounts {
        match self.amounts.get(row.pos as usize) {
            None => Amounts::default(),
            Some(s) if s.meta & SPILLED != 0 => {
                self.spilled.get(s.low[0][0] as usize).copied().unwrap_or_default()
            }
            Some(s) => Amounts { mantissas: s.low.map(|[a, b]| [a, b, 0]), meta: s.meta },
        }
    }

    /// The rows that pass `keep`, with their texts and amounts, as a window of their own.
    pub fn subset(&self, keep: impl Fn(&Row) -> bool) -> Window {
        // Counted first: rows grown by doubling held the old copy and the new at once.
        let n = self.rows.iter().filter(|r| keep(r)).count();
        let mut out = Window::with_capacity(n, !self.amounts.is_empty(), false);
        out.texts = self.texts.clone();
        out.distinct_ids = self.distinct_ids;
        for r in self.rows.iter().filter(|r| keep(r)) {
            if !self.amounts.is_empty() {
                out.keep(self.amounts(r));
            }
            let pos = out.rows.len();
            if self.ids.get(r.pos as usize).is_some_and(|&id| id != [0, 0]) {
                out.keep_id(pos, self.id(r));
            }
            out.rows.push(Row { pos: pos as u32, ..*r });
            out.keep_origin(pos, self.origin(r));
            out.keep_usage(pos, self.usage(r));
        }
        out
    }
}

/// Sets `v[pos]` to `value`, the places before it that were never set to their default;
/// made room for `room` values at once the first time.
fn put<T: Copy + Default>(v: &mut Vec<T>, pos: usize, value: T, room: usize) {
    if v.len() == pos && v.capacity() > pos {
        v.push(value);
        return;
    }
    if v.len() <= pos {
        if v.capacity() == 0 {
            v.reserve_exact(room.max(pos + 1));
        }
        v.resize(pos + 1, T::default());
    }
    v[pos] = value;
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;

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
//! This module owns the row and its texts; it must not know where rows come from (the ledger
//! reads them from its columns, [`rows_of`] makes them from charges).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::num::NonZeroU32;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

use crate::charge::{Category, Charge, ChargeId, Kind, Pricing, YearMonth};

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

/// Where a row was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowOrigin {
    /// The source file, as the charge records it.
    pub file: Sym,
    /// Its line.
    pub line: u64,
    /// The bill's words for the item.
    pub item: Sym,
}

/// The four amounts a row may lack ([`Amounts::quantity`], [`Amounts::unit_price`],
/// [`Amounts::list_cost`], [`Amounts::balance_after`]), exactly, in 52 bytes where four
/// `Option<Decimal>` take 80: each amount's 96-bit mantissa, and in one word each one's
/// presence, sign and scale (7 bits each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Amounts {
    mantissas: [[u32; 3]; 4],
    meta: u32,
}

impl Amounts {
    /// Quantity, unit price, list cost and balance after, in that order.
    pub fn new(values: [Option<Decimal>; 4]) -> Self {
        let mut out = Amounts::default();
        for (i, value) in values.iter().enumerate() {
            let Some(d) = value else { continue };
            // Flags, then the mantissa's low, middle and high words, little-endian.
            let b = d.serialize();
            let word = |k: usize| u32::from_le_bytes([b[k], b[k + 1], b[k + 2], b[k + 3]]);
            out.mantissas[i] = [word(4), word(8), word(12)];
            let meta = 1 | (u32::from(d.is_sign_negative()) << 1) | (d.scale() << 2);
            out.meta |= meta << (7 * i);
        }
        out
    }

    /// Quantity billed.
    pub fn quantity(&self) -> Option<Decimal> {
        self.get(0)
    }

    /// Unit price.
    pub fn unit_price(&self) -> Option<Decimal> {
        self.get(1)
    }

    /// List cost.
    pub fn list_cost(&self) -> Option<Decimal> {
        self.get(2)
    }

    /// Balance after the row (prepaid platforms).
    pub fn balance_after(&self) -> Option<Decimal> {
        self.get(3)
    }

    fn get(&self, i: usize) -> Option<Decimal> {
        let meta = (self.meta >> (7 * i)) & 0x7f;
        if meta & 1 == 0 {
            return None;
        }
        // The bytes `Decimal::serialize` gave (a zero keeps its sign, as `from_parts` would not).
        let flags = ((meta >> 2) << 16) | (u32::from(meta & 2 != 0) << 31);
        let mut bytes = [0u8; 16];
        for (k, word) in [flags, self.mantissas[i][0], self.mantissas[i][1], self.mantissas[i][2]]
            .iter()
            .enumerate()
        {
            bytes[4 * k..4 * k + 4].copy_from_slice(&word.to_le_bytes());
        }
        Some(Decimal::deserialize(bytes))
    }
}

/// How a window keeps a row's [`Amounts`]: each mantissa's low 64 bits and the meta word,
/// 36 bytes where [`Amounts`] take 52. A row with a mantissa of more than 64 bits (a figure
/// of twenty digits or more) has its amounts in the window's spill list instead, its place
/// in the first word.
#[derive(Debug, Clone, Copy, Default)]
struct Stored {
    low: [[u32; 2]; 4],
    meta: u32,
}

/// The bit of [`Stored::meta`] (unused by [`Amounts::meta`]'s 28) marking a spilled row.
const SPILLED: u32 = 1 << 31;

/// A charge as the rules read it: the fields of [`Charge`] they use, its texts as [`Sym`]s
/// of its window's [`Texts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Stable identity, as two words (a `u128` would align the row to 16 bytes): see
    /// [`Row::id`].
    pub(crate) id: [u64; 2],
    /// Platform.
    pub platform: Sym,
    /// Billing account.
    pub account: Option<Sym>,
    /// Billing period.
    pub billing_period: YearMonth,
    /// Start of the time paid for (UTC, inclusive).
    pub charge_start: DateTime<Utc>,
    /// End of the time paid for (UTC, exclusive).
    pub charge_end: DateTime<Utc>,
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
    /// Number of GPUs.
    pub gpu_count: Option<u16>,
    /// Unit of the quantity.
    pub unit: Option<Sym>,
    /// The row's place in its window, where its [`Amounts`] are ([`Window::amounts`]).
    pub(crate) pos: u32,
    /// Billed cost.
    pub billed_cost: Decimal,
    /// Currency.
    pub currency: Sym,
    /// Where it was read.
    pub origin: RowOrigin,
}

impl Row {
    /// Stable identity.
    pub fn id(&self) -> ChargeId {
        ChargeId((u128::from(self.id[0]) << 64) | u128::from(self.id[1]))
    }

    /// `id` as the row keeps it.
    pub fn id_words(id: ChargeId) -> [u64; 2] {
        [(id.0 >> 64) as u64, id.0 as u64]
    }

    /// Whether the row is spend (every kind but a payment).
    pub fn is_spend(&self) -> bool {
        self.kind != Kind::Payment
    }

    /// The row with its texts as syms of `mine` instead of `theirs`.
    fn adopted(mut self, mine: &mut Texts, theirs: &Texts, memo: &mut Vec<Option<Sym>>) -> Row {
        let mut adopt = |s: Sym| mine.adopt(theirs, s, memo);
        self.platform = adopt(self.platform);
        self.account = self.account.map(&mut adopt);
        self.resource_id = self.resource_id.map(&mut adopt);
        self.instance_id = self.instance_id.map(&mut adopt);
        self.gpu_model = self.gpu_model.map(&mut adopt);
        self.unit = self.unit.map(&mut adopt);
        self.currency = adopt(self.currency);
        self.origin.file = adopt(self.origin.file);
        self.origin.item = adopt(self.origin.item);
        self
    }
}

/// What the rows a window left out (see [`Window::append_keeping`]) tell: per platform, the
/// time they cover; per platform and resource, when it was first charged.
#[derive(Debug, Default, Clone)]
pub struct LeftOut {
    /// Per platform: the earliest start and the latest end of its rows left out.
    pub spans: HashMap<Sym, (DateTime<Utc>, DateTime<Utc>)>,
    /// Per platform and resource (never an empty id): the earliest start of its rows left out.
    pub first_seen: HashMap<(Sym, Sym), DateTime<Utc>>,
    /// How many rows were left out.
    pub rows: u64,
}

impl LeftOut {
    /// Takes in what `r` tells (its texts `texts`'): what the waste context reads of every
    /// row it is given, as of those left out.
    pub fn add(&mut self, r: &Row, texts: &Texts) {
        let span = self.spans.entry(r.platform).or_insert((r.charge_start, r.charge_end));
        span.0 = span.0.min(r.charge_start);
        span.1 = span.1.max(r.charge_end);
        if let Some(resource) = r.resource_id.filter(|&s| !texts.get(s).is_empty()) {
            let seen = self.first_seen.entry((r.platform, resource)).or_insert(r.charge_start);
            *seen = (*seen).min(r.charge_start);
        }
        self.rows += 1;
    }

    /// Takes in what `other` tells, as if its rows were added.
    pub fn merge(&mut self, other: &LeftOut) {
        for (&platform, &(start, end)) in &other.spans {
            let span = self.spans.entry(platform).or_insert((start, end));
            *span = (span.0.min(start), span.1.max(end));
        }
        for (&key, &start) in &other.first_seen {
            let seen = self.first_seen.entry(key).or_insert(start);
            *seen = (*seen).min(start);
        }
        self.rows += other.rows;
    }
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
    /// What the rows left out of the window tell (nothing, unless it was read keeping only
    /// some: [`Window::append_keeping`]).
    pub left_out: LeftOut,
    /// Whether no two rows are the same charge (a ledger's window: the ledger keeps each
    /// charge once), so that a row's place stands for its charge.
    pub(crate) distinct_ids: bool,
}

impl Window {
    /// An empty window with room for `rows` rows (and their amounts, if `amounts`).
    pub fn with_capacity(rows: usize, amounts: bool) -> Window {
        Window {
            texts: Texts::default(),
            rows: Vec::with_capacity(rows),
            amounts: Vec::with_capacity(if amounts { rows } else { 0 }),
            spilled: Vec::new(),
            left_out: LeftOut::default(),
            distinct_ids: false,
        }
    }

    /// Appends `rows`, whose texts are `texts`', and their `amounts` (one per row, or none
    /// for a window read without them). A window holds at most `u32::MAX` rows.
    pub fn append(
        &mut self,
        rows: Vec<Row>,
        amounts: Vec<Amounts>,
        texts: &Texts,
    ) -> Result<(), String> {
        self.append_keeping(rows, amounts, texts, &|_, _| true)
    }

    /// [`Window::append`] of the rows that pass `keep` (given each row and its amounts, if
    /// read); what the others tell is added to [`Window::left_out`].
    pub fn append_keeping(
        &mut self,
        rows: Vec<Row>,
        amounts: Vec<Amounts>,
        texts: &Texts,
        keep: &dyn Fn(&Row, Option<&Amounts>) -> bool,
    ) -> Result<(), String> {
        if u32::try_from(self.rows.len() + rows.len()).is_err() {
            return Err(format!("a window of more than {} charges", u32::MAX));
        }
        let mut memo = Vec::new();
        let mut amounts = amounts.into_iter();
        for r in rows {
            let mut r = r.adopted(&mut self.texts, texts, &mut memo);
            let a = amounts.next();
            if !keep(&r, a.as_ref()) {
                self.left_out.add(&r, &self.texts);
                continue;
            }
            r.pos = self.rows.len() as u32;
            self.rows.push(r);
            if let Some(a) = a {
                self.keep(a);
            }
        }
        Ok(())
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
        let mut out = Window::with_capacity(n, !self.amounts.is_empty());
        out.texts = self.texts.clone();
        out.distinct_ids = self.distinct_ids;
        for r in self.rows.iter().filter(|r| keep(r)) {
            if !self.amounts.is_empty() {
                out.keep(self.amounts(r));
            }
            out.rows.push(Row { pos: out.rows.len() as u32, ..r.clone() });
        }
        out
    }
}

/// The window of `charges`, in order, with their amounts.
pub fn rows_of(charges: &[Charge]) -> Window {
    let mut texts = Texts::default();
    let mut rows: Vec<Row> = charges.iter().map(|c| row_of(c, &mut texts)).collect();
    for (i, r) in rows.iter_mut().enumerate() {
        r.pos = u32::try_from(i).unwrap_or(u32::MAX);
    }
    let mut window = Window { texts, rows, ..Window::default() };
    for c in charges {
        window.keep(amounts_of(c));
    }
    window
}

/// The amounts of one charge.
pub fn amounts_of(c: &Charge) -> Amounts {
    Amounts::new([c.quantity, c.unit_price, c.list_cost, c.balance_after])
}

/// The row of one charge, its texts among `texts` (its amounts are [`amounts_of`]; its place
/// in a window is set when the window takes it).
pub fn row_of(c: &Charge, texts: &mut Texts) -> Row {
    Row {
        id: Row::id_words(c.id),
        platform: texts.sym(&c.platform),
        account: texts.sym_opt(c.account.as_deref()),
        billing_period: c.billing_period,
        charge_start: c.charge_start,
        charge_end: c.charge_end,
        resource_id: texts.sym_opt(c.resource_id.as_deref()),
        instance_id: texts.sym_opt(c.instance_id.as_deref()),
        category: c.category,
        kind: c.kind,
        pricing: c.pricing,
        gpu_model: texts.sym_opt(c.gpu_model.as_deref()),
        gpu_count: c.gpu_count,
        unit: texts.sym_opt(c.unit.as_deref()),
        pos: 0,
        billed_cost: c.billed_cost,
        currency: texts.sym(&c.currency),
        origin: RowOrigin {
            file: texts.sym(&c.origin.file),
            line: c.origin.line,
            item: texts.sym(&c.origin.item),
        },
    }
}

/// The values of `groups` (keyed by syms, hashed cheaply) in the order of their keys' texts
/// by `texts_of`: what a `BTreeMap` keyed by the texts gives, without comparing texts for
/// every row put in a group.
pub fn in_text_order<K, V, O: Ord>(
    groups: HashMap<K, V>,
    texts_of: impl Fn(&K) -> O,
) -> Vec<(K, V)> {
    let mut groups: Vec<(K, V)> = groups.into_iter().collect();
    groups.sort_unstable_by_key(|g| texts_of(&g.0));
    groups
}

/// [`crate::link_to_instances`] for a window: a row with no instance whose resource is the
/// instance of a compute row of the same platform and account belongs to it.
pub fn link_rows(rows: &mut [Row]) -> usize {
    let instances: HashSet<(Sym, Option<Sym>, Sym)> = rows
        .iter()
        .filter(|r| r.category == Category::Compute)
        .filter_map(|r| Some((r.platform, r.account, r.instance_id?)))
        .collect();
    if instances.is_empty() {
        return 0;
    }
    let mut linked = 0;
    for r in rows.iter_mut().filter(|r| r.instance_id.is_none()) {
        let Some(resource) = r.resource_id else { continue };
        if instances.contains(&(r.platform, r.account, resource)) {
            r.instance_id = Some(resource);
            linked += 1;
        }
    }
    linked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_keep_every_decimal_exactly_and_their_absence() {
        let values = [
            Decimal::MAX,
            Decimal::MIN,
            Decimal::ZERO,
            -Decimal::ZERO,
            Decimal::new(-1, 28),
            Decimal::new(123_456_789_012_345, 12),
            Decimal::new(-99_999_999_999_999_999, 2),
            Decimal::new(24, 1),
            Decimal::new(1980, 3),
        ];
        for (i, &a) in values.iter().enumerate() {
            let b = values[(i + 3) % values.len()];
            let all = [Some(a), None, Some(b), Some(a)];
            let packed = Amounts::new(all);
            for (k, want) in all.iter().enumerate() {
                let got = packed.get(k);
                assert_eq!(got, *want, "{a} {b} at {k}");
                // The same digits and scale, not only an equal value.
                assert_eq!(got.map(|d| d.to_string()), want.map(|d| d.to_string()));
            }
        }
        assert_eq!(Amounts::new([None; 4]).get(3), None);
        let id = ChargeId(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
        let row =
            Row { id: Row::id_words(id), ..row_of(&crate::Charge::blank(), &mut Texts::default()) };
        assert_eq!(row.id(), id);
    }

    #[test]
    fn a_window_keeps_its_rows_amounts_exactly_those_of_twenty_digits_too() {
        let big = Decimal::from_i128_with_scale(123_456_789_012_345_678_901_234, 12);
        let all = [
            [Some(Decimal::new(24, 1)), Some(Decimal::new(-5, 3)), None, Some(Decimal::ZERO)],
            [Some(Decimal::MAX), None, Some(big), Some(Decimal::MIN)],
            [None; 4],
            [Some(Decimal::new(i64::MAX, 12)), Some(-Decimal::ZERO), Some(big), None],
        ];
        let mut texts = Texts::default();
        let rows: Vec<Row> =
            all.iter().map(|_| row_of(&crate::Charge::blank(), &mut texts)).collect();
        let mut window = Window::with_capacity(rows.len(), true);
        window.append(rows, all.iter().map(|a| Amounts::new(*a)).collect(), &texts).unwrap();
        assert_eq!(window.spilled.len(), 2, "the rows of twenty-digit figures are spilled");
        let read = |w: &Window| -> Vec<[Option<String>; 4]> {
            w.rows
                .iter()
                .map(|r| {
                    let a = w.amounts(r);
                    [a.quantity(), a.unit_price(), a.list_cost(), a.balance_after()]
                        .map(|d| d.map(|d| format!("{d} {}", d.is_sign_negative())))
                })
                .collect()
        };
        let want: Vec<[Option<String>; 4]> = all
            .iter()
            .map(|a| a.map(|d| d.map(|d| format!("{d} {}", d.is_sign_negative()))))
            .collect();
        assert_eq!(read(&window), want);
        // A subset renumbers its rows and keeps their amounts, spilled or not.
        let odd = window.subset(|r| r.pos % 2 == 1);
        assert_eq!(read(&odd), vec![want[1].clone(), want[3].clone()]);
    }

    #[test]
    fn equal_texts_are_one_sym_and_a_window_adopts_another_s_texts() {
        let mut texts = Texts::default();
        let (a, b, c) = (texts.sym("vm-1"), texts.sym("disk-1"), texts.sym("vm-1"));
        assert_eq!(a, c);
        assert_ne!(a, b);
        assert_eq!((texts.get(a), texts.get(b)), ("vm-1", "disk-1"));
        assert_eq!(std::mem::size_of::<Option<Sym>>(), 4);
        // A window of ten million rows holds 1.2 GB of rows: no field grows it unnoticed.
        assert_eq!(std::mem::size_of::<Row>(), 120);

        let mut other = Texts::default();
        other.sym("disk-1");
        let mut window = Window { texts: other, ..Window::default() };
        let charge = crate::Charge { platform: "p".into(), ..crate::Charge::blank() };
        let row = row_of(&charge, &mut texts);
        window.append(vec![row], Vec::new(), &texts).unwrap();
        assert_eq!(window.texts.get(window.rows[0].platform), "p");
    }
}

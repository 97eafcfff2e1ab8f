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

/// A charge as the rules read it: the fields of [`Charge`] they use, its texts as [`Sym`]s
/// of its window's [`Texts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Stable identity.
    pub id: ChargeId,
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
    /// Quantity billed.
    pub quantity: Option<Decimal>,
    /// Unit of the quantity.
    pub unit: Option<Sym>,
    /// Unit price.
    pub unit_price: Option<Decimal>,
    /// List cost.
    pub list_cost: Option<Decimal>,
    /// Billed cost.
    pub billed_cost: Decimal,
    /// Currency.
    pub currency: Sym,
    /// Balance after the row (prepaid platforms).
    pub balance_after: Option<Decimal>,
    /// Where it was read.
    pub origin: RowOrigin,
}

impl Row {
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

/// A window of charges: its rows and their texts.
#[derive(Debug, Default, Clone)]
pub struct Window {
    /// The texts the rows name.
    pub texts: Texts,
    /// The rows, in order.
    pub rows: Vec<Row>,
}

impl Window {
    /// An empty window with room for `rows` rows.
    pub fn with_capacity(rows: usize) -> Window {
        Window { texts: Texts::default(), rows: Vec::with_capacity(rows) }
    }

    /// Appends `rows`, whose texts are `texts`'.
    pub fn append(&mut self, rows: Vec<Row>, texts: &Texts) {
        let mut memo = Vec::new();
        self.rows.extend(rows.into_iter().map(|r| r.adopted(&mut self.texts, texts, &mut memo)));
    }
}

/// The window of `charges`, in order.
pub fn rows_of(charges: &[Charge]) -> Window {
    let mut texts = Texts::default();
    let rows = charges.iter().map(|c| row_of(c, &mut texts)).collect();
    Window { texts, rows }
}

/// The row of one charge, its texts among `texts`.
pub fn row_of(c: &Charge, texts: &mut Texts) -> Row {
    Row {
        id: c.id,
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
        quantity: c.quantity,
        unit: texts.sym_opt(c.unit.as_deref()),
        unit_price: c.unit_price,
        list_cost: c.list_cost,
        billed_cost: c.billed_cost,
        currency: texts.sym(&c.currency),
        balance_after: c.balance_after,
        origin: RowOrigin {
            file: texts.sym(&c.origin.file),
            line: c.origin.line,
            item: texts.sym(&c.origin.item),
        },
    }
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
    fn equal_texts_are_one_sym_and_a_window_adopts_another_s_texts() {
        let mut texts = Texts::default();
        let (a, b, c) = (texts.sym("vm-1"), texts.sym("disk-1"), texts.sym("vm-1"));
        assert_eq!(a, c);
        assert_ne!(a, b);
        assert_eq!((texts.get(a), texts.get(b)), ("vm-1", "disk-1"));
        assert_eq!(std::mem::size_of::<Option<Sym>>(), 4);
        // A window of ten million rows holds 1.9 GB of rows: no field grows it unnoticed.
        assert_eq!(std::mem::size_of::<Row>(), 192);

        let mut other = Texts::default();
        other.sym("disk-1");
        let mut window = Window { texts: other, ..Window::default() };
        let charge = crate::Charge { platform: "p".into(), ..crate::Charge::blank() };
        let row = row_of(&charge, &mut texts);
        window.append(vec![row], &texts);
        assert_eq!(window.texts.get(window.rows[0].platform), "p");
    }
}

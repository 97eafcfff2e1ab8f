//! The charges the rules read, compactly: [`Row`]s, whose texts are shared.
//!
//! A window of charges (a month and its look-back) is read by the waste rules and the
//! reconciliation checks. As [`Charge`]s each charge holds eleven texts of its own, most of
//! them the same as the row before's (platform, currency, file, account, the resource's ids
//! hourly); a window of ten million charges took 7 GB, and clearing the memory took half the
//! time of an audit. A [`Row`] holds the same facts the rules use, each text an [`Arc<str>`]
//! shared by every row that has it ([`Interner`]), and leaves out what no rule reads (the
//! resource's name, the region, the unit, the GPU count).
//!
//! This module owns the row and its texts; it must not know where rows come from (the ledger
//! reads them from its columns, [`rows_of`] makes them from charges).

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

use crate::charge::{Category, Charge, ChargeId, Kind, Pricing, YearMonth};

/// A shared text.
pub type Text = Arc<str>;

/// Where a row was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowOrigin {
    /// The source file, as the charge records it.
    pub file: Text,
    /// Its line.
    pub line: u64,
    /// The bill's words for the item.
    pub item: Text,
}

/// A charge as the rules read it (the fields of [`Charge`] they use, texts shared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Stable identity.
    pub id: ChargeId,
    /// Platform.
    pub platform: Text,
    /// Billing account.
    pub account: Option<Text>,
    /// Billing period.
    pub billing_period: YearMonth,
    /// Start of the time paid for (UTC, inclusive).
    pub charge_start: DateTime<Utc>,
    /// End of the time paid for (UTC, exclusive).
    pub charge_end: DateTime<Utc>,
    /// The resource charged.
    pub resource_id: Option<Text>,
    /// The instance it belongs to.
    pub instance_id: Option<Text>,
    /// Category.
    pub category: Category,
    /// Kind.
    pub kind: Kind,
    /// Pricing.
    pub pricing: Pricing,
    /// GPU model.
    pub gpu_model: Option<Text>,
    /// Quantity billed.
    pub quantity: Option<Decimal>,
    /// Unit price.
    pub unit_price: Option<Decimal>,
    /// List cost.
    pub list_cost: Option<Decimal>,
    /// Billed cost.
    pub billed_cost: Decimal,
    /// Currency.
    pub currency: Text,
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
}

/// Shares texts: each distinct text is kept once, and a text equal to the last one asked for
/// is found without hashing (columns repeat their values row after row).
#[derive(Debug, Default)]
pub struct Interner {
    texts: HashSet<Text>,
    last: Option<Text>,
}

impl Interner {
    /// The shared copy of `text`.
    pub fn text(&mut self, text: &str) -> Text {
        if let Some(last) = &self.last
            && **last == *text
        {
            return last.clone();
        }
        let shared = match self.texts.get(text) {
            Some(t) => t.clone(),
            None => {
                let t: Text = text.into();
                self.texts.insert(t.clone());
                t
            }
        };
        self.last = Some(shared.clone());
        shared
    }

    /// [`Interner::text`] of a text that may be absent.
    pub fn opt(&mut self, text: Option<&str>) -> Option<Text> {
        text.map(|t| self.text(t))
    }
}

/// The rows of `charges`, texts shared, in order.
pub fn rows_of(charges: &[Charge]) -> Vec<Row> {
    let mut texts = Interner::default();
    charges.iter().map(|c| row_of(c, &mut texts)).collect()
}

/// The row of one charge.
pub fn row_of(c: &Charge, texts: &mut Interner) -> Row {
    Row {
        id: c.id,
        platform: texts.text(&c.platform),
        account: texts.opt(c.account.as_deref()),
        billing_period: c.billing_period,
        charge_start: c.charge_start,
        charge_end: c.charge_end,
        resource_id: texts.opt(c.resource_id.as_deref()),
        instance_id: texts.opt(c.instance_id.as_deref()),
        category: c.category,
        kind: c.kind,
        pricing: c.pricing,
        gpu_model: texts.opt(c.gpu_model.as_deref()),
        quantity: c.quantity,
        unit_price: c.unit_price,
        list_cost: c.list_cost,
        billed_cost: c.billed_cost,
        currency: texts.text(&c.currency),
        balance_after: c.balance_after,
        origin: RowOrigin {
            file: texts.text(&c.origin.file),
            line: c.origin.line,
            item: texts.text(&c.origin.item),
        },
    }
}

/// [`crate::link_to_instances`] for rows: a row with no instance whose resource is the
/// instance of a compute row of the same platform and account belongs to it.
pub fn link_rows(rows: &mut [Row]) -> usize {
    let instances: HashSet<(Text, Option<Text>, Text)> = rows
        .iter()
        .filter(|r| r.category == Category::Compute)
        .filter_map(|r| Some((r.platform.clone(), r.account.clone(), r.instance_id.clone()?)))
        .collect();
    if instances.is_empty() {
        return 0;
    }
    let mut linked = 0;
    for r in rows.iter_mut().filter(|r| r.instance_id.is_none()) {
        let Some(resource) = &r.resource_id else { continue };
        if instances.contains(&(r.platform.clone(), r.account.clone(), resource.clone())) {
            r.instance_id = Some(resource.clone());
            linked += 1;
        }
    }
    linked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_are_one_copy() {
        let mut texts = Interner::default();
        let a = texts.text("vm-1");
        let b = texts.text("disk-1");
        let c = texts.text("vm-1");
        assert!(Arc::ptr_eq(&a, &c));
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(&*c, "vm-1");
    }
}

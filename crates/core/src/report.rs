//! Reports over charges: spend summaries grouped by platform, category, instance, month.
//!
//! Decisions: payments (top-ups) are never spend and are left out; currencies are never added
//! together (currency is always part of the group); `list_cost` sums each charge's list cost,
//! or its billed cost where the bill gives none (no known discount). Rows are ordered by
//! billed cost, largest first, then by their keys. This module knows nothing of files or
//! storage, and prints nothing.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;

use crate::charge::Charge;

/// A dimension a summary can be grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupKey {
    /// The platform (profile name).
    Platform,
    /// The category (compute, data_disk …).
    Category,
    /// The instance a charge belongs to (empty when unlinked).
    Instance,
    /// The billing month.
    Month,
    /// The billing account (empty when the bill names none).
    Account,
    /// The sub account: an AWS linked account, an Azure subscription, a GCP project, an OCI
    /// compartment (empty when the bill names none).
    SubAccount,
}

impl GroupKey {
    /// Every key, in the order `--by` documents them.
    pub const ALL: &'static [GroupKey] = &[
        GroupKey::Platform,
        GroupKey::Category,
        GroupKey::Instance,
        GroupKey::Month,
        GroupKey::Account,
        GroupKey::SubAccount,
    ];

    /// The key's name, as used by `--by` and as a column header.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupKey::Platform => "platform",
            GroupKey::Category => "category",
            GroupKey::Instance => "instance",
            GroupKey::Month => "month",
            GroupKey::Account => "account",
            GroupKey::SubAccount => "sub_account",
        }
    }

    fn value(self, c: &Charge) -> Option<String> {
        match self {
            GroupKey::Platform => Some(c.platform.clone()),
            GroupKey::Category => Some(c.category.as_str().to_owned()),
            GroupKey::Instance => c.instance_id.clone(),
            GroupKey::Month => Some(c.billing_period.to_string()),
            GroupKey::Account => c.account.clone(),
            GroupKey::SubAccount => c.sub_account.clone(),
        }
    }
}

impl fmt::Display for GroupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for GroupKey {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        GroupKey::ALL.iter().copied().find(|k| k.as_str() == s.trim()).ok_or_else(|| {
            format!("{s:?} is not a summary key (expected platform, category, instance, month, account or sub_account)")
        })
    }
}

/// One group of a summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryRow {
    /// The group's value for each key asked for, in order (`None`: the charges have none).
    pub keys: Vec<Option<String>>,
    /// Currency of the money columns.
    pub currency: String,
    /// Sum of billed cost.
    pub billed_cost: Decimal,
    /// Sum of list cost (billed cost where the bill gives no list cost).
    pub list_cost: Decimal,
    /// Number of charges.
    pub charges: u64,
}

use crate::money;

/// Sums the spend of `charges` by `keys` (and currency). Exact: no rounding happens here; a
/// total that would not fit exactly is an [`crate::ErrorKind::Overflow`].
pub fn summarize<'a>(
    charges: impl IntoIterator<Item = &'a Charge>,
    keys: &[GroupKey],
) -> crate::Result<Vec<SummaryRow>> {
    type Group = (Vec<Option<String>>, String);
    let mut groups: BTreeMap<Group, (Decimal, Decimal, u64)> = BTreeMap::new();
    for c in charges.into_iter().filter(|c| c.is_spend()) {
        let key = (keys.iter().map(|k| k.value(c)).collect(), c.currency.clone());
        let entry = groups.entry(key).or_default();
        entry.0 = money::add(entry.0, c.billed_cost, "the summary's billed cost")?;
        entry.1 =
            money::add(entry.1, c.list_cost.unwrap_or(c.billed_cost), "the summary's list cost")?;
        entry.2 += 1;
    }
    let rows: Vec<SummaryRow> = groups
        .into_iter()
        .map(|((keys, currency), (billed, list, n))| SummaryRow {
            keys,
            currency,
            billed_cost: billed,
            list_cost: list,
            charges: n,
        })
        .collect();
    Ok(sorted(rows))
}

/// Summary rows in the order a summary prints them: largest billed cost first, then by keys
/// and currency.
pub(crate) fn sorted(mut rows: Vec<SummaryRow>) -> Vec<SummaryRow> {
    rows.sort_by(|a, b| {
        b.billed_cost
            .cmp(&a.billed_cost)
            .then_with(|| a.keys.cmp(&b.keys))
            .then_with(|| a.currency.cmp(&b.currency))
    });
    rows
}

/// A span of time as people write it, rounded to the minute: `5 h`, `2 d 4 h`, `1 h 30 min`,
/// `45 min`, `0 h`. `hours` is exact (a discrepancy's measure); tables show this, CSV and
/// JSON keep the exact figure.
pub fn duration_text(hours: Decimal) -> String {
    let minutes = (hours * Decimal::from(60))
        .round_dp_with_strategy(0, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
    let Ok(minutes) = i64::try_from(minutes) else { return format!("{} h", hours.normalize()) };
    let sign = if minutes < 0 { "-" } else { "" };
    let m = minutes.unsigned_abs();
    let (days, hours, mins) = (m / 1440, m / 60 % 24, m % 60);
    let mut parts = Vec::new();
    if days > 0 {
        parts.push(format!("{days} d"));
    }
    if hours > 0 || (days == 0 && mins == 0) {
        parts.push(format!("{hours} h"));
    }
    if mins > 0 {
        parts.push(format!("{mins} min"));
    }
    format!("{sign}{}", parts.join(" "))
}

/// Money as printed: every significant digit, at least two decimals, no separators
/// (`12.5` → `12.50`, `0.0004` → `0.0004`, `3.500000000000` → `3.50`).
pub fn money_text(d: Decimal) -> String {
    let mut n = d.normalize();
    if n.scale() < 2 {
        n.rescale(2);
    }
    n.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn money_text_keeps_sub_cent_digits_and_pads_to_cents() {
        assert_eq!(money_text(dec!(12.5)), "12.50");
        assert_eq!(money_text(dec!(0.0004)), "0.0004");
        assert_eq!(money_text(dec!(3.500000000000)), "3.50");
        assert_eq!(money_text(dec!(-7)), "-7.00");
        assert_eq!(money_text(dec!(1234567.891)), "1234567.891");
    }

    #[test]
    fn durations_read_as_people_write_them() {
        let days = |d: Decimal| duration_text(d * Decimal::from(24));
        assert_eq!(days(dec!(0.2083333333333333333333333333)), "5 h");
        assert_eq!(duration_text(dec!(52)), "2 d 4 h");
        assert_eq!(duration_text(dec!(1.5)), "1 h 30 min");
        assert_eq!(duration_text(dec!(0.75)), "45 min");
        assert_eq!(duration_text(Decimal::ZERO), "0 h");
        assert_eq!(duration_text(dec!(-5)), "-5 h");
        assert_eq!(duration_text(dec!(48)), "2 d");
    }

    #[test]
    fn group_keys_parse_by_name() {
        assert_eq!("month".parse::<GroupKey>(), Ok(GroupKey::Month));
        assert!("gpu".parse::<GroupKey>().is_err());
    }
}

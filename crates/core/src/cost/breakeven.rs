//! The commitment break-even: for each GPU model on a platform with an on-demand price per
//! instance-hour (the card's, else what its on-demand compute cost per instance-hour in the
//! ledger's window) and a plan price (the card's, else the lowest the ledger shows bought for the
//! model: W005's), the hours a month (or a week) above which the plan is cheaper,
//! and each instance's hours of the month against it. This is the report behind W005, shown
//! for every instance, not only those over.

use rust_decimal::Decimal;

use super::compare::Basis;
use super::rates::Rates;
use super::{CostLine, hours};
use crate::error::Result;
use crate::money;

/// An instance's hours against a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakevenInstance {
    /// The instance.
    pub instance: String,
    /// Its compute hours in the month.
    pub hours: Decimal,
    /// Those hours at the on-demand price.
    pub on_demand: Decimal,
    /// Whether the monthly plan would have been cheaper.
    pub plan_wins: bool,
}

/// The hours above which a plan beats on-demand, for one GPU model on one platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breakeven {
    /// Platform.
    pub platform: String,
    /// GPU model.
    pub gpu_model: String,
    /// Currency.
    pub currency: String,
    /// On-demand price per instance-hour.
    pub hourly: Decimal,
    /// Where it comes from.
    pub hourly_basis: Basis,
    /// Monthly plan price.
    pub monthly: Option<Decimal>,
    /// Weekly plan price.
    pub weekly: Option<Decimal>,
    /// Where the plan prices come from (the card's, else the lowest bought in the ledger).
    pub plan_basis: Basis,
    /// Hours a month above which the monthly plan wins.
    pub monthly_hours: Option<Decimal>,
    /// Hours a week above which the weekly plan wins.
    pub weekly_hours: Option<Decimal>,
    /// The instances of the model on the platform in the month.
    pub instances: Vec<BreakevenInstance>,
}

/// The break-even of each GPU model with an on-demand price and a plan price (module docs).
pub(crate) fn breakeven(instances: &[CostLine], rates: &Rates) -> Result<Vec<Breakeven>> {
    let what = "a break-even";
    let mut out = Vec::new();
    let keys: std::collections::BTreeSet<&(String, String, String)> =
        rates.card_gpu.keys().chain(rates.plans.keys()).collect();
    for key in keys {
        let (platform, model, currency) = key;
        let card = rates.card_gpu.get(key);
        let seen = rates.plans.get(key).copied().unwrap_or_default();
        let pick = |card: Option<Decimal>, seen: Option<Decimal>| match (card, seen) {
            (Some(c), _) => Some((c, Basis::Card)),
            (None, Some(s)) => Some((s, Basis::Ledger)),
            (None, None) => None,
        };
        let monthly = pick(card.and_then(|c| c.monthly), seen.0);
        let weekly = pick(card.and_then(|c| c.weekly), seen.1);
        if monthly.is_none() && weekly.is_none() {
            continue;
        }
        let (hourly, basis) = match (card.and_then(|c| c.hourly), rates.on_demand.get(key)) {
            (Some(h), _) => (h, Basis::Card),
            (None, Some(&(paid, hours))) if !hours.is_zero() => {
                (money::div(paid, hours, what)?, Basis::Ledger)
            }
            _ => continue,
        };
        let (monthly, plan_basis) =
            (monthly.map(|m| m.0), monthly.or(weekly).map_or(Basis::Card, |p| p.1));
        let weekly = weekly.map(|w| w.0);
        if hourly <= Decimal::ZERO {
            continue;
        }
        let hours_for =
            |plan: Option<Decimal>| plan.map(|p| money::div(p, hourly, what)).transpose();
        let (monthly_hours, weekly_hours) = (hours_for(monthly)?, hours_for(weekly)?);
        let mut list = Vec::new();
        for line in instances.iter().filter(|l| {
            l.attached
                && l.platform.as_deref() == Some(platform)
                && l.gpu_model.as_deref() == Some(model)
                && l.currency == *currency
                && l.usage.compute_seconds > 0
        }) {
            let h = hours(line.usage.compute_seconds);
            list.push(BreakevenInstance {
                instance: line.instance.clone().unwrap_or_default(),
                hours: h,
                on_demand: money::mul(h, hourly, what)?,
                plan_wins: monthly_hours.is_some_and(|b| h > b),
            });
        }
        list.sort_by(|a, b| b.hours.cmp(&a.hours).then_with(|| a.instance.cmp(&b.instance)));
        out.push(Breakeven {
            platform: platform.clone(),
            gpu_model: model.clone(),
            currency: currency.clone(),
            hourly,
            hourly_basis: basis,
            monthly,
            weekly,
            plan_basis,
            monthly_hours,
            weekly_hours,
            instances: list,
        });
    }
    Ok(out)
}

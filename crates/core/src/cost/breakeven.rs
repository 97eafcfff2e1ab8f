//! The commitment break-even: for each GPU model on a platform with an on-demand price per
//! instance-hour (the card's, else the ledger's per GPU-hour times the card's GPUs) and a
//! plan price (the card's), the hours a month (or a week) above which the plan is cheaper,
//! and each instance's hours of the month against it. This is the report behind W005, shown
//! for every instance, not only those over.

use rust_decimal::Decimal;

use super::compare::{Basis, Rates};
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
    /// Monthly plan price (card).
    pub monthly: Option<Decimal>,
    /// Weekly plan price (card).
    pub weekly: Option<Decimal>,
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
    for ((platform, model, currency), card) in &rates.card_gpu {
        if card.monthly.is_none() && card.weekly.is_none() {
            continue;
        }
        let key = (platform.clone(), model.clone(), currency.clone());
        let (hourly, basis) = match (card.hourly, rates.gpu_rate(Basis::Ledger, &key)?) {
            (Some(h), _) => (h, Basis::Card),
            (None, Some((per_gpu_hour, _))) => {
                (money::mul(per_gpu_hour, Decimal::from(card.gpus), what)?, Basis::Ledger)
            }
            (None, None) => continue,
        };
        if hourly <= Decimal::ZERO {
            continue;
        }
        let hours_for =
            |plan: Option<Decimal>| plan.map(|p| money::div(p, hourly, what)).transpose();
        let (monthly_hours, weekly_hours) = (hours_for(card.monthly)?, hours_for(card.weekly)?);
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
            monthly: card.monthly,
            weekly: card.weekly,
            monthly_hours,
            weekly_hours,
            instances: list,
        });
    }
    Ok(out)
}

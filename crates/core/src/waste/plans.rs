//! W005: on-demand compute that cost more in the month than a weekly or monthly plan.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::rules::{Drafts, share_of};
use super::{Context, Finding, Rule};
use crate::charge::{Category, Kind, Pricing};
use crate::error::Result;
use crate::money;
use crate::report::money_text;
use crate::slots::SlotMap;
use crate::window::{Row, Sym, in_text_order};

/// W005: on-demand compute that cost more in the month than a weekly or monthly plan.
///
/// The plan prices are the rate card's, else the lowest seen in the ledger for the same
/// platform, GPU model and currency: a subscription purchase of compute whose length is its
/// span (a day or more) or the plan its item names (包周/weekly 7 days, 包月/monthly 30,
/// 包年/yearly 365), pro-rated to 30 days
/// (plans of 28 days or more) or 7 days (shorter ones). GPU counts are not compared.
pub struct OnDemandOverSubscription;

/// Plan prices seen in the ledger, per (platform, GPU model, currency): the lowest monthly
/// (30-day) and weekly (7-day) price.
type SeenPlans = BTreeMap<(String, String, String), (Option<Decimal>, Option<Decimal>)>;

impl OnDemandOverSubscription {
    /// The plan prices seen in the ledger (see the rule's docs).
    fn seen_plans(ctx: &Context<'_>) -> Result<SeenPlans> {
        let mut seen = SeenPlans::new();
        for c in ctx.charges {
            let plan = c.category == Category::Compute
                && c.kind == Kind::Purchase
                && c.pricing == Pricing::Subscription
                && c.billed_positive();
            let Some(days) = plan.then(|| plan_days(ctx, c)).flatten() else { continue };
            let Some(gpu) = model(ctx, c) else { continue };
            let entry = seen
                .entry((ctx.text(c.platform).to_owned(), gpu, ctx.text(c.currency).to_owned()))
                .or_default();
            let (slot, per) = if days >= 28 { (&mut entry.0, 30) } else { (&mut entry.1, 7) };
            let price = share_of(c.billed_cost(), Decimal::from(per), Decimal::from(days))
                .map_err(|e| ctx.of_charge(&OnDemandOverSubscription, c, e))?;
            *slot = Some(slot.map_or(price, |p: Decimal| p.min(price)));
        }
        Ok(seen)
    }

    /// The plan prices (monthly, weekly) for a GPU model on a platform, in a currency: the rate
    /// card's, else the lowest seen in the ledger for that length.
    fn plans(
        ctx: &Context<'_>,
        seen: &SeenPlans,
        (platform, gpu, currency): (&str, &str, &str),
    ) -> (Option<Decimal>, Option<Decimal>) {
        let card = ctx.config.rates.iter().find(|r| r.platform == platform && r.gpu_model == gpu);
        let key = (platform.to_owned(), gpu.to_owned(), currency.to_owned());
        let (seen_monthly, seen_weekly) = seen.get(&key).copied().unwrap_or_default();
        (card.and_then(|r| r.monthly).or(seen_monthly), card.and_then(|r| r.weekly).or(seen_weekly))
    }
}

/// The length in days of the plan a subscription purchase bought: its span when the bill
/// gives one of a day or more, else the plan its item names (包周/weekly 7, 包月/monthly 30,
/// 包年/yearly 365 days; 包日 and unnamed plans are not compared).
fn plan_days(ctx: &Context<'_>, c: &Row) -> Option<i64> {
    let secs = (c.charge_end - c.charge_start).num_seconds();
    if secs >= 86_400 {
        return Some(secs / 86_400);
    }
    let item = ctx.window().item(c).to_ascii_lowercase();
    [("包年", 365), ("yearly", 365), ("包月", 30), ("monthly", 30), ("包周", 7), ("weekly", 7)]
        .iter()
        .find(|(word, _)| item.contains(word))
        .map(|&(_, days)| days)
}

fn model(ctx: &Context<'_>, c: &Row) -> Option<String> {
    ctx.opt(c.gpu_model).map(str::to_owned).or_else(|| {
        ctx.opt(c.instance_id)
            .and_then(|i| ctx.config.gpu_model_of(ctx.text(c.platform), i))
            .map(str::to_owned)
    })
}

impl Rule for OnDemandOverSubscription {
    fn code(&self) -> &'static str {
        "W005"
    }
    fn name(&self) -> &'static str {
        "on-demand-over-subscription"
    }
    /// Every charge of the month, and each on-demand instance's charges and plans: on a
    /// month of millions of charges it took about two fifths of the time of `traffic-heavy`
    /// and two thirds of `unattached-storage`'s; started last, it held the audit up alone.
    fn weight(&self) -> u32 {
        2
    }
    fn check(&self, ctx: &Context<'_>) -> Result<Vec<Finding>> {
        let mut by_instance: SlotMap<(Sym, Sym, Sym), Vec<&Row>> = SlotMap::default();
        for c in ctx.in_month() {
            let on_demand = c.category == Category::Compute
                && c.kind == Kind::Usage
                && c.pricing == Pricing::OnDemand
                && c.billed_positive();
            if let (true, Some(i)) = (on_demand, c.instance_id) {
                by_instance.entry((c.platform, i, c.currency), Vec::new).push(c);
            }
        }
        let mut findings = Vec::new();
        let seen = Self::seen_plans(ctx)?;
        let texts = |k: &(Sym, Sym, Sym)| (ctx.text(k.0), ctx.text(k.1), ctx.text(k.2));
        for (key, charges) in in_text_order(by_instance.into_values(), texts) {
            let (platform, instance, currency) = texts(&key);
            // `model` of the first charge that has one: the instance's note is the same for
            // each, so it is looked up once (the notes are a list; a month holds millions of
            // compute rows).
            let note = ctx.config.gpu_model_of(platform, instance);
            let gpu = charges.iter().find_map(|c| ctx.opt(c.gpu_model).or(note));
            let Some(gpu) = gpu.map(str::to_owned) else { continue };
            let (monthly, weekly) = Self::plans(ctx, &seen, (platform, &gpu, currency));
            let start = charges.iter().map(|c| c.charge_start).min().unwrap_or_default();
            let end = charges.iter().map(|c| c.charge_end).max().unwrap_or_default();
            let active_days = ((end - start).num_seconds() + 86_399) / 86_400;
            let weeks = (active_days + 6) / 7;
            let weekly = match weekly {
                Some(w) => Some(money::mul(w, Decimal::from(weeks), "a weekly plan's price")?),
                None => None,
            };
            let options = [
                monthly.map(|m| (m, "monthly plan".to_owned())),
                weekly.map(|w| (w, format!("{weeks}-week plan"))),
            ];
            let Some((best, plan)) = options.into_iter().flatten().min_by_key(|o| o.0) else {
                continue;
            };
            let on_demand = money::sum(
                charges.iter().map(|c| c.billed_cost()),
                "an instance's on-demand cost",
            )?;
            let savings = money::sub(on_demand, best, "the savings of a plan")?;
            if savings <= Decimal::ZERO {
                continue;
            }
            let hours: i64 =
                charges.iter().map(|c| (c.charge_end - c.charge_start).num_seconds()).sum::<i64>()
                    / 3600;
            let mut drafts = Drafts::default();
            for c in &charges {
                let share = share_of(c.billed_cost(), savings, on_demand)
                    .map_err(|e| ctx.of_charge(self, c, e))?;
                drafts.add(ctx, c, share, (c.charge_start, c.charge_end));
            }
            let projection = if active_days > 0 {
                share_of(savings, Decimal::from(30), Decimal::from(active_days.min(30)))?
            } else {
                Decimal::ZERO
            };
            let text = format!(
                "Instance {instance} ({gpu}) ran {hours} h on demand for {} {}; a {plan} costs {}: \
                 subscribe while it runs steadily.",
                money_text(on_demand.round_dp(2)),
                ctx.text(charges[0].currency),
                money_text(best.round_dp(2)),
            );
            // One finding per instance, whatever the resource ids of its rows.
            let mut merged = drafts.findings(ctx, self, |_| Ok((projection, text.clone())))?;
            if let Some(mut f) = merged.pop() {
                for other in merged {
                    f.charges.append(other.charges);
                    f.amount = money::add(f.amount, other.amount, "a finding's wasted money")?;
                    f.period_start = f.period_start.min(other.period_start);
                    f.period_end = f.period_end.max(other.period_end);
                }
                f.resource_id = Some(instance.to_owned());
                findings.push(f);
            }
        }
        Ok(findings)
    }
}

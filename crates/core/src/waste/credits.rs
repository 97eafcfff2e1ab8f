//! A finding's money is what was paid: the credits of the month that name a flagged charge's
//! resource (or, with no resource, its usage) pay for part of it.
//!
//! Decisions:
//! - A credit is a charge of kind credit with a negative billed cost in the audited month (an
//!   AWS `Credit` row, a GCP credit, a FOCUS `ChargeCategory = Credit`, an AutoDL refund of a
//!   resource's charges). It names a resource when its row has a resource id; else it names its
//!   usage (the bill's usage type) when it has one; else nothing, and nets no finding.
//! - A credit pays for the resource's (or usage's) whole spend in the month, not for the
//!   flagged part only: a finding is credited `credit × flagged ÷ spend` (exact; at most the
//!   flagged money), each credit line its share, shown among the finding's lines as a negative
//!   part, so that the lines still add up to the finding.
//! - A finding the credits pay for in full is not raised; what credits paid for is summed per
//!   currency ([`super::Audit::credited`]) for `waste` to say.

use rustc_hash::FxHashMap as HashMap;

use rust_decimal::Decimal;

use super::{Context, Finding};
use crate::charge::Kind;
use crate::money;
use crate::window::{Row, Sym};

/// What a credit names: a resource, or a usage.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Named {
    Resource(Sym),
    Usage(Sym),
}

/// The month's credits by what they name, and the spend of each usage they name.
#[derive(Default)]
pub(super) struct Credits {
    /// Per (platform, currency, what it names): the credit rows' places and amounts.
    credits: HashMap<(Sym, Sym, Named), Vec<(u32, Decimal)>>,
    /// Per (platform, currency, usage) named by a credit: the month's spend of that usage.
    usage_spend: HashMap<(Sym, Sym, Sym), money::Sum>,
}

impl Credits {
    /// The credits of `ctx`'s month.
    pub(super) fn of(ctx: &Context<'_>) -> crate::Result<Credits> {
        let mut out = Credits::default();
        for c in ctx.in_month() {
            if c.kind != Kind::Credit || c.billed_positive() || c.billed_cost().is_zero() {
                continue;
            }
            let Some(named) = named(ctx, c) else { continue };
            let Some(place) = ctx.place(c) else { continue };
            let key = (c.platform, c.currency, named);
            out.credits.entry(key).or_default().push((place, c.billed_cost()));
            if let Named::Usage(u) = named {
                out.usage_spend.entry((c.platform, c.currency, u)).or_default();
            }
        }
        if !out.usage_spend.is_empty() {
            for c in ctx.in_month() {
                let Some(u) = ctx.window().usage_type_sym(c) else { continue };
                if c.billed_positive()
                    && let Some(sum) = out.usage_spend.get_mut(&(c.platform, c.currency, u))
                {
                    c.add_cost_to(sum, "a usage's spend")?;
                }
            }
        }
        Ok(out)
    }

    /// Nets `finding` of the credits naming its resource or usage: adds their shares to its
    /// lines (negative) and lowers its amount; returns what the credits paid for.
    pub(super) fn net(&self, ctx: &Context<'_>, finding: &mut Finding) -> crate::Result<Decimal> {
        let Some(first) = finding.charges.first_row() else { return Ok(Decimal::ZERO) };
        let flagged = finding.amount;
        if self.credits.is_empty() || flagged <= Decimal::ZERO {
            return Ok(Decimal::ZERO);
        }
        let by_resource = first.resource_id.map(Named::Resource);
        let by_usage = ctx.window().usage_type_sym(first).map(Named::Usage);
        let found = [by_resource, by_usage].into_iter().flatten().find_map(|n| {
            self.credits.get(&(first.platform, first.currency, n)).map(|list| (n, list))
        });
        let Some((named, list)) = found else { return Ok(Decimal::ZERO) };
        let spend = match named {
            Named::Resource(_) => ctx.rate_of(first).map_or(Decimal::ZERO, |r| r.0),
            Named::Usage(u) => self
                .usage_spend
                .get(&(first.platform, first.currency, u))
                .map_or(Decimal::ZERO, |s| s.value()),
        };
        if spend <= Decimal::ZERO {
            return Ok(Decimal::ZERO);
        }
        let what = "the credits of a finding";
        let mut credited = Decimal::ZERO;
        for &(place, credit) in list {
            let share = money::div(money::mul(credit, flagged, what)?, spend, what)?;
            // Never more than the flagged money: a credit larger than the spend pays it all.
            let room = money::sub(flagged, credited, what)?;
            let share = share.max(-room);
            if share.is_zero() {
                continue;
            }
            finding.charges.push_at(place, share);
            credited = money::sub(credited, share, what)?;
        }
        finding.amount = money::sub(flagged, credited, what)?;
        Ok(credited)
    }
}

/// What credit `c` names: its resource, else its usage.
fn named(ctx: &Context<'_>, c: &Row) -> Option<Named> {
    let resource = c.resource_id.filter(|&r| !ctx.text(r).is_empty());
    resource.map(Named::Resource).or_else(|| ctx.window().usage_type_sym(c).map(Named::Usage))
}

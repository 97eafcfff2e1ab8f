//! The waste rules W001–W006, each a unit struct implementing [`Rule`].

use chrono::{DateTime, Duration, Utc};
use rust_decimal::Decimal;

use super::timeline::{Span, near, overlap_seconds};
use super::unlinked::{
    idle_by_bill, inventory_gone, inventory_loose, inventory_stopped, taken, unjudgeable,
};
use super::{Context, Finding, Lines, Rule, Severity};
use crate::charge::Category;
use crate::error::Result;
use crate::money;
use crate::slots::SlotMap;
use crate::window::{Micros, Row, Sym, in_text_order};

/// Seconds in the 30-day month used for projections.
const MONTH_SECONDS: i64 = 30 * 24 * 3600;

/// The part of `c`'s billed cost that falls in `spans` (in order and disjoint), pro-rated by
/// time.
fn prorated(c: &Row, spans: &[Span]) -> Result<Decimal> {
    let spans =
        near(spans, c.charge_start, c.charge_end.max(c.charge_start + Duration::microseconds(1)));
    let duration = (c.charge_end - c.charge_start).num_seconds();
    if duration <= 0 {
        let inside = spans.iter().any(|&(s, e)| c.charge_start >= s && c.charge_start < e);
        return Ok(if inside { c.billed_cost() } else { Decimal::ZERO });
    }
    Ok(match overlap_seconds((c.charge_start, c.charge_end), spans) {
        0 => Decimal::ZERO,
        o if o >= duration => c.billed_cost(),
        o => share_of(c.billed_cost(), Decimal::from(o), Decimal::from(duration))?,
    })
}

/// `amount × part ÷ whole`: the share of an amount, pro-rated.
pub(super) fn share_of(amount: Decimal, part: Decimal, whole: Decimal) -> Result<Decimal> {
    let what = "a charge's share of its time";
    money::div(money::mul(amount, part, what)?, whole, what)
}

/// The part of `c`'s time inside `spans` (in order and disjoint; first start to last end);
/// a charge with no duration is its own instant.
fn clip(c: &Row, spans: &[Span]) -> Span {
    let touching =
        near(spans, c.charge_start, c.charge_end.max(c.charge_start + Duration::seconds(1)));
    let (first, last) = (touching.first(), touching.last());
    match (first, last) {
        (Some(f), Some(l)) => {
            let start = c.charge_start.max(f.0);
            (start, c.charge_end.min(l.1).max(start))
        }
        _ => (c.charge_start, c.charge_end),
    }
}

/// Wasted pieces of charges, grouped into one finding per resource.
/// Platform, instance, resource, category, currency, as syms of the window's texts.
type GroupKey = (Sym, Option<Sym>, Option<Sym>, Category, Sym);

/// The wasted pieces of one resource's charges so far: its first charge (what a finding's
/// texts are made from), the wasted time's bounds, and the bill lines, as places in the
/// window (a month may waste millions of pieces).
struct Group<'a> {
    first: &'a Row,
    span: Span,
    lines: Lines,
}

#[derive(Default)]
pub(super) struct Drafts<'a> {
    /// Found through the groups met last ([`SlotMap`]): a rule meets an instance's disk,
    /// IP and traffic rows in turns, hour after hour.
    groups: SlotMap<GroupKey, Group<'a>>,
}

impl<'a> Drafts<'a> {
    pub(super) fn add(&mut self, ctx: &Context<'_>, c: &'a Row, wasted: Decimal, span: Span) {
        // Every row a rule is given is one of the context's charges.
        let (false, Some(place)) = (wasted.is_zero(), ctx.place(c)) else {
            return;
        };
        debug_assert!(c.billing_period == ctx.month, "a finding on a charge of another month");
        let key = (c.platform, c.instance_id, c.resource_id, c.category, c.currency);
        // Room for as many lines as the resource has charges in the month: most findings
        // rest on all of them, and a list grown by doubling was two fifths unused.
        let group = self.groups.entry(key, || {
            let room = ctx.rate_of(c).map_or(0, |r| r.3);
            Group { first: c, span, lines: ctx.lines_with_room(room) }
        });
        group.span = (group.span.0.min(span.0), group.span.1.max(span.1));
        group.lines.push_at(place, wasted);
    }

    /// One finding per group, in the order of the groups' texts; `describe` gives
    /// (projection, recommendation) for a group by its first charge.
    pub(super) fn findings(
        self,
        ctx: &Context<'_>,
        rule: &dyn Rule,
        mut describe: impl FnMut(&'a Row) -> Result<(Decimal, String)>,
    ) -> Result<Vec<Finding>> {
        let texts = |k: &GroupKey| (ctx.text(k.0), ctx.opt(k.1), ctx.opt(k.2), k.3, ctx.text(k.4));
        in_text_order(self.groups.into_values(), texts)
            .into_iter()
            .map(|(_, group)| {
                let first = group.first;
                let (projection, recommendation) =
                    describe(first).map_err(|e| ctx.of_charge(rule, first, e))?;
                let amount = group.lines.total("a finding's wasted money")?;
                Ok(Finding {
                    code: rule.code(),
                    rule: rule.name(),
                    severity: Severity::Low,
                    platform: ctx.text(first.platform).to_owned(),
                    account: ctx.opt(first.account).map(str::to_owned),
                    instance_id: ctx.opt(first.instance_id).map(str::to_owned),
                    resource_id: ctx.opt(first.resource_id).map(str::to_owned),
                    category: first.category,
                    period_start: group.span.0.time(),
                    period_end: group.span.1.time(),
                    amount,
                    currency: ctx.text(first.currency).to_owned(),
                    monthly_projection: projection,
                    charges: group.lines,
                    recommendation,
                })
            })
            .collect()
    }
}

/// What a resource costs per 30 days at its rate in the month, if it still bills on the last
/// day of the month (or of what the ledger knows, if earlier); else 0.
pub(super) fn resource_projection(ctx: &Context<'_>, c: &Row) -> Result<Decimal> {
    let (Some(known), Some((billed, seconds, last_end, _))) =
        (ctx.known_span(ctx.text(c.platform)), ctx.rate_of(c))
    else {
        return Ok(Decimal::ZERO);
    };
    let horizon = known.1.min(ctx.month_span(ctx.text(c.platform)).1);
    if last_end < horizon - Duration::days(1) || seconds <= 0 {
        return Ok(Decimal::ZERO);
    }
    share_of(billed, Decimal::from(MONTH_SECONDS), Decimal::from(seconds))
}

pub(super) fn name_of(ctx: &Context<'_>, c: &Row) -> String {
    let what = match c.category {
        Category::SystemDisk => "system disk",
        Category::DataDisk => "data disk",
        Category::PublicIp => "public IP",
        Category::Snapshot => "snapshot",
        other => other.as_str(),
    };
    match ctx.opt(c.resource_id) {
        Some(r) => format!("{what} {r}"),
        None => format!("{what} ({})", ctx.window().item(c)),
    }
}

fn days(hours: u32) -> String {
    match hours {
        24 => "1 day".to_owned(),
        h if h % 24 == 0 => format!("{} days", h / 24),
        h => format!("{h} h"),
    }
}

/// Shared body of W001 and W002: charges of `categories` inside their instance's off periods
/// beyond `grace_hours`, one finding per resource; `action` ends the recommendation.
fn while_off(
    rule: &dyn Rule,
    ctx: &Context<'_>,
    categories: &[Category],
    grace_hours: u32,
    action: &str,
) -> Result<Vec<Finding>> {
    let mut drafts = Drafts::default();
    let grace = Duration::hours(i64::from(grace_hours));
    // Per instance (by its platform's and its own syms, found through the instances met
    // last): its off periods after the grace, or none when its charges are not this rule's.
    let mut off: SlotMap<(Sym, Sym), Option<Vec<Span>>> = SlotMap::default();
    let off_of = |platform: Sym, instance: Sym| {
        let (platform, instance) = (ctx.text(platform), ctx.text(instance));
        if !ctx.ran_recently(platform, instance) {
            // W003's (the instance is likely released), unless the inventory shows it stopped.
            return inventory_stopped(ctx, platform, instance, grace);
        }
        let (tl, known) = (ctx.timeline(platform, instance)?, ctx.known_span(platform)?);
        // Compute seen only at instants: when it was off is unknown.
        tl.knows_off().then(|| tl.off_after_grace(known, grace))
    };
    for c in ctx.in_month() {
        if !categories.contains(&c.category) || !c.billed_positive() || idle_by_bill(ctx, c) {
            continue;
        }
        let Some(instance) = c.instance_id else { continue };
        let found = off.entry((c.platform, instance), || off_of(c.platform, instance));
        let Some(spans) = found.as_ref() else { continue };
        let wasted = prorated(c, spans).map_err(|e| ctx.of_charge(rule, c, e))?;
        drafts.add(ctx, c, wasted, clip(c, spans));
    }
    drafts.findings(ctx, rule, |c| {
        let instance = ctx.opt(c.instance_id).unwrap_or_default();
        Ok((
            resource_projection(ctx, c)?,
            format!(
                "The {} kept billing while instance {instance} was off for more than {}: {action}",
                name_of(ctx, c),
                days(grace_hours)
            ),
        ))
    })
}

/// W001: disks billing while their instance is off, beyond the grace period.
pub struct StorageWhileOff;

impl Rule for StorageWhileOff {
    fn code(&self) -> &'static str {
        "W001"
    }
    fn name(&self) -> &'static str {
        "storage-while-off"
    }
    fn check(&self, ctx: &Context<'_>) -> Result<Vec<Finding>> {
        let categories = [Category::SystemDisk, Category::DataDisk];
        let action = "release it, or move its data to cheaper storage before a long stop.";
        while_off(self, ctx, &categories, ctx.config.waste.storage_grace_hours, action)
    }
}

/// W002: public IPs and bandwidth billing while their instance is off, beyond the grace; and
/// public IPs the bill itself says were idle (AWS `IdleAddress`), whole, linked or not.
pub struct IdlePublicIp;

impl Rule for IdlePublicIp {
    fn code(&self) -> &'static str {
        "W002"
    }
    fn name(&self) -> &'static str {
        "idle-public-ip"
    }
    fn check(&self, ctx: &Context<'_>) -> Result<Vec<Finding>> {
        let action = "release or unbind it when the instance stops.";
        let grace = ctx.config.waste.ip_grace_hours;
        let mut found = while_off(self, ctx, &[Category::PublicIp], grace, action)?;
        found.extend(super::unlinked::idle_findings(self, ctx)?);
        Ok(found)
    }
}

/// W003: disks and IPs that belong to no instance (on a platform whose bills link them), or
/// to one with no compute in the look-back.
pub struct UnattachedStorage;

impl Rule for UnattachedStorage {
    fn code(&self) -> &'static str {
        "W003"
    }
    fn name(&self) -> &'static str {
        "unattached-storage"
    }
    /// Every disk and IP charge of the month.
    fn weight(&self) -> u32 {
        2
    }
    fn check(&self, ctx: &Context<'_>) -> Result<Vec<Finding>> {
        let mut drafts = Drafts::default();
        let storage = [Category::SystemDisk, Category::DataDisk, Category::PublicIp];
        // Rows come by the million, instances by the thousand.
        let mut ran: SlotMap<(Sym, Sym), bool> = SlotMap::default();
        let mut loose: SlotMap<(Sym, Option<Sym>), Option<Vec<Span>>> = SlotMap::default();
        for c in ctx.in_month() {
            if !storage.contains(&c.category) || !c.billed_positive() {
                continue;
            }
            let released = match c.instance_id {
                // A bill that links no disk to its instance says nothing of this one.
                None => ctx.links_storage(ctx.text(c.platform)),
                Some(i) => !*ran
                    .entry((c.platform, i), || ctx.ran_recently(ctx.text(c.platform), ctx.text(i))),
            };
            if released {
                drafts.add(ctx, c, c.billed_cost(), (c.charge_start, c.charge_end));
            } else if c.instance_id.is_none()
                && let Some(spans) =
                    loose.entry((c.platform, c.resource_id), || inventory_loose(ctx, c))
            {
                // Unattached since the inventory snapshot that shows it so.
                let wasted = prorated(c, spans).map_err(|e| ctx.of_charge(self, c, e))?;
                drafts.add(ctx, c, wasted, clip(c, spans));
            }
        }
        let lookback = ctx.config.waste.lookback_days;
        drafts.findings(ctx, self, |c| {
            let why = match ctx.opt(c.instance_id) {
                None if !ctx.links_storage(ctx.text(c.platform)) => {
                    let spans = inventory_loose(ctx, c).unwrap_or_default();
                    format!("is unattached in the inventory taken {}", taken(&spans))
                }
                None => "is linked to no instance in the bill".to_owned(),
                Some(i) => {
                    format!("belongs to instance {i}, which had no compute in {lookback} days")
                }
            };
            Ok((
                resource_projection(ctx, c)?,
                format!("The {} {why}: release it if nothing needs it.", name_of(ctx, c)),
            ))
        })
    }
}

/// W004: snapshots older than N days whose instance has not run for N days or is unknown.
pub struct StaleSnapshot;

impl Rule for StaleSnapshot {
    fn code(&self) -> &'static str {
        "W004"
    }
    fn name(&self) -> &'static str {
        "stale-snapshot"
    }
    fn check(&self, ctx: &Context<'_>) -> Result<Vec<Finding>> {
        let n = ctx.config.waste.snapshot_days;
        let age = Duration::days(i64::from(n));
        let mut drafts = Drafts::default();
        for c in ctx.in_month() {
            if c.category != Category::Snapshot || !c.billed_positive() {
                continue;
            }
            if unjudgeable(ctx, c) {
                // Stale once the inventory shows its volume gone, whatever its age.
                if let Some(since) = inventory_gone(ctx, c) {
                    let spans = [(since, Micros::of(DateTime::<Utc>::MAX_UTC))];
                    let wasted = prorated(c, &spans).map_err(|e| ctx.of_charge(self, c, e))?;
                    drafts.add(ctx, c, wasted, clip(c, &spans));
                }
                continue;
            }
            let first = ctx
                .opt(c.resource_id)
                .and_then(|r| ctx.first_seen(ctx.text(c.platform), r))
                .unwrap_or(c.charge_start);
            let old_from = first + age;
            let timeline =
                ctx.opt(c.instance_id).and_then(|i| ctx.timeline(ctx.text(c.platform), i));
            if timeline.is_some_and(|t| !t.knows_off()) {
                continue; // compute seen only at instants: when it last ran is unknown
            }
            let unused: Vec<Span> =
                match (ctx.opt(c.instance_id), ctx.known_span(ctx.text(c.platform))) {
                    (Some(i), Some(known)) if ctx.timeline(ctx.text(c.platform), i).is_some() => {
                        ctx.timeline(ctx.text(c.platform), i)
                            .map(|tl| tl.off_after_grace(known, age))
                            .unwrap_or_default()
                    }
                    _ => vec![(old_from, Micros::of(DateTime::<Utc>::MAX_UTC))],
                };
            let spans: Vec<Span> = unused
                .into_iter()
                .map(|(s, e)| (s.max(old_from), e))
                .filter(|(s, e)| s < e)
                .collect();
            let wasted = prorated(c, &spans).map_err(|e| ctx.of_charge(self, c, e))?;
            drafts.add(ctx, c, wasted, clip(c, &spans));
        }
        drafts.findings(ctx, self, |c| {
            let owner = match ctx.opt(c.instance_id) {
                Some(i) if ctx.timeline(ctx.text(c.platform), i).is_some() => {
                    format!("its instance {i} has not run for {n} days")
                }
                Some(i) => format!("its instance {i} never ran in the ledger"),
                None if unjudgeable(ctx, c) => {
                    let since =
                        inventory_gone(ctx, c).map(|t| taken(&[(t, t)])).unwrap_or_default();
                    let text = format!(
                        "The volume {} was taken from is gone in the inventory taken {since}: \
                         delete it, or export what you need.",
                        name_of(ctx, c)
                    );
                    return Ok((resource_projection(ctx, c)?, text));
                }
                None => "it belongs to no known instance".to_owned(),
            };
            Ok((
                resource_projection(ctx, c)?,
                format!(
                    "The {} is over {n} days old and {owner}: delete it, or export what you need.",
                    name_of(ctx, c)
                ),
            ))
        })
    }
}

/// W006: traffic above a share of its instance's cost: fixed bandwidth would be cheaper.
pub struct TrafficHeavy;

impl Rule for TrafficHeavy {
    fn code(&self) -> &'static str {
        "W006"
    }
    fn name(&self) -> &'static str {
        "traffic-heavy"
    }
    /// Every charge of the month's instances, and a quotient per traffic line.
    fn weight(&self) -> u32 {
        4
    }
    fn check(&self, ctx: &Context<'_>) -> Result<Vec<Finding>> {
        let share = ctx.config.waste.traffic_share;
        let mut cost: SlotMap<(Sym, Sym, Sym), (money::Sum, Vec<&Row>)> = SlotMap::default();
        for c in ctx.in_month() {
            let Some(i) = c.instance_id else { continue };
            let entry = cost.entry((c.platform, i, c.currency), Default::default);
            c.add_cost_to(&mut entry.0, "an instance's cost")
                .map_err(|e| ctx.of_charge(self, c, e))?;
            if c.category == Category::Traffic && c.billed_positive() {
                entry.1.push(c);
            }
        }
        let mut findings = Vec::new();
        let texts = |k: &(Sym, Sym, Sym)| (ctx.text(k.0), ctx.text(k.1), ctx.text(k.2));
        for (key, (total, traffic)) in in_text_order(cost.into_values(), texts) {
            let (instance, total) = (ctx.text(key.1), total.value());
            let spent =
                money::sum(traffic.iter().map(|c| c.billed_cost()), "an instance's traffic")?;
            let allowed = money::mul(share, total, "an instance's traffic allowance")?;
            let excess = money::sub(spent, allowed, "an instance's excess traffic")?;
            if total <= Decimal::ZERO || excess <= Decimal::ZERO {
                continue;
            }
            let mut drafts = Drafts::default();
            for c in &traffic {
                drafts.add(
                    ctx,
                    c,
                    share_of(c.billed_cost(), excess, spent)
                        .map_err(|e| ctx.of_charge(self, c, e))?,
                    (c.charge_start, c.charge_end),
                );
            }
            let pct = share_of(spent, Decimal::ONE_HUNDRED, total)?.round_dp(0);
            let limit = money::mul(share, Decimal::ONE_HUNDRED, "the traffic share")?;
            let text = format!(
                "Traffic was {pct}% of instance {instance}'s cost (over {}%): a fixed-bandwidth \
                 plan, or moving data inside the region, would likely cost less.",
                limit.normalize()
            );
            findings.extend(
                drafts.findings(ctx, self, |c| Ok((resource_projection(ctx, c)?, text.clone())))?,
            );
        }
        Ok(findings)
    }
}

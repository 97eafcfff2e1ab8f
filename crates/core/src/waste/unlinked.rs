//! What the bill alone lets the rules say of storage and IPs that no row links to an
//! instance (DESIGN.md § Rules: waste; issue: the big clouds judged right).
//!
//! Decisions:
//! - A platform's profile says whether its bills link disks, IPs and snapshots to instances
//!   ([`crate::platforms::BillFacts::links_storage`]). Where they do (the Chinese platforms), a
//!   disk or IP of no instance is unattached (W003). Where they do not (AWS CUR, Azure, GCP,
//!   OCI, and their FOCUS exports), a volume's row never names its instance: no rule calls it
//!   unattached, or its instance off, or its snapshot stale for want of an instance. Its money
//!   is *not judged*, and [`not_judged`] says how much, per platform and currency, so that
//!   `waste` can say it and what would let it judge (an inventory of the account's volumes,
//!   addresses and snapshots).
//! - The bill's own words still count: a public IP whose usage text (or item) holds one of the
//!   platform's idle words (AWS `ElasticIP:IdleAddress`, `PublicIPv4:IdleAddress`; GCP's
//!   `Static Ip Charge`) was idle by the bill's own account, linked or not: W002 flags its
//!   whole cost ([`idle_by_bill`]). An address in use (`InUseAddress`) is never idle.

use rust_decimal::Decimal;

use chrono::{DateTime, Utc};

use super::rules::{Drafts, name_of, resource_projection};
use super::{Context, Finding, Rule, Span};
use crate::charge::Category;
use crate::inventory::State;
use crate::money;
use crate::window::Micros;
use crate::window::{Row, Sym};

/// The categories whose charges need a link to an instance to be judged.
pub(super) const LINKED_CATEGORIES: [Category; 4] =
    [Category::SystemDisk, Category::DataDisk, Category::PublicIp, Category::Snapshot];

/// Money of storage and IPs the bill links to no instance, on a platform whose bills do not
/// link them: what the rules could not judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotJudged {
    /// The platform.
    pub platform: String,
    /// The currency.
    pub currency: String,
    /// The money of those charges in the month, exact.
    pub amount: Decimal,
    /// How many charges.
    pub charges: u64,
}

/// Whether the bill itself says `c`, a public IP's charge, was for an idle address: its usage
/// text, or else its item, holds one of its platform's idle words.
pub(super) fn idle_by_bill(ctx: &Context<'_>, c: &Row) -> bool {
    if c.category != Category::PublicIp {
        return false;
    }
    let words = ctx.idle_words(c.platform);
    if words.is_empty() {
        return false;
    }
    let has = |text: &str| {
        let text = text.to_ascii_lowercase();
        words.iter().any(|w| text.contains(w.as_str()))
    };
    has(ctx.window().usage_type(c)) || has(ctx.window().item(c))
}

/// Whether `c` is storage or an IP that its bill links to no instance, on a platform whose
/// bills do not link them (no rule judges it from the bill alone).
pub(super) fn unjudgeable(ctx: &Context<'_>, c: &Row) -> bool {
    c.instance_id.is_none()
        && LINKED_CATEGORIES.contains(&c.category)
        && !ctx.links_storage(ctx.text(c.platform))
}

/// The money of the month's charges no rule could judge ([`unjudgeable`], but for the IPs
/// the bill says were idle), per platform and currency, in their texts' order.
pub(super) fn not_judged(ctx: &Context<'_>) -> crate::Result<Vec<NotJudged>> {
    let mut sums: Vec<((Sym, Sym), money::Sum, u64)> = Vec::new();
    // Whether an inventory snapshot names each resource, found once per resource.
    let mut judged: rustc_hash::FxHashMap<(Sym, Option<Sym>), bool> = Default::default();
    for c in ctx.in_month() {
        if !c.billed_positive() || !unjudgeable(ctx, c) || idle_by_bill(ctx, c) {
            continue;
        }
        // Judged by an inventory snapshot that names it.
        let named = |i: &crate::inventory::Inventory| {
            let resource = ctx.opt(c.resource_id).unwrap_or("");
            i.state_at(ctx.text(c.platform), resource, DateTime::<Utc>::MAX_UTC).is_some()
        };
        let named = |i| *judged.entry((c.platform, c.resource_id)).or_insert_with(|| named(i));
        if ctx.inventory().is_some_and(named) {
            continue;
        }
        let key = (c.platform, c.currency);
        let at = match sums.iter().position(|(k, _, _)| *k == key) {
            Some(at) => at,
            None => {
                sums.push((key, money::Sum::new(), 0));
                sums.len() - 1
            }
        };
        c.add_cost_to(&mut sums[at].1, "the money not judged")?;
        sums[at].2 += 1;
    }
    let mut out: Vec<NotJudged> = sums
        .into_iter()
        .map(|((p, cur), sum, charges)| NotJudged {
            platform: ctx.text(p).to_owned(),
            currency: ctx.text(cur).to_owned(),
            amount: sum.value(),
            charges,
        })
        .collect();
    out.sort_by(|a, b| (&a.platform, &a.currency).cmp(&(&b.platform, &b.currency)));
    Ok(out)
}

/// W002's findings from the bill's own words: each public IP's charges the bill says were
/// idle ([`idle_by_bill`]), whole, one finding per address (the addresses a bill names by no
/// id, as AWS's IdleAddress rows, one per account).
pub(super) fn idle_findings(rule: &dyn Rule, ctx: &Context<'_>) -> crate::Result<Vec<Finding>> {
    let mut drafts = Drafts::default();
    for c in ctx.in_month() {
        if c.billed_positive() && idle_by_bill(ctx, c) {
            drafts.add(ctx, c, c.billed_cost(), (c.charge_start, c.charge_end));
        }
    }
    drafts.findings(ctx, rule, |c| {
        let said = match ctx.window().usage_type(c) {
            "" => ctx.window().item(c),
            usage => usage,
        };
        Ok((
            resource_projection(ctx, c)?,
            format!(
                "The bill says the {} was idle ({said}): release it, or attach it to a running \
                 instance.",
                name_of(ctx, c)
            ),
        ))
    })
}

/// The spans in which the inventory shows `c`'s resource (a disk or IP no row links)
/// unattached, from the first snapshot that shows it so; none without such a snapshot.
pub(super) fn inventory_loose(ctx: &Context<'_>, c: &Row) -> Option<Vec<Span>> {
    let inventory = ctx.inventory()?;
    let resource = ctx.opt(c.resource_id)?;
    let loose = |s: State<'_>| s == State::Loose;
    let spans = inventory.spans(ctx.text(c.platform), resource, loose);
    let spans: Vec<Span> = spans.into_iter().map(|(s, e)| (Micros::of(s), Micros::of(e))).collect();
    (!spans.is_empty()).then_some(spans)
}

/// Since when the inventory shows the volume disk snapshot `c` was taken from gone.
pub(super) fn inventory_gone(ctx: &Context<'_>, c: &Row) -> Option<Micros> {
    let inventory = ctx.inventory()?;
    let resource = ctx.opt(c.resource_id)?;
    let since =
        inventory.source_gone_since(ctx.text(c.platform), resource, DateTime::<Utc>::MAX_UTC);
    since.map(Micros::of)
}

/// The span in which the inventory shows `instance` stopped (from its stop time, else the
/// snapshot's, after `grace`), for an instance with no compute in the bills' look-back.
pub(super) fn inventory_stopped(
    ctx: &Context<'_>,
    platform: &str,
    instance: &str,
    grace: chrono::Duration,
) -> Option<Vec<Span>> {
    let since = ctx.inventory()?.stopped_since(platform, instance, DateTime::<Utc>::MAX_UTC)?;
    Some(vec![(Micros::of(since) + grace, Micros::of(DateTime::<Utc>::MAX_UTC))])
}

/// When the first snapshot in `spans` was taken, as a recommendation says it.
pub(super) fn taken(spans: &[Span]) -> String {
    spans.first().map_or(String::new(), |s| s.0.time().format("%Y-%m-%d %H:%M UTC").to_string())
}

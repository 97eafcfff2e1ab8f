//! The waste engine: money that bought nothing (DESIGN.md § Rules: waste).
//!
//! [`audit`] takes the charges of a month and of its look-back (earlier months, so that
//! snapshot ages and released instances are known) and returns [`Finding`]s. Each rule is a
//! unit struct implementing [`Rule`], listed in [`RULES`]. Instance timelines are built once
//! and shared.
//!
//! Decisions:
//! - A charge belongs to the audited month by its billing period. Wasted money is the charge's
//!   billed cost pro-rated by the time it overlaps the wasted span, computed in `Decimal`
//!   (exact to 28 digits) and rounded only when printed. A charge with no duration is wasted
//!   whole when its instant falls in a wasted span.
//! - "The time the ledger knows" for a platform runs from its earliest charge start to its
//!   latest charge end among the charges given.
//! - No charge's money is counted twice: rules run in registry order and a charge claimed by
//!   one finding is left out of every later one.
//! - Monthly projection: what the resource costs per 30 days at its rate in the month if it is
//!   still billing on the month's last day (or the last the ledger knows), else 0 (it
//!   already stopped). For W005 it
//!   is the month's excess over the plan, scaled to 30 days.
//! - Severity: high from 100 (in the billing currency, amount or projection), medium from 10,
//!   else low.
//! - The engine knows nothing of files or storage, and prints nothing.

mod credits;
mod lines;
mod plans;
mod rules;
pub mod timeline;
mod unlinked;

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use rust_decimal::Decimal;

use crate::slots::SlotMap;
use lines::Claims;
pub use lines::{Evidence, Lines};
pub use plans::OnDemandOverSubscription;
pub use rules::{IdlePublicIp, StaleSnapshot, StorageWhileOff, TrafficHeavy, UnattachedStorage};
pub use timeline::{Span, Timeline};
pub use unlinked::NotJudged;

use crate::charge::{Category, YearMonth};
use crate::config::Config;
use crate::platforms::Platforms;
use crate::window::{LeftOut, Micros, Row, Sym, Texts, Window};

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Under 10 in the billing currency.
    Low,
    /// From 10.
    Medium,
    /// From 100.
    High,
}

impl Severity {
    /// The severity's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }

    fn of(amount: Decimal, projection: Decimal) -> Self {
        let m = amount.max(projection);
        if m >= Decimal::ONE_HUNDRED {
            Severity::High
        } else if m >= Decimal::TEN {
            Severity::Medium
        } else {
            Severity::Low
        }
    }
}

/// Money that bought nothing, with the bill lines that prove it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Stable rule code (W001 …).
    pub code: &'static str,
    /// Rule name (storage-while-off …).
    pub rule: &'static str,
    /// How much it matters.
    pub severity: Severity,
    /// Platform.
    pub platform: String,
    /// Billing account, when known.
    pub account: Option<String>,
    /// The instance concerned, when linked.
    pub instance_id: Option<String>,
    /// The resource concerned (disk, IP, snapshot …).
    pub resource_id: Option<String>,
    /// Category of the wasted charges.
    pub category: Category,
    /// Start of the wasted time (UTC).
    pub period_start: DateTime<Utc>,
    /// End of the wasted time (UTC, exclusive).
    pub period_end: DateTime<Utc>,
    /// Money wasted in the month, exact.
    pub amount: Decimal,
    /// Currency of the money.
    pub currency: String,
    /// Projected cost per 30 days if nothing changes.
    pub monthly_projection: Decimal,
    /// The charges the finding rests on.
    pub charges: Lines,
    /// One sentence a renter can act on.
    pub recommendation: String,
}

/// One waste rule.
pub trait Rule: Sync {
    /// Stable code, such as `W001`.
    fn code(&self) -> &'static str;
    /// Short name, such as `storage-while-off`.
    fn name(&self) -> &'static str;
    /// The rule's findings for the audited month (before claims and `min_amount`).
    fn check(&self, ctx: &Context<'_>) -> crate::Result<Vec<Finding>>;
    /// About how long the rule takes beside the others (1 unless it says otherwise): an
    /// audit runs its rules side by side, the heaviest started first, so that a long rule
    /// does not start last and hold the audit up alone.
    fn weight(&self) -> u32 {
        1
    }
}

/// Every waste rule, in the order claims are made.
pub static RULES: &[&dyn Rule] = &[
    &StorageWhileOff,
    &IdlePublicIp,
    &UnattachedStorage,
    &StaleSnapshot,
    &OnDemandOverSubscription,
    &TrafficHeavy,
];

/// A resource's spend in the month: billed, seconds billed, end of its last charge, and the
/// number of its charges (what a finding on it may rest on at most, to size its list once).
type Rate = (Decimal, i64, Micros, usize);

/// What the rules see: the charges, the month, the configuration, and what is derived from
/// the charges once (timelines, knowledge spans, first sightings, resource rates).
pub struct Context<'a> {
    /// Charges of the month and of its look-back. A store's audit (`Store::audit`)
    /// keeps of the look-back only its compute (what timelines and plan prices are made of):
    /// the time the rest covers and when each resource was first charged are in
    /// [`Context::known_span`] and [`Context::first_seen`] all the same. It reads no rule's
    /// unused columns: no row has a unit or a GPU count, and the look-back's rows have no
    /// id, file or line (id 0, file empty, line 0), since findings rest on the month's.
    pub charges: &'a [Row],
    /// Their texts.
    pub texts: &'a Texts,
    /// The audited month.
    pub month: YearMonth,
    /// Thresholds, rate cards, instance notes.
    pub config: &'a Config,
    timelines: HashMap<(&'a str, &'a str), Timeline>,
    known: HashMap<&'a str, Span>,
    first_seen: HashMap<(&'a str, &'a str), Micros>,
    rates: HashMap<(&'a str, &'a str, Category, &'a str), Rate>,
    /// The month cut in each platform's zone, for the platforms of the charges.
    month_spans: HashMap<&'a str, Span>,
    platforms: &'a Platforms,
    /// What each platform's bills say ([`crate::platforms::BillFacts`]), by its sym.
    facts: Vec<(Sym, crate::platforms::BillFacts)>,
    window: &'a Arc<Window>,
    /// The inventory snapshots, if the ledger has some ([`Context::with_inventory`]).
    inventory: Option<&'a crate::inventory::Inventory>,
    /// Whether every row is at the place it was appended at (a window a store or
    /// [`crate::window::rows_of`] made, not reordered since): a finding's lines then read
    /// their ids by their places, without their rows ([`Lines::ids`]).
    at_places: bool,
}

/// Each resource's spend in `month`, by syms (what [`Context::new`] reads from every row
/// beside what the rows tell as [`LeftOut`] does: the span each platform's charges cover and
/// each resource's first charge).
type Rates = HashMap<(Sym, Option<Sym>, Category, Sym), Rate>;

/// What the rows tell ([`LeftOut`]), and whether each row is at its place in the window (its
/// `pos`): in the same read of every row. [`LeftOut::add`] of every row (each platform's span kept apart, and each resource's first
/// sighting found through the resources met last, [`SlotMap`]: a window's rows take turns
/// among an instance's few resources hour after hour).
fn seen(charges: &[Row], texts: &Texts) -> (LeftOut, bool) {
    let mut at_places = true;
    let mut spans: Vec<(Sym, (Micros, Micros))> = Vec::new();
    let mut first_seen: SlotMap<(Sym, Sym), Micros> = SlotMap::default();
    for (i, c) in charges.iter().enumerate() {
        let at = match spans.iter().position(|(p, _)| *p == c.platform) {
            Some(at) => at,
            None => {
                spans.push((c.platform, (c.charge_start, c.charge_end)));
                spans.len() - 1
            }
        };
        let span = &mut spans[at].1;
        *span = (span.0.min(c.charge_start), span.1.max(c.charge_end));
        if let Some(key) = LeftOut::sighting(c, texts) {
            let seen = first_seen.entry(key, || c.charge_start);
            *seen = (*seen).min(c.charge_start);
        }
        at_places &= c.pos as usize == i;
    }
    let seen = LeftOut {
        spans: spans.into_iter().collect(),
        first_seen: first_seen.into_values().into_iter().collect(),
        rows: charges.len() as u64,
    };
    (seen, at_places)
}

/// Each resource's spend in `month`, its time, last end and charges, found through the
/// resources met last ([`SlotMap`]).
fn rates(charges: &[Row], texts: &Texts, month: YearMonth) -> crate::Result<Rates> {
    let mut rates: SlotMap<_, (crate::money::Sum, i64, Micros, usize)> = SlotMap::default();
    for c in charges {
        if c.billing_period == month && c.is_spend() && c.billed_positive() {
            // An empty resource id is no resource.
            let resource = c.resource_id.filter(|&r| !texts.get(r).is_empty());
            let key = (c.platform, resource, c.category, c.currency);
            let rate = rates.entry(key, || (Default::default(), 0, c.charge_end, 0));
            c.add_cost_to(&mut rate.0, "a resource's spend")?;
            rate.1 += (c.charge_end - c.charge_start).num_seconds();
            rate.2 = rate.2.max(c.charge_end);
            rate.3 += 1;
        }
    }
    let rates = rates.into_values().into_iter();
    Ok(rates.map(|(k, (spent, s, end, n))| (k, (spent.value(), s, end, n))).collect())
}

impl<'a> Context<'a> {
    /// Builds timelines, knowledge spans, first sightings and resource rates once.
    pub fn new(
        window: &'a Arc<Window>,
        month: YearMonth,
        config: &'a Config,
        platforms: &'a Platforms,
    ) -> crate::Result<Self> {
        let (charges, texts) = (&window.rows[..], &window.texts);
        // Keyed by syms while the rows are read (hashing a word, not texts, for each of
        // millions of rows), by their texts after. Three reads of every row, on two threads:
        // the timelines (of compute rows only) and what the rows tell, and the rates.
        let closing = platforms.closing(texts);
        let ((timelines, seen), rates) = std::thread::scope(|scope| {
            let timelines = || timeline::build(charges, texts, &closing);
            let other = scope.spawn(move || (timelines(), seen(charges, texts)));
            let rates = rates(charges, texts, month);
            (other.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), rates)
        });
        let ((mut seen, at_places), rates) = (seen, rates?);
        // With what the rows left out of the window tell (a store's window keeps only the
        // look-back's compute).
        seen.merge(&window.left_out);
        let facts = seen.spans.keys().map(|&p| (p, platforms.bill_facts(texts.get(p)))).collect();
        let known: HashMap<&str, Span> =
            seen.spans.into_iter().map(|(p, span)| (texts.get(p), span)).collect();
        let first_seen = seen
            .first_seen
            .into_iter()
            .map(|((p, r), t)| ((texts.get(p), texts.get(r)), t))
            .collect();
        let rates = rates
            .into_iter()
            .map(|((p, r, category, cur), rate)| {
                ((texts.get(p), texts.opt(r).unwrap_or(""), category, texts.get(cur)), rate)
            })
            .collect();
        let month_spans =
            known.keys().map(|&p| (p, Micros::span(month.span(platforms.zone(p))))).collect();
        Ok(Context {
            charges,
            texts,
            month,
            config,
            timelines,
            month_spans,
            known,
            first_seen,
            rates,
            platforms,
            facts,
            window,
            inventory: None,
            at_places,
        })
    }

    /// The window the charges are of (what a finding's [`Lines`] keep): where a charge was
    /// read ([`Window::origin`], [`Window::item`]) is kept there, beside the rows.
    pub fn window(&self) -> &'a Arc<Window> {
        self.window
    }

    /// No bill lines yet, of this context's charges: what a rule's finding rests on
    /// ([`Lines::push`]).
    pub fn lines(&self) -> Lines {
        self.lines_with_room(0)
    }

    /// [`Context::lines`] with room for `room` lines.
    pub(crate) fn lines_with_room(&self, room: usize) -> Lines {
        Lines::of(self.window, room, self.at_places)
    }

    /// The place of `c` among [`Context::charges`], if it is one of them.
    pub(crate) fn place(&self, c: &Row) -> Option<u32> {
        let offset = (c as *const Row as usize).checked_sub(self.charges.as_ptr() as usize)?;
        let place = offset / std::mem::size_of::<Row>();
        let exact = offset % std::mem::size_of::<Row>() == 0;
        (exact && place < self.charges.len()).then_some(place as u32)
    }

    /// A resource's spend in the month (billed, seconds, last end), by its charge `c`.
    pub(crate) fn rate_of(&self, c: &'a Row) -> Option<Rate> {
        let resource = self.opt(c.resource_id).unwrap_or("");
        let key = (self.text(c.platform), resource, c.category, self.text(c.currency));
        self.rates.get(&key).copied()
    }

    /// `e` said of charge `c`, met by `rule` ([`Window::said_of`]).
    pub(crate) fn of_charge(&self, rule: &dyn Rule, c: &Row, e: crate::Error) -> crate::Error {
        self.window.said_of(c, rule.code(), rule.name(), e)
    }

    /// The text `sym` stands for.
    pub fn text(&self, sym: Sym) -> &'a str {
        self.texts.get(sym)
    }

    /// [`Context::text`] of a text that may be absent.
    pub fn opt(&self, sym: Option<Sym>) -> Option<&'a str> {
        self.texts.opt(sym)
    }

    /// Charges whose billing period is the audited month (spend only).
    pub fn in_month(&self) -> impl Iterator<Item = &'a Row> + '_ {
        let month = self.month;
        self.charges.iter().filter(move |c| c.billing_period == month && c.is_spend())
    }

    /// The context, its rules reading `inventory` too (a volume it shows unattached is W003
    /// from its time on, a stopped instance's volumes W001, a snapshot whose volume is gone
    /// W004).
    pub fn with_inventory(mut self, inventory: &'a crate::inventory::Inventory) -> Self {
        self.inventory = Some(inventory).filter(|i| !i.is_empty());
        self
    }

    /// The inventory snapshots, if any.
    pub(crate) fn inventory(&self) -> Option<&'a crate::inventory::Inventory> {
        self.inventory
    }

    /// Whether the platform's bills link disks, IPs and snapshots to their instances
    /// ([`crate::platforms::BillFacts::links_storage`]).
    pub fn links_storage(&self, platform: &str) -> bool {
        self.platforms.links_storage(platform)
    }

    /// The words by which the platform's bills say a public IP was idle (lower case).
    pub(crate) fn idle_words(&self, platform: Sym) -> &[String] {
        self.facts.iter().find(|(p, _)| *p == platform).map_or(&[], |(_, f)| &f.idle_ip_usage)
    }

    /// The zone the platform cuts its days and months in.
    pub fn zone(&self, platform: &str) -> Tz {
        self.platforms.zone(platform)
    }

    /// The month as UTC instants, cut in the platform's zone.
    pub fn month_span(&self, platform: &str) -> Span {
        match self.month_spans.get(platform) {
            Some(&span) => span,
            None => Micros::span(self.month.span(self.zone(platform))),
        }
    }

    /// The time the ledger knows for a platform.
    pub fn known_span(&self, platform: &str) -> Option<Span> {
        self.known.get(platform).copied()
    }

    /// The timeline of an instance, if it ever had compute.
    pub fn timeline(&self, platform: &'a str, instance: &'a str) -> Option<&Timeline> {
        self.timelines.get(&(platform, instance))
    }

    /// When a resource was first charged among the charges given.
    pub fn first_seen(&self, platform: &'a str, resource: &'a str) -> Option<Micros> {
        self.first_seen.get(&(platform, resource)).copied()
    }

    /// Whether the instance had compute in the look-back window before and through the month.
    pub fn ran_recently(&self, platform: &'a str, instance: &'a str) -> bool {
        let (start, end) = self.month_span(platform);
        let from = start - Duration::days(i64::from(self.config.waste.lookback_days));
        self.timeline(platform, instance).is_some_and(|t| t.ran_within(from, end))
    }
}

/// Runs every rule of [`RULES`], cutting the built-in profiles' platforms in their zones (see
/// [`audit_in`] for other platforms). A sum of money that would not fit exactly is an
/// [`crate::ErrorKind::Overflow`], never a rounded total.
pub fn audit(
    charges: &[crate::Charge],
    month: YearMonth,
    config: &Config,
) -> crate::Result<Vec<Finding>> {
    audit_with(RULES, charges, month, config)
}

/// Runs the given rules with the built-in profiles' zones (see [`audit_in`]).
pub fn audit_with(
    rules: &[&dyn Rule],
    charges: &[crate::Charge],
    month: YearMonth,
    config: &Config,
) -> crate::Result<Vec<Finding>> {
    audit_in(rules, charges, month, config, &Platforms::default())
}

/// Runs the given rules, cutting each platform's days and months in its zone from
/// `platforms`:
/// claims in order, drops findings under `min_amount`, and orders the result by amount,
/// largest first.
pub fn audit_in(
    rules: &[&dyn Rule],
    charges: &[crate::Charge],
    month: YearMonth,
    config: &Config,
    platforms: &Platforms,
) -> crate::Result<Vec<Finding>> {
    audit_rows(rules, &Arc::new(crate::window::rows_of(charges)), month, config, platforms)
}

/// [`audit_in`] of the charges as [`Row`]s (what the ledger reads for a window).
pub fn audit_rows(
    rules: &[&dyn Rule],
    window: &Arc<Window>,
    month: YearMonth,
    config: &Config,
    platforms: &Platforms,
) -> crate::Result<Vec<Finding>> {
    Ok(audit_judged(rules, window, month, config, platforms)?.findings)
}

/// What an audit found, and the money it could not judge.
#[derive(Debug)]
pub struct Audit {
    /// The findings, largest first.
    pub findings: Vec<Finding>,
    /// Per platform and currency, the storage and IPs its bills link to no instance, which no
    /// rule judged ([`NotJudged`]).
    pub not_judged: Vec<NotJudged>,
    /// Per currency, the flagged money the month's credits paid for (findings are net of
    /// it; one it paid for in full is not raised).
    pub credited: Vec<(String, Decimal)>,
}

/// [`audit_rows`], with what the rules could not judge.
pub fn audit_judged(
    rules: &[&dyn Rule],
    window: &Arc<Window>,
    month: YearMonth,
    config: &Config,
    platforms: &Platforms,
) -> crate::Result<Audit> {
    audit_inventory(rules, window, month, config, platforms, &Default::default())
}

/// [`audit_judged`], the rules reading `inventory` too (its links made in the window
/// first: [`crate::inventory::Inventory::link_rows`]).
pub fn audit_inventory(
    rules: &[&dyn Rule],
    window: &Arc<Window>,
    month: YearMonth,
    config: &Config,
    platforms: &Platforms,
    inventory: &crate::inventory::Inventory,
) -> crate::Result<Audit> {
    let ctx = Context::new(window, month, config, platforms)?.with_inventory(inventory);
    let not_judged = unlinked::not_judged(&ctx)?;
    let (findings, credited) = findings_of(rules, &ctx, window, config)?;
    Ok(Audit { findings, not_judged, credited })
}

/// Money per currency, in currency order.
type Totals = Vec<(String, Decimal)>;

/// Every rule's findings, claims made in order, each net of the credits that paid for it,
/// those under `min_amount` (or paid for in full) dropped, largest first; and per currency
/// what credits paid for.
fn findings_of(
    rules: &[&dyn Rule],
    ctx: &Context<'_>,
    window: &Arc<Window>,
    config: &Config,
) -> crate::Result<(Vec<Finding>, Totals)> {
    // Every rule's findings first, side by side (no rule reads the claims), so that the set
    // of claimed charges is made once at its size: grown as it went, rehashing millions of
    // ids was a fifth of an audit.
    // An error names its rule (a charge's, [`Context::of_charge`], names it already).
    let found = crate::par::map_heaviest_first(
        rules,
        |rule| rule.weight(),
        |rule| rule.check(ctx).map_err(|e| crate::money::met_by(rule.code(), rule.name(), e)),
    );
    let found = found.into_iter().collect::<crate::Result<Vec<_>>>()?;
    // The last rule's charges are claimed from no one after it.
    let claimable = found.iter().rev().skip(1).flatten().map(|f| f.charges.len()).sum();
    let mut claimed = Claims::new(window, claimable);
    let credits = credits::Credits::of(ctx)?;
    let mut credited: std::collections::BTreeMap<String, Decimal> = Default::default();
    let (mut out, rules_found) = (Vec::new(), found.len());
    for (i, findings) in found.into_iter().enumerate() {
        let last = i + 1 == rules_found;
        for mut finding in findings {
            finding.charges.retain(|place, c| !claimed.has(window, place, c));
            finding.amount = finding.charges.total("a finding's wasted money")?;
            if finding.charges.is_empty() || finding.amount < config.waste.min_amount {
                continue;
            }
            let paid = credits.net(ctx, &mut finding)?;
            if !paid.is_zero() {
                let total = credited.entry(finding.currency.clone()).or_default();
                *total = crate::money::add(*total, paid, "the money credits paid for")?;
            }
            if !last {
                claimed.claim_all(&finding.charges);
            }
            if finding.amount <= Decimal::ZERO || finding.amount < config.waste.min_amount {
                continue;
            }
            finding.severity = Severity::of(finding.amount, finding.monthly_projection);
            out.push(finding);
        }
    }
    out.sort_by(|a, b| {
        b.amount
            .cmp(&a.amount)
            .then_with(|| a.code.cmp(b.code))
            .then_with(|| a.resource_id.cmp(&b.resource_id))
    });
    Ok((out, credited.into_iter().collect()))
}

/// The months an audit of `month` reads: the month and enough before it for the look-back
/// windows (the longer of `lookback_days` and `snapshot_days`, a day more, in months of 28
/// days, and one more month).
pub fn months_to_read(month: YearMonth, config: &Config) -> Vec<YearMonth> {
    let days = config.waste.lookback_days.max(config.waste.snapshot_days) + 1;
    let back = days.div_ceil(28) + 1;
    let mut first = month;
    for _ in 0..back {
        first = first.previous();
    }
    let mut months = vec![first];
    while *months.last().unwrap_or(&month) < month {
        let next = months.last().unwrap_or(&month).next();
        months.push(next);
    }
    months
}

/// The rule with `code`, case ignored.
pub fn rule_by_code(code: &str) -> Option<&'static dyn Rule> {
    RULES.iter().copied().find(|r| r.code().eq_ignore_ascii_case(code))
}

/// Total wasted per currency, exact, in currency order.
pub fn totals<'a>(
    findings: impl IntoIterator<Item = &'a Finding>,
) -> crate::Result<Vec<(String, Decimal)>> {
    let mut t: std::collections::BTreeMap<String, Decimal> = Default::default();
    for f in findings {
        let total = t.entry(f.currency.to_string()).or_default();
        *total = crate::money::add(*total, f.amount, "the month's wasted money")?;
    }
    Ok(t.into_iter().collect())
}

#[cfg(test)]
mod tests;

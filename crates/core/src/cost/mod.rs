//! What the work cost, all in: per instance and month, its compute and everything linked to
//! it, its GPU-hours and hours on and off, and the price per GPU-hour (`gpuaudit cost`);
//! with [`compare`], the same usage priced on the other platforms, and the commitment
//! break-even.
//!
//! Decisions:
//! - A charge belongs to the month by its billing period, as in `summary`; payments are not
//!   spend. Every charge of the month is in exactly one line: the line of the instance it is
//!   linked to (its own, for compute), or its platform's `unattached` line. So the lines of
//!   a month add up, per currency, to `summary`'s total to the cent.
//! - Compute hours are the instance's hours: the length of the union of the spans of its
//!   compute charges (usage and purchases; refunds give money back, not time). A bill that
//!   prints CPU, memory and GPU as three rows per hour counts one hour. A plan bought at an
//!   instant (no span) adds its money and no hours: the bill does not say when it ran.
//! - GPU-hours are compute hours × the instance's GPU count: the bill's, else its
//!   `[[instance]]` note's. Without either they are unknown (blank), never guessed; an
//!   instance without compute has 0.
//! - GPU model: the bill's, else the note's, else `unknown`.
//! - Hours on are the compute hours inside the instance's time in the month; hours off the
//!   rest of that time. The instance's time runs from the start of its first charge in the
//!   month to the end of its last, inside the month (cut in the platform's zone) and inside
//!   the time the ledger knows for the platform. An instance whose compute has no spans
//!   (instants only) cannot say when it was off: its hours off are blank.
//! - An attached charge's usage (its [`Measure`], as the bill states it) is split into while on and while off by
//!   the share of its span the instance's compute covers (an instant by whether it falls in
//!   it).
//! - Prices per GPU-hour and the hidden share, `(all_in − compute) / all_in`, are exact
//!   quotients (28 digits), rounded only when printed; blank where the divisor is 0 or unknown.
//! - Lines are grouped by the keys asked for ([`CostKey`]); the unattached lines are never
//!   merged with an instance's. Attached lines come first, largest all-in first.
//!
//! This module knows nothing of files or storage, and prints nothing.

mod breakeven;
pub mod compare;
mod usage;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;

pub use breakeven::{Breakeven, BreakevenInstance};
pub use compare::{Basis, Comparison, Priced, Unpriced};
pub use usage::Measure;

use crate::charge::{Category, Charge, Kind, YearMonth};
use crate::config::Config;
use crate::error::Result;
use crate::money;
use crate::platforms::Platforms;
use crate::waste::{Span, Timeline};
use crate::window::{Row, Sym, Window};

/// A dimension cost lines can be grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CostKey {
    /// The platform.
    Platform,
    /// The GPU model (`unknown` when neither the bill nor a note names it).
    GpuModel,
    /// The instance (empty on the unattached line).
    Instance,
}

impl CostKey {
    /// Every key, in the order `--by` documents them (and its default).
    pub const ALL: &'static [CostKey] = &[CostKey::Platform, CostKey::GpuModel, CostKey::Instance];

    /// The key's name, as `--by` takes it and as a column header.
    pub fn as_str(self) -> &'static str {
        match self {
            CostKey::Platform => "platform",
            CostKey::GpuModel => "gpu_model",
            CostKey::Instance => "instance",
        }
    }
}

impl fmt::Display for CostKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CostKey {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        CostKey::ALL.iter().copied().find(|k| k.as_str() == s.trim()).ok_or_else(|| {
            format!("{s:?} is not a cost key (expected platform, gpu_model or instance)")
        })
    }
}

/// Money by what it bought.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Components {
    /// Compute.
    pub compute: Decimal,
    /// System disk.
    pub system_disk: Decimal,
    /// Data disks.
    pub data_disk: Decimal,
    /// Snapshots and images.
    pub snapshot: Decimal,
    /// Public IPs and bandwidth.
    pub public_ip: Decimal,
    /// Traffic.
    pub traffic: Decimal,
    /// Everything else (storage not tied to a disk, taxes, support).
    pub other: Decimal,
}

impl Components {
    /// The slot of a category's money.
    fn slot(&mut self, category: Category) -> &mut Decimal {
        match category {
            Category::Compute => &mut self.compute,
            Category::SystemDisk => &mut self.system_disk,
            Category::DataDisk => &mut self.data_disk,
            Category::Snapshot => &mut self.snapshot,
            Category::PublicIp => &mut self.public_ip,
            Category::Traffic => &mut self.traffic,
            Category::Storage | Category::Other => &mut self.other,
        }
    }

    /// The money of a category (storage and other share `other`).
    pub fn get(&self, category: Category) -> Decimal {
        self.clone().slot(category).to_owned()
    }

    fn add(&mut self, category: Category, amount: Decimal) -> Result<()> {
        let slot = self.slot(category);
        *slot = money::add(*slot, amount, "a line's cost")?;
        Ok(())
    }

    fn add_all(&mut self, other: &Components) -> Result<()> {
        for &c in Category::ALL.iter().filter(|&&c| c != Category::Storage) {
            self.add(c, other.get(c))?;
        }
        Ok(())
    }

    /// The sum of every component.
    pub fn total(&self) -> Result<Decimal> {
        let parts = [
            self.compute,
            self.system_disk,
            self.data_disk,
            self.snapshot,
            self.public_ip,
            self.traffic,
            self.other,
        ];
        money::sum(parts, "a line's all-in cost")
    }
}

/// Usage in one measure, split by whether the instance's compute was running.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OnOff {
    /// While the instance was on.
    pub on: Decimal,
    /// While it was off (or had no compute).
    pub off: Decimal,
}

/// What a line used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    /// Seconds of compute (the union of compute spans).
    pub compute_seconds: i64,
    /// GPU-seconds: compute seconds × GPU count; `None` when the count is unknown.
    pub gpu_seconds: Option<i64>,
    /// Seconds on inside the instance's time in the month.
    pub on_seconds: i64,
    /// Seconds off inside it; `None` when it cannot be told.
    pub off_seconds: Option<i64>,
    /// Usage by measure.
    pub quantities: BTreeMap<Measure, OnOff>,
    /// Money of attached charges whose usage the bill does not state, by category.
    pub unmeasured: Components,
}

impl Usage {
    fn add_all(&mut self, other: &Usage) -> Result<()> {
        self.compute_seconds += other.compute_seconds;
        self.gpu_seconds = self.gpu_seconds.zip(other.gpu_seconds).map(|(a, b)| a + b);
        self.on_seconds += other.on_seconds;
        self.off_seconds = self.off_seconds.zip(other.off_seconds).map(|(a, b)| a + b);
        for (m, q) in &other.quantities {
            self.add_quantity(*m, *q)?;
        }
        self.unmeasured.add_all(&other.unmeasured)
    }

    fn add_quantity(&mut self, m: Measure, q: OnOff) -> Result<()> {
        let slot = self.quantities.entry(m).or_default();
        slot.on = money::add(slot.on, q.on, "a line's usage")?;
        slot.off = money::add(slot.off, q.off, "a line's usage")?;
        Ok(())
    }
}

/// Hours of `seconds`, exact to 28 digits.
pub fn hours(seconds: i64) -> Decimal {
    Decimal::from(seconds) / Decimal::from(3600)
}

/// One line of the cost report: an instance (or a group of them) or a platform's unattached
/// charges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostLine {
    /// The billing month.
    pub month: YearMonth,
    /// The value of each key asked for, in order (`None`: not one value, or unattached).
    pub keys: Vec<Option<String>>,
    /// Whether the line's charges are linked to an instance (false: the unattached line).
    pub attached: bool,
    /// Platform, when the line has one.
    pub platform: Option<String>,
    /// GPU model, when the line has one.
    pub gpu_model: Option<String>,
    /// Instance, when the line is one.
    pub instance: Option<String>,
    /// GPUs of the instance (or of every instance of the line), when known.
    pub gpu_count: Option<u16>,
    /// Currency of every figure.
    pub currency: String,
    /// Money by component.
    pub cost: Components,
    /// Usage.
    pub usage: Usage,
    /// Number of charges.
    pub charges: u64,
}

impl CostLine {
    /// Compute hours.
    pub fn compute_hours(&self) -> Decimal {
        hours(self.usage.compute_seconds)
    }

    /// GPU-hours, when known.
    pub fn gpu_hours(&self) -> Option<Decimal> {
        self.usage.gpu_seconds.map(hours)
    }

    /// Everything the line cost.
    pub fn all_in(&self) -> Result<Decimal> {
        self.cost.total()
    }

    /// Compute money per GPU-hour.
    pub fn per_gpu_hour_compute(&self) -> Result<Option<Decimal>> {
        self.per_gpu_hour(self.cost.compute)
    }

    /// All-in money per GPU-hour.
    pub fn per_gpu_hour_all_in(&self) -> Result<Option<Decimal>> {
        self.per_gpu_hour(self.all_in()?)
    }

    fn per_gpu_hour(&self, amount: Decimal) -> Result<Option<Decimal>> {
        match self.gpu_hours() {
            Some(h) if !h.is_zero() => money::div(amount, h, "a price per GPU-hour").map(Some),
            _ => Ok(None),
        }
    }

    /// `(all_in − compute) / all_in`: the share of the money that was not compute.
    pub fn hidden_share(&self) -> Result<Option<Decimal>> {
        let all_in = self.all_in()?;
        if all_in.is_zero() {
            return Ok(None);
        }
        let hidden = money::sub(all_in, self.cost.compute, "a line's hidden cost")?;
        money::div(hidden, all_in, "a line's hidden share").map(Some)
    }

    fn merge(&mut self, other: &CostLine) -> Result<()> {
        self.cost.add_all(&other.cost)?;
        self.usage.add_all(&other.usage)?;
        self.charges += other.charges;
        if self.platform != other.platform {
            self.platform = None;
        }
        if self.gpu_model != other.gpu_model {
            self.gpu_model = None;
        }
        if self.instance != other.instance {
            self.instance = None;
        }
        if self.gpu_count != other.gpu_count {
            self.gpu_count = None;
        }
        Ok(())
    }
}

/// What [`report`] is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostOptions {
    /// Group lines by these keys, in order.
    pub by: Vec<CostKey>,
    /// Price the month's usage on every other platform ([`compare`]).
    pub compare: bool,
}

impl Default for CostOptions {
    fn default() -> Self {
        CostOptions { by: CostKey::ALL.to_vec(), compare: false }
    }
}

/// The cost report of a month.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostReport {
    /// The month.
    pub month: YearMonth,
    /// The lines, grouped as asked.
    pub lines: Vec<CostLine>,
    /// One line per instance and per platform's unattached charges (what the lines group).
    pub instances: Vec<CostLine>,
    /// The month priced on the other platforms (when asked for).
    pub comparisons: Vec<Comparison>,
    /// The commitment break-even of each GPU model with an on-demand and a plan price.
    pub breakeven: Vec<Breakeven>,
}

/// The months a cost report of `month` reads: the month, and with `compare` the eleven
/// before it, whose charges show the rates paid on each platform.
pub fn months_to_read(month: YearMonth, compare: bool) -> Vec<YearMonth> {
    let mut months = vec![month];
    if compare {
        for _ in 0..11 {
            let first = months[0].previous();
            months.insert(0, first);
        }
    }
    months
}

/// The cost report of `month` from `charges` (the month's, and for `compare` the months of
/// [`months_to_read`]), cutting the built-in profiles' platforms in their zones.
pub fn report(
    charges: &[Charge],
    month: YearMonth,
    config: &Config,
    options: &CostOptions,
) -> Result<CostReport> {
    let mut window = crate::window::rows_of(charges);
    crate::window::link_rows(&mut window.rows);
    report_rows(&window, month, config, &Platforms::default(), options)
}

/// [`report`] of a window of rows, each platform cut in its zone from `platforms`.
pub fn report_rows(
    window: &Window,
    month: YearMonth,
    config: &Config,
    platforms: &Platforms,
    options: &CostOptions,
) -> Result<CostReport> {
    // Without a comparison only the month is read; with one, every month of the window
    // shows the rates paid.
    let only = (!options.compare).then_some(month);
    let (instances, others): (Vec<CostLine>, Vec<CostLine>) =
        instance_lines(window, only, config, platforms)?
            .into_iter()
            .partition(|l| l.month == month);
    let lines = group(&instances, &options.by)?;
    let rates = compare::Rates::of(&instances, &others, window, config, options.compare)?;
    let breakeven = breakeven::breakeven(&instances, &rates)?;
    let comparisons = if options.compare { compare::compare(&lines, &rates)? } else { Vec::new() };
    Ok(CostReport { month, lines, instances, comparisons, breakeven })
}

/// An instance's (or a platform's unattached) charges of the month, as they are read.
#[derive(Default)]
struct Acc<'w> {
    cost: Components,
    charges: u64,
    spans: Vec<Span>,
    instants: bool,
    gpu_count: Option<u16>,
    gpu_model: Option<Sym>,
    life: Option<Span>,
    attached: Vec<&'w Row>,
}

/// The key of an instance's line: month, platform, instance (`None`: unattached), currency.
type Key = (YearMonth, Sym, Option<Sym>, Sym);

/// One line per month, instance and platform's unattached charges (of `only` that month),
/// attached first, largest all-in first.
fn instance_lines(
    window: &Window,
    only: Option<YearMonth>,
    config: &Config,
    platforms: &Platforms,
) -> Result<Vec<CostLine>> {
    let texts = &window.texts;
    let mut known: HashMap<Sym, Span> = HashMap::new();
    let mut accs: HashMap<Key, Acc<'_>> = HashMap::new();
    for r in &window.rows {
        let span = known.entry(r.platform).or_insert((r.charge_start, r.charge_end));
        *span = (span.0.min(r.charge_start), span.1.max(r.charge_end));
        if only.is_some_and(|m| m != r.billing_period) || !r.is_spend() {
            continue;
        }
        let key = (r.billing_period, r.platform, r.instance_id, r.currency);
        let acc = accs.entry(key).or_default();
        acc.cost.add(r.category, r.billed_cost)?;
        acc.charges += 1;
        let life = acc.life.get_or_insert((r.charge_start, r.charge_end));
        *life = (life.0.min(r.charge_start), life.1.max(r.charge_end));
        if r.category == Category::Compute {
            if matches!(r.kind, Kind::Usage | Kind::Purchase) {
                if r.charge_end > r.charge_start {
                    acc.spans.push((r.charge_start, r.charge_end));
                } else {
                    acc.instants = true;
                }
            }
            acc.gpu_count = acc.gpu_count.or(r.gpu_count);
            acc.gpu_model = acc.gpu_model.or(r.gpu_model);
        } else if r.instance_id.is_some() {
            acc.attached.push(r);
        }
    }
    let mut lines = Vec::with_capacity(accs.len());
    for ((month, platform_sym, instance, currency), acc) in accs {
        let (platform, currency) = (texts.get(platform_sym), texts.get(currency));
        let instance = texts.opt(instance);
        let note = instance.and_then(|i| config.note_of(platform, i));
        let tz = platforms.zone(platform);
        let month_span = (month.start(tz), month.next().start(tz));
        let known = known.get(&platform_sym).copied();
        let within = clip(month_span, known.unwrap_or(month_span));
        let gpu_model = texts
            .opt(acc.gpu_model)
            .or_else(|| note.and_then(|n| n.gpu_model.as_deref()))
            .map(str::to_owned);
        let gpu_count = acc.gpu_count.or_else(|| note.and_then(|n| n.gpu_count));
        let usage = usage_of(&acc, instance.is_some(), within, gpu_count, note, texts)?;
        lines.push(CostLine {
            month,
            keys: Vec::new(),
            attached: instance.is_some(),
            platform: Some(platform.to_owned()),
            gpu_model: instance.map(|_| gpu_model.unwrap_or_else(|| "unknown".to_owned())),
            instance: instance.map(str::to_owned),
            gpu_count,
            currency: currency.to_owned(),
            cost: acc.cost,
            usage,
            charges: acc.charges,
        });
    }
    sorted(lines)
}

/// The part of `span` inside `within` (empty when they do not meet).
fn clip(span: Span, within: Span) -> Span {
    let start = span.0.max(within.0);
    (start, span.1.min(within.1).max(start))
}

fn seconds((s, e): Span) -> i64 {
    (e - s).num_seconds().max(0)
}

/// The usage of an instance's charges (see the module docs).
fn usage_of(
    acc: &Acc<'_>,
    attached: bool,
    within: Span,
    gpu_count: Option<u16>,
    note: Option<&crate::config::InstanceNote>,
    texts: &crate::window::Texts,
) -> Result<Usage> {
    let mut spans = acc.spans.clone();
    spans.sort();
    let timeline = Timeline { covered: merged(spans), seen: Vec::new() };
    let compute_seconds: i64 = timeline.covered.iter().map(|&s| seconds(s)).sum();
    let gpu_seconds = match gpu_count {
        _ if compute_seconds == 0 => Some(0),
        Some(n) => Some(compute_seconds * i64::from(n)),
        None => None,
    };
    let life = acc.life.map_or((within.0, within.0), |l| clip(l, within));
    let on_seconds = crate::waste::timeline::overlap_seconds(life, &timeline.covered);
    let knows_off = attached && (timeline.knows_off() || !acc.instants);
    let off_seconds = knows_off.then(|| seconds(life) - on_seconds);
    let mut usage =
        Usage { compute_seconds, gpu_seconds, on_seconds, off_seconds, ..Usage::default() };
    for r in &acc.attached {
        let span_seconds = (r.charge_end - r.charge_start).num_seconds();
        let measured =
            usage::measure(r.category, texts.opt(r.unit), r.quantity, span_seconds, note)?;
        let Some((measure, amount)) = measured else {
            usage.unmeasured.add(r.category, r.billed_cost)?;
            continue;
        };
        let on = if span_seconds > 0 {
            let covered = crate::waste::timeline::overlap_seconds(
                (r.charge_start, r.charge_end),
                &timeline.covered,
            );
            let what = "a charge's usage while on";
            money::div(
                money::mul(amount, Decimal::from(covered), what)?,
                Decimal::from(span_seconds),
                what,
            )?
        } else if timeline.ran_within(r.charge_start, r.charge_start + chrono::Duration::seconds(1))
        {
            amount
        } else {
            Decimal::ZERO
        };
        let off = money::sub(amount, on, "a charge's usage while off")?;
        usage.add_quantity(measure, OnOff { on, off })?;
    }
    Ok(usage)
}

/// Sorted spans merged where they touch or overlap.
fn merged(spans: Vec<Span>) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for (s, e) in spans {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Orders lines: attached first, then by all-in (largest first), then by their names.
fn sorted(lines: Vec<CostLine>) -> Result<Vec<CostLine>> {
    let mut keyed = Vec::with_capacity(lines.len());
    for line in lines {
        keyed.push((line.all_in()?, line));
    }
    keyed.sort_by(|(x, a), (y, b)| {
        b.attached
            .cmp(&a.attached)
            .then_with(|| y.cmp(x))
            .then_with(|| a.currency.cmp(&b.currency))
            .then_with(|| a.keys.cmp(&b.keys))
            .then_with(|| (&a.platform, &a.instance).cmp(&(&b.platform, &b.instance)))
    });
    Ok(keyed.into_iter().map(|(_, line)| line).collect())
}

/// The instance lines grouped by `by` (the unattached lines apart, months apart).
pub(crate) fn group(instances: &[CostLine], by: &[CostKey]) -> Result<Vec<CostLine>> {
    type GroupKey = (YearMonth, bool, Vec<Option<String>>, String);
    let mut groups: BTreeMap<GroupKey, CostLine> = BTreeMap::new();
    for line in instances {
        let keys: Vec<Option<String>> = by
            .iter()
            .map(|k| match k {
                CostKey::Platform => line.platform.clone(),
                CostKey::GpuModel => line.gpu_model.clone(),
                CostKey::Instance => line.instance.clone(),
            })
            .collect();
        let key = (line.month, line.attached, keys.clone(), line.currency.clone());
        match groups.get_mut(&key) {
            Some(g) => g.merge(line)?,
            None => {
                groups.insert(key, CostLine { keys, ..line.clone() });
            }
        }
    }
    sorted(groups.into_values().collect())
}

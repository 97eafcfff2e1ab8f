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
mod line;
mod rates;
mod usage;
mod whose;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;

pub use breakeven::{Breakeven, BreakevenInstance};
pub use compare::{Basis, Comparison, Priced, Unpriced};
pub use line::{Apart, Components, CostLine, OnOff, Usage, hours};
pub use usage::Measure;
use whose::{Lines, Whose};

use crate::charge::{Category, Charge, Kind, YearMonth};
use crate::config::Config;
use crate::error::Result;
use crate::money;
use crate::platforms::Platforms;
use crate::waste::{Span, Timeline};
use crate::window::{Micros, Row, Sym, Window};

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
    let rates = rates::Rates::of(&instances, &others, window, config, options.compare)?;
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
    /// The spans of the compute rows that carry a GPU (not AutoDL's 无卡模式).
    gpu_spans: Vec<Span>,
    /// How many compute spans there were (`spans` is taken to make the timeline).
    spans_read: usize,
    on_demand_spans: Vec<Span>,
    on_demand: Decimal,
    instants: bool,
    gpu_count: Option<u16>,
    gpu_model: Option<Sym>,
    life: Option<Span>,
    attached: Vec<&'w Row>,
}

impl<'w> Acc<'w> {
    /// Adds compute row `r` (ending at `end`, as its platform's bills mean it; carrying a GPU
    /// if `gpu`): its span to the compute hours (and to the GPU-hours, and the on-demand
    /// hours), its GPU count and model.
    fn add_compute(&mut self, r: &'w Row, end: Micros, gpu: bool, window: &Window) -> Result<()> {
        if matches!(r.kind, Kind::Usage | Kind::Purchase) {
            let span = (r.charge_start, end);
            if r.charge_end > r.charge_start {
                self.spans.push(span);
                if gpu {
                    self.gpu_spans.push(span);
                }
            } else {
                self.instants = true;
            }
            if r.kind == Kind::Usage && r.pricing == crate::charge::Pricing::OnDemand {
                self.on_demand =
                    money::add(self.on_demand, r.billed_cost(), "a line's on-demand cost")?;
                if r.charge_end > r.charge_start {
                    self.on_demand_spans.push(span);
                }
            }
        }
        self.gpu_count = self.gpu_count.or(window.usage(r).gpu_count);
        self.gpu_model = self.gpu_model.or(r.gpu_model);
        Ok(())
    }
}

/// The key of a line: month, platform, whose it is, currency.
type Key = (YearMonth, Sym, Whose, Sym);

/// One line per month, instance and platform's unattached charges (of `only` that month),
/// attached first, largest all-in first.
fn instance_lines(
    window: &Window,
    only: Option<YearMonth>,
    config: &Config,
    platforms: &Platforms,
) -> Result<Vec<CostLine>> {
    let texts = &window.texts;
    // The time the ledger knows per platform (a few platforms: a list).
    let mut known: Vec<(Sym, Span)> = Vec::new();
    let mut accs: Vec<(Key, Acc<'_>)> = Vec::new();
    let mut index: HashMap<Key, usize> = HashMap::new();
    // Rows come in runs of one resource: the last key is found without hashing.
    let mut last: Option<(Key, usize)> = None;
    let mut judge = Lines::new(window, platforms);
    let closing = platforms.closing(texts);
    for r in &window.rows {
        match known.iter_mut().find(|(p, _)| *p == r.platform) {
            Some((_, span)) => *span = (span.0.min(r.charge_start), span.1.max(r.charge_end)),
            None => known.push((r.platform, (r.charge_start, r.charge_end))),
        }
        if only.is_some_and(|m| m != r.billing_period) || !r.is_spend() {
            continue;
        }
        let key = (r.billing_period, r.platform, judge.whose(r), r.currency);
        let slot = match last {
            Some((k, i)) if k == key => i,
            _ => {
                let i = *index.entry(key).or_insert_with(|| {
                    accs.push((key, Acc::default()));
                    accs.len() - 1
                });
                last = Some((key, i));
                i
            }
        };
        let acc = &mut accs[slot].1;
        acc.cost.add(r.category, r.billed_cost())?;
        acc.charges += 1;
        let life = acc.life.get_or_insert((r.charge_start, r.charge_end));
        *life = (life.0.min(r.charge_start), life.1.max(r.charge_end));
        // A service's compute that is no instance has its money, never instance hours.
        let hours = !matches!(key.2, Whose::Service(_) | Whose::NotLinked);
        if r.category == Category::Compute && hours {
            let gpu = !judge.no_gpu(r);
            acc.add_compute(r, r.end_closing(&closing), gpu, window)?;
        } else if r.instance_id.is_some() {
            acc.attached.push(r);
        }
    }
    let mut lines = Vec::with_capacity(accs.len());
    for ((month, platform_sym, whose, currency), mut acc) in accs {
        let (platform, currency) = (texts.get(platform_sym), texts.get(currency));
        let (instance, apart) = match whose {
            Whose::Instance(i) => (Some(texts.get(i)), None),
            Whose::Unattached => (None, Some(Apart::Unattached)),
            Whose::NotLinked => (None, Some(Apart::NotLinked)),
            Whose::Service(s) => (None, Some(Apart::Service(texts.opt(s).unwrap_or("").into()))),
        };
        let note = instance.and_then(|i| config.note_of(platform, i));
        let month_span = crate::window::Micros::span(month.span(platforms.zone(platform)));
        let known = known.iter().find(|(p, _)| *p == platform_sym).map(|(_, s)| *s);
        let within = clip(month_span, known.unwrap_or(month_span));
        let gpu_model = texts
            .opt(acc.gpu_model)
            .or_else(|| note.and_then(|n| n.gpu_model.as_deref()))
            .map(str::to_owned);
        let gpu_count = acc.gpu_count.or_else(|| note.and_then(|n| n.gpu_count));
        let usage = usage_of(&mut acc, instance.is_some(), within, gpu_count, note, window)?;
        lines.push(CostLine {
            month,
            keys: Vec::new(),
            attached: instance.is_some(),
            apart,
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
    acc: &mut Acc<'_>,
    attached: bool,
    within: Span,
    gpu_count: Option<u16>,
    note: Option<&crate::config::InstanceNote>,
    window: &Window,
) -> Result<Usage> {
    let texts = &window.texts;
    acc.spans_read = acc.spans.len();
    let mut spans = std::mem::take(&mut acc.spans);
    spans.sort();
    let timeline = Timeline { covered: merged(spans), seen: Vec::new() };
    let compute_seconds: i64 = timeline.covered.iter().map(|&s| seconds(s)).sum();
    // GPU-hours are the hours of the compute that carries a GPU (not AutoDL's 无卡模式).
    let gpu_seconds = if acc.gpu_spans.len() == acc.spans_read {
        compute_seconds
    } else {
        let mut gpu = std::mem::take(&mut acc.gpu_spans);
        gpu.sort();
        merged(gpu).iter().map(|&s| seconds(s)).sum()
    };
    let gpu_seconds = match gpu_count {
        _ if gpu_seconds == 0 => Some(0),
        Some(n) => Some(gpu_seconds * i64::from(n)),
        None => None,
    };
    let life = acc.life.map_or((within.0, within.0), |l| clip(l, within));
    let on_seconds = covered_seconds(life, &timeline.covered);
    let knows_off = attached && (timeline.knows_off() || !acc.instants);
    let off_seconds = knows_off.then(|| seconds(life) - on_seconds);
    let mut on_demand_spans = std::mem::take(&mut acc.on_demand_spans);
    on_demand_spans.sort();
    let on_demand_seconds = merged(on_demand_spans).iter().map(|&s| seconds(s)).sum();
    let mut usage = Usage {
        compute_seconds,
        gpu_seconds,
        on_seconds,
        off_seconds,
        on_demand: acc.on_demand,
        on_demand_seconds,
        ..Usage::default()
    };
    for r in &acc.attached {
        let span_seconds = (r.charge_end - r.charge_start).num_seconds();
        let measured = usage::measure(
            r.category,
            texts.opt(window.usage(r).unit),
            window.amounts(r).quantity(),
            span_seconds,
            note,
        )?;
        let Some((measure, amount)) = measured else {
            usage.unmeasured.add(r.category, r.billed_cost())?;
            continue;
        };
        let covered = covered_seconds((r.charge_start, r.charge_end), &timeline.covered);
        let what = "a charge's usage while on";
        let on = if span_seconds <= 0 {
            // An instant is on when compute covers it.
            let at = r.charge_start;
            let i = timeline.covered.partition_point(|&(_, e)| e <= at);
            if timeline.covered.get(i).is_some_and(|&(s, _)| s <= at) {
                amount
            } else {
                Decimal::ZERO
            }
        } else if covered == span_seconds {
            amount
        } else if covered == 0 {
            Decimal::ZERO
        } else {
            money::div(
                money::mul(amount, Decimal::from(covered), what)?,
                Decimal::from(span_seconds),
                what,
            )?
        };
        let off = money::sub(amount, on, "a charge's usage while off")?;
        usage.add_quantity(measure, OnOff { on, off })?;
    }
    Ok(usage)
}

/// Seconds of `span` inside `covered` (sorted, disjoint), found by binary search: an
/// instance may have thousands of spans and of attached charges.
fn covered_seconds(span: Span, covered: &[Span]) -> i64 {
    let first = covered.partition_point(|&(_, e)| e <= span.0);
    covered[first..]
        .iter()
        .take_while(|&&(s, _)| s < span.1)
        .map(|&(s, e)| seconds((s.max(span.0), e.min(span.1))))
        .sum()
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
            .then_with(|| a.apart.cmp(&b.apart))
    });
    Ok(keyed.into_iter().map(|(_, line)| line).collect())
}

/// The instance lines grouped by `by` (the unattached, not-linked and service lines apart,
/// months apart).
pub(crate) fn group(instances: &[CostLine], by: &[CostKey]) -> Result<Vec<CostLine>> {
    type GroupKey = (YearMonth, bool, Option<Apart>, Vec<Option<String>>, String);
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
        let apart = line.apart.clone();
        let key = (line.month, line.attached, apart, keys.clone(), line.currency.clone());
        match groups.get_mut(&key) {
            Some(g) => g.merge(line)?,
            None => {
                groups.insert(key, CostLine { keys, ..line.clone() });
            }
        }
    }
    sorted(groups.into_values().collect())
}

//! The same month elsewhere: a month's usage priced on every other platform, and the
//! commitment break-even of each GPU model.
//!
//! Decisions:
//! - The usage of each attached line of the report (an instance, or the group `--by` asks
//!   for) is priced on each other platform (those the ledger bills and those the configuration prices) twice,
//!   each a [`Comparison`] of its own [`Basis`]: with the rates the ledger shows for that
//!   platform (what was really paid there, in the months it was seen: the month and the
//!   eleven before it), and with the rate card of `gpuaudit.toml`. One basis never fills in
//!   for the other, so every figure says where its price came from.
//! - Rates the ledger shows: compute money per GPU-hour of the instances with a known GPU
//!   model and GPU-hours; money per GB·day (disks), GB·month (snapshots), IP-hour and GB
//!   (traffic) of the charges whose usage the bill states.
//! - Usage while off is priced only where the platform keeps billing it: the card's
//!   `bills_while_off`, else what the ledger shows (its charges billed while off), else
//!   what is known of the platform (DOMAIN.md: 恒源云 bills data disks only while running,
//!   every other known platform keeps billing storage and IPs).
//! - What no rate prices (usage of a measure without a rate, compute of an unknown GPU
//!   count, charges without a stated quantity, `other` money) is an [`Unpriced`] entry with
//!   the money it cost where it was paid, never a zero. `comparable` is the money of what
//!   was priced, so that `priced` and `comparable` compare the same usage.
//! - Currencies are never converted. A card entry's currency, where not given, is the
//!   currency of its platform's bills; an entry whose currency differs from the bills of its
//!   own platform (the usage it would price) is refused, naming the file and the key; usage
//!   in one currency is priced only with rates in that currency.

use rust_decimal::Decimal;

use super::rates::Rates;
use super::{Components, CostLine, Measure};
use crate::charge::Category;
use crate::error::Result;
use crate::money;

/// Where a price comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Basis {
    /// What the ledger shows was paid on the platform.
    Ledger,
    /// The rate card of the configuration file.
    Card,
}

impl Basis {
    /// The basis's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Ledger => "ledger",
            Basis::Card => "card",
        }
    }
}

/// One priced figure of a comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Priced {
    /// What it is the price of.
    pub category: Category,
    /// The measure (`None`: compute, in GPU-hours).
    pub measure: Option<Measure>,
    /// The usage priced (while off included only where the platform bills it).
    pub quantity: Decimal,
    /// The price per unit.
    pub rate: Decimal,
    /// `quantity × rate`.
    pub amount: Decimal,
    /// Where the rate comes from: the months it was seen, or the card's source and date.
    pub whence: String,
}

/// Usage no rate prices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpriced {
    /// What it is.
    pub category: Category,
    /// Why it is not priced, with the usage.
    pub reason: String,
    /// What it cost where it was paid.
    pub actual: Decimal,
}

/// A month's usage of one platform and GPU model, priced on another platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// The keys of the cost line whose usage is priced (as [`CostLine::keys`]).
    pub keys: Vec<Option<String>>,
    /// The platform the usage ran on.
    pub platform: String,
    /// Its GPU model.
    pub gpu_model: String,
    /// Currency of every figure.
    pub currency: String,
    /// The platform priced.
    pub target: String,
    /// Where the prices come from.
    pub basis: Basis,
    /// GPU-hours of the usage (when known).
    pub gpu_hours: Option<Decimal>,
    /// What the usage cost where it ran, all in.
    pub actual: Decimal,
    /// What the priced part of the usage cost where it ran.
    pub comparable: Decimal,
    /// The priced part on the target, by component.
    pub priced: Components,
    /// Each priced figure.
    pub figures: Vec<Priced>,
    /// What could not be priced.
    pub unpriced: Vec<Unpriced>,
}

impl Comparison {
    /// The priced part on the target, all in.
    pub fn priced_total(&self) -> Result<Decimal> {
        self.priced.total_of("a comparison's priced total")
    }

    /// `comparable − priced`: what the target would have saved (negative: cost more).
    pub fn saving(&self) -> Result<Decimal> {
        money::sub(self.comparable, self.priced_total()?, "a comparison's saving")
    }
}

/// The usage of each attached line, priced on every other platform; a comparison that
/// prices nothing is left out.
pub(crate) fn compare(lines: &[CostLine], rates: &Rates) -> Result<Vec<Comparison>> {
    let mut out = Vec::new();
    for source in lines.iter().filter(|l| l.attached) {
        let Some(platform) = source.platform.clone() else { continue };
        for (target, currencies) in &rates.platforms {
            if *target == platform || !currencies.contains(&source.currency) {
                continue;
            }
            for basis in [Basis::Ledger, Basis::Card] {
                if rates.has_rates(basis, target, &source.currency) {
                    let c = price(source, target, basis, rates)?;
                    if !c.figures.is_empty() {
                        out.push(c);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// One source's usage priced on `target` by `basis`.
fn price(source: &CostLine, target: &str, basis: Basis, rates: &Rates) -> Result<Comparison> {
    let what = "a comparison";
    let model = source.gpu_model.clone().unwrap_or_else(|| "(several)".into());
    let currency = source.currency.clone();
    let mut c = Comparison {
        keys: source.keys.clone(),
        platform: source.platform.clone().unwrap_or_default(),
        gpu_model: model.clone(),
        currency: currency.clone(),
        target: target.to_owned(),
        basis,
        gpu_hours: source.gpu_hours(),
        actual: source.all_in()?,
        comparable: Decimal::ZERO,
        priced: Components::default(),
        figures: Vec::new(),
        unpriced: Vec::new(),
    };
    price_compute(&mut c, source, rates)?;
    for (&m, q) in &source.usage.quantities {
        let category = m.category();
        let paid =
            money::sub(source.cost.get(category), source.usage.unmeasured.get(category), what)?;
        let off_billed = rates.bills_while_off(target, category);
        let quantity = if off_billed { money::add(q.on, q.off, what)? } else { q.on };
        match rates.measure_rate(basis, &(target.to_owned(), m, currency.clone()))? {
            Some((rate, whence)) => {
                // Priced figures are estimates: kept to the ledger's 12 decimals, so that
                // their sums stay exact.
                let amount = money::mul(quantity, rate, what)?.round_dp(crate::MAX_SCALE);
                c.priced.add(category, amount)?;
                c.comparable = money::add(c.comparable, paid, what)?;
                c.figures.push(Priced {
                    category,
                    measure: Some(m),
                    quantity,
                    rate,
                    amount,
                    whence,
                });
            }
            None => c.unpriced.push(Unpriced {
                category,
                reason: format!(
                    "{} {}: no {} rate on {target}",
                    money::add(q.on, q.off, what)?.round_dp(2),
                    m.as_str(),
                    basis.as_str()
                ),
                actual: paid,
            }),
        }
    }
    for &category in Category::ALL {
        let unmeasured = source.usage.unmeasured.get(category);
        if category != Category::Storage && !unmeasured.is_zero() {
            let reason = "charges whose usage the bill does not state".to_owned();
            c.unpriced.push(Unpriced { category, reason, actual: unmeasured });
        }
    }
    if !source.cost.other.is_zero() {
        let reason = "not a GPU, disk, snapshot, IP or traffic charge".to_owned();
        c.unpriced.push(Unpriced { category: Category::Other, reason, actual: source.cost.other });
    }
    Ok(c)
}

/// The compute of `source` priced on `c`'s target: its GPU-hours at the target's rate for
/// its model.
fn price_compute(c: &mut Comparison, source: &CostLine, rates: &Rates) -> Result<()> {
    let what = "a comparison";
    let (target, model, basis) = (c.target.clone(), c.gpu_model.clone(), c.basis);
    let compute = source.cost.compute;
    let rate = rates.gpu_rate(basis, &(target.clone(), model.clone(), c.currency.clone()))?;
    match (source.gpu_hours(), rate) {
        (Some(h), _) if h.is_zero() && compute.is_zero() => {}
        (Some(h), Some((rate, whence))) => {
            let amount = money::mul(h, rate, what)?.round_dp(crate::MAX_SCALE);
            c.priced.compute = amount;
            c.comparable = money::add(c.comparable, compute, what)?;
            let figure = Priced {
                category: Category::Compute,
                measure: None,
                quantity: h,
                rate,
                amount,
                whence,
            };
            c.figures.push(figure);
        }
        (Some(h), None) => c.unpriced.push(Unpriced {
            category: Category::Compute,
            reason: format!(
                "{} GPU-hours of {model}: no {} rate on {target}",
                h.round_dp(2),
                basis.as_str()
            ),
            actual: compute,
        }),
        (None, _) => c.unpriced.push(Unpriced {
            category: Category::Compute,
            reason: "GPU count unknown: give gpu_count in an [[instance]] note".into(),
            actual: compute,
        }),
    }
    if source.gpu_model.is_none() && !compute.is_zero() {
        // A line of several models is priced by none of them.
        c.priced.compute = Decimal::ZERO;
        c.comparable = Decimal::ZERO;
        c.figures.clear();
        c.unpriced.retain(|u| u.category != Category::Compute);
        c.unpriced.push(Unpriced {
            category: Category::Compute,
            reason: "more than one GPU model in the line: group by gpu_model".into(),
            actual: compute,
        });
    }
    Ok(())
}

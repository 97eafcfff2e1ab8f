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

use std::collections::{BTreeMap, BTreeSet};

use rust_decimal::Decimal;

use super::{Components, CostLine, Measure};
use crate::charge::{Category, YearMonth};
use crate::config::Config;
use crate::error::Result;
use crate::money;
use crate::window::Window;

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
        self.priced.total()
    }

    /// `comparable − priced`: what the target would have saved (negative: cost more).
    pub fn saving(&self) -> Result<Decimal> {
        money::sub(self.comparable, self.priced_total()?, "a comparison's saving")
    }
}

/// A card rate and where it comes from.
pub(super) type CardRate = (Decimal, String);

/// What the ledger shows was paid for some usage: money, quantity, the months it was seen.
type Paid = (Decimal, Decimal, BTreeSet<YearMonth>);

/// The rates a comparison prices with.
pub(crate) struct Rates {
    /// (platform, GPU model, currency) → money, GPU-hours, months.
    gpu: BTreeMap<(String, String, String), Paid>,
    /// (platform, measure, currency) → money, quantity, months.
    measures: BTreeMap<(String, Measure, String), Paid>,
    /// (platform, category) → billed while off in the ledger.
    off_seen: BTreeSet<(String, Category)>,
    /// Card: (platform, GPU model, currency) → per GPU-hour; per instance-hour, monthly, weekly.
    pub(super) card_gpu: BTreeMap<(String, String, String), CardGpu>,
    /// Card: (platform, measure, currency) → price.
    card_measures: BTreeMap<(String, Measure, String), CardRate>,
    /// Card: platform → what keeps billing while off.
    card_off: BTreeMap<String, Vec<Category>>,
    /// Every platform of the ledger or the card, with the currencies its rates are in.
    platforms: BTreeMap<String, BTreeSet<String>>,
}

/// A card's prices of a GPU model on a platform.
#[derive(Debug, Clone)]
pub(super) struct CardGpu {
    per_gpu_hour: Option<CardRate>,
    pub(super) hourly: Option<Decimal>,
    pub(super) gpus: u16,
    pub(super) monthly: Option<Decimal>,
    pub(super) weekly: Option<Decimal>,
}

fn whence(source: Option<&str>, as_of: Option<chrono::NaiveDate>) -> String {
    let source = source.unwrap_or("gpuaudit.toml");
    match as_of {
        Some(d) => format!("{source}, as of {d}"),
        None => source.to_owned(),
    }
}

impl Rates {
    /// The rates of the month's lines and of the other months' lines, and of the card.
    pub(crate) fn of(
        month: &[CostLine],
        others: &[CostLine],
        window: &Window,
        config: &Config,
        compare: bool,
    ) -> Result<Rates> {
        let mut rates = Rates {
            gpu: BTreeMap::new(),
            measures: BTreeMap::new(),
            off_seen: BTreeSet::new(),
            card_gpu: BTreeMap::new(),
            card_measures: BTreeMap::new(),
            card_off: BTreeMap::new(),
            platforms: BTreeMap::new(),
        };
        let mut billed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for r in &window.rows {
            let platform = window.texts.get(r.platform);
            let currency = window.texts.get(r.currency);
            if !billed.get(platform).is_some_and(|c| c.contains(currency)) {
                billed.entry(platform.to_owned()).or_default().insert(currency.to_owned());
            }
        }
        for line in month.iter().chain(others).filter(|l| l.attached) {
            rates.add_line(line)?;
        }
        rates.platforms = billed.clone();
        rates.add_card(config, &billed, compare)?;
        Ok(rates)
    }

    fn add_line(&mut self, line: &CostLine) -> Result<()> {
        let platform = line.platform.clone().unwrap_or_default();
        let what = "a rate the ledger shows";
        if let (Some(model), Some(gpu_hours)) = (&line.gpu_model, line.gpu_hours())
            && model != "unknown"
            && !gpu_hours.is_zero()
        {
            let key = (platform.clone(), model.clone(), line.currency.clone());
            let e = self.gpu.entry(key).or_default();
            e.0 = money::add(e.0, line.cost.compute, what)?;
            e.1 = money::add(e.1, gpu_hours, what)?;
            e.2.insert(line.month);
        }
        for (&m, q) in &line.usage.quantities {
            let quantity = money::add(q.on, q.off, what)?;
            let category = m.category();
            let paid =
                money::sub(line.cost.get(category), line.usage.unmeasured.get(category), what)?;
            if quantity.is_zero() {
                continue;
            }
            if q.off > Decimal::ZERO && paid > Decimal::ZERO {
                self.off_seen.insert((platform.clone(), category));
            }
            let e = self.measures.entry((platform.clone(), m, line.currency.clone())).or_default();
            e.0 = money::add(e.0, paid, what)?;
            e.1 = money::add(e.1, quantity, what)?;
            e.2.insert(line.month);
        }
        Ok(())
    }

    /// The card's entries, each in its currency (given, else its platform's bills'). An
    /// entry whose currency cannot be told is an error when a comparison would price with
    /// it (`compare`), and is left out otherwise (only a comparison prices a platform without
    /// bills).
    fn add_card(
        &mut self,
        config: &Config,
        billed: &BTreeMap<String, BTreeSet<String>>,
        compare: bool,
    ) -> Result<()> {
        let currency_of = |key: String, platform: &str, given: Option<&str>| match card_currency(
            config, &key, platform, given, billed,
        ) {
            Err(_) if !compare && given.is_none() => Ok(None),
            other => other.map(Some),
        };
        for (i, r) in config.rates.iter().enumerate() {
            let key = format!("rate[{}]", i + 1);
            let Some(currency) = currency_of(key, &r.platform, r.currency.as_deref())? else {
                continue;
            };
            let gpus = r.gpus.unwrap_or(1).max(1);
            let per_gpu_hour = match r.on_demand_hourly {
                Some(h) => Some((
                    money::div(h, Decimal::from(gpus), "a card's price per GPU-hour")?,
                    whence(r.source.as_deref(), r.as_of),
                )),
                None => None,
            };
            let entry = CardGpu {
                per_gpu_hour,
                hourly: r.on_demand_hourly,
                gpus,
                monthly: r.monthly,
                weekly: r.weekly,
            };
            self.platforms.entry(r.platform.clone()).or_default().insert(currency.clone());
            self.card_gpu.insert((r.platform.clone(), r.gpu_model.clone(), currency), entry);
        }
        for (i, p) in config.platform_rates.iter().enumerate() {
            let key = format!("platform_rate[{}]", i + 1);
            let Some(currency) = currency_of(key, &p.platform, p.currency.as_deref())? else {
                continue;
            };
            let w = whence(p.source.as_deref(), p.as_of);
            let prices = [
                (Measure::SystemDiskGbDays, p.system_disk_gb_day),
                (Measure::DataDiskGbDays, p.data_disk_gb_day),
                (Measure::SnapshotGbMonths, p.snapshot_gb_month),
                (Measure::PublicIpHours, p.public_ip_hour),
                (Measure::TrafficGb, p.egress_gb),
            ];
            for (m, price) in prices {
                if let Some(price) = price {
                    let key = (p.platform.clone(), m, currency.clone());
                    self.card_measures.insert(key, (price, w.clone()));
                }
            }
            if let Some(off) = &p.bills_while_off {
                self.card_off.insert(p.platform.clone(), off.clone());
            }
            self.platforms.entry(p.platform.clone()).or_default().insert(currency);
        }
        Ok(())
    }

    /// Whether `platform` keeps billing `category` while an instance is off (module docs).
    fn bills_while_off(&self, platform: &str, category: Category) -> bool {
        if let Some(list) = self.card_off.get(platform) {
            return list.contains(&category);
        }
        if self.off_seen.contains(&(platform.to_owned(), category)) {
            return true;
        }
        !(platform == "gpushare" && category == Category::DataDisk)
    }

    /// The price per GPU-hour of a model on a platform, by basis.
    pub(super) fn gpu_rate(
        &self,
        basis: Basis,
        key: &(String, String, String),
    ) -> Result<Option<CardRate>> {
        match basis {
            Basis::Ledger => match self.gpu.get(key) {
                Some((money_paid, gpu_hours, months)) => Ok(Some((
                    money::div(*money_paid, *gpu_hours, "a rate the ledger shows")?,
                    seen(months),
                ))),
                None => Ok(None),
            },
            Basis::Card => Ok(self.card_gpu.get(key).and_then(|c| c.per_gpu_hour.clone())),
        }
    }

    /// The price per unit of a measure on a platform, by basis.
    fn measure_rate(
        &self,
        basis: Basis,
        key: &(String, Measure, String),
    ) -> Result<Option<CardRate>> {
        match basis {
            Basis::Ledger => match self.measures.get(key) {
                Some((paid, quantity, months)) => Ok(Some((
                    money::div(*paid, *quantity, "a rate the ledger shows")?,
                    seen(months),
                ))),
                None => Ok(None),
            },
            Basis::Card => Ok(self.card_measures.get(key).cloned()),
        }
    }

    /// Whether the platform has any rate of `basis` in `currency`.
    fn has_rates(&self, basis: Basis, platform: &str, currency: &str) -> bool {
        let matches = |p: &String, c: &String| p == platform && c == currency;
        match basis {
            Basis::Ledger => {
                self.gpu.keys().any(|(p, _, c)| matches(p, c))
                    || self.measures.keys().any(|(p, _, c)| matches(p, c))
            }
            Basis::Card => {
                self.card_gpu.keys().any(|(p, _, c)| matches(p, c))
                    || self.card_measures.keys().any(|(p, _, c)| matches(p, c))
            }
        }
    }
}

/// "seen 2024-04, 2024-05".
fn seen(months: &BTreeSet<YearMonth>) -> String {
    let list: Vec<String> = months.iter().map(|m| m.to_string()).collect();
    format!("paid in {}", list.join(", "))
}

/// The currency of a card entry: the one given, which must be one its platform's bills are
/// in; else the one its platform's bills are in.
fn card_currency(
    config: &Config,
    key: &str,
    platform: &str,
    given: Option<&str>,
    billed: &BTreeMap<String, BTreeSet<String>>,
) -> Result<String> {
    let bills = billed.get(platform);
    match (given, bills) {
        (Some(c), Some(bills)) if !bills.contains(c) => Err(config.value_error(
            format!("{key}.currency"),
            format!(
                "{c:?} differs from the currency of {platform}'s bills ({}): gpuaudit never \
                 converts currencies; give the prices in the bills' currency",
                bills.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
        )),
        (Some(c), _) => Ok(c.to_owned()),
        (None, Some(bills)) if bills.len() == 1 => {
            Ok(bills.iter().next().cloned().unwrap_or_default())
        }
        (None, _) => Err(config.value_error(
            format!("{key}.currency"),
            format!(
                "missing: the ledger has {} bills of {platform} to take it from; say which \
                 currency the prices are in",
                if bills.is_some() { "more than one currency in the" } else { "no" }
            ),
        )),
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
                let amount = money::mul(quantity, rate, what)?;
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
            let amount = money::mul(h, rate, what)?;
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

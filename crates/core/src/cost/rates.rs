//! The rates a comparison and the break-even price with: what the ledger shows was paid on
//! each platform, and the rate card, each card entry in its currency (see the decisions of
//! `compare`).

use std::collections::{BTreeMap, BTreeSet};

use rust_decimal::Decimal;

use super::compare::Basis;
use super::{CostLine, Measure};
use crate::charge::{Category, Kind, Pricing, YearMonth};
use crate::config::Config;
use crate::error::Result;
use crate::money;
use crate::window::{Row, Window};

/// A card rate and where it comes from.
pub(super) type CardRate = (Decimal, String);

/// The lowest monthly (30-day) and weekly (7-day) plan prices seen.
pub(super) type Plans = (Option<Decimal>, Option<Decimal>);

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
    /// (platform, GPU model, currency) → on-demand compute money, instance-hours.
    pub(super) on_demand: BTreeMap<(String, String, String), (Decimal, Decimal)>,
    /// Plans seen in the ledger: (platform, GPU model, currency) → lowest monthly, weekly.
    pub(super) plans: BTreeMap<(String, String, String), Plans>,
    /// Card: platform → what keeps billing while off.
    card_off: BTreeMap<String, Vec<Category>>,
    /// Every platform of the ledger or the card, with the currencies its rates are in.
    pub(super) platforms: BTreeMap<String, BTreeSet<String>>,
}

/// A card's prices of a GPU model on a platform.
#[derive(Debug, Clone)]
pub(super) struct CardGpu {
    per_gpu_hour: Option<CardRate>,
    pub(super) hourly: Option<Decimal>,
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
            plans: BTreeMap::new(),
            on_demand: BTreeMap::new(),
            platforms: BTreeMap::new(),
        };
        let mut pairs = BTreeSet::new();
        let mut last = None;
        for r in &window.rows {
            if last != Some((r.platform, r.currency)) {
                last = Some((r.platform, r.currency));
                pairs.insert(last);
            }
            if r.category == Category::Compute
                && r.kind == Kind::Purchase
                && r.pricing == Pricing::Subscription
                && r.billed_positive()
            {
                rates.add_plan(r, window, config)?;
            }
        }
        let mut billed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (platform, currency) in pairs.into_iter().flatten() {
            let (platform, currency) = (window.texts.get(platform), window.texts.get(currency));
            billed.entry(platform.to_owned()).or_default().insert(currency.to_owned());
        }
        for line in month.iter().chain(others).filter(|l| l.attached) {
            rates.add_line(line)?;
        }
        rates.platforms = billed.clone();
        rates.add_card(config, &billed, compare)?;
        Ok(rates)
    }

    /// A plan bought in the window: its price per 30 days (a plan of 28 days or more) or per
    /// 7 days (a shorter one), the lowest seen for its platform, model and currency. Its
    /// length is its span, else the plan its item names (包周/weekly 7 days, 包月/monthly
    /// 30, 包年/yearly 365).
    fn add_plan(&mut self, r: &Row, window: &Window, config: &Config) -> Result<()> {
        let texts = &window.texts;
        let platform = texts.get(r.platform);
        let note_model = || {
            texts
                .opt(r.instance_id)
                .and_then(|i| config.gpu_model_of(platform, i))
                .map(str::to_owned)
        };
        let Some(model) = texts.opt(r.gpu_model).map(str::to_owned).or_else(note_model) else {
            return Ok(());
        };
        let secs = (r.charge_end - r.charge_start).num_seconds();
        let item = window.item(r).to_lowercase();
        let named = [
            ("包年", 365),
            ("yearly", 365),
            ("包月", 30),
            ("monthly", 30),
            ("包周", 7),
            ("weekly", 7),
        ]
        .iter()
        .find(|(word, _)| item.contains(word))
        .map(|&(_, days)| days);
        let Some(days) = (if secs >= 86_400 { Some(secs / 86_400) } else { named }) else {
            return Ok(());
        };
        let key = (platform.to_owned(), model, texts.get(r.currency).to_owned());
        let entry = self.plans.entry(key).or_default();
        let (slot, per) = if days >= 28 { (&mut entry.0, 30) } else { (&mut entry.1, 7) };
        let what = "a plan's price";
        let price = money::div(
            money::mul(r.billed_cost(), Decimal::from(per), what)?,
            Decimal::from(days),
            what,
        )?;
        *slot = Some(slot.map_or(price, |p: Decimal| p.min(price)));
        Ok(())
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
        if let Some(model) = &line.gpu_model
            && line.usage.on_demand_seconds > 0
        {
            let key = (platform.clone(), model.clone(), line.currency.clone());
            let e = self.on_demand.entry(key).or_default();
            e.0 = money::add(e.0, line.usage.on_demand, what)?;
            e.1 = money::add(e.1, super::hours(line.usage.on_demand_seconds), what)?;
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
    pub(super) fn bills_while_off(&self, platform: &str, category: Category) -> bool {
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
            Basis::Ledger => paid_rate(self.gpu.get(key)),
            Basis::Card => Ok(self.card_gpu.get(key).and_then(|c| c.per_gpu_hour.clone())),
        }
    }

    /// The price per unit of a measure on a platform, by basis.
    pub(super) fn measure_rate(
        &self,
        basis: Basis,
        key: &(String, Measure, String),
    ) -> Result<Option<CardRate>> {
        match basis {
            Basis::Ledger => paid_rate(self.measures.get(key)),
            Basis::Card => Ok(self.card_measures.get(key).cloned()),
        }
    }

    /// Whether the platform has any rate of `basis` in `currency`.
    pub(super) fn has_rates(&self, basis: Basis, platform: &str, currency: &str) -> bool {
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

/// What was paid per unit, and the months it was seen.
fn paid_rate(paid: Option<&Paid>) -> Result<Option<CardRate>> {
    match paid {
        Some((money_paid, quantity, months)) => {
            Ok(Some((money::div(*money_paid, *quantity, "a rate the ledger shows")?, seen(months))))
        }
        None => Ok(None),
    }
}

/// "paid in 2024-04, 2024-05".
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

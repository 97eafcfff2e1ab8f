//! A line of the cost report and what it is made of: money by component, usage by measure.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::Measure;
use crate::charge::{Category, YearMonth};
use crate::error::Result;
use crate::money;

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

    pub(super) fn add(&mut self, category: Category, amount: Decimal) -> Result<()> {
        let slot = self.slot(category);
        *slot = money::add(*slot, amount, "a line's cost")?;
        Ok(())
    }

    pub(super) fn add_all(&mut self, other: &Components) -> Result<()> {
        for &c in Category::ALL.iter().filter(|&&c| c != Category::Storage) {
            self.add(c, other.get(c))?;
        }
        Ok(())
    }

    /// The sum of every component.
    pub fn total(&self) -> Result<Decimal> {
        self.total_of("a line's all-in cost")
    }

    /// [`Components::total`], `what` naming the total in an error.
    pub(super) fn total_of(&self, what: &str) -> Result<Decimal> {
        let parts = [
            self.compute,
            self.system_disk,
            self.data_disk,
            self.snapshot,
            self.public_ip,
            self.traffic,
            self.other,
        ];
        money::sum(parts, what)
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
    /// Money of on-demand compute usage (what a plan would replace).
    pub on_demand: Decimal,
    /// Seconds of on-demand compute (the union of its spans).
    pub on_demand_seconds: i64,
}

impl Usage {
    fn add_all(&mut self, other: &Usage) -> Result<()> {
        self.compute_seconds += other.compute_seconds;
        self.gpu_seconds = self.gpu_seconds.zip(other.gpu_seconds).map(|(a, b)| a + b);
        self.on_seconds += other.on_seconds;
        self.off_seconds = self.off_seconds.zip(other.off_seconds).map(|(a, b)| a + b);
        self.on_demand = money::add(self.on_demand, other.on_demand, "a line's on-demand cost")?;
        self.on_demand_seconds += other.on_demand_seconds;
        for (m, q) in &other.quantities {
            self.add_quantity(*m, *q)?;
        }
        self.unmeasured.add_all(&other.unmeasured)
    }

    pub(super) fn add_quantity(&mut self, m: Measure, q: OnOff) -> Result<()> {
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

/// What a line that is no instance's holds ([`CostLine::apart`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Apart {
    /// A platform's charges linked to no instance, on a platform whose bills link them: its
    /// unattached line.
    Unattached,
    /// A platform's charges its bills link to no instance (AWS CUR, Azure, GCP, OCI): a disk
    /// billed under its own id is not known to be unattached.
    NotLinked,
    /// Compute that is no instance (a NAT gateway, a function, a managed database, a load
    /// balancer), of one service (empty when the bill names none): its money, no instance
    /// hours.
    Service(String),
}

impl Apart {
    /// The line's `line` word in the CSV: `unattached`, `not_linked` or `service`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Apart::Unattached => "unattached",
            Apart::NotLinked => "not_linked",
            Apart::Service(_) => "service",
        }
    }
}

/// One line of the cost report: an instance (or a group of them), a platform's unattached
/// (or not linked) charges, or a service's compute that is no instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostLine {
    /// The billing month.
    pub month: YearMonth,
    /// The value of each key asked for, in order (`None`: not one value, or unattached).
    pub keys: Vec<Option<String>>,
    /// Whether the line's charges are linked to an instance (false: [`CostLine::apart`]).
    pub attached: bool,
    /// What a line that is no instance's holds (`None` for an instance's).
    pub apart: Option<Apart>,
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

    pub(super) fn merge(&mut self, other: &CostLine) -> Result<()> {
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

//! What a charge bought, in the measure another platform's price is quoted in: disk GB·days,
//! snapshot GB·months, public-IP hours, traffic GB.
//!
//! Decisions:
//! - Only the quantity the bill states is measured: a quantity and a unit gpuaudit knows.
//!   A bill that charges a disk without a quantity (AutoDL's daily 数据盘 row) is measured
//!   from the disk's size in the instance's `[[instance]]` note (`data_disk_gb`,
//!   `system_disk_gb`) times the charge's span; without a note it is not measured, and its
//!   money is shown as unmeasured (never priced elsewhere as zero).
//! - A level (`GB`, `GiB`, an IP count) is held for the charge's span: 500 GB over one day is
//!   500 GB·days. A quantity already in time units (`GB-Mo`, `GB-Hours`, `GB·天`) is
//!   converted (a month is 30 days). GiB are converted to GB exactly (1 GiB =
//!   1.073741824 GB), TB and MB by 1000.
//! - Unknown units are not guessed at.

use rust_decimal::Decimal;

use crate::charge::Category;
use crate::config::InstanceNote;
use crate::error::Result;
use crate::money;

/// A measure of usage that is priced per unit elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Measure {
    /// System disk, GB·days.
    SystemDiskGbDays,
    /// Data disks, GB·days.
    DataDiskGbDays,
    /// Snapshots and images, GB·months (30 days).
    SnapshotGbMonths,
    /// Public IPs, IP-hours.
    PublicIpHours,
    /// Traffic, GB.
    TrafficGb,
}

impl Measure {
    /// Every measure, in the order reports list them.
    pub const ALL: &'static [Measure] = &[
        Measure::SystemDiskGbDays,
        Measure::DataDiskGbDays,
        Measure::SnapshotGbMonths,
        Measure::PublicIpHours,
        Measure::TrafficGb,
    ];

    /// The measure's name, as a column prefix.
    pub fn as_str(self) -> &'static str {
        match self {
            Measure::SystemDiskGbDays => "system_disk_gb_days",
            Measure::DataDiskGbDays => "data_disk_gb_days",
            Measure::SnapshotGbMonths => "snapshot_gb_months",
            Measure::PublicIpHours => "public_ip_hours",
            Measure::TrafficGb => "traffic_gb",
        }
    }

    /// The measure of a category's charges, if it has one.
    pub fn of(category: Category) -> Option<Measure> {
        match category {
            Category::SystemDisk => Some(Measure::SystemDiskGbDays),
            Category::DataDisk => Some(Measure::DataDiskGbDays),
            Category::Snapshot => Some(Measure::SnapshotGbMonths),
            Category::PublicIp => Some(Measure::PublicIpHours),
            Category::Traffic => Some(Measure::TrafficGb),
            _ => None,
        }
    }

    /// The category it measures.
    pub fn category(self) -> Category {
        match self {
            Measure::SystemDiskGbDays => Category::SystemDisk,
            Measure::DataDiskGbDays => Category::DataDisk,
            Measure::SnapshotGbMonths => Category::Snapshot,
            Measure::PublicIpHours => Category::PublicIp,
            Measure::TrafficGb => Category::Traffic,
        }
    }
}

/// GB per GiB, exactly.
const GB_PER_GIB: Decimal = Decimal::from_parts(1_073_741_824, 0, 0, false, 9);

/// A unit, lower case, without spaces, its separators (`·`, `*`, `×`, `/`, `_`) as `-`.
fn normal(unit: &str) -> String {
    unit.trim()
        .to_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| if matches!(c, '·' | '*' | '×' | '/' | '_') { '-' } else { c })
        .collect()
}

/// What a storage unit is: (GB per unit, days per unit, or `None` for a level held over the
/// charge's span).
fn storage_unit(unit: &str) -> Option<(Decimal, Option<Decimal>)> {
    let (size, rest) = if let Some(rest) = unit.strip_prefix("gib") {
        (GB_PER_GIB, rest)
    } else if let Some(rest) = unit.strip_prefix("gb") {
        (Decimal::ONE, rest)
    } else if let Some(rest) = unit.strip_prefix("tb") {
        (Decimal::ONE_THOUSAND, rest)
    } else {
        return None;
    };
    let days = match rest.trim_start_matches('-') {
        "" => None,
        "mo" | "month" | "months" | "月" => Some(Decimal::from(30)),
        "day" | "days" | "天" | "日" => Some(Decimal::ONE),
        "h" | "hr" | "hrs" | "hour" | "hours" | "小时" | "时" => {
            Some(Decimal::ONE / Decimal::from(24))
        }
        _ => return None,
    };
    Some((size, days))
}

/// `level` held for `seconds`, in `per` seconds (86,400: GB·days; 3,600: IP-hours); `None`
/// for a charge without a span. Whole days (hours) multiply without a division.
fn held(level: Decimal, seconds: i64, per: i64, what: &str) -> Result<Option<Decimal>> {
    if seconds <= 0 {
        return Ok(None);
    }
    if seconds % per == 0 {
        return money::mul(level, Decimal::from(seconds / per), what).map(Some);
    }
    money::div(money::mul(level, Decimal::from(seconds), what)?, Decimal::from(per), what).map(Some)
}

/// The usage a charge measures: its measure and amount, or `None` when the bill does not
/// state it (see the module docs).
pub(crate) fn measure(
    category: Category,
    unit: Option<&str>,
    quantity: Option<Decimal>,
    seconds: i64,
    note: Option<&InstanceNote>,
) -> Result<Option<(Measure, Decimal)>> {
    let Some(measure) = Measure::of(category) else { return Ok(None) };
    let what = "a charge's usage";
    let stated = match (quantity, unit.map(normal)) {
        (Some(q), Some(u)) => match measure {
            Measure::PublicIpHours => ip_hours(q, &u, seconds, what)?,
            Measure::TrafficGb => match storage_unit(&u) {
                Some((size, None)) => Some(money::mul(q, size, what)?),
                _ if u == "mb" => Some(money::div(q, Decimal::ONE_THOUSAND, what)?),
                _ => None,
            },
            _ => match storage_unit(&u) {
                Some((size, Some(days))) => {
                    Some(money::mul(money::mul(q, size, what)?, days, what)?)
                }
                Some((size, None)) => held(money::mul(q, size, what)?, seconds, 86_400, what)?,
                None => None,
            },
        },
        _ => None,
    };
    let amount = match (stated, measure, note) {
        (Some(a), _, _) => Some(a),
        (None, Measure::SystemDiskGbDays, Some(n)) => noted(n.system_disk_gb, seconds, what)?,
        (None, Measure::DataDiskGbDays, Some(n)) => noted(n.data_disk_gb, seconds, what)?,
        _ => None,
    };
    Ok(match (amount, measure) {
        (Some(gb_days), Measure::SnapshotGbMonths) => {
            Some((measure, money::div(gb_days, Decimal::from(30), what)?))
        }
        (amount, _) => amount.map(|a| (measure, a)),
    })
}

/// IP-hours of a public-IP charge: a quantity in hours or days, or a count of IPs held over
/// the charge's span.
fn ip_hours(q: Decimal, unit: &str, seconds: i64, what: &str) -> Result<Option<Decimal>> {
    Ok(match unit {
        "h" | "hr" | "hrs" | "hour" | "hours" | "小时" | "时" | "ip-hours" | "ip-hour" => {
            Some(q)
        }
        "day" | "days" | "天" | "日" => Some(money::mul(q, Decimal::from(24), what)?),
        "个" | "ip" | "ips" | "count" => held(q, seconds, 3600, what)?,
        _ => None,
    })
}

/// GB·days of a disk of `gb` (from a note) held for `seconds`.
fn noted(gb: Option<Decimal>, seconds: i64, what: &str) -> Result<Option<Decimal>> {
    match gb {
        Some(gb) => held(gb, seconds, 86_400, what),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    const DAY: i64 = 86_400;

    fn m(category: Category, unit: &str, q: Decimal, seconds: i64) -> Option<(Measure, Decimal)> {
        measure(category, Some(unit), Some(q), seconds, None).unwrap()
    }

    #[test]
    fn levels_are_held_over_the_span_and_time_units_converted() {
        assert_eq!(
            m(Category::DataDisk, "GB", dec!(500), DAY),
            Some((Measure::DataDiskGbDays, dec!(500)))
        );
        assert_eq!(m(Category::DataDisk, "GB", dec!(500), DAY / 2).unwrap().1, dec!(250));
        assert_eq!(m(Category::SystemDisk, "GB-Mo", dec!(2), 0).unwrap().1, dec!(60));
        assert_eq!(
            m(Category::SystemDisk, "GB-Hours", dec!(48), 0).unwrap().1.round_dp(12),
            dec!(2)
        );
        assert_eq!(m(Category::DataDisk, "GB·天", dec!(7), 0).unwrap().1, dec!(7));
        assert_eq!(m(Category::DataDisk, "GiB", dec!(1), DAY).unwrap().1, dec!(1.073741824));
        assert_eq!(
            m(Category::Snapshot, "GB", dec!(200), DAY),
            Some((Measure::SnapshotGbMonths, dec!(200) / dec!(30)))
        );
        assert_eq!(m(Category::PublicIp, "小时", dec!(24), DAY).unwrap().1, dec!(24));
        assert_eq!(m(Category::PublicIp, "个", dec!(2), DAY).unwrap().1, dec!(48));
        assert_eq!(m(Category::Traffic, "GB", dec!(18.5), DAY).unwrap().1, dec!(18.5));
        assert_eq!(m(Category::Traffic, "TB", dec!(0.5), DAY).unwrap().1, dec!(500));
        assert_eq!(m(Category::Traffic, "MB", dec!(250), DAY).unwrap().1, dec!(0.25));
    }

    #[test]
    fn what_the_bill_does_not_state_is_not_guessed() {
        assert_eq!(m(Category::DataDisk, "块", dec!(1), DAY), None);
        assert_eq!(m(Category::DataDisk, "GB", dec!(500), 0), None, "a level needs a span");
        assert_eq!(
            m(Category::Compute, "小时", dec!(1), 3600),
            None,
            "compute is measured in hours"
        );
        assert_eq!(measure(Category::DataDisk, None, None, DAY, None).unwrap(), None);
        let note = InstanceNote {
            platform: "autodl".into(),
            id: "i".into(),
            gpu_model: None,
            gpu_count: None,
            label: None,
            system_disk_gb: None,
            data_disk_gb: Some(dec!(200)),
        };
        let noted = measure(Category::DataDisk, None, None, DAY, Some(&note)).unwrap();
        assert_eq!(noted, Some((Measure::DataDiskGbDays, dec!(200))));
        let instant = measure(Category::DataDisk, None, None, 0, Some(&note)).unwrap();
        assert_eq!(instant, None, "a disk charged at an instant holds no GB·days");
    }
}

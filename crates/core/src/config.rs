//! `gpuaudit.toml`: waste thresholds, rate cards and notes about instances.
//!
//! Every field has a default, so an empty file (or none) is a valid configuration;
//! [`Config::defaults_toml`] prints them all. Money and thresholds are read into `Decimal`:
//! write them as strings (`"1.00"`) or as TOML numbers, which are read through their shortest
//! decimal text (what you typed, for up to 15 significant digits), never used as floats.
//! A figure has at most 12 decimals and is below 10^15, as a bill's must be.

use std::path::{Path, PathBuf};

use chrono::NaiveDate;

use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{ErrorKind, Result};

/// The whole configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Waste rule thresholds.
    pub waste: WasteConfig,
    /// Contracted or published prices per platform and GPU model.
    #[serde(rename = "rate")]
    pub rates: Vec<RateCard>,
    /// Prices of what is not a GPU (disks, snapshots, IPs, traffic) per platform, and what
    /// keeps billing while an instance is off.
    #[serde(rename = "platform_rate")]
    pub platform_rates: Vec<PlatformRate>,
    /// What bills do not say about an instance (AutoDL's GPU model, a team label).
    #[serde(rename = "instance")]
    pub instances: Vec<InstanceNote>,
    /// How bills are imported: the years their times may fall in.
    pub import: crate::import::Window,
    /// The file the configuration was read from (named in errors about its values).
    #[serde(skip)]
    pub path: Option<PathBuf>,
}

/// Thresholds of the waste rules (DESIGN.md § Rules: waste).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WasteConfig {
    /// W001: hours a disk may bill while its instance is off before it counts as waste.
    pub storage_grace_hours: u32,
    /// W002: the same for public IPs and bandwidth.
    pub ip_grace_hours: u32,
    /// W003/W001: days without any compute after which an instance counts as released.
    pub lookback_days: u32,
    /// W004: age in days after which an unused snapshot is stale.
    pub snapshot_days: u32,
    /// Findings below this amount (in the billing currency) are dropped.
    #[serde(deserialize_with = "decimal")]
    pub min_amount: Decimal,
    /// W006: traffic above this share of an instance's cost is flagged.
    #[serde(deserialize_with = "decimal")]
    pub traffic_share: Decimal,
}

impl Default for WasteConfig {
    fn default() -> Self {
        WasteConfig {
            storage_grace_hours: 72,
            ip_grace_hours: 24,
            lookback_days: 30,
            snapshot_days: 30,
            min_amount: Decimal::ONE,
            traffic_share: Decimal::new(30, 2),
        }
    }
}

/// A price list for one GPU model on one platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RateCard {
    /// Platform (profile name).
    pub platform: String,
    /// GPU model as the ledger or an `[[instance]]` note names it.
    pub gpu_model: String,
    /// On-demand price per instance-hour.
    #[serde(default, deserialize_with = "opt_price", skip_serializing_if = "Option::is_none")]
    pub on_demand_hourly: Option<Decimal>,
    /// Price of a weekly plan.
    #[serde(default, deserialize_with = "opt_price", skip_serializing_if = "Option::is_none")]
    pub weekly: Option<Decimal>,
    /// Price of a monthly plan.
    #[serde(default, deserialize_with = "opt_price", skip_serializing_if = "Option::is_none")]
    pub monthly: Option<Decimal>,
    /// GPUs of the instance the prices are for (1 when not given): a price per GPU-hour is
    /// the hourly price divided by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u16>,
    /// Currency of the prices; `gpuaudit cost --compare` refuses to price usage in another
    /// one (it never converts). When not given: the currency of the platform's bills.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// Where the prices come from (a price page, a quote, a contract).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The day they were read there (`2024-05-01`, quoted or not).
    #[serde(default, deserialize_with = "opt_date", skip_serializing_if = "Option::is_none")]
    pub as_of: Option<NaiveDate>,
}

/// A platform's prices of what is not a GPU, and which of those keep billing while an
/// instance is off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct PlatformRate {
    /// Platform (profile name).
    pub platform: String,
    /// System disk, per GB and day.
    #[serde(default, deserialize_with = "opt_price", skip_serializing_if = "Option::is_none")]
    pub system_disk_gb_day: Option<Decimal>,
    /// Data disk, per GB and day.
    #[serde(default, deserialize_with = "opt_price", skip_serializing_if = "Option::is_none")]
    pub data_disk_gb_day: Option<Decimal>,
    /// Snapshots and images, per GB and month (30 days).
    #[serde(default, deserialize_with = "opt_price", skip_serializing_if = "Option::is_none")]
    pub snapshot_gb_month: Option<Decimal>,
    /// A public IP, per hour.
    #[serde(default, deserialize_with = "opt_price", skip_serializing_if = "Option::is_none")]
    pub public_ip_hour: Option<Decimal>,
    /// Traffic out, per GB.
    #[serde(default, deserialize_with = "opt_price", skip_serializing_if = "Option::is_none")]
    pub egress_gb: Option<Decimal>,
    /// The categories that keep billing while the instance is off (`system_disk`,
    /// `data_disk`, `snapshot`, `public_ip`); overrides what gpuaudit knows of the platform
    /// (DOMAIN.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bills_while_off: Option<Vec<crate::charge::Category>>,
    /// Currency of the prices (as [`RateCard::currency`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// Where the prices come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The day they were read there.
    #[serde(default, deserialize_with = "opt_date", skip_serializing_if = "Option::is_none")]
    pub as_of: Option<NaiveDate>,
}

/// Facts about an instance that its bills do not carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct InstanceNote {
    /// Platform (profile name).
    pub platform: String,
    /// The instance id as the ledger has it.
    pub id: String,
    /// Its GPU model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_model: Option<String>,
    /// Its number of GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_count: Option<u16>,
    /// A project or team label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The size of its system disk in GB, for bills that charge the disk without a quantity.
    #[serde(default, deserialize_with = "opt_price", skip_serializing_if = "Option::is_none")]
    pub system_disk_gb: Option<Decimal>,
    /// The size of its paid data disk in GB, for bills that charge it without a quantity
    /// (AutoDL's daily 数据盘 row).
    #[serde(default, deserialize_with = "opt_price", skip_serializing_if = "Option::is_none")]
    pub data_disk_gb: Option<Decimal>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Number {
    Text(String),
    Int(i64),
    Float(f64),
}

fn to_decimal<E: serde::de::Error>(n: Number) -> Result<Decimal, E> {
    let text = match n {
        Number::Text(s) => s,
        Number::Int(i) => i.to_string(),
        Number::Float(f) => f.to_string(),
    };
    let d = text
        .trim()
        .parse::<Decimal>()
        .map_err(|_| E::custom(format!("{text:?} is not a number")))?;
    // The bounds of a bill's figures: what the sums of money are exact for.
    if d.normalize().scale() > crate::MAX_SCALE {
        return Err(E::custom(format!("{text:?} has more than {} decimals", crate::MAX_SCALE)));
    }
    if d.abs() >= crate::MAX_AMOUNT {
        return Err(E::custom(format!("{text:?} is 10^15 or more")));
    }
    Ok(d)
}

fn decimal<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
    to_decimal(Number::deserialize(d)?)
}

/// A price or a size: a number that is not negative.
fn opt_price<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Decimal>, D::Error> {
    let n = Option::<Number>::deserialize(d)?.map(to_decimal).transpose()?;
    match n {
        Some(n) if n.is_sign_negative() && !n.is_zero() => {
            Err(serde::de::Error::custom(format!("{n} is negative: a price is 0 or more")))
        }
        n => Ok(n),
    }
}

/// A day, written as a TOML date (`2024-05-01`) or as a string.
fn opt_date<'de, D: Deserializer<'de>>(d: D) -> Result<Option<NaiveDate>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Day {
        Text(String),
        Date(toml::value::Datetime),
    }
    let text = match Option::<Day>::deserialize(d)? {
        None => return Ok(None),
        Some(Day::Text(t)) => t,
        Some(Day::Date(d)) => d.to_string(),
    };
    NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
        .map(Some)
        .map_err(|_| serde::de::Error::custom(format!("{text:?} is not a date (YYYY-MM-DD)")))
}

impl Config {
    /// Parses a configuration file's text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let mut config: Config = toml::from_str(text).map_err(|e| {
            let message = e.to_string().trim_end().to_owned();
            crate::Error::from(ErrorKind::Config { path: path.to_owned(), message, source: e })
        })?;
        config.path = Some(path.to_owned());
        Ok(config)
    }

    /// Reads `path`, or returns the defaults when `path` is `None` or a default location
    /// that does not exist.
    pub fn load(path: &Path, required: bool) -> Result<Self> {
        match std::fs::read_to_string(path) {
            Ok(text) => Config::parse(&text, path),
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {
                Ok(Config::default())
            }
            Err(e) => Err(crate::Error::io(path, e)),
        }
    }

    /// Every default, as a commented TOML file.
    pub fn defaults_toml() -> String {
        let waste = toml::to_string(&Config::default().waste).unwrap_or_default();
        let import = toml::to_string(&Config::default().import).unwrap_or_default();
        format!(
            "# gpuaudit.toml: every setting and its default.\n\n[waste]\n{waste}\n\
             # The years a bill's times may fall in; a time outside them is refused.\n\
             [import]\n{import}\n\
             # Rate cards: prices per platform and GPU model (none by default); the currency is\n\
             # the platform's bills' when not given; prices are per instance-hour of `gpus` GPUs.\n\
             # [[rate]]\n# platform = \"autodl\"\n# gpu_model = \"RTX 4090\"\n\
             # on_demand_hourly = \"1.98\"\n# weekly = \"329.00\"\n# monthly = \"1000.00\"\n\
             # gpus = 1\n# currency = \"CNY\"\n# source = \"price page\"\n# as_of = 2024-05-01\n\n\
             # What is not a GPU, per platform (none by default), and what keeps billing while\n\
             # an instance is off (default: what is known of the platform).\n\
             # [[platform_rate]]\n# platform = \"gpushare\"\n# system_disk_gb_day = \"0.01\"\n\
             # data_disk_gb_day = \"0.0096\"\n# snapshot_gb_month = \"0.12\"\n\
             # public_ip_hour = \"0.02\"\n# egress_gb = \"0.80\"\n\
             # bills_while_off = [\"system_disk\", \"snapshot\", \"public_ip\"]\n\
             # currency = \"CNY\"\n# source = \"price page\"\n# as_of = 2024-05-01\n\n\
             # Instance notes: what a bill does not say (none by default).\n\
             # [[instance]]\n# platform = \"autodl\"\n# id = \"9d3f55aa01\"\n\
             # gpu_model = \"RTX 4090\"\n# gpu_count = 1\n# label = \"team-a\"\n\
             # system_disk_gb = 30\n# data_disk_gb = 200\n"
        )
    }

    /// The configuration as a TOML file.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// An error about the value of `key` (`rate[2].currency`) in this configuration file.
    pub fn value_error(&self, key: String, message: String) -> crate::Error {
        let path = self.path.clone().unwrap_or_else(|| PathBuf::from("gpuaudit.toml"));
        ErrorKind::ConfigValue { path, key, message }.into()
    }

    /// The `[[instance]]` note of an instance.
    pub fn note_of(&self, platform: &str, instance: &str) -> Option<&InstanceNote> {
        self.instances.iter().find(|n| n.platform == platform && n.id == instance)
    }

    /// The GPU model of an instance: the ledger's, else an `[[instance]]` note's.
    pub fn gpu_model_of(&self, platform: &str, instance: &str) -> Option<&str> {
        self.instances
            .iter()
            .find(|n| n.platform == platform && n.id == instance)
            .and_then(|n| n.gpu_model.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn the_printed_defaults_parse_back_to_the_defaults() {
        let text = Config::defaults_toml();
        assert!(text.contains("storage_grace_hours = 72"), "{text}");
        // Every commented example parses too.
        let examples: String = text
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| l.starts_with('[') || l.contains(" = "))
            .map(|l| format!("{l}\n"))
            .collect();
        let parsed = Config::parse(&examples, Path::new("d.toml")).unwrap();
        assert_eq!(parsed.platform_rates[0].bills_while_off.as_ref().map(Vec::len), Some(3));
        assert_eq!(parsed.instances[0].data_disk_gb, Some(Decimal::new(200, 0)));
        let parsed = Config::parse(&text, Path::new("d.toml")).unwrap();
        assert_eq!(Config { path: None, ..parsed }, Config::default());
    }

    #[test]
    fn money_reads_from_strings_and_numbers_without_floats_leaking() {
        let text = r#"
            [waste]
            min_amount = 0.10
            traffic_share = "0.25"
            [[rate]]
            platform = "autodl"
            gpu_model = "RTX 4090"
            monthly = 1000
            weekly = "329.00"
            on_demand_hourly = 1.98
        "#;
        let c = Config::parse(text, Path::new("g.toml")).unwrap();
        assert_eq!(c.waste.min_amount, dec!(0.1));
        assert_eq!(c.waste.traffic_share, dec!(0.25));
        assert_eq!(c.waste.storage_grace_hours, 72);
        let r = &c.rates[0];
        assert_eq!(
            (r.monthly, r.weekly, r.on_demand_hourly),
            (Some(dec!(1000)), Some(dec!(329.00)), Some(dec!(1.98)))
        );
    }

    #[test]
    fn unknown_settings_are_errors_that_name_the_file() {
        let err = Config::parse("[waste]\ngrace = 3\n", Path::new("g.toml")).unwrap_err();
        assert!(err.to_string().starts_with("g.toml: "), "{err}");
        assert!(err.to_string().contains("grace"), "{err}");
    }
}

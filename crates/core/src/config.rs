//! `gpuaudit.toml`: waste thresholds, rate cards and notes about instances.
//!
//! Every field has a default, so an empty file (or none) is a valid configuration;
//! [`Config::defaults_toml`] prints them all. Money and thresholds are read into `Decimal`:
//! write them as strings (`"1.00"`) or as TOML numbers, which are read through their shortest
//! decimal text (what you typed, for up to 15 significant digits), never used as floats.

use std::path::Path;

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
    /// What bills do not say about an instance (AutoDL's GPU model, a team label).
    #[serde(rename = "instance")]
    pub instances: Vec<InstanceNote>,
    /// How bills are imported: the years their times may fall in.
    pub import: crate::import::Window,
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateCard {
    /// Platform (profile name).
    pub platform: String,
    /// GPU model as the ledger or an `[[instance]]` note names it.
    pub gpu_model: String,
    /// On-demand price per instance-hour.
    #[serde(default, deserialize_with = "opt_decimal", skip_serializing_if = "Option::is_none")]
    pub on_demand_hourly: Option<Decimal>,
    /// Price of a weekly plan.
    #[serde(default, deserialize_with = "opt_decimal", skip_serializing_if = "Option::is_none")]
    pub weekly: Option<Decimal>,
    /// Price of a monthly plan.
    #[serde(default, deserialize_with = "opt_decimal", skip_serializing_if = "Option::is_none")]
    pub monthly: Option<Decimal>,
}

/// Facts about an instance that its bills do not carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    text.trim().parse::<Decimal>().map_err(|_| E::custom(format!("{text:?} is not a number")))
}

fn decimal<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
    to_decimal(Number::deserialize(d)?)
}

fn opt_decimal<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Decimal>, D::Error> {
    Option::<Number>::deserialize(d)?.map(to_decimal).transpose()
}

impl Config {
    /// Parses a configuration file's text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        toml::from_str(text).map_err(|e| {
            let message = e.to_string().trim_end().to_owned();
            ErrorKind::Config { path: path.to_owned(), message, source: e }.into()
        })
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
             # Rate cards: prices per platform and GPU model (none by default).\n\
             # [[rate]]\n# platform = \"autodl\"\n# gpu_model = \"RTX 4090\"\n\
             # on_demand_hourly = \"1.98\"\n# weekly = \"329.00\"\n# monthly = \"1000.00\"\n\n\
             # Instance notes: what a bill does not say (none by default).\n\
             # [[instance]]\n# platform = \"autodl\"\n# id = \"9d3f55aa01\"\n\
             # gpu_model = \"RTX 4090\"\n# gpu_count = 1\n# label = \"team-a\"\n"
        )
    }

    /// The configuration as a TOML file.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
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
        assert_eq!(Config::parse(&text, Path::new("d.toml")).unwrap(), Config::default());
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

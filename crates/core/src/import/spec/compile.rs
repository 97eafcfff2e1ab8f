//! Compiling a [`ProfileSpec`] into a [`Profile`]: columns by key, rules with column
//! indexes, regexes built, the default times and resource column chosen, step by step.

use std::collections::HashMap;
use std::path::Path;

use chrono_tz::Tz;

use super::*;
use crate::charge::{Category, Kind, Pricing};
use crate::error::{ErrorKind, Result};
use crate::import::row::Column;
use crate::parse::NumberFormat;

/// Column indexes of the ledger fields a profile maps.
#[derive(Debug, Default)]
pub(super) struct Fields {
    pub(super) posted: Option<usize>,
    pub(super) billing_period: Option<usize>,
    pub(super) account: Option<usize>,
    pub(super) sub_account: Option<usize>,
    pub(super) account_name: Option<usize>,
    pub(super) sub_account_name: Option<usize>,
    pub(super) resource_name: Option<usize>,
    pub(super) region: Option<usize>,
    pub(super) quantity: Option<usize>,
    pub(super) unit: Option<usize>,
    pub(super) unit_price: Option<usize>,
    pub(super) list_cost: Option<usize>,
    pub(super) billed_cost: usize,
    pub(super) currency: Option<usize>,
    pub(super) balance_after: Option<usize>,
    pub(super) gpu_count: Option<usize>,
    pub(super) gpu_model: Option<usize>,
    pub(super) platform: Option<usize>,
    pub(super) provider: Option<usize>,
    pub(super) native_id: Vec<usize>,
    pub(super) period_time: Option<usize>,
}

pub(super) struct CompiledRule<T> {
    pub(super) columns: Vec<usize>,
    pub(super) words: Vec<String>,
    pub(super) values: Vec<String>,
    pub(super) direction: Option<Direction>,
    pub(super) kind: Vec<Kind>,
    pub(super) category: Vec<Category>,
    pub(super) value: T,
}

pub(super) struct CompiledClassifier<T> {
    pub(super) default: T,
    pub(super) by_column: Vec<usize>,
    pub(super) rules: Vec<CompiledRule<T>>,
}

impl<T> CompiledClassifier<T> {
    fn columns_read(&self) -> Vec<usize> {
        self.rules.iter().flat_map(|r| r.columns.iter()).chain(&self.by_column).copied().collect()
    }
}

pub(super) enum ResourceSource {
    Column(usize),
    Template(String),
}

/// A profile compiled from a [`ProfileSpec`].
pub struct Profile {
    pub(super) spec: ProfileSpec,
    /// The file text it was read from (printed by `formats --show`).
    pub(super) source: String,
    pub(super) name: &'static str,
    pub(super) platform: &'static str,
    pub(super) former_platform: Option<&'static str>,
    pub(super) description: &'static str,
    pub(super) columns: &'static [Column],
    pub(super) zone: Tz,
    pub(super) fields: Fields,
    pub(super) item: Vec<usize>,
    /// The columns of [`ProfileSpec::service`] and [`ProfileSpec::usage`].
    pub(super) service: Vec<usize>,
    pub(super) usage: Vec<usize>,
    pub(super) direction: Option<usize>,
    pub(super) start: Vec<usize>,
    pub(super) end: Vec<usize>,
    pub(super) kind: CompiledClassifier<Kind>,
    pub(super) category: CompiledClassifier<Category>,
    pub(super) pricing: CompiledClassifier<Pricing>,
    /// Every column the three classifiers read: their answers depend on nothing else (and
    /// the direction), so a parser remembers them per distinct combination of these cells.
    pub(super) class_columns: Vec<usize>,
    pub(super) instance: Vec<(Vec<Category>, usize, regex::Regex)>,
    pub(super) resource: Vec<(Vec<Category>, ResourceSource)>,
    /// The `resource_id` column: the resource of a row no `[[resource]]` rule covers.
    pub(super) resource_column: Option<usize>,
    pub(super) gpu_models: Vec<(usize, String, String, Option<u16>)>,
}

/// The columns of a profile by key, for the steps of [`Profile::parse`].
struct Keys<'s> {
    index: HashMap<&'s str, usize>,
    path: &'s Path,
}

impl<'s> Keys<'s> {
    fn of(spec: &'s ProfileSpec, path: &'s Path) -> Self {
        let index = spec.columns.iter().enumerate().map(|(i, c)| (c.key.as_str(), i)).collect();
        Keys { index, path }
    }

    /// What is wrong with the profile file.
    fn bad(&self, message: String) -> crate::Error {
        ErrorKind::Profile { path: self.path.to_owned(), message, source: None }.into()
    }

    /// The column of `key`, which the profile uses.
    fn col(&self, key: &str) -> Result<usize> {
        self.index.get(key).copied().ok_or_else(|| {
            self.bad(format!("`{key}` is used but no [[columns]] entry has that key"))
        })
    }

    /// The columns of `keys`.
    fn cols(&self, keys: &[String]) -> Result<Vec<usize>> {
        keys.iter().map(|k| self.col(k)).collect()
    }

    /// The column of `key`, when the profile has one.
    fn opt(&self, key: &str) -> Option<usize> {
        self.index.get(key).copied()
    }
}

/// The columns of the ledger fields a profile maps.
fn fields(spec: &ProfileSpec, keys: &Keys<'_>) -> Result<Fields> {
    Ok(Fields {
        posted: keys.opt("posted"),
        billing_period: match spec.period.column.as_deref() {
            Some(c) => Some(keys.col(c)?),
            None => keys.opt("billing_period"),
        },
        account: keys.opt("account"),
        sub_account: keys.opt("sub_account"),
        account_name: keys.opt("account_name"),
        sub_account_name: keys.opt("sub_account_name"),
        resource_name: keys.opt("resource_name"),
        region: keys.opt("region"),
        quantity: keys.opt("quantity"),
        unit: keys.opt("unit"),
        unit_price: keys.opt("unit_price"),
        list_cost: keys.opt("list_cost"),
        billed_cost: keys.col("billed_cost")?,
        currency: keys.opt("currency"),
        balance_after: keys.opt("balance_after"),
        gpu_count: keys.opt("gpu_count"),
        gpu_model: keys.opt("gpu_model"),
        platform: keys.opt("platform"),
        provider: keys.opt("provider"),
        native_id: keys.cols(&spec.native_id.as_ref().map(OneOrMany::keys).unwrap_or_default())?,
        period_time: spec.period.time_column.as_deref().map(|c| keys.col(c)).transpose()?,
    })
}

/// The start and end columns: `[times]`'s, else the ledger fields' own (`charge_start`, else
/// `posted`; `charge_end`).
fn times(spec: &ProfileSpec, keys: &Keys<'_>) -> Result<(Vec<String>, Vec<String>)> {
    let present = |names: &[&str]| -> Vec<String> {
        names.iter().filter(|k| keys.opt(k).is_some()).map(|k| (*k).to_owned()).collect()
    };
    let defaults = spec.times.start.is_empty();
    let starts =
        if defaults { present(&["charge_start", "posted"]) } else { spec.times.start.clone() };
    let ends = if defaults && spec.times.end.is_empty() {
        present(&["charge_end"])
    } else {
        spec.times.end.clone()
    };
    if starts.is_empty() {
        return Err(keys.bad(
            "no time: [times] start names no column, and no column has the key `charge_start` or `posted`"
                .into(),
        ));
    }
    Ok((starts, ends))
}

/// A classifier with its columns found and its words in lower case.
fn classifier<T: Clone>(c: &Classifier<T>, keys: &Keys<'_>) -> Result<CompiledClassifier<T>> {
    let rules = c.rules.iter().map(|r| {
        Ok(CompiledRule {
            columns: keys.cols(&r.columns)?,
            words: r.words.iter().map(|w| w.to_ascii_lowercase()).collect(),
            values: r.values.clone(),
            direction: r.direction,
            kind: r.kind.clone(),
            category: r.category.clone(),
            value: r.value.clone(),
        })
    });
    Ok(CompiledClassifier {
        default: c.default.clone(),
        by_column: keys.cols(&c.by_column)?,
        rules: rules.collect::<Result<_>>()?,
    })
}

/// The `[[instance]]` rules, their regexes built (each with a capture group).
fn instances(
    spec: &ProfileSpec,
    keys: &Keys<'_>,
) -> Result<Vec<(Vec<Category>, usize, regex::Regex)>> {
    spec.instance
        .iter()
        .map(|e| {
            let re = regex::Regex::new(&e.regex)
                .map_err(|err| keys.bad(format!("regex {:?}: {err}", e.regex)))?;
            if re.captures_len() < 2 {
                return Err(keys.bad(format!("regex {:?} has no capture group", e.regex)));
            }
            Ok((e.category.clone(), keys.col(&e.column)?, re))
        })
        .collect()
}

/// The `[[resource]]` rules: a column or a template each.
fn resources(spec: &ProfileSpec, keys: &Keys<'_>) -> Result<Vec<(Vec<Category>, ResourceSource)>> {
    spec.resource
        .iter()
        .map(|r| {
            let source = match (&r.column, &r.template) {
                (Some(c), None) => ResourceSource::Column(keys.col(c)?),
                (None, Some(t)) => ResourceSource::Template(t.clone()),
                _ => {
                    return Err(keys.bad("a [[resource]] has either a column or a template".into()));
                }
            };
            Ok((r.category.clone(), source))
        })
        .collect()
}

/// The profile's columns as detection reads them, for the program's lifetime.
fn columns(spec: &ProfileSpec) -> &'static [Column] {
    let columns: Vec<Column> = spec
        .columns
        .iter()
        .map(|c| Column {
            key: leak(&c.key),
            aliases: Box::leak(
                c.aliases.iter().map(|a| leak(a)).collect::<Vec<_>>().into_boxed_slice(),
            ),
            required: c.required,
        })
        .collect();
    Box::leak(columns.into_boxed_slice())
}

pub(super) fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

impl Profile {
    /// Compiles a profile file's text; `path` names it in errors. The steps, in order (the
    /// first problem found is the one reported): the TOML, the columns and their aliases, the
    /// zone, the ledger fields' columns, the period, the times, the instance regexes, the
    /// resource rules, the classifiers, and the columns the rest name.
    pub fn parse(text: &str, path: &Path) -> Result<&'static Profile> {
        let spec: ProfileSpec = toml::from_str(text).map_err(|e| ErrorKind::Profile {
            path: path.to_owned(),
            message: e.to_string().trim_end().to_owned(),
            source: Some(e),
        })?;
        let keys = Keys::of(&spec, path);
        if let Some(c) = spec.columns.iter().find(|c| c.aliases.is_empty()) {
            return Err(keys.bad(format!("column `{}` has no aliases", c.key)));
        }
        let zone: Tz =
            spec.zone.parse().map_err(|_| keys.bad(format!("unknown zone {:?}", spec.zone)))?;
        let fields = fields(&spec, &keys)?;
        let names = std::iter::once(spec.platform.as_deref().unwrap_or(&spec.name))
            .chain(spec.providers.iter().map(|p| p.platform.as_str()))
            .chain(spec.former_platform.as_deref());
        for name in names {
            if !super::fields::is_platform_name(name) {
                return Err(keys.bad(format!(
                    "{name:?} cannot name a platform: 1 to 40 lower-case letters, digits, `-` or `_`"
                )));
            }
        }
        if !matches!(spec.period.from.as_deref(), None | Some("posted") | Some("start")) {
            return Err(keys.bad("[period] from must be \"posted\" or \"start\"".into()));
        }
        let (starts, ends) = times(&spec, &keys)?;
        let instance = instances(&spec, &keys)?;
        for re in &spec.vm_ids {
            regex::Regex::new(re).map_err(|err| keys.bad(format!("vm_ids {re:?}: {err}")))?;
        }
        let resource = resources(&spec, &keys)?;
        let (kind, category, pricing) = (
            classifier(&spec.kind, &keys)?,
            classifier(&spec.category, &keys)?,
            classifier(&spec.pricing, &keys)?,
        );
        let mut class_columns: Vec<usize> =
            [kind.columns_read(), category.columns_read(), pricing.columns_read()].concat();
        class_columns.sort_unstable();
        class_columns.dedup();
        let profile = Profile {
            name: leak(&spec.name),
            platform: leak(spec.platform.as_deref().unwrap_or(&spec.name)),
            former_platform: spec.former_platform.as_deref().map(leak),
            description: leak(&spec.description),
            columns: columns(&spec),
            zone,
            fields,
            item: keys.cols(&spec.item)?,
            service: keys.cols(&spec.service)?,
            usage: keys.cols(&spec.usage)?,
            direction: spec.sign.direction.as_deref().map(|c| keys.col(c)).transpose()?,
            start: keys.cols(&starts)?,
            end: keys.cols(&ends)?,
            resource_column: keys.opt("resource_id"),
            kind,
            category,
            pricing,
            class_columns,
            instance,
            resource,
            gpu_models: spec
                .gpu_models
                .iter()
                .map(|g| {
                    let prefix = g.prefix.to_ascii_lowercase();
                    Ok((keys.col(&g.column)?, prefix, g.model.clone(), g.gpus))
                })
                .collect::<Result<_>>()?,
            source: text.to_owned(),
            spec,
        };
        Ok(Box::leak(Box::new(profile)))
    }

    /// Reads and compiles a profile file.
    pub fn load(path: &Path) -> Result<&'static Profile> {
        let text = std::fs::read_to_string(path).map_err(|e| crate::Error::io(path, e))?;
        Profile::parse(&text, path)
    }

    /// The profile as written.
    pub fn spec(&self) -> &ProfileSpec {
        &self.spec
    }

    /// The profile file's text, comments included.
    pub fn source(&self) -> &str {
        &self.source
    }
}

impl Profile {
    /// Short stable name, used by `--profile`.
    pub fn name(&self) -> &'static str {
        self.name
    }
    /// The platform this profile's charges were stored under before it was renamed, if any.
    pub fn former_platform(&self) -> Option<&'static str> {
        self.former_platform
    }
    /// The ledger's `platform` of the charges the profile reads (its name unless it says
    /// otherwise).
    pub fn platform(&self) -> &'static str {
        self.platform
    }
    /// One line saying what the format is.
    pub fn description(&self) -> &'static str {
        self.description
    }
    /// The columns the profile reads.
    pub fn columns(&self) -> &'static [Column] {
        self.columns
    }
    /// Index in [`Profile::columns`] of the billed-cost column (read from footer rows).
    pub fn billed_column(&self) -> Option<usize> {
        Some(self.fields.billed_cost)
    }
    /// The zone naive times are in, and where days and months are cut.
    pub fn zone(&self) -> Tz {
        self.zone
    }
    /// A parser for one file.
    pub(crate) fn parser(&self) -> Parser<'_> {
        Parser {
            profile: self,
            kept: Vec::new(),
            file: None,
            last_time: vec![None; self.columns.len()],
            classes: HashMap::new(),
            class_key: String::new(),
            locations: self.instance.iter().map(|(_, _, re)| re.capture_locations()).collect(),
            texts: Vec::new(),
            unmapped: None,
            unmapped_bytes: Vec::new(),
            last_provider: None,
        }
    }
    /// Whether each row is read on its own (no rule looks at other rows): the rows of a big
    /// file are then parsed on several threads. When false, one parser sees every row in order.
    pub fn rows_independent(&self) -> bool {
        !self.spec.times.rules.iter().any(|r| r.span == SpanRule::SincePreviousRow)
    }
    /// The money a row's unit price times its quantity comes to.
    pub fn unit_price_of(&self) -> UnitPriceOf {
        self.spec.unit_price_of
    }
    /// Whether the platform's bills say which instance a disk, an IP or a snapshot belongs
    /// to ([`ProfileSpec::bill_links_storage`]).
    pub fn bill_links_storage(&self) -> bool {
        self.spec.bill_links_storage
    }
    /// The words by which the bill's usage text says a public IP was idle
    /// ([`ProfileSpec::idle_ip_usage`]), lower case.
    pub fn idle_ip_usage(&self) -> Vec<String> {
        self.spec.idle_ip_usage.iter().map(|w| w.to_ascii_lowercase()).collect()
    }
    /// Which compute rows carry no GPU ([`ProfileSpec::no_gpu`]).
    pub fn no_gpu(&self) -> Option<&NoGpu> {
        self.spec.no_gpu.as_ref()
    }
    /// The regexes of the instance ids that are virtual machines ([`ProfileSpec::vm_ids`]).
    pub fn vm_ids(&self) -> &[String] {
        &self.spec.vm_ids
    }
    /// Whether an end at `hh:59:59` closes the whole hour
    /// ([`ProfileSpec::end_second_inclusive`]).
    pub fn end_second_inclusive(&self) -> bool {
        self.spec.end_second_inclusive
    }
    /// Columns whose presence makes a file one the profile cannot read right.
    pub(crate) fn refused_columns(&self) -> &[RefusedColumn] {
        &self.spec.refused_columns
    }
    /// The profile's columns that make a row's native id (none: the format has none).
    #[cfg(feature = "store")]
    pub(crate) fn native_id_columns(&self) -> &[usize] {
        &self.fields.native_id
    }
    /// How the format writes numbers.
    pub fn number_format(&self) -> NumberFormat {
        NumberFormat { decimal: self.spec.decimal_separator, grouping: self.spec.digit_grouping }
    }
}

impl std::fmt::Debug for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Profile({})", self.name)
    }
}

//! Profiles as data: a TOML file describes a bill format, and one engine reads every format.
//!
//! The built-in profiles are TOML files compiled into the binary (`crates/core/profiles/`);
//! `gpuaudit formats --show NAME` prints one, and a user passes their own with
//! `--profile FILE` or drops it in a `profiles/` folder. The format, field by field, is
//! documented in the built-in files' comments and in the README.
//!
//! How a row becomes a charge, in order:
//! 1. `billed_cost` (required) and the other money columns are parsed; `[sign]` turns a
//!    direction column (支出/收入) into signs: expense positive, income negative.
//! 2. `[kind]`, then `[category]`, then `[pricing]`: the first rule whose conditions hold
//!    gives the value. A rule's `words` are looked for (ASCII case ignored) in its `columns`;
//!    with `by_column`, the columns are tried one at a time, in order, and the first column a
//!    rule matches decides. `[sign] negative_kinds` makes those kinds negative.
//! 3. `[[instance]]`: the first capture group of the first regex that matches its column.
//!    `[[resource]]`: a column, or a template such as `{instance}/data_disk`, by category.
//! 4. `[times]`: start is the first non-empty of its columns, end likewise (else the start);
//!    `[[times.rules]]` can make a row cover the local day of its posting time, or the time
//!    since the previous row of its instance (at most `max_hours`) — those rows are kept until
//!    the file is read.
//! 5. `[period]`: a billing-period column, or the local month of the posting time (`from =
//!    "posted"`), else of the start.
//!
//! Profiles live as long as the program: a loaded profile is leaked on purpose (a few KB),
//! which lets every profile, built-in or not, be a `&'static dyn Profile`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use chrono::{DateTime, Datelike, Duration, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

use crate::charge::{Category, Kind, Pricing, YearMonth, local_midnight};
use crate::error::{ErrorKind, Result, RowError};
use crate::import::profile::{Column, Parsed, Profile, RowParser};
use crate::import::source::Row;
use crate::parse::{DecimalSeparator, NumberFormat};

/// A bill format, as written in a profile file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSpec {
    /// Short stable name: the ledger's `platform`, unless `platform` says otherwise.
    pub name: String,
    /// The ledger's `platform` when it is not `name`: two profiles of one platform's bills
    /// (Tencent's 明细账单 and 资源账单) put their charges on the same platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// One line saying what the format is.
    #[serde(default)]
    pub description: String,
    /// Currency when the bill has no currency column.
    #[serde(default = "default_currency")]
    pub currency: String,
    /// IANA zone of naive times, where days and months are cut.
    pub zone: String,
    /// The column (or columns, joined) whose value identifies a row, when the format has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_id: Option<OneOrMany>,
    /// The character between the whole and the fractional part of numbers: `"."` (the
    /// default; a comma may then only separate groups of three digits) or `","` (bills saved
    /// by spreadsheets in many locales, usually `;`-separated: `1.234,56`).
    #[serde(default, skip_serializing_if = "is_point")]
    pub decimal_separator: DecimalSeparator,
    /// The money a row's `unit_price × quantity` comes to: `"list_cost"` (the default: the
    /// list cost where the row has one, else the billed cost) or `"billed_cost"` (AWS CUR,
    /// whose unblended rate prices the unblended cost, while its list cost is the public
    /// on-demand price even on rows a reservation covers). R001 compares the two.
    #[serde(default, skip_serializing_if = "is_list_cost")]
    pub unit_price_of: UnitPriceOf,
    /// Whether amounts may group digits in threes (`1,234.56`; the default). Machine exports
    /// (FOCUS, AWS CUR) say `false`: a comma in their numbers is never a thousands separator.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub digit_grouping: bool,
    /// Cell texts meaning "no value" (such as `NULL`), besides the empty cell.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nulls: Vec<String>,
    /// Columns giving the bill's words for the item (first non-empty).
    #[serde(default)]
    pub item: Vec<String>,
    /// The columns, each with its header aliases.
    pub columns: Vec<ColumnSpec>,
    /// Sign rules.
    #[serde(default)]
    pub sign: SignSpec,
    /// Where the billing period comes from.
    #[serde(default)]
    pub period: PeriodSpec,
    /// Where the charge's time comes from; by default the `charge_start` column, else
    /// `posted`, and the `charge_end` column.
    #[serde(default)]
    pub times: TimesSpec,
    /// Kind rules.
    #[serde(default)]
    pub kind: Classifier<Kind>,
    /// Category rules.
    #[serde(default)]
    pub category: Classifier<Category>,
    /// Pricing rules.
    #[serde(default)]
    pub pricing: Classifier<Pricing>,
    /// Where the instance id comes from.
    #[serde(default)]
    pub instance: Vec<Extract>,
    /// Where the resource id comes from.
    #[serde(default)]
    pub resource: Vec<ResourceRule>,
    /// GPU models by the prefix of a column (compute rows only).
    #[serde(default)]
    pub gpu_models: Vec<GpuModel>,
}

/// A column name, or a list of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// One column.
    One(String),
    /// Several columns.
    Many(Vec<String>),
}

impl OneOrMany {
    fn keys(&self) -> Vec<String> {
        match self {
            OneOrMany::One(k) => vec![k.clone()],
            OneOrMany::Many(ks) => ks.clone(),
        }
    }
}

/// The money a unit price multiplies to (see [`ProfileSpec::unit_price_of`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitPriceOf {
    /// The list cost where the row has one, else the billed cost.
    #[default]
    ListCost,
    /// The billed cost.
    BilledCost,
}

fn is_list_cost(of: &UnitPriceOf) -> bool {
    *of == UnitPriceOf::ListCost
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_point(separator: &DecimalSeparator) -> bool {
    *separator == DecimalSeparator::Point
}

fn default_currency() -> String {
    "CNY".into()
}

/// One column of the bill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnSpec {
    /// A ledger field (`posted`, `charge_start`, `charge_end`, `billing_period`, `account`,
    /// `resource_id`, `resource_name`, `region`, `quantity`, `unit`, `unit_price`, `list_cost`,
    /// `billed_cost`, `currency`, `balance_after`, `gpu_count`) or a name the rules use.
    pub key: String,
    /// Header names, trimmed, ASCII case ignored; the first is shown in errors.
    pub aliases: Vec<String>,
    /// Whether a file without it is not of this format.
    #[serde(default)]
    pub required: bool,
}

/// How amounts get their sign.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignSpec {
    /// A column saying expense or income; then expense is positive, income negative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    /// Words of that column meaning expense.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expense: Vec<String>,
    /// Words of that column meaning income.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub income: Vec<String>,
    /// Kinds whose amounts are negative whatever the bill prints (refunds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub negative_kinds: Vec<Kind>,
}

/// Where the billing period comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeriodSpec {
    /// A column holding `YYYY-MM` or `YYYYMM`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// Or a column holding a time: its month in the profile's zone. A file without the
    /// column (either one) takes the period from `from`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_column: Option<String>,
    /// Else `posted` (the local month of the posting time) or `start` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// Where the charge's time comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimesSpec {
    /// Columns giving the start, first non-empty wins (by default `charge_start`, then
    /// `posted`, those of them that the profile has).
    #[serde(default)]
    pub start: Vec<String>,
    /// Columns giving the end (exclusive); the start when none (by default `charge_end`, when
    /// the profile has it).
    #[serde(default)]
    pub end: Vec<String>,
    /// Rules that derive the span from the posting time.
    #[serde(default)]
    pub rules: Vec<TimeRule>,
}

/// A time span derived from the posting time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeRule {
    /// Only for these categories (all when empty).
    #[serde(default)]
    pub category: Vec<Category>,
    /// Only for these kinds (all when empty).
    #[serde(default)]
    pub kind: Vec<Kind>,
    /// `local-day` or `since-previous-row`.
    pub span: SpanRule,
    /// For `since-previous-row`: the longest span, in hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_hours: Option<u32>,
}

/// The spans a time rule can give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpanRule {
    /// The local day of the start.
    LocalDay,
    /// Since the previous row of the same instance (at most `max_hours`), up to the start.
    SincePreviousRow,
}

/// Rules giving one value (a kind, a category, a pricing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Classifier<T> {
    /// The value when no rule holds.
    pub default: T,
    /// Try the rules against these columns one at a time (see the module docs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_column: Vec<String>,
    /// The rules, in order.
    #[serde(default)]
    pub rules: Vec<ClassRule<T>>,
}

impl<T: Default> Default for Classifier<T> {
    fn default() -> Self {
        Classifier { default: T::default(), by_column: Vec::new(), rules: Vec::new() }
    }
}

/// Expense or income.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Money out.
    Expense,
    /// Money in.
    Income,
}

/// One rule: conditions and the value it gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassRule<T> {
    /// Columns the words are looked for in (ignored with `by_column`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<String>,
    /// Any of these words (ASCII case ignored); no words: no text condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<String>,
    /// Or a cell equal to one of these values (codes such as `4`), ASCII case ignored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    /// Only rows of this direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// Only rows of these kinds (for category and pricing rules).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kind: Vec<Kind>,
    /// Only rows of these categories (for pricing rules).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub category: Vec<Category>,
    /// The value given.
    pub value: T,
}

/// A regex run on a column; its first capture group is the value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Extract {
    /// Only for these categories (all when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub category: Vec<Category>,
    /// The column.
    pub column: String,
    /// The regex (Rust `regex` syntax).
    pub regex: String,
}

/// Where a category's resource id comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceRule {
    /// Only for these categories (all when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub category: Vec<Category>,
    /// A column holding the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// Or a template with `{instance}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

/// A GPU model named by the prefix of a column's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuModel {
    /// The column.
    pub column: String,
    /// The prefix (ASCII case ignored).
    pub prefix: String,
    /// The model.
    pub model: String,
}

/// Column indexes of the ledger fields a profile maps.
#[derive(Debug, Default)]
struct Fields {
    posted: Option<usize>,
    billing_period: Option<usize>,
    account: Option<usize>,
    resource_name: Option<usize>,
    region: Option<usize>,
    quantity: Option<usize>,
    unit: Option<usize>,
    unit_price: Option<usize>,
    list_cost: Option<usize>,
    billed_cost: usize,
    currency: Option<usize>,
    balance_after: Option<usize>,
    gpu_count: Option<usize>,
    native_id: Vec<usize>,
    period_time: Option<usize>,
}

struct CompiledRule<T> {
    columns: Vec<usize>,
    words: Vec<String>,
    values: Vec<String>,
    direction: Option<Direction>,
    kind: Vec<Kind>,
    category: Vec<Category>,
    value: T,
}

struct CompiledClassifier<T> {
    default: T,
    by_column: Vec<usize>,
    rules: Vec<CompiledRule<T>>,
}

impl<T> CompiledClassifier<T> {
    fn columns_read(&self) -> Vec<usize> {
        self.rules.iter().flat_map(|r| r.columns.iter()).chain(&self.by_column).copied().collect()
    }
}

enum ResourceSource {
    Column(usize),
    Template(String),
}

/// A profile compiled from a [`ProfileSpec`].
pub struct SpecProfile {
    spec: ProfileSpec,
    /// The file text it was read from (printed by `formats --show`).
    source: String,
    name: &'static str,
    platform: &'static str,
    description: &'static str,
    columns: &'static [Column],
    zone: Tz,
    fields: Fields,
    item: Vec<usize>,
    direction: Option<usize>,
    start: Vec<usize>,
    end: Vec<usize>,
    kind: CompiledClassifier<Kind>,
    category: CompiledClassifier<Category>,
    pricing: CompiledClassifier<Pricing>,
    /// Every column the three classifiers read: their answers depend on nothing else (and
    /// the direction), so a parser remembers them per distinct combination of these cells.
    class_columns: Vec<usize>,
    instance: Vec<(Vec<Category>, usize, regex::Regex)>,
    resource: Vec<(Vec<Category>, ResourceSource)>,
    /// The `resource_id` column: the resource of a row no `[[resource]]` rule covers.
    resource_column: Option<usize>,
    gpu_models: Vec<(usize, String, String)>,
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

impl SpecProfile {
    /// Compiles a profile file's text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<&'static SpecProfile> {
        let bad = |m: String| ErrorKind::Usage(format!("profile {}: {m}", path.display()));
        let spec: ProfileSpec =
            toml::from_str(text).map_err(|e| bad(e.to_string().trim_end().to_owned()))?;
        let index: HashMap<&str, usize> =
            spec.columns.iter().enumerate().map(|(i, c)| (c.key.as_str(), i)).collect();
        let col = |key: &str| -> Result<usize> {
            index.get(key).copied().ok_or_else(|| {
                bad(format!("`{key}` is used but no [[columns]] entry has that key")).into()
            })
        };
        let cols = |keys: &[String]| keys.iter().map(|k| col(k)).collect::<Result<Vec<_>>>();
        let opt = |key: &str| index.get(key).copied();
        for c in &spec.columns {
            if c.aliases.is_empty() {
                return Err(bad(format!("column `{}` has no aliases", c.key)).into());
            }
        }
        let zone: Tz =
            spec.zone.parse().map_err(|_| bad(format!("unknown zone {:?}", spec.zone)))?;
        let fields = Fields {
            posted: opt("posted"),
            billing_period: match spec.period.column.as_deref() {
                Some(c) => Some(col(c)?),
                None => opt("billing_period"),
            },
            account: opt("account"),
            resource_name: opt("resource_name"),
            region: opt("region"),
            quantity: opt("quantity"),
            unit: opt("unit"),
            unit_price: opt("unit_price"),
            list_cost: opt("list_cost"),
            billed_cost: col("billed_cost")?,
            currency: opt("currency"),
            balance_after: opt("balance_after"),
            gpu_count: opt("gpu_count"),
            native_id: cols(&spec.native_id.as_ref().map(OneOrMany::keys).unwrap_or_default())?,
            period_time: spec.period.time_column.as_deref().map(col).transpose()?,
        };
        if !matches!(spec.period.from.as_deref(), None | Some("posted") | Some("start")) {
            return Err(bad("[period] from must be \"posted\" or \"start\"".into()).into());
        }
        // The default times: the ledger fields' own columns.
        let present = |keys: &[&str]| -> Vec<String> {
            keys.iter().filter(|k| index.contains_key(*k)).map(|k| (*k).to_owned()).collect()
        };
        let starts = if spec.times.start.is_empty() {
            present(&["charge_start", "posted"])
        } else {
            spec.times.start.clone()
        };
        let ends = if spec.times.start.is_empty() && spec.times.end.is_empty() {
            present(&["charge_end"])
        } else {
            spec.times.end.clone()
        };
        if starts.is_empty() {
            return Err(bad(
                "no time: [times] start names no column, and no column has the key `charge_start` or `posted`"
                    .into(),
            )
            .into());
        }
        fn classifier<T: Clone>(
            c: &Classifier<T>,
            cols: &dyn Fn(&[String]) -> Result<Vec<usize>>,
        ) -> Result<CompiledClassifier<T>> {
            Ok(CompiledClassifier {
                default: c.default.clone(),
                by_column: cols(&c.by_column)?,
                rules: c
                    .rules
                    .iter()
                    .map(|r| {
                        Ok(CompiledRule {
                            columns: cols(&r.columns)?,
                            words: r.words.iter().map(|w| w.to_ascii_lowercase()).collect(),
                            values: r.values.clone(),
                            direction: r.direction,
                            kind: r.kind.clone(),
                            category: r.category.clone(),
                            value: r.value.clone(),
                        })
                    })
                    .collect::<Result<_>>()?,
            })
        }
        let instance = spec
            .instance
            .iter()
            .map(|e| {
                let re = regex::Regex::new(&e.regex)
                    .map_err(|err| bad(format!("regex {:?}: {err}", e.regex)))?;
                if re.captures_len() < 2 {
                    return Err(bad(format!("regex {:?} has no capture group", e.regex)).into());
                }
                Ok((e.category.clone(), col(&e.column)?, re))
            })
            .collect::<Result<_>>()?;
        let resource = spec
            .resource
            .iter()
            .map(|r| {
                let source = match (&r.column, &r.template) {
                    (Some(c), None) => ResourceSource::Column(col(c)?),
                    (None, Some(t)) => ResourceSource::Template(t.clone()),
                    _ => {
                        return Err(
                            bad("a [[resource]] has either a column or a template".into()).into()
                        );
                    }
                };
                Ok((r.category.clone(), source))
            })
            .collect::<Result<_>>()?;
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
        let (kind, category, pricing) = (
            classifier(&spec.kind, &cols)?,
            classifier(&spec.category, &cols)?,
            classifier(&spec.pricing, &cols)?,
        );
        let mut class_columns: Vec<usize> =
            [kind.columns_read(), category.columns_read(), pricing.columns_read()].concat();
        class_columns.sort_unstable();
        class_columns.dedup();
        let profile = SpecProfile {
            name: leak(&spec.name),
            platform: leak(spec.platform.as_deref().unwrap_or(&spec.name)),
            description: leak(&spec.description),
            columns: Box::leak(columns.into_boxed_slice()),
            zone,
            fields,
            item: cols(&spec.item)?,
            direction: spec.sign.direction.as_deref().map(col).transpose()?,
            start: cols(&starts)?,
            end: cols(&ends)?,
            resource_column: opt("resource_id"),
            kind,
            category,
            pricing,
            class_columns,
            instance,
            resource,
            gpu_models: spec
                .gpu_models
                .iter()
                .map(|g| Ok((col(&g.column)?, g.prefix.to_ascii_lowercase(), g.model.clone())))
                .collect::<Result<_>>()?,
            source: text.to_owned(),
            spec,
        };
        Ok(Box::leak(Box::new(profile)))
    }

    /// Reads and compiles a profile file.
    pub fn load(path: &Path) -> Result<&'static SpecProfile> {
        let text = std::fs::read_to_string(path).map_err(|e| crate::Error::io(path, e))?;
        SpecProfile::parse(&text, path)
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

impl Profile for SpecProfile {
    fn name(&self) -> &'static str {
        self.name
    }
    fn platform(&self) -> &'static str {
        self.platform
    }
    fn description(&self) -> &'static str {
        self.description
    }
    fn columns(&self) -> &'static [Column] {
        self.columns
    }
    fn billed_column(&self) -> Option<usize> {
        Some(self.fields.billed_cost)
    }
    fn zone(&self) -> Tz {
        self.zone
    }
    fn parser(&self) -> Box<dyn RowParser + '_> {
        Box::new(SpecParser {
            profile: self,
            kept: Vec::new(),
            file: None,
            last_time: vec![None; self.columns.len()],
            classes: HashMap::new(),
            class_key: String::new(),
            locations: self.instance.iter().map(|(_, _, re)| re.capture_locations()).collect(),
            texts: Vec::new(),
            unmapped: None,
        })
    }
    fn rows_independent(&self) -> bool {
        !self.spec.times.rules.iter().any(|r| r.span == SpanRule::SincePreviousRow)
    }
    fn as_spec(&self) -> Option<&SpecProfile> {
        Some(self)
    }
    fn unit_price_of(&self) -> UnitPriceOf {
        self.spec.unit_price_of
    }
    fn number_format(&self) -> NumberFormat {
        NumberFormat { decimal: self.spec.decimal_separator, grouping: self.spec.digit_grouping }
    }
}

static BUILTIN_FILES: &[(&str, &str)] = &[
    ("autodl.toml", include_str!("../../profiles/autodl.toml")),
    ("aliyun.toml", include_str!("../../profiles/aliyun.toml")),
    ("focus.toml", include_str!("../../profiles/focus.toml")),
    ("aws-cur.toml", include_str!("../../profiles/aws-cur.toml")),
    ("tencent.toml", include_str!("../../profiles/tencent.toml")),
    ("tencent-resource.toml", include_str!("../../profiles/tencent-resource.toml")),
    ("ctyun.toml", include_str!("../../profiles/ctyun.toml")),
    ("gpushare.toml", include_str!("../../profiles/gpushare.toml")),
];

/// The built-in profiles, compiled once from the files in `crates/core/profiles/`.
pub fn builtin() -> &'static [&'static dyn Profile] {
    static BUILTIN: OnceLock<Vec<&'static dyn Profile>> = OnceLock::new();
    BUILTIN.get_or_init(|| {
        BUILTIN_FILES
            .iter()
            .map(|(file, text)| {
                let profile: &'static dyn Profile = SpecProfile::parse(text, Path::new(file))
                    .unwrap_or_else(|e| panic!("built-in profile {file} is broken: {e}"));
                profile
            })
            .collect()
    })
}

/// The profile files (`*.toml`) of a folder, in name order; none when it does not exist.
pub fn load_dir(dir: &Path) -> Result<Vec<&'static SpecProfile>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(crate::Error::io(dir, e)),
    };
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| crate::Error::io(dir, e))?.path();
        if path.extension().is_some_and(|x| x == "toml") {
            paths.push(path);
        }
    }
    paths.sort();
    paths.iter().map(|p| SpecProfile::load(p)).collect()
}

/// The built-in profiles with `extra` added; an extra profile with a built-in's name
/// replaces it.
pub fn with_extra(extra: &[&'static SpecProfile]) -> Vec<&'static dyn Profile> {
    let mut all: Vec<&'static dyn Profile> =
        builtin().iter().copied().filter(|b| !extra.iter().any(|e| e.name() == b.name())).collect();
    for &e in extra {
        all.push(e);
    }
    all
}

/// Row values the rules see.
struct Facts<'r> {
    texts: Vec<Option<Cow<'r, str>>>,
    direction: Option<Direction>,
    kind: Option<Kind>,
    category: Option<Category>,
}

impl Facts<'_> {
    fn text(&self, i: usize) -> &str {
        self.texts[i].as_deref().unwrap_or("")
    }

    fn holds<T>(&self, rule: &CompiledRule<T>, text: Option<&str>) -> bool {
        if rule.direction.is_some() && rule.direction != self.direction {
            return false;
        }
        if !rule.kind.is_empty() && !self.kind.is_some_and(|k| rule.kind.contains(&k)) {
            return false;
        }
        if !rule.category.is_empty() && !self.category.is_some_and(|c| rule.category.contains(&c)) {
            return false;
        }
        if rule.words.is_empty() && rule.values.is_empty() {
            return true;
        }
        let found = |hay: &str| {
            rule.words.iter().any(|w| contains_ignore_ascii_case(hay, w))
                || rule.values.iter().any(|v| v.eq_ignore_ascii_case(hay.trim()))
        };
        match text {
            Some(t) => found(t),
            None => rule.columns.iter().any(|&c| found(self.text(c))),
        }
    }

    fn classify<T: Copy>(&self, c: &CompiledClassifier<T>) -> T {
        if c.by_column.is_empty() {
            return c.rules.iter().find(|r| self.holds(r, None)).map_or(c.default, |r| r.value);
        }
        for &column in &c.by_column {
            let text = self.text(column);
            if let Some(r) = c.rules.iter().find(|r| self.holds(r, Some(text))) {
                return r.value;
            }
        }
        c.default
    }
}

/// Cell `i` of the row for the amount and time parsers: from `texts`, the cells already read,
/// or read again when the profile called it null there (those parsers have their own view of
/// what means "no value", and say what they think of the rest).
fn cell<'c>(
    row: &Row<'c>,
    texts: &'c [Option<Cow<'c, str>>],
    i: usize,
) -> Result<Option<Cow<'c, str>>, RowError> {
    match &texts[i] {
        Some(text) => Ok(Some(Cow::Borrowed(text))),
        None => row.text(i),
    }
}

/// Sets `slot` to `value`, reusing its allocation.
fn set(slot: &mut String, value: &str) {
    if slot != value {
        slot.clear();
        slot.push_str(value);
    }
}

/// Sets `slot` to `value`, reusing its allocation when it holds a string.
fn set_opt(slot: &mut Option<String>, value: Option<&str>) {
    match (slot.as_mut(), value) {
        (Some(s), Some(v)) => set(s, v),
        (None, Some(v)) => *slot = Some(v.to_owned()),
        (_, None) => *slot = None,
    }
}

/// Whether `hay` contains `needle` (given in lower case), ASCII case ignored.
fn contains_ignore_ascii_case(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    n.is_empty() || h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n))
}

struct SpecParser<'p> {
    profile: &'p SpecProfile,
    /// Rows whose span needs the previous row of their instance and category:
    /// (instance and category, start, longest span, parsed).
    kept: Vec<(String, DateTime<Utc>, Option<u32>, Parsed)>,
    /// The file's name as charges record it, made once.
    file: Option<String>,
    /// Per column, the last time read and its text: exports repeat times row after row.
    last_time: Vec<Option<(String, DateTime<Utc>)>>,
    /// Kind, category and pricing per distinct classifier input (see `class_columns`).
    classes: HashMap<String, (Kind, Category, Pricing)>,
    class_key: String,
    /// Where each instance regex matched, reused from row to row.
    locations: Vec<regex::CaptureLocations>,
    /// The vector of a row's cells, kept (empty) for the next row.
    texts: Vec<Option<Cow<'static, str>>>,
    /// The file's columns the profile does not read, by name (see [`Parsed::unmapped`]).
    unmapped: Option<Vec<(usize, String)>>,
}

/// The hash of a row's non-empty cells among `unmapped` (index, lower-case name), in name
/// order; `None` when all are empty, so that a file without such columns keeps the identity
/// it had before they counted.
fn unmapped_key(row: &Row<'_>, unmapped: &[(usize, String)]) -> Result<Option<u128>, RowError> {
    let mut hasher: Option<xxhash_rust::xxh3::Xxh3> = None;
    for (i, name) in unmapped {
        let Some(text) = row.unmapped_cell(*i)? else { continue };
        let h = hasher.get_or_insert_with(xxhash_rust::xxh3::Xxh3::new);
        h.update(name.as_bytes());
        h.update(&[0x1f]);
        h.update(text.as_bytes());
        h.update(&[0x1e]);
    }
    Ok(hasher.map(|h| h.digest128()))
}

/// Distinct classifier inputs a parser remembers before it starts afresh.
const MAX_REMEMBERED_CLASSES: usize = 4096;

impl SpecParser<'_> {
    /// Column `col` as a time, the last one read again when its text is unchanged.
    fn time(
        &mut self,
        row: &Row<'_>,
        texts: &[Option<Cow<'_, str>>],
        col: usize,
    ) -> Result<Option<DateTime<Utc>>, RowError> {
        let Some(text) = cell(row, texts, col)? else { return Ok(None) };
        if let Some((last, at)) = &self.last_time[col]
            && *last == *text
        {
            return Ok(Some(*at));
        }
        let at =
            crate::parse::parse_time(&text, self.profile.zone).map_err(|m| row.error(col, m))?;
        let window = row.window();
        if !window.holds(at.with_timezone(&self.profile.zone).year()) {
            return Err(row.error(col, window.refusal(&text)));
        }
        match &mut self.last_time[col] {
            Some((last, t)) => {
                last.clear();
                last.push_str(&text);
                *t = at;
            }
            slot => *slot = Some((text.into_owned(), at)),
        }
        Ok(Some(at))
    }

    /// Kind, category and pricing of a row, remembered per distinct input.
    fn classify(&mut self, facts: &mut Facts<'_>) -> (Kind, Category, Pricing) {
        let p = self.profile;
        let key = &mut self.class_key;
        key.clear();
        key.push(match facts.direction {
            None => '-',
            Some(Direction::Expense) => 'e',
            Some(Direction::Income) => 'i',
        });
        for &c in &p.class_columns {
            key.push('\u{1f}');
            key.push_str(facts.text(c));
        }
        if let Some(&found) = self.classes.get(key.as_str()) {
            return found;
        }
        let kind = facts.classify(&p.kind);
        facts.kind = Some(kind);
        let category = facts.classify(&p.category);
        facts.category = Some(category);
        let pricing = facts.classify(&p.pricing);
        if self.classes.len() >= MAX_REMEMBERED_CLASSES {
            self.classes.clear();
        }
        self.classes.insert(key.clone(), (kind, category, pricing));
        (kind, category, pricing)
    }
}

impl RowParser for SpecParser<'_> {
    fn parse(&mut self, row: &Row<'_>) -> Result<Option<Parsed>, RowError> {
        let mut out = None;
        Ok(if self.parse_into(row, &mut out)? { out } else { None })
    }

    fn parse_into(&mut self, row: &Row<'_>, out: &mut Option<Parsed>) -> Result<bool, RowError> {
        let p = self.profile;
        let f = &p.fields;
        // The cells of the row, in last row's vector (emptied, it has the same layout).
        let mut texts: Vec<Option<Cow<'_, str>>> =
            std::mem::take(&mut self.texts).into_iter().map(|_| None).collect();
        texts.clear();
        for i in 0..p.columns.len() {
            let text = row.text(i)?;
            let null = text.as_deref().is_some_and(|v| p.spec.nulls.iter().any(|n| n == v));
            texts.push(if null { None } else { text });
        }
        let numbers = p.number_format();
        let amount = |texts: &[Option<Cow<'_, str>>], i: usize| match cell(row, texts, i)? {
            Some(text) => {
                crate::parse::parse_amount_with(&text, numbers).map_err(|m| row.error(i, m))
            }
            None => Ok(None),
        };
        let mut billed = amount(&texts, f.billed_cost)?
            .ok_or_else(|| row.error(f.billed_cost, "has no amount"))?;
        let mut list = f.list_cost.map(|i| amount(&texts, i)).transpose()?.flatten();
        let direction = match p.direction {
            None => None,
            Some(i) => Some(match texts[i].as_deref() {
                Some(d) if p.spec.sign.expense.iter().any(|w| d.contains(w.as_str())) => {
                    Direction::Expense
                }
                Some(d) if p.spec.sign.income.iter().any(|w| d.contains(w.as_str())) => {
                    Direction::Income
                }
                Some(d) => {
                    let words = [p.spec.sign.expense.join("/"), p.spec.sign.income.join("/")];
                    return Err(
                        row.error(i, format!("{d:?} is neither {} nor {}", words[0], words[1]))
                    );
                }
                None if billed.is_sign_negative() => Direction::Expense,
                None => Direction::Income,
            }),
        };
        match direction {
            Some(Direction::Expense) => billed = billed.abs(),
            Some(Direction::Income) => billed = -billed.abs(),
            None => {}
        }
        let mut facts = Facts { texts, direction, kind: None, category: None };
        let (kind, category, pricing) = self.classify(&mut facts);
        if p.spec.sign.negative_kinds.contains(&kind) {
            billed = -billed.abs();
            list = list.map(|l| -l.abs());
        }
        let locations = &mut self.locations;
        let instance =
            p.instance.iter().zip(locations.iter_mut()).find_map(|((cats, c, re), at)| {
                if !cats.is_empty() && !cats.contains(&category) {
                    return None;
                }
                let text = facts.texts[*c].as_deref()?;
                re.captures_read(at, text)?;
                at.get(1).map(|(from, to)| &text[from..to])
            });
        let resource_id = match p
            .resource
            .iter()
            .find(|(cats, _)| cats.is_empty() || cats.contains(&category))
        {
            Some((_, ResourceSource::Column(c))) => facts.texts[*c].as_deref().map(Cow::Borrowed),
            Some((_, ResourceSource::Template(t))) => {
                instance.map(|i| Cow::Owned(t.replace("{instance}", i)))
            }
            None => p.resource_column.and_then(|c| facts.texts[c].as_deref()).map(Cow::Borrowed),
        };
        let tz = p.zone;
        let posted = f.posted.map(|i| self.time(row, &facts.texts, i)).transpose()?.flatten();
        let mut start = None;
        for &i in &p.start {
            if let Some(t) = self.time(row, &facts.texts, i)? {
                start = Some(t);
                break;
            }
        }
        let Some(start) = start else {
            return Err(row.error(p.start[0], "is empty"));
        };
        let mut end = None;
        for &i in &p.end {
            if let Some(t) = self.time(row, &facts.texts, i)? {
                end = Some(t);
                break;
            }
        }
        let mut end = end.unwrap_or(start);
        if end < start {
            return Err(row.error(p.end[0], "is before the start of the charge"));
        }
        let mut start = start;
        let rule = p.spec.times.rules.iter().find(|r| {
            (r.category.is_empty() || r.category.contains(&category))
                && (r.kind.is_empty() || r.kind.contains(&kind))
        });
        let mut keep = None;
        match rule.map(|r| (r.span, r.max_hours)) {
            Some((SpanRule::LocalDay, _)) => {
                let day = start.with_timezone(&tz).date_naive();
                start = local_midnight(day, tz);
                end = local_midnight(day.succ_opt().unwrap_or(day), tz);
            }
            Some((SpanRule::SincePreviousRow, max)) => keep = Some(max),
            None => {}
        }
        // A billing-period column that the file lacks falls back to the times.
        let period_column = f.billing_period.filter(|&i| row.has(i));
        let billing_period = match (period_column, p.spec.period.from.as_deref()) {
            (Some(i), _) => {
                let text = facts.texts[i].as_deref().ok_or_else(|| row.error(i, "is empty"))?;
                let month = text.parse::<YearMonth>().map_err(|m| row.error(i, m))?;
                if !row.window().holds(month.year()) {
                    return Err(row.error(i, row.window().refusal(text)));
                }
                month
            }
            // Like the period column, a period-time column the file lacks falls back too.
            (None, _) if f.period_time.is_some_and(|i| row.has(i)) => {
                let i = f.period_time.unwrap_or_default();
                let t = self.time(row, &facts.texts, i)?.ok_or_else(|| row.error(i, "is empty"))?;
                YearMonth::of(t, tz)
            }
            (None, Some("posted")) => YearMonth::of(posted.unwrap_or(start), tz),
            _ => YearMonth::of(start, tz),
        };
        let gpu_model = (category == Category::Compute)
            .then(|| {
                p.gpu_models.iter().find(|(c, prefix, _)| {
                    let text = facts.text(*c).as_bytes();
                    text.get(..prefix.len())
                        .is_some_and(|t| t.eq_ignore_ascii_case(prefix.as_bytes()))
                })
            })
            .flatten()
            .map(|(_, _, m)| m.as_str());
        let gpu_count = match f.gpu_count {
            Some(i) => amount(&facts.texts, i)?
                .map(|n| {
                    u16::try_from(n.trunc().mantissa())
                        .map_err(|_| row.error(i, "is not a GPU count"))
                })
                .transpose()?,
            None => None,
        };
        let item = p.item.iter().find_map(|&i| facts.texts[i].as_deref()).unwrap_or("");
        let quantity = f.quantity.map(|i| amount(&facts.texts, i)).transpose()?.flatten();
        let unit_price = f.unit_price.map(|i| amount(&facts.texts, i)).transpose()?.flatten();
        let balance_after = f.balance_after.map(|i| amount(&facts.texts, i)).transpose()?.flatten();
        let text = |i: Option<usize>| i.and_then(|i| facts.texts[i].as_deref());
        let file = self.file.get_or_insert_with(|| row.path().display().to_string());
        let parsed = out.get_or_insert_with(Parsed::blank);
        let c = &mut parsed.charge;
        set(&mut c.platform, p.platform);
        set_opt(&mut c.account, text(f.account));
        c.billing_period = billing_period;
        c.charge_start = start;
        c.charge_end = end;
        set_opt(&mut c.resource_id, resource_id.as_deref());
        set_opt(&mut c.resource_name, text(f.resource_name));
        set_opt(&mut c.instance_id, instance);
        set_opt(&mut c.region, text(f.region));
        c.category = category;
        c.kind = kind;
        c.pricing = pricing;
        set_opt(&mut c.gpu_model, gpu_model);
        c.gpu_count = gpu_count;
        c.quantity = quantity;
        set_opt(&mut c.unit, text(f.unit));
        c.unit_price = unit_price;
        c.list_cost = list;
        c.billed_cost = billed;
        set(&mut c.currency, text(f.currency).unwrap_or(&p.spec.currency));
        c.balance_after = balance_after;
        set(&mut c.origin.file, file);
        c.origin.line = row.line();
        set(&mut c.origin.item, item);
        // The native id's cells joined by U+001F, in last row's string; none when all are empty.
        let mut id = parsed.native_id.take().unwrap_or_default();
        id.clear();
        for (n, &i) in f.native_id.iter().enumerate() {
            if n > 0 {
                id.push('\u{1f}');
            }
            id.push_str(facts.text(i));
        }
        parsed.native_id = id.chars().any(|c| c != '\u{1f}').then_some(id);
        parsed.unmapped = match parsed.native_id {
            Some(_) => None,
            None => {
                let unmapped = self.unmapped.get_or_insert_with(|| row.unmapped());
                unmapped_key(row, unmapped)?
            }
        };
        // The previous row is the previous row of the same instance and category.
        let kept =
            keep.zip(instance).map(|(max, id)| (format!("{id}\u{1f}{category}"), start, max));
        self.texts = facts.texts.into_iter().map(|_| None).collect();
        match kept {
            Some((id, start, max)) => {
                self.kept.push((id, start, max, parsed.clone()));
                Ok(false)
            }
            _ => Ok(true),
        }
    }

    fn finish(&mut self) -> Vec<Parsed> {
        let mut rows = std::mem::take(&mut self.kept);
        rows.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let mut previous: HashMap<String, DateTime<Utc>> = HashMap::new();
        rows.into_iter()
            .map(|(id, posted, max, mut parsed)| {
                let earliest = max.map(|h| posted - Duration::hours(i64::from(h)));
                let start = match (previous.insert(id, posted), earliest) {
                    (Some(prev), Some(e)) => prev.max(e),
                    (Some(prev), None) => prev,
                    (None, Some(e)) => e,
                    (None, None) => posted,
                };
                parsed.charge.charge_start = start;
                parsed.charge.charge_end = posted;
                parsed
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::profile_by_name;

    fn first_instance(profile: &str, texts: &[(&str, &str)]) -> Option<String> {
        let p = profile_by_name(profile).and_then(|p| p.as_spec()).unwrap();
        p.instance.iter().find_map(|(_, col, re)| {
            let key = p.columns[*col].key;
            let text = texts.iter().find(|(k, _)| *k == key)?.1;
            re.captures(text).and_then(|m| m.get(1)).map(|m| m.as_str().to_owned())
        })
    }

    #[test]
    fn autodl_finds_the_instance_in_notes_in_both_colon_styles() {
        let id = |note| first_instance("autodl", &[("note", note)]);
        assert_eq!(id("容器实例ID：a1b2c3d4e5").as_deref(), Some("a1b2c3d4e5"));
        assert_eq!(id("容器实例ID: 6f2e-91ab 数据盘").as_deref(), Some("6f2e-91ab"));
        assert_eq!(id("余额充值"), None);
        assert_eq!(id("容器实例ID："), None);
    }

    #[test]
    fn aliyun_finds_ecs_ids_in_config_text_but_not_inside_words() {
        let id =
            |config| first_instance("aliyun", &[("resource_id", "d-bp1x"), ("config", config)]);
        assert_eq!(id("绑定实例:i-bp1a2b3c4d").as_deref(), Some("i-bp1a2b3c4d"));
        assert_eq!(id("instance=i-uf6x9k2").as_deref(), Some("i-uf6x9k2"));
        assert_eq!(id("multi-az; ti-abcdef"), None);
        assert_eq!(id("i-ab"), None);
        assert_eq!(
            first_instance("aliyun", &[("resource_id", "i-bp1own")]).as_deref(),
            Some("i-bp1own")
        );
    }

    #[test]
    fn every_profile_file_is_registered_and_every_registered_one_exists() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".toml"))
            .collect();
        files.sort();
        let mut registered: Vec<String> =
            BUILTIN_FILES.iter().map(|(name, _)| (*name).to_owned()).collect();
        registered.sort();
        assert_eq!(files, registered, "crates/core/profiles/ and BUILTIN_FILES differ");
        for (name, text) in BUILTIN_FILES {
            assert_eq!(std::fs::read_to_string(dir.join(name)).unwrap(), *text, "{name}");
        }
        assert_eq!(builtin().len(), BUILTIN_FILES.len());
    }

    #[test]
    fn a_broken_profile_file_is_refused_with_what_is_wrong() {
        let path = Path::new("mine.toml");
        let base = include_str!("../../profiles/autodl.toml");
        let cases = [
            (base.replace("zone = \"Asia/Shanghai\"", "zone = \"Mars/Olympus\""), "unknown zone"),
            (
                base.replace("column = \"note\"\nregex", "column = \"memo\"\nregex"),
                "`memo` is used but no [[columns]] entry has that key",
            ),
            (base.replace("([A-Za-z0-9_-]+)", "[A-Za-z0-9_-]+"), "has no capture group"),
            (base.replace("name = \"autodl\"", "nom = \"autodl\""), "unknown field `nom`"),
        ];
        for (text, want) in cases {
            let err =
                SpecProfile::parse(&text, path).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.starts_with("profile mine.toml: ") && err.contains(want), "{err}");
        }
    }
}

//! The profile file format: what a TOML profile says, field by field (serde types).
//! It knows nothing of how a profile is compiled or run.

use serde::{Deserialize, Serialize};

use crate::charge::{Category, Kind, NoGpu, Pricing, UnitPriceOf};
use crate::parse::{DateOrder, DecimalSeparator};

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
    /// The platform this profile's charges were stored under before it was renamed (AWS's
    /// `aws-cur`): its rows' ids are still hashed with it, so that a re-import finds the
    /// charges a ledger already holds, and charges stored under it are described by this
    /// profile (their zone, what their unit prices multiply to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub former_platform: Option<String>,
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
    /// How dates whose year is not first are written: `"mdy"` (`09/21/2023`, Azure's EA
    /// exports) or `"dmy"`. Without it such a date is refused, never guessed.
    #[serde(default, skip_serializing_if = "is_ymd")]
    pub date_order: DateOrder,
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
    /// The platform of a row by the provider its `provider` column names (a FOCUS file may
    /// hold several clouds' charges): the entry whose names hold the cell (ASCII case
    /// ignored), else the cell made a platform name (`Snowflake Inc.` → `snowflake-inc`).
    /// A profile without a `provider` column puts every row on its own platform.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<ProviderSpec>,
    /// Columns that make a file of this format one the profile cannot read right (Google
    /// Cloud's `credits` held in one cell): such a file is refused at its header, saying why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused_columns: Vec<RefusedColumn>,
    /// Columns naming the service a row bills (first non-empty): AWS's product code, FOCUS
    /// `ServiceName`. `gpuaudit cost` gives compute that is no instance a line per service.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service: Vec<String>,
    /// Columns giving the bill's words for what was used, as its rates are keyed (AWS usage
    /// type and operation, a SKU): the non-empty ones joined by ` / `. R002 calls two lines
    /// of one resource and span a double charge only when these are the same.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub usage: Vec<String>,
    /// Whether the platform's bills say which instance a disk, an IP or a snapshot belongs to
    /// (true, the default: the Chinese platforms' bills name it or bill it on the instance's
    /// row). `false` for the big clouds (AWS CUR, Azure, GCP, OCI, and their FOCUS exports):
    /// a disk billed under its own id names no instance, so no rule may call it unattached
    /// or say its instance was off from the bill alone; `waste` says how much it could not
    /// judge, and an inventory snapshot lets it judge.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub bill_links_storage: bool,
    /// Words of the usage text (`usage`, ASCII case ignored) by which the bill itself says a
    /// public IP was idle (AWS `ElasticIP:IdleAddress`, `PublicIPv4:IdleAddress`): W002 flags
    /// such a charge whole, linked or not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle_ip_usage: Vec<String>,
    /// Regexes of the instance ids that are virtual machines (or GPU containers), where the
    /// platform's compute holds other things too (AWS's NAT gateways and functions): compute
    /// of another id is its service's line in `gpuaudit cost`, with no instance hours. Empty
    /// (the default): every instance is one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vm_ids: Vec<String>,
    /// Compute rows that carry no GPU whatever the instance's note says (AutoDL's 无卡模式,
    /// CPU only at 0.10 元/h): their hours are compute hours, never GPU-hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_gpu: Option<NoGpu>,
    /// Whether an end time of `hh:59:59` closes the whole hour (Tencent's and Alibaba's
    /// hourly rows run `10:00:00`–`10:59:59`): such an end is read one second later, so that
    /// 480 hourly rows are 480 hours.
    #[serde(default, skip_serializing_if = "is_false")]
    pub end_second_inclusive: bool,
}

/// A column whose presence makes a file unreadable by its profile (see
/// [`ProfileSpec::refused_columns`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefusedColumn {
    /// The column's name (matched after trimming, ASCII case ignored).
    pub name: String,
    /// Why, and what to export instead.
    pub why: String,
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
    pub(super) fn keys(&self) -> Vec<String> {
        match self {
            OneOrMany::One(k) => vec![k.clone()],
            OneOrMany::Many(ks) => ks.clone(),
        }
    }
}

pub(super) fn is_list_cost(of: &UnitPriceOf) -> bool {
    *of == UnitPriceOf::ListCost
}

pub(super) fn yes() -> bool {
    true
}

pub(super) fn is_true(b: &bool) -> bool {
    *b
}

pub(super) fn is_false(b: &bool) -> bool {
    !*b
}

pub(super) fn is_ymd(order: &DateOrder) -> bool {
    *order == DateOrder::Ymd
}

pub(super) fn is_point(separator: &DecimalSeparator) -> bool {
    *separator == DecimalSeparator::Point
}

pub(super) fn default_currency() -> String {
    "CNY".into()
}

/// One column of the bill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnSpec {
    /// A ledger field (`posted`, `charge_start`, `charge_end`, `billing_period`, `account`,
    /// `account_name`, `sub_account`, `sub_account_name`, `resource_id`, `resource_name`,
    /// `region`, `quantity`, `unit`, `unit_price`, `list_cost`, `billed_cost`, `currency`,
    /// `balance_after`, `gpu_count`) or a name the rules use.
    pub key: String,
    /// Header names, trimmed, ASCII case ignored, in order of preference: the first present
    /// in a file is read (they may be spellings of one column, or different columns that can
    /// stand for it); the first is shown in errors.
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

/// A provider's platform and the names bills give it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSpec {
    /// The ledger's platform for its rows.
    pub platform: String,
    /// The texts of the `provider` column that name it.
    pub names: Vec<String>,
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
    /// The number of GPUs of an instance the prefix names, where every instance it names has
    /// the same number (an AWS instance type such as `p4d.24xlarge`: 8); a column the bill
    /// has for the count (`gpu_count`) is read first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u16>,
}

//! The ledger as FOCUS 1.2: how each column of an export is made from a charge, in one table
//! ([`FOCUS_COLUMNS`]), the FOCUS columns first and gpuaudit's own `x_` columns after.
//!
//! Decisions:
//! - Every charge but payments (top-ups are money in, not charges) is one row.
//! - ChargeCategory: usage → Usage, purchase → Purchase, refund and credit → Credit,
//!   adjustment → Adjustment, tax → Tax. ChargeFrequency: purchases One-Time, everything
//!   else Usage-Based. ChargeClass is null (the ledger does not know which rows correct an
//!   earlier period).
//! - ServiceCategory, ServiceSubcategory and ServiceName by category: compute →
//!   Compute / Virtual Machines / "GPU Compute"; system and data disks → Storage / Block
//!   Storage / "Block Storage"; snapshots → Storage / Backup Storage / "Snapshots"; other
//!   storage → Storage / Other (Storage) / "Storage"; public IPs → Networking / Network
//!   Connectivity / "Public IP"; traffic → Networking / Network Connectivity / "Data
//!   Transfer"; other → Other / Other (Other) / "Other". Each ServiceName has one category.
//! - ChargeDescription: the bill's words for the item, else the ServiceName. PricingUnit is
//!   `Units` for a quantity the bill gives without a unit, and null without a quantity; tax
//!   rows have neither (FOCUS).
//! - Money: BilledCost and EffectiveCost are the billed cost (the ledger knows no
//!   amortisation); ListCost the list cost where the bill gives one, else the billed cost;
//!   ContractedCost the billed cost (no contracted unit price is known). ListUnitPrice and
//!   PricingQuantity are the bill's unit price and quantity; PricingUnit its unit in FOCUS's
//!   UnitFormat ([`focus_unit`]: 小时 → Hours), the bill's own word in `x_Unit`. InvoiceId is
//!   null: no bill gpuaudit reads names its invoice.
//! - PricingCategory: on demand → Standard, spot → Dynamic, subscription and reserved →
//!   Committed, unknown → null.
//! - Times: the charge's span as it is in the ledger (UTC, start inclusive, end exclusive).
//!   The billing period is the charge's billing month written as UTC month bounds, as the
//!   clouds write theirs: the month label survives a round trip through any FOCUS reader.
//! - BillingAccountId and BillingAccountName: the bill's account (and its name where the bill
//!   gives one), else the platform's name (FOCUS requires one; the focus profile reads that
//!   name back as no account, on a row that names its platform in `x_Platform`).
//!   SubAccountId and SubAccountName: the bill's sub account (its id as its name where the
//!   bill gives none), null without one. They come last, after the `x_` columns: they were
//!   added after the export's columns were a contract, and columns are only ever added at the
//!   end. ProviderName, PublisherName and InvoiceIssuerName: the platform's
//!   proper name ([`provider_name`]).
//! - gpuaudit's own facts follow as `x_` columns: `x_Category`, `x_InstanceId`, `x_GpuModel`,
//!   `x_GpuCount`, `x_ChargeId`, `x_SourceFile`, `x_SourceLine`, and `x_Platform`,
//!   `x_Pricing` and `x_Unit`, which make the round trip through `--profile focus` exact.
//!
//! This module knows charges only; the ledger streams them through it.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

use crate::charge::{Category, Charge, Kind, Pricing, YearMonth};

/// A cell of an export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value<'a> {
    /// Null.
    Null,
    /// A text.
    Text(Cow<'a, str>),
    /// Money or a quantity, exact.
    Decimal(Decimal),
    /// An instant.
    Time(DateTime<Utc>),
    /// A whole number.
    Int(i64),
}

/// A charge as the export reads it: every field borrowed (from a [`Charge`], or from the
/// columns of a ledger part file, so that streaming a ledger out allocates no text per
/// charge).
#[derive(Debug, Clone, Copy)]
pub struct ChargeRef<'a> {
    /// The charge id, as its 32 hex digits.
    pub id: &'a str,
    /// Platform.
    pub platform: &'a str,
    /// Billing account.
    pub account: Option<&'a str>,
    /// Sub account.
    pub sub_account: Option<&'a str>,
    /// The billing account's name.
    pub account_name: Option<&'a str>,
    /// The sub account's name.
    pub sub_account_name: Option<&'a str>,
    /// Billing period.
    pub billing_period: YearMonth,
    /// Start (UTC, inclusive).
    pub charge_start: DateTime<Utc>,
    /// End (UTC, exclusive).
    pub charge_end: DateTime<Utc>,
    /// Resource.
    pub resource_id: Option<&'a str>,
    /// Its name.
    pub resource_name: Option<&'a str>,
    /// Instance.
    pub instance_id: Option<&'a str>,
    /// Region.
    pub region: Option<&'a str>,
    /// Category.
    pub category: Category,
    /// Kind.
    pub kind: Kind,
    /// Pricing.
    pub pricing: Pricing,
    /// GPU model.
    pub gpu_model: Option<&'a str>,
    /// GPU count.
    pub gpu_count: Option<u16>,
    /// Quantity.
    pub quantity: Option<Decimal>,
    /// Unit.
    pub unit: Option<&'a str>,
    /// Unit price.
    pub unit_price: Option<Decimal>,
    /// List cost.
    pub list_cost: Option<Decimal>,
    /// Billed cost.
    pub billed_cost: Decimal,
    /// Currency.
    pub currency: &'a str,
    /// Source file.
    pub file: &'a str,
    /// Its line.
    pub line: u64,
    /// The bill's words for the item.
    pub item: &'a str,
    /// The service the bill names.
    pub service: Option<&'a str>,
    /// The bill's words for what was used.
    pub usage_type: Option<&'a str>,
}

impl<'a> ChargeRef<'a> {
    /// The view of a charge; `id` holds its id's text ([`crate::ChargeId`]'s hex digits).
    pub fn of(c: &'a Charge, id: &'a str) -> Self {
        ChargeRef {
            id,
            platform: &c.platform,
            account: c.account.as_deref(),
            sub_account: c.sub_account.as_deref(),
            account_name: c.account_name.as_deref(),
            sub_account_name: c.sub_account_name.as_deref(),
            billing_period: c.billing_period,
            charge_start: c.charge_start,
            charge_end: c.charge_end,
            resource_id: c.resource_id.as_deref(),
            resource_name: c.resource_name.as_deref(),
            instance_id: c.instance_id.as_deref(),
            region: c.region.as_deref(),
            category: c.category,
            kind: c.kind,
            pricing: c.pricing,
            gpu_model: c.gpu_model.as_deref(),
            gpu_count: c.gpu_count,
            quantity: c.quantity,
            unit: c.unit.as_deref(),
            unit_price: c.unit_price,
            list_cost: c.list_cost,
            billed_cost: c.billed_cost,
            currency: &c.currency,
            file: &c.origin.file,
            line: c.origin.line,
            item: &c.origin.item,
            service: c.service.as_deref(),
            usage_type: c.usage_type.as_deref(),
        }
    }
}

/// What a column holds (its Parquet type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// Text (STRING).
    Text,
    /// Money or a quantity (DECIMAL(38, 12)).
    Decimal,
    /// An instant (TIMESTAMP, microseconds, UTC).
    Time,
    /// A whole number (INT64).
    Int,
}

/// One column of the FOCUS export.
pub struct FocusColumn {
    /// Its name.
    pub name: &'static str,
    /// What it holds.
    pub type_: ColumnType,
    /// Its value for a charge.
    pub value: for<'c> fn(&ChargeRef<'c>) -> Value<'c>,
}

/// Whether a charge is exported (every one but payments).
pub fn is_exported(c: &ChargeRef<'_>) -> bool {
    c.kind != Kind::Payment
}

/// The proper name of a platform (a profile name otherwise).
pub fn provider_name(platform: &str) -> &str {
    match platform {
        "autodl" => "AutoDL",
        "aliyun" => "Alibaba Cloud",
        "tencent" | "tencent-resource" => "Tencent Cloud",
        "ctyun" => "China Telecom Cloud",
        "gpushare" => "GPUShare",
        "aws-cur" | "aws" => "AWS",
        "azure" => "Microsoft",
        "gcp" => "Google Cloud",
        "oci" => "Oracle",
        other => other,
    }
}

fn text(s: &str) -> Value<'_> {
    Value::Text(Cow::Borrowed(s))
}

fn opt(s: Option<&str>) -> Value<'_> {
    s.map_or(Value::Null, text)
}

fn dec(d: Option<Decimal>) -> Value<'static> {
    d.map_or(Value::Null, Value::Decimal)
}

/// The UTC start of a month.
fn month_start(m: YearMonth) -> DateTime<Utc> {
    m.start(chrono_tz::UTC)
}

/// ServiceCategory, ServiceSubcategory and ServiceName of a category (module docs).
fn service(c: Category) -> (&'static str, &'static str, &'static str) {
    match c {
        Category::Compute => ("Compute", "Virtual Machines", "GPU Compute"),
        Category::SystemDisk | Category::DataDisk => ("Storage", "Block Storage", "Block Storage"),
        Category::Snapshot => ("Storage", "Backup Storage", "Snapshots"),
        Category::Storage => ("Storage", "Other (Storage)", "Storage"),
        Category::PublicIp => ("Networking", "Network Connectivity", "Public IP"),
        Category::Traffic => ("Networking", "Network Connectivity", "Data Transfer"),
        Category::Other => ("Other", "Other (Other)", "Other"),
    }
}

fn charge_category(k: Kind) -> &'static str {
    match k {
        Kind::Usage => "Usage",
        Kind::Purchase => "Purchase",
        Kind::Refund | Kind::Credit => "Credit",
        Kind::Adjustment => "Adjustment",
        Kind::Tax => "Tax",
        // Payments are not exported; should one be asked for, it is money given back.
        Kind::Payment => "Credit",
    }
}

fn pricing_category(p: Pricing) -> Value<'static> {
    match p {
        Pricing::OnDemand => text("Standard"),
        Pricing::Spot => text("Dynamic"),
        Pricing::Subscription | Pricing::Reserved => text("Committed"),
        Pricing::Unknown => Value::Null,
    }
}

/// A bill's unit in FOCUS's UnitFormat: time and data-size units by their FOCUS names, counts
/// (次, 个) as `Units`; Azure's units of measure with a count (`1 Hour` → `Hours`, `10 GB` →
/// `10 GB`, `10K` → `10000 Units`, `1/Month` → `Months`); an ASCII unit as it is; any other as
/// `Units` (the bill's own word stays in `x_Unit`).
pub fn focus_unit(unit: &str) -> Cow<'_, str> {
    // A FOCUS name of our own conforms; a bill's own text, or a count put before a name, is
    // checked (a regex match: not for the names nearly every row has).
    let unit = match unit_named(unit) {
        Cow::Borrowed(named) if FOCUS_NAMES.contains(&named) => return Cow::Borrowed(named),
        unit if conforms(&unit) => return unit,
        unit => unit,
    };
    // Repairs of what real bills write: a singular time after a hyphen (`Obj-Month`), hyphens
    // inside a count (`Lambda-GB-Seconds`); else `Units` (the bill's word stays in `x_Unit`).
    let (head, time) = unit.rsplit_once('-').unwrap_or((&unit, ""));
    let time = time_unit(&time.to_ascii_lowercase()).unwrap_or("");
    let repaired = match time {
        "" => unit.replace('-', " "),
        time => format!("{}-{time}", head.replace('-', " ")),
    };
    if conforms(&repaired) { Cow::Owned(repaired) } else { Cow::Borrowed("Units") }
}

/// Whether `unit` is in FOCUS's UnitFormat, as the FinOps Foundation's validator checks it
/// (`focus_validator`'s `FormatUnit`): a data size, a time or a count; one of them per plural
/// time (`GB-Hours`), per singular time (`GB/Hour`), per a count of plural times
/// (`Requests/3 Months`); or a count of them (`1000 Requests`).
fn conforms(unit: &str) -> bool {
    static FORMAT: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let format = FORMAT.get_or_init(|| {
        let size = "b|Kb|Mb|Gb|Tb|Pb|Eb|B|KB|MB|GB|TB|PB|EB|Kib|Mib|Gib|Tib|Pib|Eib|KiB|MiB|GiB|TiB|PiB|EiB";
        let one = "Year|Month|Day|Hour|Minute|Second";
        let many = "Years|Months|Days|Hours|Minutes|Seconds";
        let count = "[A-Za-z][A-Za-z0-9]*(?: +[A-Za-z][A-Za-z0-9]*)*";
        let unit = format!("(?:{size}|{one}|{many}|{count})");
        let pattern = format!(
            "^(?:{unit}|(?:{size}|{count})-(?:{many})|(?:{size}|{count}|{many})/(?:{one})|[0-9]+ {unit}|(?:{size}|{count}|{many})/[0-9]+ (?:{many}))$"
        );
        regex::Regex::new(&pattern).ok()
    });
    format.as_ref().is_some_and(|f| f.is_match(unit))
}

/// The unit names [`focus_unit_word`] gives (and `Units`): each in the UnitFormat.
const FOCUS_NAMES: [&str; 18] = [
    "Units",
    "Hours",
    "Days",
    "Months",
    "Years",
    "Minutes",
    "Seconds",
    "GB",
    "GiB",
    "TB",
    "MB",
    "GB-Months",
    "GB-Hours",
    "GB-Days",
    "GiB-Months",
    "GiB-Hours",
    "GiB-Days",
    "TB-Months",
];

/// [`focus_unit`] before its check against the UnitFormat.
fn unit_named(unit: &str) -> Cow<'_, str> {
    let u = unit.trim();
    // Azure: `10K`, `1M` (a count of thousands or millions), `1/Month`, `100 Hours`.
    let digits = u.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && digits <= 9 {
        let (n, rest) = (&u[..digits], u[digits..].trim_start());
        let count: u64 = n.parse().unwrap_or(1);
        match rest {
            "K" | "k" => return Cow::Owned(format!("{} Units", count * 1_000)),
            "M" => return Cow::Owned(format!("{} Units", count * 1_000_000)),
            _ => {}
        }
        let per = rest.strip_prefix('/').map(str::trim);
        let named = focus_unit_word(per.unwrap_or(rest));
        if let Some(named) = named {
            return if count == 1 || per.is_some() {
                Cow::Borrowed(named)
            } else {
                Cow::Owned(format!("{count} {named}"))
            };
        }
    }
    focus_unit_word(u).map_or_else(
        || Cow::Borrowed(if u.is_ascii() && !u.is_empty() { u } else { "Units" }),
        Cow::Borrowed,
    )
}

/// [`focus_unit`] of a unit without a count: its FOCUS name, if it is a time, a data size or a
/// size over a time.
fn focus_unit_word(u: &str) -> Option<&'static str> {
    let lower = u.to_ascii_lowercase();
    // A size over a time (AWS's GB-Mo, GB-Hours): FOCUS writes GB-Months, GB-Hours.
    if let Some((size, time)) = lower.split_once(['-', '*', '·'])
        && let Some(size) = size_unit(size)
        && let Some(time) = time_unit(time)
    {
        return Some(match (size, time) {
            ("GB", "Months") => "GB-Months",
            ("GB", "Hours") => "GB-Hours",
            ("GB", "Days") => "GB-Days",
            ("GiB", "Months") => "GiB-Months",
            ("GiB", "Hours") => "GiB-Hours",
            ("GiB", "Days") => "GiB-Days",
            ("TB", "Months") => "TB-Months",
            _ => "Units",
        });
    }
    time_unit(&lower).or_else(|| size_unit(&lower))
}

/// A time unit's FOCUS name.
fn time_unit(u: &str) -> Option<&'static str> {
    Some(match u {
        "小时" | "时" | "h" | "hr" | "hrs" | "hour" | "hours" => "Hours",
        "天" | "日" | "day" | "days" => "Days",
        "月" | "mo" | "month" | "months" => "Months",
        "年" | "year" | "years" => "Years",
        "分钟" | "minute" | "minutes" => "Minutes",
        "秒" | "second" | "seconds" => "Seconds",
        _ => return None,
    })
}

/// A data size unit's FOCUS name.
fn size_unit(u: &str) -> Option<&'static str> {
    Some(match u {
        "gb" => "GB",
        "gib" => "GiB",
        "tb" => "TB",
        "mb" => "MB",
        _ => return None,
    })
}

fn account<'c>(c: &ChargeRef<'c>) -> Value<'c> {
    text(c.account.unwrap_or_else(|| provider_name(c.platform)))
}

fn provider<'c>(c: &ChargeRef<'c>) -> Value<'c> {
    text(provider_name(c.platform))
}

macro_rules! columns {
    ($($name:literal: $type_:ident = $value:expr;)+) => {
        /// Every column of the export, in order (module docs).
        pub static FOCUS_COLUMNS: &[FocusColumn] = &[
            $(FocusColumn { name: $name, type_: ColumnType::$type_, value: $value },)+
        ];
    };
}

columns! {
    "BilledCost": Decimal = |c| Value::Decimal(c.billed_cost);
    "BillingAccountId": Text = account;
    "BillingAccountName": Text = |c| match c.account_name {
        Some(name) => text(name),
        None => account(c),
    };
    "BillingCurrency": Text = |c| text(c.currency);
    "BillingPeriodEnd": Time = |c| Value::Time(month_start(c.billing_period.next()));
    "BillingPeriodStart": Time = |c| Value::Time(month_start(c.billing_period));
    "ChargeCategory": Text = |c| text(charge_category(c.kind));
    "ChargeClass": Text = |_| Value::Null;
    "ChargeDescription": Text = |c| text(if c.item.is_empty() { service(c.category).2 } else { c.item });
    "ChargeFrequency": Text = |c| text(if c.kind == Kind::Purchase { "One-Time" } else { "Usage-Based" });
    "ChargePeriodEnd": Time = |c| Value::Time(c.charge_end.max(c.charge_start));
    "ChargePeriodStart": Time = |c| Value::Time(c.charge_start);
    "ContractedCost": Decimal = |c| Value::Decimal(c.billed_cost);
    "EffectiveCost": Decimal = |c| Value::Decimal(c.billed_cost);
    "InvoiceId": Text = |_| Value::Null;
    "InvoiceIssuerName": Text = provider;
    "ListCost": Decimal = |c| Value::Decimal(c.list_cost.unwrap_or(c.billed_cost));
    "ListUnitPrice": Decimal = |c| dec(c.unit_price);
    "PricingCategory": Text = |c| pricing_category(c.pricing);
    "PricingQuantity": Decimal = |c| if c.kind == Kind::Tax { Value::Null } else { dec(c.quantity) };
    "PricingUnit": Text = |c| match (c.unit, c.quantity) {
        _ if c.kind == Kind::Tax => Value::Null,
        (_, None) => Value::Null,
        (Some(u), Some(_)) => Value::Text(focus_unit(u)),
        (None, Some(_)) => text("Units"),
    };
    "ProviderName": Text = provider;
    "PublisherName": Text = provider;
    "RegionId": Text = |c| opt(c.region);
    "RegionName": Text = |c| opt(c.region);
    "ResourceId": Text = |c| opt(c.resource_id);
    "ResourceName": Text = |c| opt(c.resource_name);
    "ServiceCategory": Text = |c| text(service(c.category).0);
    "ServiceName": Text = |c| text(service(c.category).2);
    "ServiceSubcategory": Text = |c| text(service(c.category).1);
    "x_Category": Text = |c| text(c.category.as_str());
    "x_InstanceId": Text = |c| opt(c.instance_id);
    "x_GpuModel": Text = |c| opt(c.gpu_model);
    "x_GpuCount": Int = |c| c.gpu_count.map_or(Value::Null, |n| Value::Int(i64::from(n)));
    "x_ChargeId": Text = |c| text(c.id);
    "x_SourceFile": Text = |c| text(c.file);
    "x_SourceLine": Int = |c| Value::Int(i64::try_from(c.line).unwrap_or(i64::MAX));
    "x_Platform": Text = |c| text(c.platform);
    "x_Pricing": Text = |c| text(c.pricing.as_str());
    "x_Unit": Text = |c| opt(c.unit);
    "SubAccountId": Text = |c| opt(c.sub_account);
    "SubAccountName": Text = |c| opt(c.sub_account_name.or(c.sub_account));
}

/// A value as a CSV cell: decimals plain and exact (no exponent, no trailing zeros but one
/// after the point), times
/// `YYYY-MM-DDTHH:MM:SSZ`, null as an empty cell.
pub fn csv_text(v: &Value<'_>) -> String {
    let mut out = String::new();
    push_csv(&mut out, v);
    out
}

/// [`csv_text`] appended to `out` (times written digit by digit: a row has four).
pub fn push_csv(out: &mut String, v: &Value<'_>) {
    use std::fmt::Write;
    match v {
        Value::Null => {}
        Value::Text(t) => out.push_str(t),
        Value::Decimal(d) => {
            // Always with a point: a reader that infers types from the text (the FOCUS
            // validator's CSV reader) takes `24` for an integer.
            let d = d.normalize();
            let _ = write!(out, "{d}");
            if d.scale() == 0 {
                out.push_str(".0");
            }
        }
        Value::Time(t) => push_time(out, *t),
        Value::Int(n) => {
            let _ = write!(out, "{n}");
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ`.
fn push_time(out: &mut String, t: DateTime<Utc>) {
    use chrono::{Datelike, Timelike};
    let two = |out: &mut String, n: u32| {
        out.push(char::from(b'0' + (n / 10 % 10) as u8));
        out.push(char::from(b'0' + (n % 10) as u8));
    };
    let year = t.year();
    if (0..=9999).contains(&year) {
        let y = year as u32;
        two(out, y / 100);
        two(out, y % 100);
    } else {
        use std::fmt::Write;
        let _ = write!(out, "{year:04}");
    }
    out.push('-');
    two(out, t.month());
    out.push('-');
    two(out, t.day());
    out.push('T');
    two(out, t.hour());
    out.push(':');
    two(out, t.minute());
    out.push(':');
    two(out, t.second());
    out.push('Z');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_focus_columns_come_first_and_every_service_name_has_one_category() {
        let names: Vec<&str> = FOCUS_COLUMNS.iter().map(|c| c.name).collect();
        // FOCUS columns, then gpuaudit's `x_` ones, then the FOCUS columns added since (only
        // ever at the end: the column order is a contract).
        let first_x = names.iter().position(|n| n.starts_with("x_")).unwrap();
        let last_x = names.iter().rposition(|n| n.starts_with("x_")).unwrap();
        assert!(names[first_x..=last_x].iter().all(|n| n.starts_with("x_")), "{names:?}");
        assert_eq!(names[last_x + 1..], ["SubAccountId", "SubAccountName"]);
        let mut seen = std::collections::HashMap::new();
        for &c in Category::ALL {
            let (category, _, name) = service(c);
            assert_eq!(*seen.entry(name).or_insert(category), category, "{name}");
        }
        assert_eq!(csv_text(&Value::Decimal(Decimal::new(12_500, 3))), "12.5");
        assert_eq!(csv_text(&Value::Decimal(Decimal::new(24_000, 3))), "24.0");
        let units = ["小时", "Hrs", "GB-Mo", "GB-Month", "gb", "次", "Requests", "GiB-Hours"];
        let focus =
            ["Hours", "Hours", "GB-Months", "GB-Months", "GB", "Units", "Requests", "GiB-Hours"];
        assert_eq!(units.map(|u| focus_unit(u).into_owned()), focus);
        let azure = ["1 Hour", "10K", "1K", "1/Month", "1 GB", "100 Hours", "1M", "1 Hour/Month"];
        let want = [
            "Hours",
            "10000 Units",
            "1000 Units",
            "Months",
            "GB",
            "100 Hours",
            "1000000 Units",
            "Units",
        ];
        assert_eq!(azure.map(|u| focus_unit(u).into_owned()), want);
        assert!(FOCUS_NAMES.iter().all(|n| conforms(n)));
        // What real exports write (AWS's pricing/unit, FOCUS exports' PricingUnit).
        let real =
            ["Obj-Month", "Lambda-GB-Seconds", "GiB/Second-Months", "GB/Month", "Units/Hour"];
        let want = ["Obj-Months", "Lambda GB-Seconds", "Units", "GB/Month", "Units/Hour"];
        assert_eq!(real.map(|u| focus_unit(u).into_owned()), want);
        assert_eq!(csv_text(&Value::Decimal(Decimal::new(-5, 12))), "-0.000000000005");
        let t = chrono::TimeZone::with_ymd_and_hms(&Utc, 2024, 5, 31, 16, 0, 9).unwrap();
        assert_eq!(csv_text(&Value::Time(t)), t.format("%Y-%m-%dT%H:%M:%SZ").to_string());
    }
}

//! Finding the header among the first rows and choosing the profile: the (profile, row) pair
//! with the most matching columns among those that have every required column; a header
//! in which a column the profile reads appears twice is refused.

use std::path::Path;

use crate::error::{ErrorKind, Location, NearMiss, Result};
use crate::import::row::Column;
use crate::import::spec::Profile;

/// How many leading rows may hold the header.
pub const HEADER_SEARCH_ROWS: usize = 20;

/// The header row: where it is and which column holds each of the profile's fields.
#[derive(Debug, Clone)]
pub struct Header {
    /// Trimmed header names, in file order.
    pub names: Vec<String>,
    /// 1-based line of the header row.
    pub line: u64,
    /// For each of the profile's columns, its index in the row.
    pub(crate) map: Vec<Option<usize>>,
}

/// Whether header cell `name` is the column called `alias`: equal but for ASCII case, or a
/// localised header that gives the English name in parentheses at its end (Azure's portal
/// exports: `Abonnement-GUID (SubscriptionGuid)`).
pub(crate) fn names_column(name: &str, alias: &str) -> bool {
    name.eq_ignore_ascii_case(alias)
        || english_name(name).is_some_and(|e| e.eq_ignore_ascii_case(alias))
}

/// The English name a localised header gives in parentheses at its end, if it does.
fn english_name(name: &str) -> Option<&str> {
    let inner = name.strip_suffix(')')?;
    let open = inner.rfind('(')?;
    let english = inner[open + 1..].trim();
    (open > 0 && !english.is_empty()).then_some(english)
}

/// A header name reduced to what tells columns apart: its English name where it gives one,
/// letters and digits only, ASCII lower-cased (`lineItem/UnblendedCost`,
/// `line_item_unblended_cost` and `LINEITEM UNBLENDEDCOST` are one column spelled three ways;
/// `账号ID` and `实例ID` are two).
fn spelling(name: &str) -> String {
    english_name(name)
        .unwrap_or(name)
        .chars()
        .filter(|c| c.is_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// For each of `columns`, the header index of its first alias present: a profile lists a
/// column's aliases in order of preference (different columns that can stand for one field,
/// such as FOCUS's `SubAccountId` and `BillingAccountId`, or spellings of one column).
pub(crate) fn map_columns(columns: &[Column], names: &[String]) -> Vec<Option<usize>> {
    columns
        .iter()
        .map(|c| c.aliases.iter().find_map(|a| names.iter().position(|n| names_column(n, a))))
        .collect()
}

/// Refuses a header in which a column the profile reads truly appears twice: the same name,
/// or two spellings of one column (see [`spelling`]); the copies may disagree, and reading one
/// of them would be a silent choice. Two different columns that a profile offers as
/// alternatives for one field are not a repetition: the first present wins
/// ([`map_columns`]).
pub(crate) fn refuse_repeated_columns(
    path: &Path,
    line: u64,
    columns: &[Column],
    names: &[String],
) -> Result<()> {
    let spellings: Vec<String> = names.iter().map(|n| spelling(n)).collect();
    for first in map_columns(columns, names).into_iter().flatten() {
        let read = &spellings[first];
        if read.is_empty() {
            continue;
        }
        if let Some(second) =
            spellings.iter().enumerate().position(|(i, s)| i != first && s == read)
        {
            let (a, b) = (first.min(second), first.max(second));
            let spelled = if names[a] == names[b] {
                String::new()
            } else {
                format!(": {:?} and {:?}", names[a], names[b])
            };
            return Err(ErrorKind::Malformed {
                location: Location::line(path, line),
                message: format!(
                    "column {} appears twice (columns {} and {}{spelled})",
                    names[first],
                    a + 1,
                    b + 1
                ),
            }
            .into());
        }
    }
    Ok(())
}

/// How well a row fits a profile: columns present, and the required ones it lacks.
pub(crate) fn score(columns: &[Column], names: &[String]) -> (usize, Vec<String>) {
    let map = map_columns(columns, names);
    let found = map.iter().filter(|m| m.is_some()).count();
    let missing = columns
        .iter()
        .zip(&map)
        .filter(|(c, m)| c.required && m.is_none())
        .map(|(c, _)| c.aliases[0].to_owned())
        .collect();
    (found, missing)
}

/// Picks the (profile, header row) pair with the most matching columns among those that have
/// every required column.
pub(crate) fn choose(
    path: &Path,
    pool: &[&'static Profile],
    rows: &[Vec<String>],
    lines: &[u64],
    forced: bool,
) -> Result<(&'static Profile, usize)> {
    let mut best: Option<(usize, &'static Profile, usize)> = None;
    let mut near: Vec<(usize, NearMiss, usize)> = Vec::new();
    for &profile in pool {
        let mut closest: Option<(usize, Vec<String>, usize)> = None;
        for (i, names) in rows.iter().enumerate() {
            let (found, missing) = score(profile.columns(), names);
            if missing.is_empty() && best.as_ref().is_none_or(|b| found > b.0) {
                best = Some((found, profile, i));
            }
            if closest.as_ref().is_none_or(|c| found > c.0) {
                closest = Some((found, missing, i));
            }
        }
        if let Some((found, missing, i)) = closest {
            near.push((found, NearMiss { profile: profile.name().to_owned(), missing }, i));
        }
    }
    if let Some((_, profile, i)) = best {
        return Ok((profile, i));
    }
    near.sort_by_key(|n| std::cmp::Reverse(n.0));
    let header_row = near.first().map_or(0, |n| n.2);
    let mut header = rows.get(header_row).cloned().unwrap_or_default();
    header.retain(|h| !h.is_empty());
    let closest: Vec<NearMiss> =
        near.into_iter().take(if forced { 1 } else { 2 }).map(|n| n.1).collect();
    let mut location = Location::line(path, lines.get(header_row).copied().unwrap_or(1));
    if let Some(column) = closest.first().and_then(|n| n.missing.first()) {
        location = location.with_column(column.clone());
    }
    Err(ErrorKind::UnknownFormat { location, header, closest }.into())
}

/// What to export instead, for a file no profile fits whose columns say which export it is:
/// a platform's export that is not its bill of charges, or one gpuaudit does not read yet.
/// `None` when the columns say nothing.
pub fn export_advice(header: &[String]) -> Option<&'static str> {
    let spellings: Vec<String> = header.iter().map(|h| spelling(h)).collect();
    let has = |name: &str| spellings.contains(&spelling(name));
    let any = |names: &[&str]| names.iter().any(|n| has(n));
    if has("billing_account_id") && any(&["service.description", "sku.description", "cost_type"]) {
        return Some(
            "this is a Google Cloud billing export (BigQuery's standard or detailed usage cost table) without the columns gpuaudit reads: export the table as JSON lines (bq extract --destination_format NEWLINE_DELIMITED_JSON …), which the gcp profile reads, or FOCUS (Google Cloud's BigQuery FOCUS view, as CSV or Parquet)",
        );
    }
    if header.first().is_some_and(|h| h.trim().eq_ignore_ascii_case("service"))
        && header.iter().any(|h| h.trim_end().ends_with("($)"))
    {
        return Some(
            "this is an AWS Cost Explorer report, which holds totals, not charges: export a Cost and Usage Report (CUR 2.0 or legacy CUR) or FOCUS 1.0 from AWS Data Exports",
        );
    }
    if has("lineItem/referenceNo") && !has("cost/myCost") {
        return Some(
            "this is an OCI usage report, which holds no money: import the cost report of the same period (reports/cost-csv/…)",
        );
    }
    if any(&["MeterCategory", "MeterName"])
        && !any(&["BillingCurrencyCode", "BillingCurrency", "Currency"])
    {
        return Some(
            "this is an Azure export without its currency: export Cost Management's cost details (actual or amortized cost), which carry BillingCurrency",
        );
    }
    None
}

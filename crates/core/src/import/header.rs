//! Finding the header among the first rows and choosing the profile: the (profile, row) pair
//! with the most matching columns among those that have every required column; a header
//! with a column the profile reads twice is refused.

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

/// For each of `columns`, the index of the first header name equal to one of its aliases.
pub(crate) fn map_columns(columns: &[Column], names: &[String]) -> Vec<Option<usize>> {
    columns
        .iter()
        .map(|c| {
            c.aliases.iter().find_map(|a| names.iter().position(|n| n.eq_ignore_ascii_case(a)))
        })
        .collect()
}

/// Refuses a header that holds a column the profile reads twice (under one name or two of
/// its aliases): the copies may disagree, and reading one of them would be a silent choice.
pub(crate) fn refuse_repeated_columns(
    path: &Path,
    line: u64,
    columns: &[Column],
    names: &[String],
) -> Result<()> {
    for c in columns {
        let found: Vec<usize> = names
            .iter()
            .enumerate()
            .filter(|(_, n)| c.aliases.iter().any(|a| n.eq_ignore_ascii_case(a)))
            .map(|(i, _)| i)
            .collect();
        if let [first, second, ..] = found[..] {
            return Err(ErrorKind::Malformed {
                location: Location::line(path, line),
                message: format!(
                    "column {} appears twice (columns {} and {})",
                    names[first],
                    first + 1,
                    second + 1
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

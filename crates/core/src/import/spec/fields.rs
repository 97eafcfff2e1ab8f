//! What a row says beyond its money and times: its instance, its resource, its GPU model and
//! count, and a platform it names itself.

use std::borrow::Cow;

use super::parser::{Facts, amount_at};
use super::*;
use crate::charge::Category;
use crate::error::{RowError, RowProblem};
use crate::import::row::Row;
use crate::parse::NumberFormat;

/// The instance (`[[instance]]`): the first capture of the first regex of the category that
/// matches its column.
pub(super) fn find_instance<'t>(
    p: &Profile,
    locations: &mut [regex::CaptureLocations],
    texts: &'t [Option<Cow<'_, str>>],
    category: Category,
) -> Option<&'t str> {
    p.instance.iter().zip(locations.iter_mut()).find_map(|((cats, c, re), at)| {
        if !cats.is_empty() && !cats.contains(&category) {
            return None;
        }
        let text = texts[*c].as_deref()?;
        re.captures_read(at, text)?;
        at.get(1).map(|(from, to)| &text[from..to])
    })
}

/// The resource (`[[resource]]`): a column or a template of the instance, by category; else
/// the `resource_id` column.
pub(super) fn resource_of<'t>(
    p: &Profile,
    texts: &'t [Option<Cow<'_, str>>],
    category: Category,
    instance: Option<&str>,
) -> Option<Cow<'t, str>> {
    match p.resource.iter().find(|(cats, _)| cats.is_empty() || cats.contains(&category)) {
        Some((_, ResourceSource::Column(c))) => texts[*c].as_deref().map(Cow::Borrowed),
        Some((_, ResourceSource::Template(t))) => {
            instance.map(|i| Cow::Owned(t.replace("{instance}", i)))
        }
        None => p.resource_column.and_then(|c| texts[c].as_deref()).map(Cow::Borrowed),
    }
}

/// The GPU model of a compute row and the count its entry gives (`[[gpu_models]]`): by the
/// prefix of a column, the first entry that matches.
pub(super) fn gpu_model<'p>(
    p: &'p Profile,
    facts: &Facts<'_>,
    category: Category,
) -> Option<(&'p str, Option<u16>)> {
    if category != Category::Compute {
        return None;
    }
    p.gpu_models
        .iter()
        .find(|(c, prefix, _, _)| {
            let text = facts.text(*c).as_bytes();
            text.get(..prefix.len()).is_some_and(|t| t.eq_ignore_ascii_case(prefix.as_bytes()))
        })
        .map(|(_, _, m, n)| (m.as_str(), *n))
}

/// Whether `name` can name a platform: it names a folder of the ledger (`platform=NAME`), so
/// it is 1 to 40 lower-case ASCII letters, digits, `-` or `_`.
pub(super) fn is_platform_name(name: &str) -> bool {
    (1..=40).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// The GPU count in column `i` (its whole part), if the profile has one.
pub(super) fn gpu_count(
    row: &Row<'_>,
    texts: &[Option<Cow<'_, str>>],
    i: Option<usize>,
    numbers: NumberFormat,
) -> Result<Option<u16>, RowError> {
    let Some(i) = i else { return Ok(None) };
    amount_at(row, texts, i, numbers)?
        .map(|n| {
            u16::try_from(n.trunc().mantissa()).map_err(|_| row.error(i, RowProblem::NotGpuCount))
        })
        .transpose()
}

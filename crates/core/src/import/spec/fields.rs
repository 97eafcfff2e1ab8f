//! What a row says beyond its money and times: its instance, its resource, its GPU model and
//! count, and a platform it names itself.

use std::borrow::Cow;

use super::amounts::amount_at;
use super::parser::{Facts, Parser};
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

impl Parser<'_> {
    /// A row's platform: the one it names itself (`platform`: gpuaudit's own FOCUS export),
    /// else that of the provider it names (`provider`, [`Parser::provider_platform`]), else
    /// the profile's; and the platform its identity is hashed with when that is not the
    /// charge's: the profile's own, for a platform that comes from the provider (such rows
    /// were imported on the profile's platform before providers were told apart, and keep
    /// their ids), and the profile's former platform for its own rows.
    pub(super) fn row_platform<'t>(
        &mut self,
        row: &Row<'_>,
        named: Option<&'t str>,
        provider: Option<&str>,
    ) -> Result<(&'t str, Option<&'static str>), RowError> {
        let p = self.profile;
        match (named, provider) {
            (Some(name), _)
                if is_platform_name(name) && crate::platforms::kept_name(name).is_some() =>
            {
                Ok((name, None))
            }
            (Some(name), _) => {
                let i = p.fields.platform.unwrap_or_default();
                Err(row.error(i, RowProblem::NotPlatform(name.to_owned())))
            }
            (None, Some(provider)) => {
                let platform = self.provider_platform(row, provider)?;
                Ok((platform, Some(p.platform).filter(|own| *own != platform)))
            }
            (None, None) => Ok((p.platform, p.former_platform)),
        }
    }

    /// The platform of the provider a row names (`[[providers]]`), else its name made a
    /// platform name; a row naming more providers than the ledger keeps names is refused.
    fn provider_platform(
        &mut self,
        row: &Row<'_>,
        provider: &str,
    ) -> Result<&'static str, RowError> {
        if let Some((last, platform)) = &self.last_provider
            && last == provider
        {
            return Ok(platform);
        }
        let p = self.profile;
        let named = p
            .spec
            .providers
            .iter()
            .find(|e| e.names.iter().any(|n| n.eq_ignore_ascii_case(provider)));
        let name = match named {
            Some(e) => Some(e.platform.clone()),
            None => platform_name_of(provider),
        };
        let kept = name.as_deref().and_then(crate::platforms::kept_name);
        let column = p.fields.provider.unwrap_or_default();
        let platform =
            kept.ok_or_else(|| row.error(column, RowProblem::NotPlatform(provider.to_owned())))?;
        self.last_provider = Some((provider.to_owned(), platform));
        Ok(platform)
    }
}

/// A provider's name made a platform name: ASCII letters and digits lower-cased, every other
/// run of characters one `-`, at most 40 (`Snowflake Inc.` → `snowflake-inc`); `None` when
/// nothing is left.
fn platform_name_of(provider: &str) -> Option<String> {
    let mut name = String::new();
    for c in provider.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c.to_ascii_lowercase());
        } else if !name.is_empty() && !name.ends_with('-') {
            name.push('-');
        }
        if name.len() >= 40 {
            break;
        }
    }
    let name = name.trim_end_matches('-');
    (!name.is_empty()).then(|| name.to_owned())
}

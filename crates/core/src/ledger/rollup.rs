//! Rollups: the spend of a batch summed by every key a summary can ask for, written at commit
//! beside the charges (`rollups/<batch>.parquet`), so that `summary` and `ledger` read a file a
//! hundred times smaller than the charges instead of the charges.
//!
//! A rollup row is a group of spend charges (payments left out, as [`crate::report`] leaves
//! them) with the same month, platform, account, category, currency and instance, and, for a
//! charge without an instance, the same resource: [`crate::link_to_instances`] links such a
//! charge to the instance whose id its resource is, and which instances there are depends on
//! the window read, so the link is made when a summary reads the rollups, exactly as a load of
//! the charges makes it. Money is summed as integers at the ledger's scale (10^-12), exact;
//! a sum that does not fit, or a batch with more than [`MAX_GROUPS`] groups, gives no rollup
//! and the summary reads that batch's charges instead (same answer, slower).
//!
//! This module owns the rollup's layout and arithmetic; it must not know the CLI's output.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::path::Path;

use polars::prelude::*;
use rust_decimal::Decimal;
use rustc_hash::FxHasher;

use crate::charge::{Category, Kind, MAX_SCALE, YearMonth};
use crate::error::{Error, ErrorKind, Result};
use crate::report::{GroupKey, SummaryRow};

/// Groups beyond which a batch keeps no rollup (its rollup would be nearly as big as its
/// charges).
pub(crate) const MAX_GROUPS: usize = 1 << 20;

type Fast<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// What a rollup row is keyed by.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Key {
    pub month: YearMonth,
    pub platform: String,
    pub account: Option<String>,
    pub category: Category,
    pub currency: String,
    pub instance: Option<String>,
    /// The resource of a charge without an instance (what links it to one).
    pub link: Option<String>,
}

/// The sums of a group, integers at scale [`MAX_SCALE`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Sums {
    pub billed: i128,
    pub list: i128,
    pub charges: u64,
}

impl Sums {
    fn add(&mut self, other: Sums) -> Option<()> {
        self.billed = self.billed.checked_add(other.billed)?;
        self.list = self.list.checked_add(other.list)?;
        self.charges += other.charges;
        Some(())
    }
}

/// The rollup of a batch being written, or read back.
#[derive(Debug, Default)]
pub(crate) struct Rollup {
    groups: Fast<Key, Sums>,
    /// Too many groups, or a sum that does not fit: no rollup for this batch.
    abandoned: bool,
    /// The spend by month, platform and currency, kept even when the groups are abandoned;
    /// `None` once a sum does not fit.
    totals: Option<BTreeMap<(YearMonth, String, String), Sums>>,
    /// The most groups kept before the rollup is abandoned.
    limit: usize,
}

/// A frame's row key, borrowed from its columns.
type RowKey<'a> = (Option<&'a str>, u8, Option<&'a str>, Option<&'a str>, Option<&'a str>);

impl Rollup {
    /// An empty rollup, as a batch writes it: abandoned past [`MAX_GROUPS`] groups.
    pub(crate) fn new() -> Rollup {
        Rollup { totals: Some(BTreeMap::new()), limit: MAX_GROUPS, ..Rollup::default() }
    }

    /// An empty rollup that keeps every group: the window a summary reads.
    pub(crate) fn unlimited() -> Rollup {
        Rollup { limit: usize::MAX, ..Rollup::new() }
    }

    /// Whether the rollup holds every charge it was given.
    pub(crate) fn is_whole(&self) -> bool {
        !self.abandoned
    }

    /// The groups, in key order.
    pub(crate) fn rows(&self) -> Vec<(&Key, &Sums)> {
        let mut rows: Vec<_> = self.groups.iter().collect();
        rows.sort_unstable_by(|a, b| a.0.cmp(b.0));
        rows
    }

    /// Adds the spend charges of `frame`, the charges of one partition (`month`, `platform`):
    /// a batch's frame (enums as codes) or a part file read back (enums as texts).
    pub(crate) fn add_frame(
        &mut self,
        month: YearMonth,
        platform: &str,
        frame: &DataFrame,
    ) -> PolarsResult<()> {
        let text = |name: &str| -> PolarsResult<StringChunked> {
            Ok(frame.column(name)?.as_materialized_series().rechunk().str()?.clone())
        };
        let (account, currency) = (text("account")?, text("currency")?);
        let (instance, resource) = (text("instance_id")?, text("resource_id")?);
        let category = codes(frame, "category", |t| t.parse::<Category>().ok().map(|c| c as i32))?;
        let kind = codes(frame, "kind", |t| t.parse::<Kind>().ok().map(|k| k as i32))?;
        let billed = mantissas(frame, "billed_cost")?;
        let list = mantissas(frame, "list_cost")?;
        let mut local: Fast<RowKey<'_>, Sums> = Fast::default();
        let rows = account.iter().zip(currency.iter()).zip(instance.iter().zip(resource.iter()));
        for (i, ((account, currency), (instance, resource))) in rows.enumerate() {
            if kind[i] == Some(Kind::Payment as i32) {
                continue;
            }
            let Some(category) = category[i].and_then(|c| u8::try_from(c).ok()) else {
                continue;
            };
            let link = if instance.is_none() { resource } else { None };
            let billed = billed[i].unwrap_or(0);
            let sums = Sums { billed, list: list[i].unwrap_or(billed), charges: 1 };
            let entry = local.entry((account, category, currency, instance, link)).or_default();
            if entry.add(sums).is_none() {
                (self.abandoned, self.totals) = (true, None);
                self.groups = Fast::default();
                return Ok(());
            }
        }
        for ((account, category, currency, instance, link), sums) in local {
            let currency = currency.unwrap_or_default();
            self.add_total(month, platform, currency, sums);
            if self.abandoned {
                continue;
            }
            let Some(category) = Category::ALL.get(usize::from(category)).copied() else {
                continue;
            };
            let key = Key {
                month,
                platform: platform.to_owned(),
                account: account.map(str::to_owned),
                category,
                currency: currency.to_owned(),
                instance: instance.map(str::to_owned),
                link: link.map(str::to_owned),
            };
            self.add(key, sums);
        }
        Ok(())
    }

    /// Adds `sums` to the spend of (`month`, `platform`, `currency`).
    fn add_total(&mut self, month: YearMonth, platform: &str, currency: &str, sums: Sums) {
        let Some(totals) = &mut self.totals else { return };
        let found =
            totals.iter_mut().find(|((m, p, c), _)| *m == month && p == platform && c == currency);
        let fits = match found {
            Some((_, total)) => total.add(sums),
            None => {
                totals.insert((month, platform.to_owned(), currency.to_owned()), sums);
                Some(())
            }
        };
        if fits.is_none() {
            self.totals = None;
        }
    }

    /// Adds `sums` to group `key`.
    pub(crate) fn add(&mut self, key: Key, sums: Sums) {
        if self.abandoned {
            return;
        }
        let full = self.groups.len() >= self.limit && !self.groups.contains_key(&key);
        if full || self.groups.entry(key).or_default().add(sums).is_none() {
            self.abandoned = true;
            self.groups = Fast::default();
        }
    }

    /// Adds every group of `other`.
    pub(crate) fn merge(&mut self, other: Rollup) {
        if other.abandoned {
            self.abandoned = true;
            self.groups = Fast::default();
        }
        match other.totals {
            Some(totals) => {
                for ((month, platform, currency), sums) in totals {
                    self.add_total(month, &platform, &currency, sums);
                }
            }
            None => self.totals = None,
        }
        for (key, sums) in other.groups {
            self.add(key, sums);
        }
    }

    /// The spend by month, platform and currency: what the manifest records of a batch;
    /// `None` when a sum does not fit.
    pub(crate) fn spend(&self) -> Option<Vec<crate::ledger::manifest::Spend>> {
        let totals = self.totals.as_ref()?;
        totals
            .iter()
            .map(|((month, platform, currency), sums)| {
                Some(crate::ledger::manifest::Spend {
                    month: month.to_string(),
                    platform: platform.clone(),
                    currency: currency.clone(),
                    billed_cost: decimal(sums.billed, "").ok()?,
                    list_cost: decimal(sums.list, "").ok()?,
                    charges: sums.charges,
                })
            })
            .collect()
    }

    /// Writes the rollup as a Parquet file.
    pub(crate) fn write(&self, path: &Path) -> Result<()> {
        let parquet = |source| Error::from(ErrorKind::Parquet { path: path.to_owned(), source });
        let rows = self.rows();
        let texts = |f: fn(&Key) -> Option<&str>, name: &str| {
            Column::new(name.into(), rows.iter().map(|(k, _)| f(k)).collect::<Vec<_>>())
        };
        let months: Vec<String> = rows.iter().map(|(k, _)| k.month.to_string()).collect();
        let money = |f: fn(&Sums) -> i128, name: &str| -> PolarsResult<Column> {
            let values = rows.iter().map(|(_, s)| f(s)).collect::<Vec<_>>();
            Ok(Int128Chunked::from_vec(name.into(), values)
                .into_decimal(38, MAX_SCALE as usize)?
                .into_column())
        };
        let mut frame = DataFrame::new_infer_height(vec![
            Column::new("month".into(), months),
            texts(|k| Some(&k.platform), "platform"),
            texts(|k| k.account.as_deref(), "account"),
            texts(|k| Some(k.category.as_str()), "category"),
            texts(|k| Some(&k.currency), "currency"),
            texts(|k| k.instance.as_deref(), "instance_id"),
            texts(|k| k.link.as_deref(), "link_resource"),
            money(|s| s.billed, "billed_cost").map_err(parquet)?,
            money(|s| s.list, "list_cost").map_err(parquet)?,
            Column::new("charges".into(), rows.iter().map(|(_, s)| s.charges).collect::<Vec<_>>()),
        ])
        .map_err(parquet)?;
        let mut file = super::io(path, std::fs::File::create(path))?;
        ParquetWriter::new(&mut file).finish(&mut frame).map_err(parquet)?;
        super::io(path, file.sync_all())
    }

    /// Reads a rollup written by [`Rollup::write`], keeping the groups of `months` (all
    /// when empty).
    pub(crate) fn read(path: &Path, months: &HashSet<YearMonth>, into: &mut Rollup) -> Result<()> {
        let ledger = |m: String| Error::ledger(path, m);
        let frame = super::reader::read_parquet(path, None)?;
        let text = |name: &str| -> Result<Vec<Option<String>>> {
            let column = frame.column(name).map_err(|e| ledger(e.to_string()))?;
            let column = column.str().map_err(|e| ledger(e.to_string()))?;
            Ok(column.iter().map(|v| v.map(str::to_owned)).collect())
        };
        let (month, platform, account) = (text("month")?, text("platform")?, text("account")?);
        let (category, currency) = (text("category")?, text("currency")?);
        let (instance, link) = (text("instance_id")?, text("link_resource")?);
        let billed = mantissas(&frame, "billed_cost").map_err(|e| ledger(e.to_string()))?;
        let list = mantissas(&frame, "list_cost").map_err(|e| ledger(e.to_string()))?;
        let charges = frame.column("charges").and_then(|c| c.cast(&DataType::UInt64));
        let charges = charges.map_err(|e| ledger(e.to_string()))?;
        let charges = charges.u64().map_err(|e| ledger(e.to_string()))?;
        let rollup = into;
        for (i, n) in charges.iter().enumerate() {
            let bad = |what: &str| ledger(format!("rollup row {i}: {what}"));
            let month: YearMonth = month[i]
                .as_deref()
                .ok_or_else(|| bad("no month"))?
                .parse()
                .map_err(|m: String| bad(&m))?;
            if !months.is_empty() && !months.contains(&month) {
                continue;
            }
            let key = Key {
                month,
                platform: platform[i].clone().ok_or_else(|| bad("no platform"))?,
                account: account[i].clone(),
                category: category[i]
                    .as_deref()
                    .ok_or_else(|| bad("no category"))?
                    .parse()
                    .map_err(|m: String| bad(&m))?,
                currency: currency[i].clone().ok_or_else(|| bad("no currency"))?,
                instance: instance[i].clone(),
                link: link[i].clone(),
            };
            let sums = Sums {
                billed: billed[i].ok_or_else(|| bad("no billed cost"))?,
                list: list[i].ok_or_else(|| bad("no list cost"))?,
                charges: n.ok_or_else(|| bad("no count"))?,
            };
            rollup.add_total(key.month, &key.platform, &key.currency, sums);
            rollup.add(key, sums);
        }
        Ok(())
    }

    /// The summary of the groups by `keys` (and currency), exactly as
    /// [`crate::report::summarize`] gives it for the charges they sum, each charge without an
    /// instance linked to the instance whose id its resource is ([`crate::link_to_instances`]).
    pub(crate) fn summarize(&self, keys: &[GroupKey]) -> Result<Vec<SummaryRow>> {
        let instances: HashSet<(&str, Option<&str>, &str)> = self
            .groups
            .keys()
            .filter(|k| k.category == Category::Compute)
            .filter_map(|k| {
                Some((k.platform.as_str(), k.account.as_deref(), k.instance.as_deref()?))
            })
            .collect();
        let mut groups: BTreeMap<(Vec<Option<String>>, &str), Sums> = BTreeMap::new();
        for (key, sums) in &self.groups {
            let linked = key.link.as_deref().filter(|r| {
                instances.contains(&(key.platform.as_str(), key.account.as_deref(), *r))
            });
            let instance = key.instance.as_deref().or(linked);
            let values = keys
                .iter()
                .map(|k| match k {
                    GroupKey::Platform => Some(key.platform.clone()),
                    GroupKey::Category => Some(key.category.as_str().to_owned()),
                    GroupKey::Instance => instance.map(str::to_owned),
                    GroupKey::Month => Some(key.month.to_string()),
                })
                .collect();
            let entry = groups.entry((values, &key.currency)).or_default();
            entry.add(*sums).ok_or_else(|| overflow("the summary's billed cost"))?;
        }
        let rows = groups
            .into_iter()
            .map(|((keys, currency), sums)| {
                Ok(SummaryRow {
                    keys,
                    currency: currency.to_owned(),
                    billed_cost: decimal(sums.billed, "the summary's billed cost")?,
                    list_cost: decimal(sums.list, "the summary's list cost")?,
                    charges: sums.charges,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(crate::report::sorted(rows))
    }
}

fn overflow(what: &str) -> Error {
    ErrorKind::Overflow { what: what.to_owned() }.into()
}

/// `v` at scale [`MAX_SCALE`] as a decimal; an overflow error naming `what` when it does not
/// fit.
fn decimal(v: i128, what: &str) -> Result<Decimal> {
    super::columns::decimal_from_mantissa(v, MAX_SCALE).map_err(|_| overflow(what))
}

/// Column `name` of `frame` as codes: the frame's own (a batch's) or its texts' (a part
/// file's), through `parse`.
fn codes(
    frame: &DataFrame,
    name: &str,
    parse: fn(&str) -> Option<i32>,
) -> PolarsResult<Vec<Option<i32>>> {
    let column = frame.column(name)?;
    if column.dtype() == &DataType::Int32 {
        return Ok(column.i32()?.iter().collect());
    }
    let texts = column.str()?;
    Ok(texts.iter().map(|t| t.and_then(parse)).collect())
}

/// Decimal column `name` of `frame` as integers at scale [`MAX_SCALE`].
fn mantissas(frame: &DataFrame, name: &str) -> PolarsResult<Vec<Option<i128>>> {
    let column = frame.column(name)?.decimal()?;
    let scale = column.scale() as u32;
    let factor = 10i128.pow(MAX_SCALE.saturating_sub(scale));
    let values = column.physical().iter();
    Ok(values.map(|v| v.and_then(|v| v.checked_mul(factor))).collect())
}

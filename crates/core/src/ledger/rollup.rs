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
use std::sync::Arc;

use polars::prelude::*;
use rust_decimal::Decimal;
use rustc_hash::FxHasher;

use crate::charge::{Category, Kind, MAX_SCALE, YearMonth};
use crate::error::{Error, ErrorKind, Result};
use crate::report::{GroupKey, SummaryRow};

/// Groups beyond which a batch keeps no rollup.
pub(crate) const MAX_GROUPS: usize = 1 << 20;

/// A batch keeps no rollup when, after this many charges, it has more than one group for
/// every [`CHARGES_PER_GROUP`] charges: the rollup would save little over reading the
/// charges, and cost nearly as much to build as writing them. Hourly and daily bills have
/// hundreds or tens of charges a resource and month.
const SMALL_BATCH: u64 = 1 << 16;
const CHARGES_PER_GROUP: u64 = 16;

type Fast<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// "No text": a null cell.
const NONE: u32 = u32::MAX;

/// The texts of a rollup, each kept once and named by its index.
#[derive(Debug, Default)]
struct Texts {
    index: Fast<Arc<str>, u32>,
    texts: Vec<Arc<str>>,
}

impl Texts {
    fn id(&mut self, text: Option<&str>) -> u32 {
        let Some(text) = text else { return NONE };
        if let Some(&id) = self.index.get(text) {
            return id;
        }
        let id = self.texts.len() as u32;
        let text: Arc<str> = text.into();
        self.texts.push(text.clone());
        self.index.insert(text, id);
        id
    }

    fn get(&self, id: u32) -> Option<&str> {
        self.texts.get(id as usize).map(|t| &**t)
    }
}

/// What a rollup row is keyed by; texts by their index in the rollup's [`Texts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    month: YearMonth,
    platform: u32,
    account: u32,
    sub_account: u32,
    category: Category,
    currency: u32,
    instance: u32,
    /// The resource of a charge without an instance (what links it to one).
    link: u32,
}

/// A rollup row's key with its texts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Row<'a> {
    pub month: YearMonth,
    pub platform: &'a str,
    pub account: Option<&'a str>,
    pub sub_account: Option<&'a str>,
    pub category: Category,
    pub currency: &'a str,
    pub instance: Option<&'a str>,
    pub link: Option<&'a str>,
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

/// The rollup of a batch being written, or of the window a summary reads.
#[derive(Debug, Default)]
pub(crate) struct Rollup {
    texts: Texts,
    groups: Fast<Key, Sums>,
    /// Whether groups are kept by instance and resource (a summary by other keys needs
    /// neither).
    detail: bool,
    /// Too many groups, or a sum that does not fit: no rollup for this batch.
    abandoned: bool,
    /// Whether the rollup is abandoned when its groups are many for its charges.
    bounded: bool,
    /// The charges added.
    seen: u64,
    /// The spend by month, platform and currency, kept even when the groups are abandoned;
    /// `None` once a sum does not fit.
    totals: Option<BTreeMap<(YearMonth, String, String), Sums>>,
}

/// A frame's row key, borrowed from its columns.
type FrameKey<'a> =
    (Option<&'a str>, Option<&'a str>, u8, Option<&'a str>, Option<&'a str>, Option<&'a str>);

impl Rollup {
    /// An empty rollup, as a batch writes it: abandoned when it would not be small.
    pub(crate) fn new() -> Rollup {
        Rollup { detail: true, bounded: true, totals: Some(BTreeMap::new()), ..Rollup::default() }
    }

    /// An empty rollup that keeps every group (by instance and resource only when `detail`):
    /// the window a summary reads.
    pub(crate) fn unlimited(detail: bool) -> Rollup {
        Rollup { detail, bounded: false, ..Rollup::new() }
    }

    /// Whether the rollup holds every charge it was given.
    pub(crate) fn is_whole(&self) -> bool {
        !self.abandoned
    }

    /// The groups with their texts, in key order.
    pub(crate) fn rows(&self) -> Vec<(Row<'_>, Sums)> {
        let mut rows: Vec<_> = self.groups.iter().map(|(k, s)| (self.row(k), *s)).collect();
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        rows
    }

    fn row(&self, k: &Key) -> Row<'_> {
        Row {
            month: k.month,
            platform: self.texts.get(k.platform).unwrap_or_default(),
            account: self.texts.get(k.account),
            sub_account: self.texts.get(k.sub_account),
            category: k.category,
            currency: self.texts.get(k.currency).unwrap_or_default(),
            instance: self.texts.get(k.instance),
            link: self.texts.get(k.link),
        }
    }

    fn abandon(&mut self) {
        self.abandoned = true;
        self.groups = Fast::default();
        self.texts = Texts::default();
    }

    /// Adds the spend charges of `frame`, the charges of one partition (`month`, `platform`):
    /// a batch's frame (enums as codes) or a part file read back (enums as texts).
    pub(crate) fn add_frame(
        &mut self,
        month: YearMonth,
        platform: &str,
        frame: &DataFrame,
    ) -> PolarsResult<()> {
        if self.abandoned {
            return self.add_totals(month, platform, frame);
        }
        let detail = self.detail;
        let text = |name: &str| -> PolarsResult<StringChunked> {
            Ok(frame.column(name)?.as_materialized_series().str()?.clone())
        };
        let (account, currency) = (text("account")?, text("currency")?);
        // A part file written before sub accounts has none ([`super::schema::LATE`]).
        let sub_account = match frame.column("sub_account") {
            Ok(_) => Some(text("sub_account")?),
            Err(_) => None,
        };
        let mut sub_accounts = sub_account.as_ref().map(|c| c.iter());
        let (instance, resource) = match detail {
            true => (Some(text("instance_id")?), Some(text("resource_id")?)),
            false => (None, None),
        };
        let mut category =
            codes(frame, "category", |t| t.parse::<Category>().ok().map(|c| c as i32))?;
        let mut kind = codes(frame, "kind", |t| t.parse::<Kind>().ok().map(|k| k as i32))?;
        let mut billed = mantissas(frame, "billed_cost")?;
        let mut list = mantissas(frame, "list_cost")?;
        let mut local: Fast<FrameKey<'_>, Sums> = Fast::default();
        let (mut instances, mut resources) =
            (instance.as_ref().map(|c| c.iter()), resource.as_ref().map(|c| c.iter()));
        for (account, currency) in account.iter().zip(currency.iter()) {
            let sub_account = sub_accounts.as_mut().and_then(|it| it.next()).flatten();
            let instance = instances.as_mut().and_then(|it| it.next()).flatten();
            let resource = resources.as_mut().and_then(|it| it.next()).flatten();
            let (category, kind) = (category.next().flatten(), kind.next().flatten());
            let (billed, list) = (billed.next().flatten(), list.next().flatten());
            if kind == Some(Kind::Payment as i32) {
                continue;
            }
            let Some(category) = category.and_then(|c| u8::try_from(c).ok()) else {
                continue;
            };
            let link = if instance.is_none() { resource } else { None };
            let billed = billed.unwrap_or(0);
            let sums = Sums { billed, list: list.unwrap_or(billed), charges: 1 };
            let entry = local
                .entry((account, sub_account, category, currency, instance, link))
                .or_default();
            if entry.add(sums).is_none() {
                self.abandon();
                self.totals = None;
                return Ok(());
            }
        }
        self.seen += frame.height() as u64;
        let platform_id = self.texts.id(Some(platform));
        for ((account, sub_account, category, currency, instance, link), sums) in local {
            self.add_total(month, platform, currency.unwrap_or_default(), sums);
            let Some(category) = Category::ALL.get(usize::from(category)).copied() else {
                continue;
            };
            if self.abandoned {
                continue;
            }
            let key = Key {
                month,
                platform: platform_id,
                account: self.texts.id(account),
                sub_account: self.texts.id(sub_account),
                category,
                currency: self.texts.id(Some(currency.unwrap_or_default())),
                instance: self.texts.id(instance),
                link: self.texts.id(link),
            };
            self.add(key, sums);
        }
        let many = self.bounded
            && self.seen >= SMALL_BATCH
            && self.groups.len() as u64 * CHARGES_PER_GROUP > self.seen;
        if many {
            self.abandon();
        }
        Ok(())
    }

    /// [`Rollup::add_frame`] for an abandoned rollup: only the spend by currency is kept.
    fn add_totals(
        &mut self,
        month: YearMonth,
        platform: &str,
        frame: &DataFrame,
    ) -> PolarsResult<()> {
        let currency = frame.column("currency")?.as_materialized_series().str()?.clone();
        let mut kind = codes(frame, "kind", |t| t.parse::<Kind>().ok().map(|k| k as i32))?;
        let mut billed = mantissas(frame, "billed_cost")?;
        let mut list = mantissas(frame, "list_cost")?;
        // A frame has one currency or a few: found by comparing, not hashing.
        let mut sums: Vec<(Option<&str>, Sums)> = Vec::new();
        for currency in currency.iter() {
            let (kind, billed, list) =
                (kind.next().flatten(), billed.next().flatten(), list.next().flatten());
            if kind == Some(Kind::Payment as i32) {
                continue;
            }
            let billed = billed.unwrap_or(0);
            let one = Sums { billed, list: list.unwrap_or(billed), charges: 1 };
            let fits = match sums.iter_mut().find(|(c, _)| *c == currency) {
                Some((_, total)) => total.add(one),
                None => {
                    sums.push((currency, one));
                    Some(())
                }
            };
            if fits.is_none() {
                self.totals = None;
                return Ok(());
            }
        }
        for (currency, sums) in sums {
            self.add_total(month, platform, currency.unwrap_or_default(), sums);
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
    fn add(&mut self, key: Key, sums: Sums) {
        if self.abandoned {
            return;
        }
        let full =
            self.groups.len() >= MAX_GROUPS && self.bounded && !self.groups.contains_key(&key);
        if full || self.groups.entry(key).or_default().add(sums).is_none() {
            self.abandon();
        }
    }

    /// Adds group `row`.
    fn add_row(&mut self, row: &Row<'_>, sums: Sums) {
        self.add_total(row.month, row.platform, row.currency, sums);
        let key = self.key_of(row);
        self.add(key, sums);
    }

    /// The key of group `row` among this rollup's texts (without the instance and resource
    /// when it keeps no detail).
    fn key_of(&mut self, row: &Row<'_>) -> Key {
        let (instance, link) = if self.detail { (row.instance, row.link) } else { (None, None) };
        Key {
            month: row.month,
            platform: self.texts.id(Some(row.platform)),
            account: self.texts.id(row.account),
            sub_account: self.texts.id(row.sub_account),
            category: row.category,
            currency: self.texts.id(Some(row.currency)),
            instance: self.texts.id(instance),
            link: self.texts.id(link),
        }
    }

    /// Takes `other` in: as it is when this rollup holds nothing yet (a batch's one Parquet
    /// thread), its groups added one by one otherwise.
    pub(crate) fn absorb(&mut self, other: Rollup) {
        let empty = self.groups.is_empty()
            && !self.abandoned
            && self.totals.as_ref().is_some_and(BTreeMap::is_empty);
        if empty && self.bounded == other.bounded && self.detail == other.detail {
            *self = other;
        } else {
            self.merge(&other);
        }
    }

    /// Adds every group of `other`.
    pub(crate) fn merge(&mut self, other: &Rollup) {
        if other.abandoned {
            self.abandon();
        }
        match &other.totals {
            Some(totals) => {
                for ((month, platform, currency), sums) in totals {
                    self.add_total(*month, platform, currency, *sums);
                }
            }
            None => self.totals = None,
        }
        for (key, sums) in &other.groups {
            if self.abandoned {
                break;
            }
            let key = self.key_of(&other.row(key));
            self.add(key, *sums);
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
        let texts = |f: for<'a> fn(&'a Row<'a>) -> Option<&'a str>, name: &str| {
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
            texts(|k| Some(k.platform), "platform"),
            texts(|k| k.account, "account"),
            texts(|k| Some(k.category.as_str()), "category"),
            texts(|k| Some(k.currency), "currency"),
            texts(|k| k.instance, "instance_id"),
            texts(|k| k.link, "link_resource"),
            money(|s| s.billed, "billed_cost").map_err(parquet)?,
            money(|s| s.list, "list_cost").map_err(parquet)?,
            Column::new("charges".into(), rows.iter().map(|(_, s)| s.charges).collect::<Vec<_>>()),
            texts(|k| k.sub_account, "sub_account"),
        ])
        .map_err(parquet)?;
        let mut file = super::io(path, std::fs::File::create(path))?;
        ParquetWriter::new(&mut file).finish(&mut frame).map_err(parquet)?;
        super::io(path, file.sync_all())
    }

    /// Adds the groups of the rollup file `path` (written by [`Rollup::write`]) of `months`
    /// (all when empty).
    pub(crate) fn read(&mut self, path: &Path, months: &HashSet<YearMonth>) -> Result<()> {
        let ledger = |m: String| Error::ledger(path, m);
        let frame = super::reader::read_parquet(path, None)?;
        let text = |name: &str| -> Result<&StringChunked> {
            let column = frame.column(name).map_err(|e| ledger(e.to_string()))?;
            column.str().map_err(|e| ledger(e.to_string()))
        };
        let (month, platform, account) = (text("month")?, text("platform")?, text("account")?);
        let (category, currency) = (text("category")?, text("currency")?);
        let (instance, link) = (text("instance_id")?, text("link_resource")?);
        // A rollup written before sub accounts has none.
        let sub_account = match frame.column("sub_account") {
            Ok(_) => Some(text("sub_account")?),
            Err(_) => None,
        };
        let billed: Vec<Option<i128>> =
            mantissas(&frame, "billed_cost").map_err(|e| ledger(e.to_string()))?.collect();
        let list: Vec<Option<i128>> =
            mantissas(&frame, "list_cost").map_err(|e| ledger(e.to_string()))?.collect();
        let charges = frame.column("charges").and_then(|c| c.cast(&DataType::UInt64));
        let charges = charges.map_err(|e| ledger(e.to_string()))?;
        let charges = charges.u64().map_err(|e| ledger(e.to_string()))?;
        for (i, n) in charges.iter().enumerate() {
            let bad = |what: &str| ledger(format!("rollup row {i}: {what}"));
            let parsed: std::result::Result<YearMonth, String> =
                month.get(i).ok_or("no month".to_owned()).and_then(str::parse);
            let month = parsed.map_err(|m| bad(&m))?;
            if !months.is_empty() && !months.contains(&month) {
                continue;
            }
            let category: std::result::Result<Category, String> =
                category.get(i).ok_or("no category".to_owned()).and_then(str::parse);
            let row = Row {
                month,
                platform: platform.get(i).ok_or_else(|| bad("no platform"))?,
                account: account.get(i),
                sub_account: sub_account.and_then(|c| c.get(i)),
                category: category.map_err(|m| bad(&m))?,
                currency: currency.get(i).ok_or_else(|| bad("no currency"))?,
                instance: instance.get(i),
                link: link.get(i),
            };
            let sums = Sums {
                billed: billed[i].ok_or_else(|| bad("no billed cost"))?,
                list: list[i].ok_or_else(|| bad("no list cost"))?,
                charges: n.ok_or_else(|| bad("no count"))?,
            };
            self.add_row(&row, sums);
        }
        Ok(())
    }

    /// The summary of the groups by `keys` (and currency), exactly as
    /// [`crate::report::summarize`] gives it for the charges they sum, each charge without an
    /// instance linked to the instance whose id its resource is ([`crate::link_to_instances`]).
    pub(crate) fn summarize(&self, keys: &[GroupKey]) -> Result<Vec<SummaryRow>> {
        let instances: HashSet<(u32, u32, u32)> = self
            .groups
            .keys()
            .filter(|k| k.category == Category::Compute && k.instance != NONE)
            .map(|k| (k.platform, k.account, k.instance))
            .collect();
        let months: BTreeMap<YearMonth, String> =
            self.groups.keys().map(|k| (k.month, k.month.to_string())).collect();
        let mut groups: BTreeMap<(Vec<Option<&str>>, &str), Sums> = BTreeMap::new();
        for (key, sums) in &self.groups {
            let row = self.row(key);
            let linked = (key.instance == NONE
                && key.link != NONE
                && instances.contains(&(key.platform, key.account, key.link)))
            .then_some(row.link)
            .flatten();
            let instance = row.instance.or(linked);
            let values = keys
                .iter()
                .map(|k| match k {
                    GroupKey::Platform => Some(row.platform),
                    GroupKey::Category => Some(row.category.as_str()),
                    GroupKey::Instance => instance,
                    GroupKey::Month => months.get(&row.month).map(String::as_str),
                    GroupKey::Account => row.account,
                    GroupKey::SubAccount => row.sub_account,
                })
                .collect::<Vec<_>>();
            let entry = groups.entry((values, row.currency)).or_default();
            entry.add(*sums).ok_or_else(|| overflow("the summary's billed cost"))?;
        }
        let rows = groups
            .into_iter()
            .map(|((keys, currency), sums)| {
                Ok(SummaryRow {
                    keys: keys.into_iter().map(|k| k.map(str::to_owned)).collect(),
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
    super::mantissa::decimal_from_mantissa(v, MAX_SCALE).map_err(|_| overflow(what))
}

/// Column `name` of `frame` as codes: the frame's own (a batch's) or its texts' (a part
/// file's), through `parse`.
fn codes<'a>(
    frame: &'a DataFrame,
    name: &str,
    parse: fn(&str) -> Option<i32>,
) -> PolarsResult<Box<dyn Iterator<Item = Option<i32>> + 'a>> {
    let column = frame.column(name)?;
    if column.dtype() == &DataType::Int32 {
        return Ok(Box::new(column.i32()?.iter()));
    }
    Ok(Box::new(column.str()?.iter().map(move |t| t.and_then(parse))))
}

/// Decimal column `name` of `frame` as integers at scale [`MAX_SCALE`].
fn mantissas<'a>(
    frame: &'a DataFrame,
    name: &str,
) -> PolarsResult<impl Iterator<Item = Option<i128>> + 'a> {
    let column = frame.column(name)?.decimal()?;
    let scale = column.scale() as u32;
    let factor = 10i128.pow(MAX_SCALE.saturating_sub(scale));
    Ok(column.physical().iter().map(move |v| v.and_then(|v| v.checked_mul(factor))))
}

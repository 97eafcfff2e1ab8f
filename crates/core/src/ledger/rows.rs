//! A part file's columns as a window's rows ([`crate::window::Row`]): only the columns the
//! rules read, texts and enums mapped by their dictionaries' keys where the file keeps them
//! so ([`super::keyed`]), else by their Arrow views (see [`mapped`]); the four optional
//! amounts only for a window that keeps them.

use polars::prelude::*;
use polars_arrow::array::Array;

use super::columns::{Read, micros, parse, required};
use super::keyed::Keyed;
use super::mantissa::{check_figure, figure_bound, packed_from_mantissa};
use super::schema::{self, SCHEMA, Type};
use crate::charge::ChargeId;
use crate::slots::Slots;
use crate::window::{Amounts, Packed, Row, RowOrigin, Side, Texts, Usage};

/// Text column `name` of `df`, each value mapped by `f`, which sees each distinct value of a
/// chunk about once: values are told apart by their Arrow views (a text of up to 12 bytes is
/// its view; a longer one is where its bytes are, and a dictionary-encoded column's equal
/// values share one place), so a column that repeats its values row after row (platform,
/// file, currency, category, resource) is mapped without comparing or hashing its texts.
pub(super) fn mapped<T: Copy>(
    df: &DataFrame,
    name: &str,
    mut f: impl FnMut(&str) -> Result<T, String>,
) -> Result<Vec<Option<T>>, String> {
    let column = df.column(name).map_err(|e| e.to_string())?;
    let texts = column.str().map_err(|e| format!("column {name}: {e}"))?;
    let mut out = Vec::with_capacity(texts.len());
    for array in texts.downcast_iter() {
        // A view names bytes of its own chunk's buffers: a memo per chunk, with in front of
        // it a slot per hash of a view (a column that takes turns between a few values, as
        // a resource's compute, disk and IP lines do, is mapped without its memo).
        // And before the slots the last value: a column that holds one value for runs of
        // rows (platform, account, currency, period) is mapped without hashing.
        let mut memo: rustc_hash::FxHashMap<u128, T> = Default::default();
        let mut slots: Slots<u128, T, 64> = Slots::default();
        let mut last: Option<(u128, T)> = None;
        let nulls = polars_arrow::array::Array::null_count(array) > 0;
        for (i, view) in array.views().iter().enumerate() {
            if nulls && !polars_arrow::array::Array::is_valid(array, i) {
                out.push(None);
                continue;
            }
            let key = view.as_u128();
            if let Some((k, v)) = last
                && k == key
            {
                out.push(Some(v));
                continue;
            }
            let mix = key as u64 ^ (key >> 64) as u64;
            let value = match slots.get(mix, &key) {
                Some(v) => v,
                None => {
                    let v = match memo.get(&key) {
                        Some(&v) => v,
                        None => *memo.entry(key).or_insert(f(array.value(i))?),
                    };
                    slots.put(mix, key, v);
                    v
                }
            };
            last = Some((key, value));
            out.push(Some(value));
        }
    }
    Ok(out)
}

/// The columns of [`SCHEMA`] no rule or report reads, so a [`Row`] has no field for them.
/// (Of the columns added later, [`schema::LATE`], only [`LATE_IN_ROWS`] are read into rows.)
const NOT_IN_ROWS: [&str; 2] = ["resource_name", "region"];

/// The columns of a row's [`Amounts`], read only for a window that keeps them.
const AMOUNTS: [&str; 4] = ["quantity", "unit_price", "list_cost", "balance_after"];

/// The columns that show a row as a bill line (its file and line), read only for the rows a
/// use may show.
const LINES: [&str; 2] = ["source_file", "source_line"];

/// The columns of what a row measured (its unit, GPU count and service), read only for a use
/// that reads them.
const USAGE: [&str; 3] = ["unit", "gpu_count", "service"];

/// The columns added later ([`schema::LATE`]) that rows read: a part file written before
/// them reads them as none.
const LATE_IN_ROWS: [&str; 2] = ["usage_type", "service"];

/// What is read of a part file's rows beyond what every use reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wanted {
    /// The four [`Amounts`] (else none).
    pub amounts: bool,
    /// Of the amounts, only the quantity (the others none).
    pub quantity_only: bool,
    /// The charge's id (else 0).
    pub ids: bool,
    /// The file and line (else the file is empty and the line 0).
    pub lines: bool,
    /// The unit and GPU count (else none).
    pub usage: bool,
}

/// The columns a [`Row`] is read from: [`SCHEMA`]'s but [`NOT_IN_ROWS`], and of `id`,
/// [`AMOUNTS`], [`LINES`] and [`USAGE`] those `wanted`.
pub(crate) fn row_columns(wanted: Wanted) -> impl Iterator<Item = &'static schema::Column> {
    SCHEMA.iter().filter(move |c| {
        let unless = |names: &[&str], read: bool| read || !names.contains(&c.name);
        !NOT_IN_ROWS.contains(&c.name)
            && (!schema::LATE.contains(&c.name) || LATE_IN_ROWS.contains(&c.name))
            && unless(&AMOUNTS, wanted.amounts)
            && unless(&AMOUNTS[1..], !wanted.quantity_only)
            && unless(&["id"], wanted.ids)
            && unless(&LINES, wanted.lines)
            && unless(&USAGE, wanted.usage)
    })
}

/// The rows of a part file read with [`row_columns`]`(wanted)`, their amounts and ids (none
/// unless wanted) and their texts.
pub(crate) type PartRows = (Vec<Row>, Side, Texts);

/// The text columns a [`Row`] maps (see [`mapped`]), which [`keyed`] may read as keys.
pub(crate) const MAPPED: [&str; 15] = [
    "billing_period",
    "category",
    "kind",
    "pricing",
    "platform",
    "account",
    "currency",
    "resource_id",
    "instance_id",
    "gpu_model",
    "unit",
    "source_file",
    "source_item",
    "usage_type",
    "service",
];

/// Text column `name`, from `keyed` if it was read there, else from `df`, each value mapped
/// by `f` (see [`mapped`]); as many as `df` has rows.
fn text<T: Copy>(
    df: &DataFrame,
    keyed: &Keyed,
    name: &str,
    f: impl FnMut(&str) -> Result<T, String>,
) -> Result<Vec<Option<T>>, String> {
    let values = match keyed.get(name) {
        Some(chunks) => super::keyed::mapped(chunks, name, f)?,
        // A part file written before a column was added reads it as nulls.
        None if LATE_IN_ROWS.contains(&name) && df.column(name).is_err() => {
            vec![None; df.height()]
        }
        None => mapped(df, name, f)?,
    };
    if values.len() != df.height() {
        return Err(format!(
            "column {name} holds {} values, the file {}",
            values.len(),
            df.height()
        ));
    }
    Ok(values)
}

/// See [`PartRows`]: of `df`, and of `keyed` the columns read there.
pub(crate) fn rows_from_frame(
    df: &DataFrame,
    keyed: &Keyed,
    wanted: Wanted,
) -> Result<PartRows, String> {
    let mut texts = Texts::default();
    // The instants, the billed cost and the ids straight from their arrays; the columns read
    // only for some uses through `Read`.
    let by_read = |c: &&schema::Column| matches!(c.type_, Type::Count | Type::Line);
    let r = Read::of(df, row_columns(wanted).filter(by_read))?;
    let (start, end) = (micros(df, "charge_start")?, micros(df, "charge_end")?);
    let period = text(df, keyed, "billing_period", str::parse::<crate::charge::YearMonth>)?;
    let category = text(df, keyed, "category", str::parse::<crate::charge::Category>)?;
    let kind = text(df, keyed, "kind", str::parse::<crate::charge::Kind>)?;
    let pricing = text(df, keyed, "pricing", str::parse::<crate::charge::Pricing>)?;
    let billed_cost = packed(df, "billed_cost")?;
    let amounts = match (wanted.amounts, wanted.quantity_only) {
        (false, _) => Vec::new(),
        (true, true) => {
            let quantity = packed(df, "quantity")?;
            quantity.iter().map(|&q| Amounts::of_packed([q, None, None, None])).collect()
        }
        (true, false) => {
            let (quantity, unit_price) = (packed(df, "quantity")?, packed(df, "unit_price")?);
            let (list, balance) = (packed(df, "list_cost")?, packed(df, "balance_after")?);
            (0..df.height())
                .map(|i| Amounts::of_packed([quantity[i], unit_price[i], list[i], balance[i]]))
                .collect()
        }
    };
    let ids = if wanted.ids { charge_ids(df)? } else { Vec::new() };
    let line = if wanted.lines { Some(r.int("source_line")?) } else { None };
    let gpu_count = if wanted.usage { Some(r.int("gpu_count")?) } else { None };
    let mut sym = |name| text(df, keyed, name, |t| Ok(texts.sym(t)));
    let (platform, account, currency) = (sym("platform")?, sym("account")?, sym("currency")?);
    let (resource_id, instance_id) = (sym("resource_id")?, sym("instance_id")?);
    let gpu_model = sym("gpu_model")?;
    let unit = if wanted.usage { Some(sym("unit")?) } else { None };
    let file = if wanted.lines { Some(sym("source_file")?) } else { None };
    let item = sym("source_item")?;
    let usage_type = sym("usage_type")?;
    let service = if wanted.usage { Some(sym("service")?) } else { None };
    // An empty file or item is none, as a window keeps it (`crate::window::origin_of`).
    let empty = texts.sym("");
    let given = |s: Option<crate::window::Sym>| s.filter(|&s| s != empty);
    // Pushed into room for them all: a `Result`'s collect does not know how many come.
    let mut rows = Vec::with_capacity(df.height());
    let mut origins = Vec::with_capacity(df.height());
    let mut usage = Vec::with_capacity(if wanted.usage { df.height() } else { 0 });
    for i in 0..df.height() {
        let (cost, cost_flags) = required(billed_cost[i], "billed_cost")?;
        rows.push(Row {
            platform: required(platform[i], "platform")?,
            account: account[i],
            billing_period: required(period[i], "billing_period")?,
            charge_start: start[i],
            charge_end: end[i],
            resource_id: resource_id[i],
            instance_id: instance_id[i],
            category: required(category[i], "category")?,
            kind: required(kind[i], "kind")?,
            pricing: required(pricing[i], "pricing")?,
            gpu_model: gpu_model[i],
            pos: u32::try_from(i).unwrap_or(u32::MAX),
            cost,
            cost_flags,
            currency: required(currency[i], "currency")?,
        });
        origins.push(RowOrigin {
            file: match &file {
                Some(file) => given(Some(required(file[i], "source_file")?)),
                None => None,
            },
            line: match line {
                Some(line) => required(line[i], "source_line")? as u64,
                None => 0,
            },
            item: given(item[i]),
            usage_type: given(usage_type[i]),
        });
        if let Some(unit) = &unit {
            let gpu_count = gpu_count.and_then(|g| g[i]).and_then(|n| u16::try_from(n).ok());
            let service = service.as_ref().and_then(|s| given(s[i]));
            usage.push(Usage { unit: unit[i], gpu_count, service });
        }
    }
    Ok((rows, Side { amounts, ids, origins, usage }, texts))
}

/// Decimal column `name` as a [`Row`] keeps its billed cost and [`Amounts`] their figures
/// ([`crate::window::packed`] of the decimal [`Read::decimal`] reads), from its arrays.
fn packed(df: &DataFrame, name: &str) -> Result<Vec<Option<Packed>>, String> {
    let column = df.column(name).map_err(|e| e.to_string())?;
    let decimals = column.decimal().map_err(|e| format!("column {name}: {e}"))?;
    let scale = decimals.scale() as u32;
    let bound = figure_bound(scale);
    // A bill repeats its prices, quantities and costs: each value's packing is kept in a
    // slot of its own hash, and a value found in its slot is not packed again. Every slot
    // starts as zero's (zero packs the same at any scale).
    let mut memo: [(i128, Packed); 256] = [(0, ([0; 3], 0)); 256];
    let mut pack = |v: i128| -> Result<Packed, String> {
        let slot =
            ((v as u64 ^ (v >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize;
        match memo[slot] {
            (key, p) if key == v => Ok(p),
            _ => {
                check_figure(v, scale, bound, name)?;
                let p = packed_from_mantissa(v, scale)?;
                memo[slot] = (v, p);
                Ok(p)
            }
        }
    };
    let mut out = Vec::with_capacity(decimals.len());
    for array in decimals.physical().downcast_iter() {
        if Array::null_count(array) == 0 {
            for &v in array.values().iter() {
                out.push(Some(pack(v)?));
            }
            continue;
        }
        for v in array.iter() {
            out.push(v.map(|&v| pack(v)).transpose()?);
        }
    }
    Ok(out)
}

/// The `id` column's charge ids, from its arrays; a null or a text that is not an id is
/// refused as [`parse`] refuses it.
fn charge_ids(df: &DataFrame) -> Result<Vec<ChargeId>, String> {
    let column = df.column("id").map_err(|e| e.to_string())?;
    let texts = column.str().map_err(|e| format!("column id: {e}"))?;
    let mut out = Vec::with_capacity(texts.len());
    for array in texts.downcast_iter() {
        for i in 0..array.len() {
            let valid = Array::is_valid(array, i);
            out.push(parse::<ChargeId>(valid.then(|| array.value(i)), "id")?);
        }
    }
    Ok(out)
}

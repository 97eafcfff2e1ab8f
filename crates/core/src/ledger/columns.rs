//! Charges ↔ Parquet columns (polars DataFrames).
//!
//! Money and quantities are DECIMAL(38, 12) built from the exact mantissa (no float, no
//! rounding: a figure with more decimals was refused at import); instants are UTC
//! microseconds; ids, enums and texts are strings (ids keep leading zeros).

use std::str::FromStr;

use chrono::{DateTime, Utc};
use polars::prelude::*;
use rust_decimal::Decimal;

use crate::charge::{Charge, ChargeId, MAX_SCALE, Origin};

const PRECISION: usize = 38;
const SCALE: usize = MAX_SCALE as usize;

/// The column names of a charge file, in order.
pub const COLUMNS: &[&str] = &[
    "id",
    "platform",
    "account",
    "billing_period",
    "charge_start",
    "charge_end",
    "resource_id",
    "resource_name",
    "instance_id",
    "region",
    "category",
    "kind",
    "pricing",
    "gpu_model",
    "gpu_count",
    "quantity",
    "unit",
    "unit_price",
    "list_cost",
    "billed_cost",
    "currency",
    "balance_after",
    "source_file",
    "source_line",
    "source_item",
];

fn mantissa_at_scale(d: Decimal) -> i128 {
    // scale ≤ MAX_SCALE is guaranteed at import; i128 holds 38 digits.
    d.mantissa() * 10i128.pow(MAX_SCALE.saturating_sub(d.scale()))
}

fn decimal_from_mantissa(mut v: i128, scale: u32) -> Result<Decimal, String> {
    let mut scale = scale;
    while scale > 0 && v % 10 == 0 {
        v /= 10;
        scale -= 1;
    }
    Decimal::try_from_i128_with_scale(v, scale).map_err(|e| format!("decimal out of range: {e}"))
}

fn text_col<'a>(name: &str, values: impl Iterator<Item = Option<&'a str>>) -> Column {
    StringChunked::from_iter_options(name.into(), values).into_series().into()
}

fn decimal_col(name: &str, values: impl Iterator<Item = Option<Decimal>>) -> PolarsResult<Column> {
    let ints =
        Int128Chunked::from_iter_options(name.into(), values.map(|v| v.map(mantissa_at_scale)));
    Ok(ints.into_decimal(PRECISION, SCALE)?.into_series().into())
}

fn time_col(name: &str, values: impl Iterator<Item = DateTime<Utc>>) -> Column {
    Int64Chunked::from_iter_values(name.into(), values.map(|t| t.timestamp_micros()))
        .into_datetime(TimeUnit::Microseconds, Some(TimeZone::UTC))
        .into_series()
        .into()
}

/// Appends the 32 lower-case hex digits of `id` (what `ChargeId`'s `Display` writes, without
/// the formatting machinery: it showed in profiles of big imports).
fn push_hex(out: &mut String, id: u128) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for shift in (0..32).rev() {
        out.push(char::from(DIGITS[((id >> (shift * 4)) & 0xf) as usize]));
    }
}

/// Builds the DataFrame of `charges`.
pub fn to_frame(charges: &[Charge]) -> PolarsResult<DataFrame> {
    let last_period = std::cell::Cell::new(None);
    let period_text = std::cell::RefCell::new(String::new());
    let s = |f: fn(&Charge) -> Option<&str>| charges.iter().map(f);
    let formatted = |name: &str, f: &dyn Fn(&Charge, &mut String)| -> Column {
        let mut builder = StringChunkedBuilder::new(name.into(), charges.len());
        let mut text = String::with_capacity(32);
        for c in charges {
            text.clear();
            f(c, &mut text);
            builder.append_value(&text);
        }
        builder.finish().into_series().into()
    };
    let columns = vec![
        formatted("id", &|c, t| push_hex(t, c.id.0)),
        text_col("platform", s(|c| Some(&c.platform))),
        text_col("account", s(|c| c.account.as_deref())),
        formatted("billing_period", &|c, t| {
            // Nearly every row of a part file has the same month: format it once.
            if last_period.get() != Some(c.billing_period) {
                last_period.set(Some(c.billing_period));
                *period_text.borrow_mut() = c.billing_period.to_string();
            }
            t.push_str(&period_text.borrow());
        }),
        time_col("charge_start", charges.iter().map(|c| c.charge_start)),
        time_col("charge_end", charges.iter().map(|c| c.charge_end)),
        text_col("resource_id", s(|c| c.resource_id.as_deref())),
        text_col("resource_name", s(|c| c.resource_name.as_deref())),
        text_col("instance_id", s(|c| c.instance_id.as_deref())),
        text_col("region", s(|c| c.region.as_deref())),
        text_col("category", s(|c| Some(c.category.as_str()))),
        text_col("kind", s(|c| Some(c.kind.as_str()))),
        text_col("pricing", s(|c| Some(c.pricing.as_str()))),
        text_col("gpu_model", s(|c| c.gpu_model.as_deref())),
        Int32Chunked::from_iter_options(
            "gpu_count".into(),
            charges.iter().map(|c| c.gpu_count.map(i32::from)),
        )
        .into_series()
        .into(),
        decimal_col("quantity", charges.iter().map(|c| c.quantity))?,
        text_col("unit", s(|c| c.unit.as_deref())),
        decimal_col("unit_price", charges.iter().map(|c| c.unit_price))?,
        decimal_col("list_cost", charges.iter().map(|c| c.list_cost))?,
        decimal_col("billed_cost", charges.iter().map(|c| Some(c.billed_cost)))?,
        text_col("currency", s(|c| Some(&c.currency))),
        decimal_col("balance_after", charges.iter().map(|c| c.balance_after))?,
        text_col("source_file", s(|c| Some(&c.origin.file))),
        Int64Chunked::from_iter_values(
            "source_line".into(),
            charges.iter().map(|c| c.origin.line as i64),
        )
        .into_series()
        .into(),
        text_col("source_item", s(|c| Some(&c.origin.item))),
    ];
    DataFrame::new(charges.len(), columns)
}

struct Reader<'a> {
    df: &'a DataFrame,
}

impl<'a> Reader<'a> {
    fn text(&self, name: &str) -> Result<Vec<Option<&'a str>>, String> {
        let col = self.df.column(name).map_err(|e| e.to_string())?;
        Ok(col.str().map_err(|e| e.to_string())?.iter().collect())
    }

    fn decimal(&self, name: &str) -> Result<Vec<Option<Decimal>>, String> {
        let col = self.df.column(name).map_err(|e| e.to_string())?;
        let dec = col.decimal().map_err(|e| e.to_string())?;
        let scale = dec.scale() as u32;
        dec.physical()
            .iter()
            .map(|v| v.map(|v| decimal_from_mantissa(v, scale)).transpose())
            .collect()
    }

    fn time(&self, name: &str) -> Result<Vec<DateTime<Utc>>, String> {
        let col = self.df.column(name).map_err(|e| e.to_string())?;
        let dt = col.datetime().map_err(|e| e.to_string())?;
        dt.physical()
            .iter()
            .map(|v| {
                v.and_then(DateTime::from_timestamp_micros)
                    .ok_or_else(|| format!("{name}: missing or invalid instant"))
            })
            .collect()
    }

    fn int(&self, name: &str) -> Result<Vec<Option<i64>>, String> {
        let col = self.df.column(name).map_err(|e| e.to_string())?;
        let col = col.cast(&DataType::Int64).map_err(|e| e.to_string())?;
        Ok(col.i64().map_err(|e| e.to_string())?.iter().collect())
    }
}

fn required<T>(v: Option<T>, name: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("column {name} has a null"))
}

fn parse<T: FromStr<Err = String>>(v: Option<&str>, name: &str) -> Result<T, String> {
    required(v, name)?.parse()
}

/// Reads the charges of a DataFrame written by [`to_frame`].
pub fn from_frame(df: &DataFrame) -> Result<Vec<Charge>, String> {
    let r = Reader { df };
    let owned = |v: Option<&str>| v.map(str::to_owned);
    let ids = r.text("id")?;
    let platform = r.text("platform")?;
    let account = r.text("account")?;
    let period = r.text("billing_period")?;
    let start = r.time("charge_start")?;
    let end = r.time("charge_end")?;
    let resource_id = r.text("resource_id")?;
    let resource_name = r.text("resource_name")?;
    let instance_id = r.text("instance_id")?;
    let region = r.text("region")?;
    let category = r.text("category")?;
    let kind = r.text("kind")?;
    let pricing = r.text("pricing")?;
    let gpu_model = r.text("gpu_model")?;
    let gpu_count = r.int("gpu_count")?;
    let quantity = r.decimal("quantity")?;
    let unit = r.text("unit")?;
    let unit_price = r.decimal("unit_price")?;
    let list_cost = r.decimal("list_cost")?;
    let billed_cost = r.decimal("billed_cost")?;
    let currency = r.text("currency")?;
    let balance_after = r.decimal("balance_after")?;
    let source_file = r.text("source_file")?;
    let source_line = r.int("source_line")?;
    let source_item = r.text("source_item")?;
    (0..df.height())
        .map(|i| {
            Ok(Charge {
                id: parse::<ChargeId>(ids[i], "id")?,
                platform: required(owned(platform[i]), "platform")?,
                account: owned(account[i]),
                billing_period: parse(period[i], "billing_period")?,
                charge_start: start[i],
                charge_end: end[i],
                resource_id: owned(resource_id[i]),
                resource_name: owned(resource_name[i]),
                instance_id: owned(instance_id[i]),
                region: owned(region[i]),
                category: parse(category[i], "category")?,
                kind: parse(kind[i], "kind")?,
                pricing: parse(pricing[i], "pricing")?,
                gpu_model: owned(gpu_model[i]),
                gpu_count: gpu_count[i].map(|n| n as u16),
                quantity: quantity[i],
                unit: owned(unit[i]),
                unit_price: unit_price[i],
                list_cost: list_cost[i],
                billed_cost: required(billed_cost[i], "billed_cost")?,
                currency: required(owned(currency[i]), "currency")?,
                balance_after: balance_after[i],
                origin: Origin {
                    file: required(owned(source_file[i]), "source_file")?,
                    line: required(source_line[i], "source_line")? as u64,
                    item: owned(source_item[i]).unwrap_or_default(),
                },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_ids_are_what_display_writes() {
        for id in [0u128, 1, 0xabc, u128::MAX, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210] {
            let mut text = String::new();
            super::push_hex(&mut text, id);
            assert_eq!(text, crate::ChargeId(id).to_string());
        }
    }
}

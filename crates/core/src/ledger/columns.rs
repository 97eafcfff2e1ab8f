//! Charges ↔ Parquet columns (polars DataFrames).
//!
//! Money and quantities are DECIMAL(38, 12) built from the exact mantissa (no float, no
//! rounding: a figure with more decimals was refused at import); instants are UTC
//! microseconds; ids, enums and texts are strings (ids keep leading zeros).

use std::str::FromStr;

use chrono::{DateTime, Utc};
use polars::prelude::*;
use rust_decimal::Decimal;

use super::mantissa::{check_figure, decimal_from_mantissa, figure_bound};
use super::schema::{self, SCHEMA, Type};
use crate::charge::{Charge, ChargeId, MAX_SCALE, Origin, YearMonth};

const PRECISION: usize = 38;
const SCALE: usize = MAX_SCALE as usize;

fn mantissa_at_scale(d: Decimal) -> i128 {
    // scale ≤ MAX_SCALE is guaranteed at import; i128 holds 38 digits.
    d.mantissa() * 10i128.pow(MAX_SCALE.saturating_sub(d.scale()))
}

/// The columns of a part file but the ids, built a charge at a time on the parsing threads
/// (the ids are given later, in file order: see [`with_ids`]), one builder per column of
/// [`SCHEMA`] after the id.
pub(crate) struct FrameBuilder {
    columns: Vec<Builder>,
    rows: usize,
}

/// The values of one column so far.
enum Builder {
    Text(TextColumn),
    /// The billing period; nearly every row of a part file has the same month, formatted
    /// once.
    Month(TextColumn, Option<(YearMonth, String)>),
    Codes(&'static str, Vec<i32>),
    Instants(&'static str, Vec<i64>),
    Counts(&'static str, Vec<Option<i32>>),
    Decimals(&'static str, Vec<Option<i128>>),
    Lines(&'static str, Vec<i64>),
}

/// The code that takes a charge into the builders, from the list of
/// [`schema::with_columns!`]: one statement a column, the charge's field read directly.
macro_rules! push_columns {
    ($($name:literal => $type:ident $(($($arg:expr),*))?, $encoding:ident;)*) => {
        /// Takes `c` into `columns`, the builders of [`SCHEMA`]'s columns after the id.
        fn push_columns(columns: &mut [Builder], c: &Charge) {
            let mut columns = columns.iter_mut();
            $(push_column!(columns, c, $type $(($($arg),*))?);)*
        }
    };
}

/// One column's statement of [`push_columns!`]. The getter is bound to a function pointer
/// known at compile time, which the compiler calls directly (and inlines).
macro_rules! push_column {
    ($columns:ident, $c:ident, Id) => {};
    ($columns:ident, $c:ident, Text($get:expr)) => {
        if let Some(Builder::Text(column)) = $columns.next() {
            let get: fn(&Charge) -> Option<&str> = $get;
            column.push(get($c));
        }
    };
    ($columns:ident, $c:ident, Month) => {
        if let Some(Builder::Month(column, period)) = $columns.next() {
            let text = match period {
                Some((month, text)) if *month == $c.billing_period => text,
                _ => &period.insert(($c.billing_period, $c.billing_period.to_string())).1,
            };
            column.push(Some(text));
        }
    };
    ($columns:ident, $c:ident, Enum($get:expr, $text:expr)) => {
        if let Some(Builder::Codes(_, values)) = $columns.next() {
            let get: fn(&Charge) -> i32 = $get;
            values.push(get($c));
        }
    };
    ($columns:ident, $c:ident, Instant($get:expr)) => {
        if let Some(Builder::Instants(_, values)) = $columns.next() {
            let get: fn(&Charge) -> i64 = $get;
            values.push(get($c));
        }
    };
    ($columns:ident, $c:ident, Count($get:expr)) => {
        if let Some(Builder::Counts(_, values)) = $columns.next() {
            let get: fn(&Charge) -> Option<i32> = $get;
            values.push(get($c));
        }
    };
    ($columns:ident, $c:ident, Decimal($get:expr)) => {
        if let Some(Builder::Decimals(_, values)) = $columns.next() {
            let get: fn(&Charge) -> Option<Decimal> = $get;
            values.push(get($c).map(mantissa_at_scale));
        }
    };
    ($columns:ident, $c:ident, Line) => {
        if let Some(Builder::Lines(_, values)) = $columns.next() {
            values.push($c.origin.line as i64);
        }
    };
}

schema::with_columns!(push_columns);

impl Builder {
    fn new(column: &schema::Column, capacity: usize) -> Option<Builder> {
        let name = column.name;
        let text = || TextColumn::Same { name, value: None, count: 0, capacity };
        Some(match column.type_ {
            Type::Id => return None,
            Type::Text => Builder::Text(text()),
            Type::Month => Builder::Month(text(), None),
            Type::Enum(_) => Builder::Codes(name, Vec::with_capacity(capacity)),
            Type::Instant => Builder::Instants(name, Vec::with_capacity(capacity)),
            Type::Count => Builder::Counts(name, Vec::with_capacity(capacity)),
            Type::Decimal => Builder::Decimals(name, Vec::with_capacity(capacity)),
            Type::Line => Builder::Lines(name, Vec::with_capacity(capacity)),
        })
    }

    fn finish(self) -> PolarsResult<Series> {
        Ok(match self {
            Builder::Text(column) | Builder::Month(column, _) => column.finish().into_series(),
            Builder::Instants(name, values) => Int64Chunked::from_vec(name.into(), values)
                .into_datetime(TimeUnit::Microseconds, Some(TimeZone::UTC))
                .into_series(),
            Builder::Counts(name, values) => {
                Int32Chunked::from_iter_options(name.into(), values.into_iter()).into_series()
            }
            Builder::Lines(name, values) => {
                Int64Chunked::from_vec(name.into(), values).into_series()
            }
            // Int32: polars is built without its 8-bit integer types.
            Builder::Codes(name, values) => {
                Int32Chunked::from_vec(name.into(), values).into_series()
            }
            Builder::Decimals(name, values) => {
                Int128Chunked::from_iter_options(name.into(), values.into_iter())
                    .into_decimal(PRECISION, SCALE)?
                    .into_series()
            }
        })
    }
}

/// A text column of a batch. Several hold one value for a whole batch (the platform, the
/// file, usually the currency and the month): such a column keeps the value once and is
/// made with [`ChunkFull`], its rows sharing one copy of the text, instead of copying the
/// text into the column row after row.
enum TextColumn {
    /// Every row so far holds `value`.
    Same { name: &'static str, value: Option<String>, count: usize, capacity: usize },
    /// The rows hold different values.
    Mixed(StringChunkedBuilder),
}

impl TextColumn {
    fn push(&mut self, text: Option<&str>) {
        match self {
            TextColumn::Same { value, count, .. } if value.as_deref() == text => *count += 1,
            TextColumn::Same { value, count: count @ 0, .. } => {
                *value = text.map(str::to_owned);
                *count = 1;
            }
            TextColumn::Same { name, value, count, capacity } => {
                let mut builder = StringChunkedBuilder::new((*name).into(), *capacity);
                for _ in 0..*count {
                    builder.append_option(value.as_deref());
                }
                builder.append_option(text);
                *self = TextColumn::Mixed(builder);
            }
            TextColumn::Mixed(builder) => builder.append_option(text),
        }
    }

    fn finish(self) -> StringChunked {
        match self {
            TextColumn::Same { name, value: Some(value), count, .. } => {
                let mut column = StringChunked::full(name.into(), &value, count);
                column.set_sorted_flag(polars::series::IsSorted::Not);
                column
            }
            TextColumn::Same { name, value: None, count, .. } => {
                StringChunked::full_null(name.into(), count)
            }
            TextColumn::Mixed(builder) => builder.finish(),
        }
    }
}

impl FrameBuilder {
    /// Empty columns with room for `capacity` charges.
    pub(crate) fn new(capacity: usize) -> Self {
        let columns = SCHEMA.iter().filter_map(|c| Builder::new(c, capacity)).collect();
        FrameBuilder { columns, rows: 0 }
    }

    /// Takes one charge into the columns.
    pub(crate) fn push(&mut self, c: &Charge) {
        push_columns(&mut self.columns, c);
        self.rows += 1;
    }

    /// The DataFrame, columns in [`SCHEMA`] order but for `id`; the enums as codes.
    pub(crate) fn finish(self) -> PolarsResult<DataFrame> {
        let columns = self
            .columns
            .into_iter()
            .map(|b| b.finish().map(Column::from))
            .collect::<PolarsResult<Vec<_>>>()?;
        DataFrame::new(self.rows, columns)
    }
}

/// `frame` (from [`FrameBuilder::finish`]) with its `id` column, the ids in row order.
pub(crate) fn with_ids(mut frame: DataFrame, ids: &[u128]) -> PolarsResult<DataFrame> {
    let mut column = StringChunkedBuilder::new("id".into(), ids.len());
    let mut text = String::with_capacity(32);
    for &id in ids {
        text.clear();
        ChargeId(id).push_hex(&mut text);
        column.append_value(&text);
    }
    frame.insert_column(0, column.finish().into_series().into())?;
    Ok(frame)
}

/// The values of one column of a part file, read as its [`Type`] says.
enum Values<'a> {
    Texts(Vec<Option<&'a str>>),
    /// An instant column, checked to be one and read from the frame when asked for
    /// ([`micros`]).
    Instants,
    Ints(Vec<Option<i64>>),
    Decimals(Vec<Option<Decimal>>),
}

/// The columns of a part file, read in [`SCHEMA`] order.
pub(super) struct Read<'a> {
    df: &'a DataFrame,
    columns: Vec<(&'static str, Values<'a>)>,
}

impl<'a> Read<'a> {
    fn new(df: &'a DataFrame) -> Result<Self, String> {
        Read::of(df, SCHEMA.iter())
    }

    /// The columns `columns` of `df`.
    pub(super) fn of(
        df: &'a DataFrame,
        columns: impl Iterator<Item = &'static schema::Column>,
    ) -> Result<Self, String> {
        let columns = columns
            .map(|column| Ok((column.name, read_column(df, column)?)))
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Read { df, columns })
    }

    fn values(&self, name: &str) -> Result<&Values<'a>, String> {
        let found = self.columns.iter().find(|(n, _)| *n == name);
        found.map(|(_, v)| v).ok_or_else(|| format!("no column {name}"))
    }

    pub(super) fn text(&self, name: &str) -> Result<&[Option<&'a str>], String> {
        match self.values(name)? {
            Values::Texts(v) => Ok(v),
            _ => Err(format!("column {name} is not text")),
        }
    }

    pub(super) fn decimal(&self, name: &str) -> Result<&[Option<Decimal>], String> {
        match self.values(name)? {
            Values::Decimals(v) => Ok(v),
            _ => Err(format!("column {name} is not a decimal")),
        }
    }

    /// Instant column `name` as chrono's instants: those of [`Read::micros`], each one a
    /// `DateTime` can be, made a day at a time ([`Days`]).
    pub(super) fn time(&self, name: &str) -> Result<Vec<DateTime<Utc>>, String> {
        let mut days = Days::default();
        let instant = |m: crate::window::Micros| days.instant(m.0).unwrap_or_default();
        Ok(self.micros(name)?.into_iter().map(instant).collect())
    }

    /// Instant column `name` as [`micros`] reads it.
    pub(super) fn micros(&self, name: &str) -> Result<Vec<crate::window::Micros>, String> {
        match self.values(name)? {
            Values::Instants => micros(self.df, name),
            _ => Err(format!("column {name} is not an instant")),
        }
    }

    pub(super) fn int(&self, name: &str) -> Result<&[Option<i64>], String> {
        match self.values(name)? {
            Values::Ints(v) => Ok(v),
            _ => Err(format!("column {name} is not an integer")),
        }
    }
}

/// Instant column `name` of `df` as a window's rows keep it, read from its arrays: each
/// value must be one of [`instants`] (what `DateTime::from_timestamp_micros` takes), else
/// the column is refused.
pub(super) fn micros(df: &DataFrame, name: &str) -> Result<Vec<crate::window::Micros>, String> {
    let column = df.column(name).map_err(|e| e.to_string())?;
    let values = column.datetime().map_err(|e| format!("column {name}: {e}"))?.physical();
    let (range, mut out) = (instants(), Vec::with_capacity(values.len()));
    for array in values.downcast_iter() {
        let nulls = polars_arrow::array::Array::null_count(array);
        if nulls > 0 || !array.values().iter().all(|v| range.contains(v)) {
            return Err(format!("{name}: missing or invalid instant"));
        }
        out.extend(array.values().iter().map(|&v| crate::window::Micros(v)));
    }
    Ok(out)
}

/// The microseconds since the epoch that are instants: exactly those
/// `DateTime::from_timestamp_micros` takes.
pub(super) fn instants() -> std::ops::RangeInclusive<i64> {
    DateTime::<Utc>::MIN_UTC.timestamp_micros()..=DateTime::<Utc>::MAX_UTC.timestamp_micros()
}

/// Microseconds since the epoch as instants, exactly as [`DateTime::from_timestamp_micros`]
/// makes them, keeping the day last made: rows run day after day, so the calendar's
/// arithmetic is done about once a day rather than once a row.
#[derive(Default)]
pub(super) struct Days {
    last: Option<(i64, chrono::NaiveDate)>,
}

impl Days {
    const DAY: i64 = 86_400_000_000;

    /// The instant `micros` after the epoch, if there is one.
    pub(super) fn instant(&mut self, micros: i64) -> Option<DateTime<Utc>> {
        let (day, of_day) = (micros.div_euclid(Self::DAY), micros.rem_euclid(Self::DAY));
        let date = match self.last {
            Some((d, date)) if d == day => date,
            _ => {
                // Days from the common era's first day to the epoch's.
                let date = chrono::NaiveDate::from_num_days_from_ce_opt(
                    i32::try_from(day + 719_163).ok()?,
                )?;
                self.last = Some((day, date));
                date
            }
        };
        let (secs, nanos) = ((of_day / 1_000_000) as u32, (of_day % 1_000_000) as u32 * 1_000);
        let time = chrono::NaiveTime::from_num_seconds_from_midnight_opt(secs, nanos)?;
        Some(date.and_time(time).and_utc())
    }
}

/// Column `column` of `df`, read as its type says.
fn read_column<'a>(df: &'a DataFrame, column: &schema::Column) -> Result<Values<'a>, String> {
    let name = column.name;
    // A part file written before a column was added reads it as nulls.
    if schema::LATE.contains(&name) && df.column(name).is_err() {
        return Ok(Values::Texts(vec![None; df.height()]));
    }
    let col = df.column(name).map_err(|e| e.to_string())?;
    let fail = |e: PolarsError| format!("column {name}: {e}");
    Ok(match column.type_ {
        // A batch's frame holds enums as codes, a part file as texts.
        Type::Enum(text) if col.dtype() == &DataType::Int32 => {
            let codes = col.i32().map_err(fail)?;
            Values::Texts(codes.iter().map(|c| c.and_then(|c| text(c.try_into().ok()?))).collect())
        }
        Type::Id | Type::Text | Type::Month | Type::Enum(_) => {
            Values::Texts(col.str().map_err(fail)?.iter().collect())
        }
        Type::Instant => {
            col.datetime().map_err(fail)?;
            Values::Instants
        }
        Type::Count | Type::Line => {
            let col = col.cast(&DataType::Int64).map_err(fail)?;
            Values::Ints(col.i64().map_err(fail)?.iter().collect())
        }
        Type::Decimal => {
            let dec = col.decimal().map_err(fail)?;
            let scale = dec.scale() as u32;
            let bound = figure_bound(scale);
            let figure = |v: i128| {
                check_figure(v, scale, bound, name)?;
                decimal_from_mantissa(v, scale)
            };
            let mut values = Vec::with_capacity(dec.len());
            for v in dec.physical().iter() {
                values.push(v.map(figure).transpose()?);
            }
            Values::Decimals(values)
        }
    })
}

/// `v`, which column `name` must have. Inlined, its refusal made apart: a window's rows are
/// read through it a dozen times a row, and a call each, with the message's making in line,
/// was a tenth of reading the rows.
#[inline(always)]
pub(super) fn required<T>(v: Option<T>, name: &str) -> Result<T, String> {
    match v {
        Some(v) => Ok(v),
        None => Err(has_a_null(name)),
    }
}

#[cold]
#[inline(never)]
fn has_a_null(name: &str) -> String {
    format!("column {name} has a null")
}

pub(super) fn parse<T: FromStr<Err = String>>(v: Option<&str>, name: &str) -> Result<T, String> {
    required(v, name)?.parse()
}

/// Reads the charges of a DataFrame made by [`FrameBuilder`] and [`with_ids`] (or read from
/// a part file), each column as [`SCHEMA`] says.
pub fn from_frame(df: &DataFrame) -> Result<Vec<Charge>, String> {
    let r = Read::new(df)?;
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
    let sub_account = r.text("sub_account")?;
    let account_name = r.text("account_name")?;
    let sub_account_name = r.text("sub_account_name")?;
    let (service, usage_type) = (r.text("service")?, r.text("usage_type")?);
    (0..df.height())
        .map(|i| {
            Ok(Charge {
                id: parse::<ChargeId>(ids[i], "id")?,
                platform: required(owned(platform[i]), "platform")?,
                account: owned(account[i]),
                sub_account: owned(sub_account[i]),
                account_name: owned(account_name[i]),
                sub_account_name: owned(sub_account_name[i]),
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
                service: owned(service[i]),
                usage_type: owned(usage_type[i]),
            })
        })
        .collect()
}

/// The charges of a part file's frame as borrowed views ([`crate::export::ChargeRef`]),
/// handed to `f`: what the export streams, without a text allocated per charge.
pub(crate) fn refs_from_frame<T>(
    df: &DataFrame,
    f: impl FnOnce(&[crate::export::ChargeRef<'_>]) -> T,
) -> Result<T, String> {
    let r = Read::new(df)?;
    let (ids, platform, account) = (r.text("id")?, r.text("platform")?, r.text("account")?);
    let period = r.text("billing_period")?;
    let (start, end) = (r.time("charge_start")?, r.time("charge_end")?);
    let (resource_id, resource_name) = (r.text("resource_id")?, r.text("resource_name")?);
    let (instance_id, region) = (r.text("instance_id")?, r.text("region")?);
    let (category, kind, pricing) = (r.text("category")?, r.text("kind")?, r.text("pricing")?);
    let (gpu_model, gpu_count) = (r.text("gpu_model")?, r.int("gpu_count")?);
    let (quantity, unit, unit_price) =
        (r.decimal("quantity")?, r.text("unit")?, r.decimal("unit_price")?);
    let (list_cost, billed_cost) = (r.decimal("list_cost")?, r.decimal("billed_cost")?);
    let currency = r.text("currency")?;
    let (file, line, item) =
        (r.text("source_file")?, r.int("source_line")?, r.text("source_item")?);
    let (sub_account, account_name, sub_account_name) =
        (r.text("sub_account")?, r.text("account_name")?, r.text("sub_account_name")?);
    let (service, usage_type) = (r.text("service")?, r.text("usage_type")?);
    let mut months: Option<(&str, crate::charge::YearMonth)> = None;
    let refs = (0..df.height())
        .map(|i| {
            let text = required(period[i], "billing_period")?;
            let billing_period = match months {
                Some((t, m)) if t == text => m,
                _ => months.insert((text, text.parse()?)).1,
            };
            Ok(crate::export::ChargeRef {
                id: required(ids[i], "id")?,
                platform: required(platform[i], "platform")?,
                account: account[i],
                sub_account: sub_account[i],
                account_name: account_name[i],
                sub_account_name: sub_account_name[i],
                billing_period,
                charge_start: start[i],
                charge_end: end[i],
                resource_id: resource_id[i],
                resource_name: resource_name[i],
                instance_id: instance_id[i],
                region: region[i],
                category: parse(category[i], "category")?,
                kind: parse(kind[i], "kind")?,
                pricing: parse(pricing[i], "pricing")?,
                gpu_model: gpu_model[i],
                gpu_count: gpu_count[i].and_then(|n| u16::try_from(n).ok()),
                quantity: quantity[i],
                unit: unit[i],
                unit_price: unit_price[i],
                list_cost: list_cost[i],
                billed_cost: required(billed_cost[i], "billed_cost")?,
                currency: required(currency[i], "currency")?,
                file: required(file[i], "source_file")?,
                line: required(line[i], "source_line")? as u64,
                item: item[i].unwrap_or_default(),
                service: service[i],
                usage_type: usage_type[i],
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(f(&refs))
}

#[cfg(test)]
#[path = "columns_tests.rs"]
mod tests;

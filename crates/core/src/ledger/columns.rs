//! Charges ↔ Parquet columns (polars DataFrames).
//!
//! Money and quantities are DECIMAL(38, 12) built from the exact mantissa (no float, no
//! rounding: a figure with more decimals was refused at import); instants are UTC
//! microseconds; ids, enums and texts are strings (ids keep leading zeros).

use std::str::FromStr;

use chrono::{DateTime, Utc};
use polars::prelude::*;
use rust_decimal::Decimal;

use crate::charge::{Category, Charge, ChargeId, Kind, MAX_SCALE, Origin, Pricing};

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

/// The columns of a part file but the ids, built a charge at a time on the parsing threads
/// (the ids are given later, in file order: see [`with_ids`]).
pub(crate) struct FrameBuilder {
    texts: Vec<TextColumn>,
    /// The [`ENUMS`] columns, as each value's index in its type's `ALL`.
    codes: [Vec<i32>; 3],
    times: [Vec<i64>; 2],
    gpu_count: Vec<Option<i32>>,
    decimals: Vec<Vec<Option<i128>>>,
    source_line: Vec<i64>,
    period: Option<(crate::charge::YearMonth, String)>,
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

/// The columns of a closed set of values ([`Category`], [`Kind`], [`Pricing`]). A batch holds
/// them as codes, which the part writer turns into dictionaries of their texts (see
/// [`enum_text`]); the file holds the texts.
pub(crate) const ENUMS: [&str; 3] = ["category", "kind", "pricing"];

/// The text of `code` in the [`ENUMS`] column `column`.
pub(crate) fn enum_text(column: &str, code: i32) -> Option<&'static str> {
    let code = usize::try_from(code).ok()?;
    match column {
        "category" => Category::ALL.get(code).map(|v| v.as_str()),
        "kind" => Kind::ALL.get(code).map(|v| v.as_str()),
        "pricing" => Pricing::ALL.get(code).map(|v| v.as_str()),
        _ => None,
    }
}

/// The columns that are not text, or not built as text; the others are, and
/// [`FrameBuilder::push`] fills them in [`COLUMNS`] order.
const NOT_TEXT: [&str; 12] = [
    "category",
    "kind",
    "pricing",
    "charge_start",
    "charge_end",
    "gpu_count",
    "quantity",
    "unit_price",
    "list_cost",
    "billed_cost",
    "balance_after",
    "source_line",
];
/// The decimal columns, in [`COLUMNS`] order.
const DECIMALS: [&str; 5] = ["quantity", "unit_price", "list_cost", "billed_cost", "balance_after"];

impl FrameBuilder {
    /// Empty columns with room for `capacity` charges.
    pub(crate) fn new(capacity: usize) -> Self {
        FrameBuilder {
            texts: COLUMNS
                .iter()
                .filter(|n| **n != "id" && !NOT_TEXT.contains(n))
                .map(|name| TextColumn::Same { name, value: None, count: 0, capacity })
                .collect(),
            codes: std::array::from_fn(|_| Vec::with_capacity(capacity)),
            times: [Vec::with_capacity(capacity), Vec::with_capacity(capacity)],
            gpu_count: Vec::with_capacity(capacity),
            decimals: DECIMALS.iter().map(|_| Vec::with_capacity(capacity)).collect(),
            source_line: Vec::with_capacity(capacity),
            period: None,
        }
    }

    /// Takes one charge into the columns.
    pub(crate) fn push(&mut self, c: &Charge) {
        // Nearly every row of a part file has the same month: format it once.
        let period = match &self.period {
            Some((month, text)) if *month == c.billing_period => text,
            _ => &self.period.insert((c.billing_period, c.billing_period.to_string())).1,
        };
        let values: [Option<&str>; 12] = [
            Some(&c.platform),
            c.account.as_deref(),
            Some(period),
            c.resource_id.as_deref(),
            c.resource_name.as_deref(),
            c.instance_id.as_deref(),
            c.region.as_deref(),
            c.gpu_model.as_deref(),
            c.unit.as_deref(),
            Some(&c.currency),
            Some(&c.origin.file),
            Some(&c.origin.item),
        ];
        for (column, value) in self.texts.iter_mut().zip(values) {
            column.push(value);
        }
        // Codes as `enum_text` reads them back: the index in `ALL`, which lists the variants
        // in declaration order.
        self.codes[0].push(c.category as i32);
        self.codes[1].push(c.kind as i32);
        self.codes[2].push(c.pricing as i32);
        self.times[0].push(c.charge_start.timestamp_micros());
        self.times[1].push(c.charge_end.timestamp_micros());
        self.gpu_count.push(c.gpu_count.map(i32::from));
        let amounts = [c.quantity, c.unit_price, c.list_cost, Some(c.billed_cost), c.balance_after];
        for (column, value) in self.decimals.iter_mut().zip(amounts) {
            column.push(value.map(mantissa_at_scale));
        }
        self.source_line.push(c.origin.line as i64);
    }

    /// The DataFrame, columns in [`COLUMNS`] order but for `id`; the [`ENUMS`] as codes.
    pub(crate) fn finish(self) -> PolarsResult<DataFrame> {
        let rows = self.source_line.len();
        let mut texts = self.texts.into_iter();
        let mut decimals = self.decimals.into_iter();
        let mut times = self.times.into_iter();
        let mut codes = self.codes.into_iter();
        let (mut gpu_count, mut source_line) = (Some(self.gpu_count), Some(self.source_line));
        let columns = COLUMNS[1..]
            .iter()
            .map(|&name| -> PolarsResult<Column> {
                let missing = || polars_err!(ComputeError: "no values for column {name}");
                let series = match name {
                    "charge_start" | "charge_end" => {
                        let values = times.next().ok_or_else(missing)?;
                        Int64Chunked::from_vec(name.into(), values)
                            .into_datetime(TimeUnit::Microseconds, Some(TimeZone::UTC))
                            .into_series()
                    }
                    "gpu_count" => {
                        let values = gpu_count.take().ok_or_else(missing)?;
                        Int32Chunked::from_iter_options(name.into(), values.into_iter())
                            .into_series()
                    }
                    "source_line" => {
                        let values = source_line.take().ok_or_else(missing)?;
                        Int64Chunked::from_vec(name.into(), values).into_series()
                    }
                    _ if ENUMS.contains(&name) => {
                        let values = codes.next().ok_or_else(missing)?;
                        // Int32: polars is built without its 8-bit integer types.
                        Int32Chunked::from_vec(name.into(), values).into_series()
                    }
                    _ if DECIMALS.contains(&name) => {
                        let values = decimals.next().ok_or_else(missing)?;
                        Int128Chunked::from_iter_options(name.into(), values.into_iter())
                            .into_decimal(PRECISION, SCALE)?
                            .into_series()
                    }
                    _ => texts.next().ok_or_else(missing)?.finish().into_series(),
                };
                Ok(series.into())
            })
            .collect::<PolarsResult<Vec<_>>>()?;
        DataFrame::new(rows, columns)
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

/// Reads the charges of a DataFrame made by [`FrameBuilder`] and [`with_ids`].
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
    use super::*;

    fn column(values: &[Option<&str>]) -> Vec<Option<String>> {
        let mut column = TextColumn::Same { name: "t", value: None, count: 0, capacity: 4 };
        for v in values {
            column.push(*v);
        }
        let built = column.finish();
        assert_eq!(built.len(), values.len());
        built.iter().map(|v| v.map(str::to_owned)).collect()
    }

    #[test]
    fn every_enum_value_reads_back_from_its_code() {
        use crate::charge::{Kind, Pricing};
        for c in Category::ALL {
            assert_eq!(enum_text("category", *c as i32), Some(c.as_str()));
        }
        for k in Kind::ALL {
            assert_eq!(enum_text("kind", *k as i32), Some(k.as_str()));
        }
        for p in Pricing::ALL {
            assert_eq!(enum_text("pricing", *p as i32), Some(p.as_str()));
        }
        assert_eq!(enum_text("category", Category::ALL.len() as i32), None);
        assert_eq!(enum_text("unit", 0), None);
    }

    #[test]
    fn text_columns_hold_what_was_pushed_whether_one_value_or_many() {
        let cases: [&[Option<&str>]; 6] = [
            &[],
            &[Some("focus"); 5],
            &[None, None, None],
            &[Some("a"), Some("a"), None, Some("b"), Some("a")],
            &[None, Some("x")],
            &[Some("/a/very/long/path/to/a/bill/export-2024-05.csv"), Some("")],
        ];
        for values in cases {
            let want: Vec<Option<String>> = values.iter().map(|v| v.map(str::to_owned)).collect();
            assert_eq!(column(values), want, "{values:?}");
        }
    }
}

//! The columns of a part file, written once: each column's name, what it holds (and so how it
//! is built from a charge and read back), and how the part writer encodes it.
//!
//! The frame builder ([`super::columns::FrameBuilder`]), the reader
//! ([`super::columns::from_frame`]) and the part writer ([`super::part`]) all follow
//! [`SCHEMA`]: a column is added, renamed or re-encoded here and nowhere else (the reader
//! still names the charge field each column fills, and a test checks that it reads every
//! column).
//!
//! This module owns the file layout; it must not know how a charge is made or used.

use rust_decimal::Decimal;

use crate::charge::{Category, Charge, Kind, Pricing};

/// What a column holds. The variants that are built from a charge carry the field they read.
#[derive(Clone, Copy)]
pub(crate) enum Type {
    /// The charge id, 32 hexadecimal digits; given to a batch after parsing, in file order.
    Id,
    /// A text, `None` for null.
    Text(fn(&Charge) -> Option<&str>),
    /// The billing period, `YYYY-MM` text.
    Month,
    /// A closed set of values ([`Category`], [`Kind`], [`Pricing`]): built as the value's
    /// index in its type's `ALL` (its code), written and read as its text.
    Enum(fn(&Charge) -> i32, fn(usize) -> Option<&'static str>),
    /// An instant: UTC microseconds, Parquet `TIMESTAMP(MICROS, UTC)`.
    Instant(fn(&Charge) -> i64),
    /// A small count, INT32.
    Count(fn(&Charge) -> Option<i32>),
    /// Money or a quantity: DECIMAL(38, 12) built from the exact mantissa.
    Decimal(fn(&Charge) -> Option<Decimal>),
    /// The line of the source file, INT64.
    Line,
}

/// How the part writer encodes a column (see [`super::part`] for why).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// Plain values, not compressed: random hexadecimal that LZ4 cannot shrink.
    PlainUncompressed,
    /// Plain values, compressed: unique or nearly (lines), or decimals (which polars
    /// cannot dictionary-encode).
    Plain,
    /// The codes of an [`Type::Enum`], written as a dictionary of the texts present.
    Codes,
    /// Text: a one-entry dictionary when every row holds the same value, else polars' own
    /// choice.
    Dictionary,
}

/// One column of a part file.
#[derive(Clone, Copy)]
pub(crate) struct Column {
    pub name: &'static str,
    pub type_: Type,
    pub encoding: Encoding,
}

const fn column(name: &'static str, type_: Type, encoding: Encoding) -> Column {
    Column { name, type_, encoding }
}

fn category_text(code: usize) -> Option<&'static str> {
    Category::ALL.get(code).map(|v| v.as_str())
}
fn kind_text(code: usize) -> Option<&'static str> {
    Kind::ALL.get(code).map(|v| v.as_str())
}
fn pricing_text(code: usize) -> Option<&'static str> {
    Pricing::ALL.get(code).map(|v| v.as_str())
}

use Encoding::{Codes, Dictionary, Plain, PlainUncompressed};

/// The columns of a part file, in order. Codes are `as i32` of a variant: `ALL` lists the
/// variants in declaration order (a test checks every value reads back).
pub(crate) const SCHEMA: [Column; 25] = [
    column("id", Type::Id, PlainUncompressed),
    column("platform", Type::Text(|c| Some(&c.platform)), Dictionary),
    column("account", Type::Text(|c| c.account.as_deref()), Dictionary),
    column("billing_period", Type::Month, Dictionary),
    column("charge_start", Type::Instant(|c| c.charge_start.timestamp_micros()), Dictionary),
    column("charge_end", Type::Instant(|c| c.charge_end.timestamp_micros()), Dictionary),
    column("resource_id", Type::Text(|c| c.resource_id.as_deref()), Dictionary),
    column("resource_name", Type::Text(|c| c.resource_name.as_deref()), Dictionary),
    column("instance_id", Type::Text(|c| c.instance_id.as_deref()), Dictionary),
    column("region", Type::Text(|c| c.region.as_deref()), Dictionary),
    column("category", Type::Enum(|c| c.category as i32, category_text), Codes),
    column("kind", Type::Enum(|c| c.kind as i32, kind_text), Codes),
    column("pricing", Type::Enum(|c| c.pricing as i32, pricing_text), Codes),
    column("gpu_model", Type::Text(|c| c.gpu_model.as_deref()), Dictionary),
    column("gpu_count", Type::Count(|c| c.gpu_count.map(i32::from)), Dictionary),
    column("quantity", Type::Decimal(|c| c.quantity), Plain),
    column("unit", Type::Text(|c| c.unit.as_deref()), Dictionary),
    column("unit_price", Type::Decimal(|c| c.unit_price), Plain),
    column("list_cost", Type::Decimal(|c| c.list_cost), Plain),
    column("billed_cost", Type::Decimal(|c| Some(c.billed_cost)), Plain),
    column("currency", Type::Text(|c| Some(&c.currency)), Dictionary),
    column("balance_after", Type::Decimal(|c| c.balance_after), Plain),
    column("source_file", Type::Text(|c| Some(&c.origin.file)), Dictionary),
    column("source_line", Type::Line, Plain),
    column("source_item", Type::Text(|c| Some(&c.origin.item)), Dictionary),
];

/// The column called `name`.
pub(crate) fn column_named(name: &str) -> Option<&'static Column> {
    SCHEMA.iter().find(|c| c.name == name)
}

/// The text of `code` in the [`Type::Enum`] column `name`; `None` for another column or a
/// code out of range.
pub(crate) fn enum_text(name: &str, code: i32) -> Option<&'static str> {
    let code = usize::try_from(code).ok()?;
    match column_named(name)?.type_ {
        Type::Enum(_, text) => text(code),
        _ => None,
    }
}

/// The column names of a charge file, in order.
pub const COLUMNS: [&str; SCHEMA.len()] = {
    let mut names = [""; SCHEMA.len()];
    let mut i = 0;
    while i < SCHEMA.len() {
        names[i] = SCHEMA[i].name;
        i += 1;
    }
    names
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_enum_value_reads_back_from_its_code() {
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
        assert_eq!(enum_text("category", -1), None);
        assert_eq!(enum_text("unit", 0), None);
    }

    #[test]
    fn names_are_unique_and_the_id_comes_first() {
        let mut names: Vec<&str> = COLUMNS.to_vec();
        assert_eq!(names[0], "id");
        assert!(matches!(SCHEMA[0].type_, Type::Id));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SCHEMA.len());
    }
}

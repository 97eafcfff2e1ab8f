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

use crate::charge::{Category, Kind, Pricing};

/// What a column holds (how a charge's field is read into it is in the list of
/// [`with_columns!`]).
#[derive(Clone, Copy)]
pub(crate) enum Type {
    /// The charge id, 32 hexadecimal digits; given to a batch after parsing, in file order.
    Id,
    /// A text, `None` for null.
    Text,
    /// The billing period, `YYYY-MM` text.
    Month,
    /// A closed set of values ([`Category`], [`Kind`], [`Pricing`]): built as the value's
    /// index in its type's `ALL` (its code), written and read as its text, which the function
    /// gives.
    Enum(fn(usize) -> Option<&'static str>),
    /// An instant: UTC microseconds, Parquet `TIMESTAMP(MICROS, UTC)`.
    Instant,
    /// A small count, INT32.
    Count,
    /// Money or a quantity: DECIMAL(38, 12) built from the exact mantissa.
    Decimal,
    /// The line of the source file, INT64.
    Line,
}

/// How the part writer encodes a column (see [`super::part`] for why).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// Plain values, not compressed: random hexadecimal that no codec shrinks.
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

/// The columns of a part file, once, in order: `name => type(how it reads a charge),
/// encoding;`. `with_columns!(m)` hands the list to macro `m`: [`SCHEMA`] is made from it
/// here, and the frame builder's per-charge code in `columns.rs`, where each field is then
/// read directly rather than through a function pointer a column and a charge. Codes are
/// `as i32` of a variant: `ALL` lists the variants in declaration order (a test checks every
/// value reads back).
macro_rules! with_columns {
    ($then:ident) => {
        $then! {
            "id" => Id, PlainUncompressed;
            "platform" => Text(|c| Some(&c.platform)), Dictionary;
            "account" => Text(|c| c.account.as_deref()), Dictionary;
            "billing_period" => Month, Dictionary;
            "charge_start" => Instant(|c| c.charge_start.timestamp_micros()), Dictionary;
            "charge_end" => Instant(|c| c.charge_end.timestamp_micros()), Dictionary;
            "resource_id" => Text(|c| c.resource_id.as_deref()), Dictionary;
            "resource_name" => Text(|c| c.resource_name.as_deref()), Dictionary;
            "instance_id" => Text(|c| c.instance_id.as_deref()), Dictionary;
            "region" => Text(|c| c.region.as_deref()), Dictionary;
            "category" => Enum(|c| c.category as i32, category_text), Codes;
            "kind" => Enum(|c| c.kind as i32, kind_text), Codes;
            "pricing" => Enum(|c| c.pricing as i32, pricing_text), Codes;
            "gpu_model" => Text(|c| c.gpu_model.as_deref()), Dictionary;
            "gpu_count" => Count(|c| c.gpu_count.map(i32::from)), Dictionary;
            "quantity" => Decimal(|c| c.quantity), Plain;
            "unit" => Text(|c| c.unit.as_deref()), Dictionary;
            "unit_price" => Decimal(|c| c.unit_price), Plain;
            "list_cost" => Decimal(|c| c.list_cost), Plain;
            "billed_cost" => Decimal(|c| Some(c.billed_cost)), Plain;
            "currency" => Text(|c| Some(&c.currency)), Dictionary;
            "balance_after" => Decimal(|c| c.balance_after), Plain;
            "source_file" => Text(|c| Some(&c.origin.file)), Dictionary;
            "source_line" => Line, Plain;
            "source_item" => Text(|c| Some(&c.origin.item)), Dictionary;
            "sub_account" => Text(|c| c.sub_account.as_deref()), Dictionary;
            "account_name" => Text(|c| c.account_name.as_deref()), Dictionary;
            "sub_account_name" => Text(|c| c.sub_account_name.as_deref()), Dictionary;
            "service" => Text(|c| c.service.as_deref()), Dictionary;
            "usage_type" => Text(|c| c.usage_type.as_deref()), Dictionary;
        }
    };
}
pub(crate) use with_columns;

/// [`SCHEMA`] from the list of [`with_columns!`].
macro_rules! schema_table {
    ($($name:literal => $type:ident $(($($arg:expr),*))?, $encoding:ident;)*) => {
        /// The columns of a part file, in order.
        pub(crate) const SCHEMA: [Column; [$($name),*].len()] =
            [$(column($name, column_type!($type $(($($arg),*))?), Encoding::$encoding)),*];
    };
}

/// A column's [`Type`] from its entry in [`with_columns!`] (the getters are the frame
/// builder's).
macro_rules! column_type {
    (Enum($get:expr, $text:expr)) => {
        Type::Enum($text)
    };
    ($type:ident $(($($arg:expr),*))?) => {
        Type::$type
    };
}
with_columns!(schema_table);

/// The columns added after the first ledgers were written, last in [`SCHEMA`]: a part file
/// written before them has none of them, and reads as if they were null.
pub(crate) const LATE: [&str; 5] =
    ["sub_account", "account_name", "sub_account_name", "service", "usage_type"];

/// The column called `name`.
pub(crate) fn column_named(name: &str) -> Option<&'static Column> {
    SCHEMA.iter().find(|c| c.name == name)
}

/// The text of `code` in the [`Type::Enum`] column `name`; `None` for another column or a
/// code out of range.
pub(crate) fn enum_text(name: &str, code: i32) -> Option<&'static str> {
    let code = usize::try_from(code).ok()?;
    match column_named(name)?.type_ {
        Type::Enum(text) => text(code),
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

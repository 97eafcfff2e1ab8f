//! Parsing of the cell values bills are made of: amounts and times.
//!
//! Amounts never pass through `f64`: the text is cleaned (currency signs, thousands
//! separators, accounting parentheses) and parsed straight into [`Decimal`], keeping every
//! digit the bill printed. Times without an offset are local to the platform's zone.
//!
//! The functions return `Err(String)` with the user-facing reason; the caller adds the
//! location.

mod amount;
mod time;

pub use amount::{
    DecimalSeparator, MAX_AMOUNT, NumberFormat, ReadAmount, parse_amount, parse_amount_with,
    read_amount,
};
pub use time::{DateOrder, parse_time, parse_time_in};

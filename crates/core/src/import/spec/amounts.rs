//! A row's amounts: read with the profile's number format, rounded to the ledger's 12
//! decimals where the bill printed more (and what that took off counted), and the billed
//! cost's sign from the row's direction.

use std::borrow::Cow;

use rust_decimal::Decimal;

use super::parser::cell;
use super::*;
use crate::error::{RowError, RowProblem};
use crate::import::Rounding;
use crate::import::row::Row;
use crate::parse::{NumberFormat, ReadAmount};

/// The row's direction (`[sign] direction`): expense or income by the column's words; a row
/// without the cell is an expense when its amount is negative.
fn direction(
    p: &Profile,
    row: &Row<'_>,
    texts: &[Option<Cow<'_, str>>],
    billed: Decimal,
) -> Result<Option<Direction>, RowError> {
    let Some(i) = p.direction else { return Ok(None) };
    let sign = &p.spec.sign;
    Ok(Some(match texts[i].as_deref() {
        Some(d) if sign.expense.iter().any(|w| d.contains(w.as_str())) => Direction::Expense,
        Some(d) if sign.income.iter().any(|w| d.contains(w.as_str())) => Direction::Income,
        Some(d) => {
            let words = [sign.expense.join("/"), sign.income.join("/")];
            return Err(row.error(
                i,
                RowProblem::NotDirection {
                    text: d.to_string(),
                    words: Box::new([words[0].to_string(), words[1].to_string()]),
                },
            ));
        }
        None if billed.is_sign_negative() => Direction::Expense,
        None => Direction::Income,
    }))
}

/// The amount in column `i`, read with the profile's number format; `None` when empty.
pub(super) fn amount_at(
    row: &Row<'_>,
    texts: &[Option<Cow<'_, str>>],
    i: usize,
    numbers: NumberFormat,
) -> Result<Option<Decimal>, RowError> {
    Ok(read_at(row, texts, i, numbers)?.map(|r| r.value))
}

/// [`amount_at`] with what rounding took off it ([`crate::parse::read_amount`]).
pub(super) fn read_at(
    row: &Row<'_>,
    texts: &[Option<Cow<'_, str>>],
    i: usize,
    numbers: NumberFormat,
) -> Result<Option<ReadAmount>, RowError> {
    match cell(row, texts, i)? {
        Some(text) => crate::parse::read_amount(&text, numbers)
            .map_err(|m| row.error(i, RowProblem::Amount(m))),
        None => Ok(None),
    }
}

/// The billed and list amounts, the billed one with the sign the direction column gives
/// (when the profile has one), and that direction; what rounding took off them is counted in
/// `rounded`, the billed cost's as the bill printed it (see [`follow_sign`]).
pub(super) fn money(
    p: &Profile,
    row: &Row<'_>,
    texts: &[Option<Cow<'_, str>>],
    rounded: &mut Rounding,
) -> Result<(Decimal, Option<Decimal>, Option<Direction>), RowError> {
    let (f, numbers) = (&p.fields, p.number_format());
    let read = read_at(row, texts, f.billed_cost, numbers)?
        .ok_or_else(|| row.error(f.billed_cost, RowProblem::NoAmount))?;
    let list = match f.list_cost {
        Some(i) => read_at(row, texts, i, numbers)?,
        None => None,
    };
    rounded.amounts += u64::from(read.rounded) + u64::from(list.is_some_and(|l| l.rounded));
    rounded.billed_off = read.rounded_off;
    let billed = read.value;
    let direction = direction(p, row, texts, billed)?;
    let billed = match direction {
        Some(Direction::Expense) => billed.abs(),
        Some(Direction::Income) => -billed.abs(),
        None => billed,
    };
    Ok((billed, list.map(|l| l.value), direction))
}

/// What rounding took off the billed cost `printed` as the bill printed it, for the charge's
/// `billed` cost once the row's signs are applied: the same figure, negated when they turned
/// its sign.
pub(super) fn follow_sign(rounded: &mut Rounding, printed: Decimal, billed: Decimal) {
    if billed.is_sign_negative() != printed.is_sign_negative() {
        rounded.billed_off = -rounded.billed_off;
    }
}

//! Decimal columns' mantissas as figures: a part file's DECIMAL(38, 12) values read back as
//! the decimals an import wrote (the same digits, trailing zeros cut), packed for a window's
//! rows, and refused when no import could have written them.

use rust_decimal::Decimal;

/// Mantissa `v` at `scale` as a decimal, its trailing zeros cut; an error when it has more
/// digits than a decimal holds.
pub(crate) fn decimal_from_mantissa(mut v: i128, scale: u32) -> Result<Decimal, String> {
    if let Some((m, s)) = small_stripped(v, scale) {
        return Ok(Decimal::new(m, s));
    }
    // Most other values fit the decimal as they are: its own normalising is far cheaper
    // than dividing an i128 by ten digit after digit.
    if let Ok(d) = Decimal::try_from_i128_with_scale(v, scale) {
        return Ok(d.normalize());
    }
    let mut scale = scale;
    while scale > 0 && v % 10 == 0 {
        v /= 10;
        scale -= 1;
    }
    Decimal::try_from_i128_with_scale(v, scale).map_err(|e| format!("decimal out of range: {e}"))
}

/// A mantissa that fits 64 bits at a scale a decimal can have, its trailing zeros cut (zero
/// at scale 0): nearly every amount's, cut by divisions by constants (multiplications), not
/// by the decimal's own normalising. `None` for any other.
fn small_stripped(v: i128, scale: u32) -> Option<(i64, u32)> {
    let mut m = i64::try_from(v).ok().filter(|_| scale <= 28)?;
    if m == 0 {
        return Some((0, 0));
    }
    let mut s = scale;
    while s >= 4 && m % 10_000 == 0 {
        m /= 10_000;
        s -= 4;
    }
    while s > 0 && m % 10 == 0 {
        m /= 10;
        s -= 1;
    }
    Some((m, s))
}

/// The bound of a decimal column's mantissas at `scale`: an import writes no figure of
/// [`crate::MAX_AMOUNT`] (10^15) or more in magnitude ([`crate::parse_amount`] refuses it), so
/// a part file that holds one is damaged, and is refused rather than read as a figure the
/// sums then overflow on. `u128::MAX` when every mantissa of 38 digits is below it.
pub(crate) fn figure_bound(scale: u32) -> u128 {
    let bound = crate::MAX_AMOUNT.mantissa().unsigned_abs();
    10u128
        .checked_pow(scale)
        .and_then(|f| bound.checked_mul(f))
        .filter(|&b| b <= i128::MAX as u128)
        .unwrap_or(u128::MAX)
}

/// `Ok` when mantissa `v` is below `bound` ([`figure_bound`]); otherwise the error naming
/// column `name` and how many digits the figure has before its point. One comparison: it is
/// made for every value a part file's decimal column holds.
#[inline]
pub(crate) fn check_figure(v: i128, scale: u32, bound: u128, name: &str) -> Result<(), String> {
    if v.unsigned_abs() < bound { Ok(()) } else { Err(beyond_any_bill(v, scale, name)) }
}

#[cold]
fn beyond_any_bill(v: i128, scale: u32, name: &str) -> String {
    let digits = (v.unsigned_abs() / 10u128.pow(scale.min(38))).to_string().len();
    format!(
        "column {name}: a figure of {digits} digits before the point, beyond any a bill holds \
         (an import refuses 10^15 and more): the file is damaged"
    )
}

/// [`crate::window::packed`] of [`decimal_from_mantissa`]`(v, scale)`, the same mantissa,
/// sign and scale, without making the decimal for a mantissa of 64 bits.
pub(crate) fn packed_from_mantissa(v: i128, scale: u32) -> Result<crate::window::Packed, String> {
    match small_stripped(v, scale) {
        Some((m, s)) => {
            let a = m.unsigned_abs();
            Ok(crate::window::pack([a as u32, (a >> 32) as u32, 0], m < 0, s))
        }
        None => Ok(crate::window::packed(decimal_from_mantissa(v, scale)?)),
    }
}

//! R001's everyday case in integers: whether a line's unit price times its quantity agrees
//! with its amount, decided without `Decimal`s wherever that gives exactly the answer the
//! check's `Decimal` arithmetic gives (a month has millions of lines, nearly all agreeing).

use rust_decimal::Decimal;

/// Whether `|actual| − |price × quantity|` is within R001's tolerance, decided in integers
/// where that is exactly what [`super::Arithmetic`] works out with `Decimal`s: the product fits
/// `Decimal` (96 bits, 28 decimals, so `Decimal` does not round it) and both figures fit it
/// at the larger of their scales (so their difference is exact). False where it cannot say:
/// the caller then works it out with `Decimal`s, as for a line that does not agree.
///
/// The tolerance is half a unit of the last decimal of the figure, counted as at least the
/// second, and at least 0.01: half a unit of the second decimal or a later one is at most
/// 0.005, so the tolerance is always 0.01.
pub(super) fn agrees(price: Decimal, quantity: Decimal, actual: Decimal) -> bool {
    const LIMIT: u128 = crate::money::LIMIT as u128;
    let pow10 = |k: u32| 10u128.checked_pow(k);
    let product_scale = price.scale() + quantity.scale();
    let product = price.mantissa().unsigned_abs().checked_mul(quantity.mantissa().unsigned_abs());
    let Some(product) = product.filter(|&p| p < LIMIT && product_scale <= 28) else {
        return false;
    };
    // `Decimal` gives a zero product as a zero of scale 0.
    let product_scale = if product == 0 { 0 } else { product_scale };
    let (actual_scale, actual) = (actual.scale(), actual.mantissa().unsigned_abs());
    let top = product_scale.max(actual_scale);
    let up = |m: u128, s: u32| pow10(top - s).and_then(|p| m.checked_mul(p));
    let (Some(expected), Some(actual)) = (up(product, product_scale), up(actual, actual_scale))
    else {
        return false;
    };
    if expected >= LIMIT || actual >= LIMIT {
        return false;
    }
    // |difference| ≤ 0.01, at the scale `top`.
    let difference = expected.abs_diff(actual);
    match top.checked_sub(2) {
        Some(k) => pow10(k).is_some_and(|cent| difference <= cent),
        None => pow10(2 - top).and_then(|p| difference.checked_mul(p)).is_some_and(|d| d <= 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money;
    use rust_decimal_macros::dec;

    /// R001's decision as it was made with `Decimal`s alone: `None` where that is an error.
    fn within_tolerance(price: Decimal, quantity: Decimal, actual: Decimal) -> Option<bool> {
        let expected = money::mul(price, quantity, "t").ok()?.abs();
        let actual = actual.abs();
        let digits = actual.normalize().scale().clamp(2, 26);
        let tolerance = (Decimal::new(5, digits + 1)).max(Decimal::new(1, 2));
        Some(money::sub(actual, expected, "t").ok()?.abs() <= tolerance)
    }

    /// Where the integer check says a line agrees, the `Decimal` check says so too; and it
    /// says so for the lines of bills (figures of a few digits and decimals), so that they
    /// are never worked out twice.
    #[test]
    fn a_line_agrees_in_integers_only_where_it_agrees_in_decimals() {
        let mut next = crate::xorshift(0x2545_f491_4f6c_dd1du64);
        let (mut agreed, mut disagreed) = (0, 0);
        for i in 0..200_000 {
            let mut figure = |wide: bool| {
                let digits = if wide { next() % 30 } else { next() % 9 } as u32;
                let m = i128::from(next()) << 64 | i128::from(next());
                let m = m.rem_euclid(10i128.pow(digits.min(29)).max(2));
                let m = if next().is_multiple_of(5) { -m } else { m };
                let scale = if wide { next() % 29 } else { next() % 7 } as u32;
                Decimal::try_from_i128_with_scale(m % (1 << 96), scale).unwrap_or(Decimal::ONE)
            };
            let wide = (i % 3 == 0, i % 5 == 0, i % 4 == 0 && i % 7 == 0);
            let (price, quantity) = (figure(wide.0), figure(wide.1));
            // Most lines bill their price times their quantity, give or take a rounding.
            let actual = match i % 4 {
                0 => figure(wide.2),
                k => price.checked_mul(quantity).map_or(dec!(1), |p| {
                    (p + Decimal::new(i64::from(k as u8) - 2, 2 + (i % 3) as u32)).round_dp(6)
                }),
            };
            if agrees(price, quantity, actual) {
                agreed += 1;
                let decimals = within_tolerance(price, quantity, actual);
                assert_eq!(decimals, Some(true), "{price} × {quantity} against {actual}");
            } else if wide == (false, false, false)
                && within_tolerance(price, quantity, actual) == Some(true)
            {
                disagreed += 1;
            }
        }
        assert!(agreed > 60_000, "{agreed}");
        assert_eq!(disagreed, 0, "bill figures left to decimals");
        // A bill's own lines.
        assert!(agrees(dec!(3.673), dec!(1), dec!(3.673)));
        assert!(agrees(dec!(0.087), dec!(12.34), dec!(1.07358)));
        assert!(agrees(dec!(0.087), dec!(12.34), dec!(1.08)));
        assert!(!agrees(dec!(0.087), dec!(12.34), dec!(1.09)));
        assert!(agrees(dec!(-0.5), dec!(2), dec!(1)), "signs are compared apart");
        assert!(agrees(Decimal::ZERO, dec!(2), dec!(0.01)));
        assert!(!agrees(Decimal::ZERO, dec!(2), dec!(0.011)));
    }
}

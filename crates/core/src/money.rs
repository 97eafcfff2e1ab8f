//! Checked, exact arithmetic on money.
//!
//! `Decimal` keeps 28 significant digits. Its `+` panics on overflow and, worse, rounds
//! silently when an exact sum needs more digits than it has (`99999999999999999999999999 +
//! 3.673` gave `…002.67`). Every sum of money the library makes goes through [`add`] or
//! [`sum`], which give the exact result or an [`crate::ErrorKind::Overflow`] naming what was
//! being added; products and quotients (a unit price times a quantity, a charge pro-rated by
//! time) go through [`mul`] and [`div`], which round only past the 28th digit, as any
//! division must, and never panic.
//!
//! Bill amounts are bounded at import ([`crate::MAX_AMOUNT`]), so that a single figure and
//! the product of two never come near the limit: an overflow here means a sum of very many
//! very large figures, and the error says which total it was.

use rust_decimal::Decimal;

use crate::error::{ErrorKind, Result};

#[cold]
#[inline(never)]
fn overflow(what: &str) -> crate::Error {
    ErrorKind::Overflow { what: what.to_owned() }.into()
}

/// `e`, when it is money that does not fit and does not name check `code` yet (as one said
/// of a charge does), said to be met by the check `code` `name` (a waste rule or a
/// reconciliation check). Any other error as it is.
pub(crate) fn met_by(code: &str, name: &str, e: crate::Error) -> crate::Error {
    match e.into_kind() {
        ErrorKind::Overflow { what } if !what.contains(code) => {
            ErrorKind::Overflow { what: format!("{code} {name}: {what}") }.into()
        }
        other => other.into(),
    }
}

/// `a + b`, exact, or an error naming `what`.
///
/// Exact means: to every decimal the figures have, up to [`crate::MAX_SCALE`] (12). Bill
/// figures have at most 12, so their sums are exact to the last digit; a pro-rated share
/// (a quotient of 28 significant digits) is summed exactly to its 12th decimal, and rounded
/// past it as its division already was.
#[inline]
pub fn add(a: Decimal, b: Decimal, what: &str) -> Result<Decimal> {
    // Adding zero is exact whatever the scales: `Decimal` hands back the other operand at
    // its own scale (0.000000000000 + 32.7726 is 32.7726 at scale 4), which the check below
    // would take for a lost digit.
    if a.is_zero() {
        return Ok(b);
    }
    if b.is_zero() {
        return Ok(a);
    }
    if let Some(s) = add_small(a, b) {
        return Ok(s);
    }
    let kept = a.scale().max(b.scale()).min(crate::MAX_SCALE);
    match a.checked_add(b) {
        // A sum that needed more digits than there are comes back at a smaller scale.
        Some(s) if s.scale() >= kept => Ok(s),
        _ => Err(overflow(what)),
    }
}

/// `a + b` in integer arithmetic when neither is zero and their exact sum, at the larger
/// scale, is not zero and fits `Decimal`'s 96 bits: the sum `Decimal` gives then (the same
/// digits, scale and sign). Otherwise `None`, and `Decimal` adds (it rounds a sum that does
/// not fit, which [`add`] refuses). Bill figures, their sums and pro-rated shares are nearly
/// all this small; `Decimal`'s own addition rescales through a 192-bit buffer whenever the
/// scales differ (after its trailing zeros are cut, as the ledger reads them, a figure's
/// scale is its own).
#[inline]
fn add_small(a: Decimal, b: Decimal) -> Option<Decimal> {
    let (sum, scale) = add_parts((a.mantissa(), a.scale()), (b.mantissa(), b.scale()))?;
    Decimal::try_from_i128_with_scale(sum, scale).ok()
}

/// [`add_small`] of two figures given as their mantissas and scales: their exact sum as a
/// mantissa at the larger scale, or `None` where `Decimal` must add them.
#[inline]
fn add_parts((x, sa): (i128, u32), (y, sb): (i128, u32)) -> Option<(i128, u32)> {
    if x == 0 || y == 0 {
        // `Decimal` hands back the other operand at its own scale.
        return None;
    }
    let scale = sa.max(sb);
    // Most figures are brought up by nothing (a running sum is at the largest scale seen),
    // or are of 64 bits brought up by at most 18 digits, which no i128 overflows: the
    // checked 128-bit multiplication only for the rest.
    let up = |m: i128, s: u32| {
        let k = (scale - s) as usize;
        if k == 0 {
            return Some(m);
        }
        let p = *POW10.get(k)?;
        match i64::try_from(m) {
            Ok(small) if k <= 18 => Some(i128::from(small) * p),
            _ => m.checked_mul(p),
        }
    };
    let sum = up(x, sa)?.checked_add(up(y, sb)?)?;
    // A zero's sign is `Decimal`'s to choose.
    if sum == 0 || sum <= -LIMIT || sum >= LIMIT {
        return None;
    }
    Some((sum, scale))
}

/// An exact sum made a figure at a time: after adding figures in order it is what folding
/// [`add`] over them from zero gives (the same digits, scale and sign, and the same error),
/// kept as an integer and a scale between additions instead of a `Decimal` rebuilt at each
/// (the rules and checks sum millions of charges, each into the sum of its resource, instance
/// or account).
#[derive(Debug, Clone, Copy)]
pub struct Sum {
    /// The sum so far when it is not zero: a mantissa of at most 96 bits, not zero.
    mantissa: i128,
    /// Its scale.
    scale: u32,
    /// The sum so far when it is zero (its sign and scale are those [`add`] gave it).
    zero: Decimal,
}

impl Default for Sum {
    fn default() -> Self {
        Sum { mantissa: 0, scale: 0, zero: Decimal::ZERO }
    }
}

impl Sum {
    /// Nothing added yet: zero.
    pub fn new() -> Sum {
        Sum::default()
    }

    /// Adds `x`, or gives the error [`add`] gives (naming `what`), the sum as it was.
    #[inline]
    pub fn add(&mut self, x: Decimal, what: &str) -> Result<()> {
        // `add` hands back the other operand when one is zero.
        if self.mantissa == 0 {
            self.set(x);
            return Ok(());
        }
        match add_parts((self.mantissa, self.scale), (x.mantissa(), x.scale())) {
            Some(sum) => (self.mantissa, self.scale) = sum,
            None if x.is_zero() => {}
            None => {
                let sum = add(self.value(), x, what)?;
                self.set(sum);
            }
        }
        Ok(())
    }

    /// [`Sum::add`] of a figure given as its mantissa and scale (as a window's row keeps
    /// its billed cost), made a `Decimal` by `decimal` only where [`Sum::add`] must see it
    /// (a zero on either side, or a sum of more than 96 bits): the same sum or error.
    #[inline]
    pub(crate) fn add_mantissa(
        &mut self,
        (m, scale): (i128, u32),
        decimal: impl FnOnce() -> Decimal,
        what: &str,
    ) -> Result<()> {
        if self.mantissa != 0
            && let Some(sum) = add_parts((self.mantissa, self.scale), (m, scale))
        {
            (self.mantissa, self.scale) = sum;
            return Ok(());
        }
        self.add(decimal(), what)
    }

    /// The sum.
    #[inline]
    pub fn value(&self) -> Decimal {
        if self.mantissa == 0 {
            return self.zero;
        }
        // Not zero and within 96 bits, at a scale `Decimal` had it at: always representable.
        Decimal::try_from_i128_with_scale(self.mantissa, self.scale).unwrap_or(self.zero)
    }

    fn set(&mut self, d: Decimal) {
        if d.is_zero() {
            (self.mantissa, self.zero) = (0, d);
        } else {
            (self.mantissa, self.scale) = (d.mantissa(), d.scale());
        }
    }
}

/// `10^k` for every scale `Decimal` has.
const POW10: [i128; 29] = {
    let mut p = [1i128; 29];
    let mut i = 1;
    while i < 29 {
        p[i] = p[i - 1] * 10;
        i += 1;
    }
    p
};

/// The first magnitude `Decimal`'s 96-bit mantissa cannot hold.
pub(crate) const LIMIT: i128 = 1 << 96;

/// `a - b`, exact, or an error naming `what`.
pub fn sub(a: Decimal, b: Decimal, what: &str) -> Result<Decimal> {
    add(a, -b, what)
}

/// The exact sum of `items`, or an error naming `what`.
pub fn sum(items: impl IntoIterator<Item = Decimal>, what: &str) -> Result<Decimal> {
    let mut total = Sum::new();
    for x in items {
        total.add(x, what)?;
    }
    Ok(total.value())
}

/// `a × b` (rounded past the 28th significant digit), or an error naming `what`.
pub fn mul(a: Decimal, b: Decimal, what: &str) -> Result<Decimal> {
    a.checked_mul(b).ok_or_else(|| overflow(what))
}

/// `a ÷ b` (rounded past the 28th significant digit), or an error naming `what` (also for a
/// division by zero).
pub fn div(a: Decimal, b: Decimal, what: &str) -> Result<Decimal> {
    a.checked_div(b).ok_or_else(|| overflow(what))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    /// The integer sum is `Decimal`'s, digit for digit, scale for scale, sign for sign.
    #[test]
    fn a_small_sum_is_decimal_s_own() {
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15u64);
        let mut values = vec![
            dec!(0.5),
            dec!(-0.5),
            dec!(1.50),
            dec!(-1.5),
            Decimal::new(i64::MAX, 0),
            Decimal::new(i64::MIN + 1, 3),
            Decimal::new(1, 28),
            Decimal::new(-7, 12),
            dec!(99999999999999999999999999),
        ];
        for _ in 0..20_000 {
            let digits = next() % 19;
            let m = (next() % 10u64.pow(digits as u32).max(2)) as i64;
            let m = if next().is_multiple_of(2) { -m } else { m };
            values.push(Decimal::new(m, (next() % 29) as u32));
            // Pro-rated shares: quotients of 28 significant digits, and figures near the top.
            let part = Decimal::new((next() % 3600) as i64 + 1, 0);
            values.push(Decimal::new(m, 2) * part / Decimal::new(3601, 0));
            let wide = (i128::from(next()) << 32 | i128::from(next() >> 32)) % (1 << 96);
            values.push(Decimal::from_i128_with_scale(wide, (next() % 29) as u32));
        }
        let mut fast = 0;
        for (i, &a) in values.iter().enumerate() {
            for b in [values[(i * 7 + 3) % values.len()], -a, a, values[i / 2]] {
                let want = a.checked_add(b);
                if let Some(got) = add_small(a, b) {
                    fast += 1;
                    assert_eq!(Some(got.serialize()), want.map(|w| w.serialize()), "{a} + {b}");
                }
                let kept = a.scale().max(b.scale()).min(crate::MAX_SCALE);
                let exact = want.filter(|w| w.scale() >= kept || a.is_zero() || b.is_zero());
                assert_eq!(
                    add(a, b, "x").ok().map(|d| d.serialize()),
                    exact.map(|w| {
                        if a.is_zero() {
                            b
                        } else if b.is_zero() {
                            a
                        } else {
                            w
                        }
                    }
                    .serialize()),
                    "{a} + {b}"
                );
            }
        }
        assert!(fast > 60_000, "most sums take the integer path: {fast}");
        // A running sum is the fold of `add`, digit for digit, scale for scale, sign for
        // sign, error for error, over runs of these figures in many orders, zeros and
        // figures that cancel among them.
        let mut folds = 0;
        for start in 0..4_000 {
            let run: Vec<Decimal> = (0..12)
                .map(|k| match (start * 31 + k * 17) % 23 {
                    0 => Decimal::ZERO,
                    1 => Decimal::new(0, 7),
                    2 => -values[(start + k) % values.len()],
                    _ => values[(start * 13 + k * 7) % values.len()],
                })
                .collect();
            let (mut running, mut folded) = (Sum::new(), Decimal::ZERO);
            // And a sum of rows' billed costs, added from the mantissas the rows keep.
            let mut by_rows = Sum::new();
            let mut row = crate::window::row_of(&crate::Charge::blank(), &mut Default::default());
            for &x in &run {
                row.set_billed_cost(x);
                let of_row = row.add_cost_to(&mut by_rows, "x");
                match (add(folded, x, "x"), running.add(x, "x")) {
                    (Ok(f), Ok(())) => folded = f,
                    (Err(_), Err(_)) => {
                        assert!(of_row.is_err(), "{run:?}");
                        break;
                    }
                    (want, got) => panic!("{run:?}: {want:?} against {got:?}"),
                }
                assert_eq!(running.value().serialize(), folded.serialize(), "{run:?}");
                assert_eq!(by_rows.value().serialize(), folded.serialize(), "{run:?}");
                folds += 1;
            }
            let fold = run.iter().try_fold(Decimal::ZERO, |acc, &x| add(acc, x, "x"));
            let got = sum(run.iter().copied(), "x");
            assert_eq!(got.ok().map(|d| d.serialize()), fold.ok().map(|d| d.serialize()));
        }
        assert!(folds > 15_000, "{folds}");
    }

    #[test]
    fn a_sum_that_would_lose_a_digit_is_an_error_not_a_rounded_total() {
        let big = dec!(99999999999999999999999999);
        let err = add(big, dec!(3.673), "the total").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the total: the exact result does not fit in 28 significant digits"
        );
        assert_eq!(add(dec!(1.10), dec!(2.205), "t").unwrap().to_string(), "3.305");
        assert!(add(Decimal::MAX, Decimal::ONE, "t").is_err(), "overflow is an error, not a panic");
        let many = std::iter::repeat_n(dec!(999999999999999.99), 1000);
        assert_eq!(sum(many, "t").unwrap(), dec!(999999999999999990.00));
        let more = std::iter::repeat_n(dec!(999999999999999.999999999999), 1000);
        assert!(sum(more, "t").is_err(), "28 digits are not enough at 12 decimals");
        assert_eq!(sub(dec!(5), dec!(7.5), "t").unwrap(), dec!(-2.5));
        // A zero of twelve decimals (a charge and its reversal) added to a figure of fewer.
        let reversed = add(dec!(1.006000000000), dec!(-1.006000000000), "t").unwrap();
        assert_eq!(add(reversed, dec!(32.7726), "t").unwrap(), dec!(32.7726));
        assert_eq!(add(reversed, Decimal::ZERO, "t").unwrap(), Decimal::ZERO);
        assert_eq!(add(dec!(32.7726), reversed, "t").unwrap(), dec!(32.7726));
        // Shares of 28 digits add up, rounded past their 12th decimal as divisions are.
        let third = div(dec!(100), dec!(3), "t").unwrap();
        let whole = sum([third, third, third, dec!(1000000.01)], "t").unwrap();
        assert_eq!(whole.round_dp(12), dec!(1000100.010000000000));
    }

    #[test]
    fn products_and_quotients_never_panic() {
        assert!(mul(Decimal::MAX, dec!(2), "t").is_err());
        assert!(div(dec!(1), Decimal::ZERO, "t").is_err());
        assert_eq!(mul(dec!(0.5), dec!(3), "t").unwrap(), dec!(1.5));
        assert_eq!(div(dec!(1), dec!(4), "t").unwrap(), dec!(0.25));
    }
}

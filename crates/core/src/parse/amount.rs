//! Amounts: money and quantity cells into exact decimals.

use rust_decimal::Decimal;

use crate::charge::MAX_SCALE;

/// The largest magnitude an amount may have: 10^15 (a quadrillion in any currency), with at
/// most [`MAX_SCALE`] decimals.
///
/// Why this bound: a bill's figures then have at most 27 significant digits, so one figure,
/// and the product of a unit price and a quantity, always fit `Decimal`'s 28 digits, and the
/// ledger's `DECIMAL(38, 12)` holds any sum of up to 10^11 of them exactly. `Decimal` itself
/// holds a sum exactly as long as it has at most 28 significant digits (at the 2 decimals
/// bills print, totals up to 7.9 × 10^26; at 12 decimals, 7.9 × 10^16); every sum the tool
/// makes is checked ([`crate::money`]), and one that would not fit is an error naming what was
/// being added, never a rounded total.
pub const MAX_AMOUNT: Decimal = Decimal::from_parts(2_764_472_320, 232_830, 0, false, 0);

/// The character a bill writes between the whole and the fractional part of a number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DecimalSeparator {
    /// `1,234.56`: a point; a comma may separate groups of three digits.
    #[default]
    #[serde(rename = ".")]
    Point,
    /// `1.234,56`: a comma; a point (or a space) may separate groups of three digits.
    #[serde(rename = ",")]
    Comma,
}

/// How a bill writes numbers: its decimal separator, and whether digits may be grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumberFormat {
    /// The decimal separator.
    pub decimal: DecimalSeparator,
    /// Whether groups of three digits may be separated (`1,234.56`). Machine exports (FOCUS,
    /// AWS CUR) never group digits: for them `3,673` is refused, not read as 3673.
    pub grouping: bool,
}

impl Default for NumberFormat {
    fn default() -> Self {
        NumberFormat { decimal: DecimalSeparator::Point, grouping: true }
    }
}

impl From<DecimalSeparator> for NumberFormat {
    fn from(decimal: DecimalSeparator) -> Self {
        NumberFormat { decimal, grouping: true }
    }
}

/// Parses a money or quantity cell written with a decimal point.
///
/// Accepts `1234.56`, `¥1,234.56`, `￥ 12.30 元`, `$5`, `-12.30`, `(12.30)` (negative),
/// `+3`, `1.5E-4`. Returns `Ok(None)` for a cell meaning "no value": empty, `-`, `--`,
/// `NULL`, `null`, `N/A`.
///
/// A comma is a thousands separator only between groups of exactly three digits before the
/// point (`1,234.56`, `12,345`): `12,50` or `1.234,56` is refused rather than guessed (read
/// such bills with a profile whose `decimal_separator` is `","`). Amounts of [`MAX_AMOUNT`]
/// or more, and amounts with more than [`MAX_SCALE`] decimals, are refused.
///
/// ```
/// use gpuaudit_core::parse_amount;
/// use rust_decimal::Decimal;
/// assert_eq!(parse_amount("¥1,234.56"), Ok(Some(Decimal::new(123456, 2))));
/// assert_eq!(parse_amount("(1.20)"), Ok(Some(Decimal::new(-120, 2))));
/// assert_eq!(parse_amount("NULL"), Ok(None));
/// assert!(parse_amount("12,3x").is_err());
/// assert!(parse_amount("12,50").unwrap_err().contains("a decimal comma?"));
/// ```
pub fn parse_amount(text: &str) -> Result<Option<Decimal>, String> {
    parse_amount_with(text, NumberFormat::default())
}

/// [`parse_amount`] for bills that write numbers in `format`.
///
/// ```
/// use gpuaudit_core::{DecimalSeparator, NumberFormat, parse_amount_with};
/// use rust_decimal::Decimal;
/// let comma = NumberFormat::from(DecimalSeparator::Comma);
/// assert_eq!(parse_amount_with("12,50", comma), Ok(Some(Decimal::new(1250, 2))));
/// assert_eq!(parse_amount_with("1.234,56", comma), Ok(Some(Decimal::new(123456, 2))));
/// assert!(parse_amount_with("1.5", comma).is_err());
/// ```
pub fn parse_amount_with(text: &str, format: NumberFormat) -> Result<Option<Decimal>, String> {
    if format.decimal == DecimalSeparator::Point
        && let Some(value) = plain_amount(text)
    {
        return Ok(Some(value));
    }
    match any_amount(text, format)? {
        Some(read) if read.rounded => {
            Err(format!("{text:?} has more than {MAX_SCALE} decimal places"))
        }
        read => Ok(read.map(|r| r.value)),
    }
}

/// An amount as [`read_amount`] reads it: its value with at most [`MAX_SCALE`] decimals, and
/// what was rounded off the bill's figure to get it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadAmount {
    /// The value the ledger keeps: the bill's figure, rounded half to even at [`MAX_SCALE`]
    /// decimals when it had more.
    pub value: Decimal,
    /// Whether the figure had non-zero digits beyond [`MAX_SCALE`] decimals.
    pub rounded: bool,
    /// The bill's figure minus `value` (below half a unit of the 12th decimal), exact to the
    /// 28th decimal.
    pub rounded_off: Decimal,
}

/// [`parse_amount_with`] for machine exports whose figures carry more decimals than the ledger
/// keeps (OCI's `cost/myCost` has 18, Azure's floats up to 17 significant digits, and both
/// may use exponent notation, `6.266090E-12`): the figure is read exactly, then rounded half
/// to even at [`MAX_SCALE`] decimals, and the result says what was rounded off so that an
/// import can say so. Everything [`parse_amount_with`] refuses but the decimals is refused
/// here too; so is an exponent beyond ±40.
///
/// ```
/// use gpuaudit_core::{NumberFormat, read_amount};
/// use rust_decimal::Decimal;
/// let r = read_amount("6.266090E-12", NumberFormat::default()).unwrap().unwrap();
/// assert_eq!(r.value, Decimal::new(6, 12));
/// assert!(r.rounded);
/// assert_eq!(r.rounded_off, Decimal::new(26609, 17));
/// let r = read_amount("0.0122642774999509", NumberFormat::default()).unwrap().unwrap();
/// assert_eq!(r.value, Decimal::new(12264277500, 12));
/// ```
pub fn read_amount(text: &str, format: NumberFormat) -> Result<Option<ReadAmount>, String> {
    if format.decimal == DecimalSeparator::Point
        && let Some(value) = plain_amount(text)
    {
        return Ok(Some(ReadAmount { value, rounded: false, rounded_off: Decimal::ZERO }));
    }
    any_amount(text, format)
}

/// Whether a character is a currency sign or word an amount may carry.
fn is_currency(c: char) -> bool {
    matches!(c, '¥' | '￥' | '元' | '$' | '€' | '£')
}

/// Whether a character is a space that may separate groups of digits.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\u{a0}' | '\u{202f}' | '\u{3000}')
}

/// [`read_amount`] for every form it accepts.
fn any_amount(text: &str, format: NumberFormat) -> Result<Option<ReadAmount>, String> {
    let separator = format.decimal;
    let t = text.trim();
    if matches!(t, "" | "-" | "--" | "—" | "NULL" | "null" | "Null" | "N/A" | "n/a") {
        return Ok(None);
    }
    let not_amount = || format!("{text:?} is not an amount");
    // A text refused with a decimal point that reads with a decimal comma says so.
    let comma_hint = || {
        if separator == DecimalSeparator::Point
            && any_amount(text, DecimalSeparator::Comma.into()).is_ok()
        {
            format!("{text:?} is not an amount (a decimal comma?)")
        } else {
            not_amount()
        }
    };
    let (negative_parens, sign, number) = strip_decorations(t);
    let Some((clean, grouped)) = plain_number(sign, number, format) else {
        return Err(comma_hint());
    };
    if grouped && clean.contains(['e', 'E']) {
        return Err(not_amount());
    }
    let figure = Figure::of(&clean).ok_or_else(|| match Figure::exponent_of(&clean) {
        Some(e) if e.unsigned_abs() > MAX_EXPONENT => {
            format!("{text:?} is not an amount (its exponent is beyond ±{MAX_EXPONENT})")
        }
        _ => not_amount(),
    })?;
    if negative_parens && figure.negative {
        return Err(not_amount());
    }
    let negative = figure.negative != negative_parens;
    let too_large = || format!("{text:?} is too large an amount (the limit is 10^15)");
    let whole = figure.whole.trim_start_matches('0');
    if whole.len() > 15 {
        return Err(too_large());
    }
    let (kept, beyond) = figure.fraction.split_at(figure.fraction.len().min(MAX_SCALE as usize));
    let rounded = beyond.bytes().any(|b| b != b'0');
    // The kept digits as an integer at the kept scale, plus one in the last place when what
    // is beyond is more than half of it, or exactly half and the last kept digit is odd.
    let mut mantissa: i128 = 0;
    for b in whole.bytes().chain(kept.bytes()) {
        mantissa = mantissa * 10 + i128::from(b - b'0');
    }
    let scale = kept.len() as u32;
    let up = rounded && {
        let (first, rest) = (beyond.as_bytes()[0], &beyond[1..]);
        first > b'5' || (first == b'5' && (rest.bytes().any(|b| b != b'0') || mantissa % 2 == 1))
    };
    let magnitude = mantissa + i128::from(up);
    let value =
        Decimal::try_from_i128_with_scale(if negative { -magnitude } else { magnitude }, scale)
            .map_err(|_| too_large())?;
    // No more places than the figure needs when it printed more than the ledger keeps.
    let value = if figure.fraction.len() > MAX_SCALE as usize { value.normalize() } else { value };
    if value.abs() >= MAX_AMOUNT {
        return Err(too_large());
    }
    let rounded_off = if rounded {
        // What is beyond, as a fraction of the last kept place (at most 16 more digits, so
        // that the scale stays within 28), less one place if the value was rounded up.
        let shown = &beyond[..beyond.len().min(16)];
        let mut tail: i128 = 0;
        for b in shown.bytes() {
            tail = tail * 10 + i128::from(b - b'0');
        }
        let place = 10i128.pow(shown.len() as u32);
        let off = if up { tail - place } else { tail };
        let off = Decimal::try_from_i128_with_scale(off, MAX_SCALE + shown.len() as u32)
            .map_err(|_| not_amount())?;
        if negative { -off } else { off }
    } else {
        Decimal::ZERO
    };
    Ok(Some(ReadAmount { value, rounded, rounded_off }))
}

/// The largest exponent (either way) an amount in exponent notation may have: a bill's
/// figures are at most 10^15 and the ledger keeps 12 decimals, so anything further says
/// nothing a ledger can hold (and `1E-999999999` must not become a billion digits).
const MAX_EXPONENT: u32 = 40;

/// A number's decimal digits, its exponent applied: `-1.5E-3` is negative, whole `0`,
/// fraction `0015`.
struct Figure {
    negative: bool,
    whole: String,
    fraction: String,
}

impl Figure {
    /// `clean` (what [`plain_number`] gives: a sign, digits, a point, an exponent) as digits;
    /// `None` when it is not a number or has an exponent beyond [`MAX_EXPONENT`].
    fn of(clean: &str) -> Option<Figure> {
        let (negative, unsigned) = match clean.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, clean),
        };
        let (digits, exponent) = match unsigned.split_once(['e', 'E']) {
            Some((d, _)) => (d, Figure::exponent_of(clean)?),
            None => (unsigned, 0),
        };
        if exponent.unsigned_abs() > MAX_EXPONENT {
            return None;
        }
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        if whole.is_empty() && fraction.is_empty()
            || !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let mut all =
            String::with_capacity(whole.len() + fraction.len() + 2 * MAX_EXPONENT as usize);
        all.push_str(whole);
        all.push_str(fraction);
        // The point after `point` digits of `all`, moved by the exponent; zeros added where it
        // falls outside the digits.
        let mut point = whole.len() as i64 + i64::from(exponent);
        if point < 0 {
            all.insert_str(0, &"0".repeat(point.unsigned_abs() as usize));
            point = 0;
        }
        let point = point as usize;
        if point > all.len() {
            all.push_str(&"0".repeat(point - all.len()));
        }
        let fraction = all.split_off(point);
        Some(Figure { negative, whole: all, fraction })
    }

    /// The exponent written in `clean`, if it has one that is a number.
    fn exponent_of(clean: &str) -> Option<i32> {
        let (_, e) = clean.split_once(['e', 'E'])?;
        let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
        if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        e.parse().ok()
    }
}

/// The parts of a trimmed amount: whether it is in parentheses (negative), its sign (`-` or
/// nothing) and the number, without the currency signs and the spaces next to them.
fn strip_decorations(t: &str) -> (bool, &'static str, &str) {
    let (negative_parens, inner) = match t.strip_prefix('(').and_then(|s| s.strip_suffix(')')) {
        Some(inner) => (true, inner),
        None => (false, t),
    };
    let inner = inner.trim_matches(|c| is_currency(c) || is_space(c));
    let (sign, number) = match inner.as_bytes().first() {
        Some(b'-') => ("-", &inner[1..]),
        Some(b'+') => ("", &inner[1..]),
        _ => ("", inner),
    };
    (negative_parens, sign, number.trim_start_matches(|c| is_currency(c) || is_space(c)))
}

/// `sign` and `number` as Rust's decimal parser reads them (digit groups removed, a decimal
/// point), and whether the number had digit groups; `None` when `number` is not a number in
/// `format`.
fn plain_number(sign: &str, number: &str, format: NumberFormat) -> Option<(String, bool)> {
    let (point, group) = match format.decimal {
        DecimalSeparator::Point => ('.', ','),
        DecimalSeparator::Comma => (',', '.'),
    };
    let (whole, fraction) = match number.split_once(point) {
        Some((w, f)) => (w, Some(f)),
        None => (number, None),
    };
    let grouped = whole.contains(|c| c == group || is_space(c));
    let mut clean = String::with_capacity(number.len() + 1);
    clean.push_str(sign);
    if grouped {
        if !format.grouping || !three_digit_groups(whole, group) {
            return None;
        }
        clean.extend(whole.chars().filter(char::is_ascii_digit));
    } else {
        clean.push_str(whole);
    }
    if let Some(fraction) = fraction {
        if fraction.contains(|c| c == group || c == point || is_space(c)) {
            return None;
        }
        clean.push('.');
        clean.push_str(fraction);
    }
    let unsigned = clean.strip_prefix('-').unwrap_or(&clean);
    let well_formed = unsigned.bytes().next().is_some_and(|b| b.is_ascii_digit() || b == b'.')
        && unsigned
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'));
    well_formed.then_some((clean, grouped))
}

/// Whether `whole` is digits in groups of three after the first (one to three digits), all
/// separated by the same one character: `group` or a space.
fn three_digit_groups(whole: &str, group: char) -> bool {
    let mut separator = None;
    let mut groups = whole.split(|c: char| {
        let is_sep = c == group || is_space(c);
        if is_sep && separator.is_none() {
            separator = Some(c);
        }
        is_sep
    });
    let first_ok = groups.next().is_some_and(|g| (1..=3).contains(&g.len()) && digits(g));
    let rest_ok = groups.all(|g| g.len() == 3 && digits(g));
    let same =
        separator.is_none_or(|s| whole.chars().all(|c| c == s || !(c == group || is_space(c))));
    first_ok && rest_ok && same
}

fn digits(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

/// The common case of [`parse_amount`] without allocating: `-?digits(.digits)?`, at most 18
/// digits and [`MAX_SCALE`] decimals; `None` sends anything else to the general parser. The
/// value is the one `str::parse::<Decimal>` gives, scale included (`1.50` keeps two places).
fn plain_amount(text: &str) -> Option<Decimal> {
    let (negative, body) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        b => (false, b),
    };
    // Digits on both sides of a point.
    if !body.first().is_some_and(u8::is_ascii_digit) || !body.last().is_some_and(u8::is_ascii_digit)
    {
        return None;
    }
    let (mut mantissa, mut digits, mut scale, mut point) = (0i64, 0u32, 0u32, false);
    for &b in body {
        match b {
            b'0'..=b'9' if digits < 18 => {
                mantissa = mantissa * 10 + i64::from(b - b'0');
                digits += 1;
                scale += u32::from(point);
            }
            b'.' if !point => point = true,
            _ => return None,
        }
    }
    // "-0" is left to the parser, which keeps the sign of zero; so are amounts at the bound.
    if scale > MAX_SCALE || (negative && mantissa == 0) || digits - scale > 15 {
        return None;
    }
    Some(Decimal::new(if negative { -mantissa } else { mantissa }, scale))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn amounts_keep_every_digit_and_their_sign() {
        let cases = [
            ("1234.56", dec!(1234.56)),
            ("¥1,234.56", dec!(1234.56)),
            ("￥ 12.30 元", dec!(12.30)),
            ("$5", dec!(5)),
            ("-12.30", dec!(-12.30)),
            ("(12.30)", dec!(-12.30)),
            ("+3", dec!(3)),
            ("0.0004", dec!(0.0004)),
            ("1.5E-4", dec!(0.00015)),
            (" 7 ", dec!(7)),
            ("0.123456789012", dec!(0.123456789012)),
        ];
        for (text, want) in cases {
            let got = parse_amount(text).unwrap().unwrap();
            assert_eq!(got, want, "{text}");
            assert_eq!(got.scale(), want.scale(), "{text} kept its printed digits");
        }
    }

    #[test]
    fn figures_past_twelve_decimals_round_half_to_even_and_say_what_they_lost() {
        let read = |t: &str| read_amount(t, NumberFormat::default()).unwrap().unwrap();
        // (text, value kept, rounded off)
        let cases = [
            ("6.266090E-12", dec!(0.000000000006), dec!(0.00000000000026609)),
            ("2.323760000E-9", dec!(0.000000002324), dec!(-0.00000000000024)),
            ("0.0000000000005", dec!(0), dec!(0.0000000000005)),
            ("0.0000000000015", dec!(0.000000000002), dec!(-0.0000000000005)),
            ("-0.0000000000025", dec!(-0.000000000002), dec!(-0.0000000000005)),
            ("0.00000000000050000001", dec!(0.000000000001), dec!(-0.00000000000049999999)),
            ("8.5450077867419368", dec!(8.545007786742), dec!(-0.0000000000000632)),
            ("1.5E-4", dec!(0.00015), dec!(0)),
            ("1.2E+3", dec!(1200), dec!(0)),
            ("1e-40", dec!(0), dec!(0)),
        ];
        for (text, value, off) in cases {
            let r = read(text);
            assert_eq!((r.value, r.rounded_off), (value, off), "{text}");
            assert_eq!(r.rounded, text != "1.5E-4" && text != "1.2E+3", "{text}");
            // The kept value plus what was rounded off is the figure (to the 28th decimal).
            if text != "1e-40" {
                assert_eq!(
                    r.value + r.rounded_off,
                    Decimal::from_scientific(text).or_else(|_| text.parse()).unwrap(),
                    "{text}"
                );
            }
        }
        for (text, why) in [
            ("1E+16", "too large"),
            ("1e-999999999", "exponent is beyond ±40"),
            ("1E999999999", "exponent is beyond ±40"),
            ("1e", "not an amount"),
            ("1e+-5", "not an amount"),
            ("1,234E5", "not an amount"),
        ] {
            let err = read_amount(text, NumberFormat::default()).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
        // The plain parser keeps refusing what would need rounding.
        assert!(parse_amount("6.266090E-12").unwrap_err().contains("more than 12 decimal places"));
    }

    #[test]
    fn the_quick_path_gives_the_general_parsers_value_bit_for_bit() {
        let mut next = crate::xorshift(0x2545_f491_4f6c_dd1d);
        let mut quick = 0;
        for _ in 0..20_000 {
            let mut text = String::new();
            if next().is_multiple_of(3) {
                text.push('-');
            }
            for _ in 0..(next() % 22) {
                text.push(char::from(b"0123456789.0000"[(next() % 15) as usize]));
            }
            let general = any_amount(&text, NumberFormat::default());
            match plain_amount(&text) {
                Some(value) => {
                    quick += 1;
                    let want = general.unwrap_or_else(|e| panic!("{text:?}: {e}")).unwrap();
                    assert_eq!(value.serialize(), want.value.serialize(), "{text:?}");
                }
                None => match general {
                    Ok(Some(read)) if read.rounded => assert!(parse_amount(&text).is_err()),
                    other => assert_eq!(parse_amount(&text), other.map(|o| o.map(|r| r.value))),
                },
            }
        }
        assert!(quick > 5_000, "the quick path was taken {quick} times");
        assert_eq!(parse_amount("-0").unwrap().unwrap().serialize(), dec!(-0).serialize());
    }

    #[test]
    fn no_value_cells_are_none() {
        for text in ["", "-", "--", "NULL", "null", "N/A", "  "] {
            assert_eq!(parse_amount(text), Ok(None), "{text:?}");
        }
    }

    #[test]
    fn malformed_amounts_say_what_they_saw() {
        for text in ["12,3x", "abc", "1.2.3", "(-1)", "¥", "--5", "1e", "0x10"] {
            let err = parse_amount(text).unwrap_err();
            assert!(err.contains(&format!("{text:?}")), "{err}");
        }
        assert!(parse_amount("0.1234567890123").unwrap_err().contains("decimal places"));
        assert_eq!(parse_amount("0.1234567890120"), Ok(Some(dec!(0.123456789012))));
        let largest = "999999999999999.999999999999";
        assert_eq!(parse_amount(largest), Ok(Some(dec!(999999999999999.999999999999))));
        assert_eq!(MAX_AMOUNT, dec!(1_000_000_000_000_000));
        for too_large in ["1000000000000000", "-1000000000000000.00", "99999999999999999999999999"]
        {
            let err = parse_amount(too_large).unwrap_err();
            assert!(err.contains("too large") && err.contains("10^15"), "{err}");
        }
    }

    #[test]
    fn decimal_commas_are_refused_not_read_as_thousands_separators() {
        for text in ["12,50", "0,99", "12,5", "1.234,56", "193,20", "1,23", "¥ 1.234,5"] {
            let err = parse_amount(text).unwrap_err();
            assert_eq!(err, format!("{text:?} is not an amount (a decimal comma?)"));
        }
        for text in ["1,2,3.5", "3,673.1,2", "12,3x", "1,2,3"] {
            assert_eq!(parse_amount(text).unwrap_err(), format!("{text:?} is not an amount"));
        }
        for (text, want) in [
            ("1,234.56", dec!(1234.56)),
            ("12,345", dec!(12345)),
            ("3,673", dec!(3673)),
            ("1,234,567.5", dec!(1234567.5)),
            ("-¥1,234", dec!(-1234)),
            ("1 234.50", dec!(1234.50)),
        ] {
            assert_eq!(parse_amount(text), Ok(Some(want)), "{text}");
        }
        for text in ["1,234 567", "1,,234", ",123", "1234,567", "1 2 3"] {
            assert!(parse_amount(text).is_err(), "{text}");
        }
    }

    #[test]
    fn machine_exports_never_group_digits() {
        let machine = NumberFormat { decimal: DecimalSeparator::Point, grouping: false };
        let err = parse_amount_with("3,673", machine).unwrap_err();
        assert_eq!(err, "\"3,673\" is not an amount (a decimal comma?)");
        assert!(parse_amount_with("1,234.56", machine).is_err());
        assert_eq!(parse_amount_with("3.673", machine), Ok(Some(dec!(3.673))));
        assert_eq!(parse_amount("3,673"), Ok(Some(dec!(3673))), "a bill for people may group");
    }

    #[test]
    fn a_decimal_comma_profile_reads_commas_as_the_point() {
        let comma = NumberFormat::from(DecimalSeparator::Comma);
        for (text, want) in [
            ("12,50", dec!(12.50)),
            ("0,99", dec!(0.99)),
            ("12,5", dec!(12.5)),
            ("1.234,56", dec!(1234.56)),
            ("1 234,56", dec!(1234.56)),
            ("-3,673", dec!(-3.673)),
            ("€ 7", dec!(7)),
            ("1.234.567", dec!(1234567)),
        ] {
            let got = parse_amount_with(text, comma).unwrap().unwrap();
            assert_eq!((got, got.scale()), (want, want.scale()), "{text}");
        }
        for text in ["1.5", "1,2,3", "1.23,4.5", "12.50"] {
            assert!(parse_amount_with(text, comma).is_err(), "{text}");
        }
    }
}

//! Parsing of the cell values bills are made of: amounts and times.
//!
//! Amounts never pass through `f64`: the text is cleaned (currency signs, thousands
//! separators, accounting parentheses) and parsed straight into [`Decimal`], keeping every
//! digit the bill printed. Times without an offset are local to the platform's zone.
//!
//! The functions return `Err(String)` with the user-facing reason; the caller adds the
//! location.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;
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

/// [`parse_amount_with`] for every form it accepts.
fn any_amount(text: &str, format: NumberFormat) -> Result<Option<Decimal>, String> {
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
    let value = if clean.contains(['e', 'E']) {
        if grouped {
            return Err(not_amount());
        }
        Decimal::from_scientific(&clean)
    } else {
        clean.parse::<Decimal>()
    }
    .map_err(|_| not_amount())?;
    let value = if negative_parens {
        if value.is_sign_negative() {
            return Err(not_amount());
        }
        -value
    } else {
        value
    };
    if value.abs() >= MAX_AMOUNT {
        return Err(format!("{text:?} is too large an amount (the limit is 10^15)"));
    }
    if value.scale() > MAX_SCALE && value.normalize().scale() > MAX_SCALE {
        return Err(format!("{text:?} has more than {MAX_SCALE} decimal places"));
    }
    Ok(Some(if value.scale() > MAX_SCALE { value.normalize() } else { value }))
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

/// Parses a timestamp. Naive times are local to `tz`; a trailing `Z` or `+08:00` is honoured.
///
/// Accepts `YYYY-MM-DD HH:MM:SS`, `YYYY-MM-DD HH:MM`, `YYYY/MM/DD …`, `YYYY-MM-DDTHH:MM:SSZ`,
/// fractional seconds (kept to the microsecond), `YYYY-MM-DD` and `YYYYMMDD` (midnight). Months and days may have one
/// digit (`2024/5/1 9:00`).
///
/// ```
/// use gpuaudit_core::parse_time;
/// let t = parse_time("2024-05-01 08:00:00", chrono_tz::Asia::Shanghai).unwrap();
/// assert_eq!(t.to_rfc3339(), "2024-05-01T00:00:00+00:00");
/// assert!(parse_time("2023-02-01T30:00:00Z", chrono_tz::UTC).is_err());
/// ```
pub fn parse_time(text: &str, tz: Tz) -> Result<DateTime<Utc>, String> {
    let t = text.trim();
    let bad = || format!("{text:?} is not a time (expected YYYY-MM-DD HH:MM:SS)");
    let (naive, offset_seconds) = parse_naive(t).ok_or_else(bad)?;
    match offset_seconds {
        Some(secs) => {
            let offset = chrono::FixedOffset::east_opt(secs).ok_or_else(bad)?;
            offset
                .from_local_datetime(&naive)
                .single()
                .map(|d| d.with_timezone(&Utc))
                .ok_or_else(bad)
        }
        None => tz
            .from_local_datetime(&naive)
            .earliest()
            .map(|d| d.with_timezone(&Utc))
            .ok_or_else(|| format!("{text:?} does not exist in time zone {tz}")),
    }
}

/// Splits `t` into a naive date-time and an optional UTC offset in seconds.
fn parse_naive(t: &str) -> Option<(NaiveDateTime, Option<i32>)> {
    let b = t.as_bytes();
    // YYYYMMDD
    if b.len() == 8 && b.iter().all(u8::is_ascii_digit) {
        let date = NaiveDate::from_ymd_opt(num(&b[..4])? as i32, num(&b[4..6])?, num(&b[6..])?)?;
        return Some((date.and_time(NaiveTime::MIN), None));
    }
    let mut p = Cursor { b, i: 0 };
    let year = p.digits(4, 4)?;
    let sep = p.one_of(b"-/")?;
    let month = p.digits(1, 2)?;
    p.expect(sep)?;
    let day = p.digits(1, 2)?;
    let date = NaiveDate::from_ymd_opt(year as i32, month, day)?;
    if p.done() {
        return Some((date.and_time(NaiveTime::MIN), None));
    }
    p.one_of(b" T")?;
    while p.peek() == Some(b' ') {
        p.i += 1;
    }
    let hour = p.digits(1, 2)?;
    p.expect(b':')?;
    let minute = p.digits(2, 2)?;
    let mut second = 0;
    let mut nanos = 0;
    if p.peek() == Some(b':') {
        p.i += 1;
        second = p.digits(2, 2)?;
        if p.peek() == Some(b'.') {
            p.i += 1;
            let start = p.i;
            let frac = p.digits(1, 9)?;
            let width = (p.i - start) as u32;
            // The ledger keeps microseconds: finer digits are dropped.
            nanos = frac * 10u32.pow(9 - width) / 1000 * 1000;
        }
    }
    let time = NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)?;
    let offset = match p.peek() {
        None => None,
        Some(b'Z') | Some(b'z') => {
            p.i += 1;
            Some(0)
        }
        Some(b' ') if &b[p.i..] == b" UTC" => {
            p.i = b.len();
            Some(0)
        }
        Some(sign @ (b'+' | b'-')) => {
            p.i += 1;
            let h = p.digits(2, 2)? as i32;
            if p.peek() == Some(b':') {
                p.i += 1;
            }
            let m = p.digits(2, 2)? as i32;
            let secs = h * 3600 + m * 60;
            Some(if sign == b'-' { -secs } else { secs })
        }
        Some(_) => return None,
    };
    p.done().then_some((date.and_time(time), offset))
}

fn num(b: &[u8]) -> Option<u32> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    fn done(&self) -> bool {
        self.i == self.b.len()
    }
    fn expect(&mut self, c: u8) -> Option<()> {
        (self.peek() == Some(c)).then(|| self.i += 1)
    }
    fn one_of(&mut self, set: &[u8]) -> Option<u8> {
        let c = self.peek().filter(|c| set.contains(c))?;
        self.i += 1;
        Some(c)
    }
    fn digits(&mut self, min: usize, max: usize) -> Option<u32> {
        let start = self.i;
        while self.i - start < max && self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        if self.i - start < min {
            return None;
        }
        num(&self.b[start..self.i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono_tz::Asia::Shanghai;
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
                    assert_eq!(value.serialize(), want.serialize(), "{text:?}");
                }
                None => assert_eq!(parse_amount(&text), general, "{text:?}"),
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

    #[test]
    fn naive_times_are_local_to_the_platform() {
        let utc = |s: &str| parse_time(s, chrono_tz::UTC).unwrap();
        let want = utc("2024-05-01 00:00:00");
        for text in [
            "2024-05-01 08:00:00",
            "2024/05/01 08:00",
            "2024/5/1 8:00",
            "2024-05-01T08:00:00",
            "2024-05-01T00:00:00Z",
            "2024-05-01T08:00:00+08:00",
            "2024-05-01 00:00:00 UTC",
        ] {
            assert_eq!(parse_time(text, Shanghai).unwrap(), want, "{text}");
        }
        assert_eq!(parse_time("20240501", Shanghai).unwrap(), utc("2024-04-30 16:00:00"));
        assert_eq!(parse_time("2024-05-01", chrono_tz::UTC).unwrap(), want);
        assert_eq!(
            parse_time("2024-05-01 00:00:00.250", chrono_tz::UTC).unwrap().timestamp_millis(),
            want.timestamp_millis() + 250
        );
    }

    #[test]
    fn impossible_times_are_rejected() {
        for text in [
            "2023-02-01T30:00:00Z",
            "2024-02-30 00:00:00",
            "2024-05-01 12:60:00",
            "yesterday",
            "2024-05-01 08:00:00 extra",
            "",
        ] {
            assert!(parse_time(text, Shanghai).is_err(), "{text}");
        }
    }
}

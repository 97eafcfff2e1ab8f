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

/// Parses a money or quantity cell.
///
/// Accepts `1234.56`, `¥1,234.56`, `￥ 12.30 元`, `$5`, `-12.30`, `(12.30)` (negative),
/// `+3`, `1.5E-4`. Returns `Ok(None)` for a cell meaning "no value": empty, `-`, `--`,
/// `NULL`, `null`, `N/A`.
///
/// ```
/// use gpuaudit_core::parse_amount;
/// use rust_decimal::Decimal;
/// assert_eq!(parse_amount("¥1,234.56"), Ok(Some(Decimal::new(123456, 2))));
/// assert_eq!(parse_amount("(1.20)"), Ok(Some(Decimal::new(-120, 2))));
/// assert_eq!(parse_amount("NULL"), Ok(None));
/// assert!(parse_amount("12,3x").is_err());
/// ```
pub fn parse_amount(text: &str) -> Result<Option<Decimal>, String> {
    match plain_amount(text) {
        Some(value) => Ok(Some(value)),
        None => any_amount(text),
    }
}

/// [`parse_amount`] for every form it accepts.
fn any_amount(text: &str) -> Result<Option<Decimal>, String> {
    let t = text.trim();
    if matches!(t, "" | "-" | "--" | "—" | "NULL" | "null" | "Null" | "N/A" | "n/a") {
        return Ok(None);
    }
    let not_amount = || format!("{text:?} is not an amount");
    let (negative_parens, inner) = match t.strip_prefix('(').and_then(|s| s.strip_suffix(')')) {
        Some(inner) => (true, inner),
        None => (false, t),
    };
    let mut clean = String::with_capacity(inner.len());
    for c in inner.chars() {
        match c {
            '¥' | '￥' | '元' | '$' | ',' | ' ' | '\u{a0}' | '\u{3000}' => {}
            _ => clean.push(c),
        }
    }
    if clean.is_empty() {
        return Err(not_amount());
    }
    let unsigned = clean.strip_prefix('+').unwrap_or(&clean);
    let body = unsigned.strip_prefix('-').unwrap_or(unsigned);
    let well_formed = body.bytes().next().is_some_and(|b| b.is_ascii_digit() || b == b'.')
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'));
    if !well_formed {
        return Err(not_amount());
    }
    let value = if unsigned.contains(['e', 'E']) {
        Decimal::from_scientific(unsigned)
    } else {
        unsigned.parse::<Decimal>()
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
    // The ledger stores DECIMAL(38, 12): 26 digits before the point at most.
    if value.abs() >= Decimal::from_i128_with_scale(10i128.pow(26), 0) {
        return Err(format!("{text:?} is too large an amount"));
    }
    if value.scale() > MAX_SCALE && value.normalize().scale() > MAX_SCALE {
        return Err(format!("{text:?} has more than {MAX_SCALE} decimal places"));
    }
    Ok(Some(if value.scale() > MAX_SCALE { value.normalize() } else { value }))
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
    // "-0" is left to the parser, which keeps the sign of zero.
    if scale > MAX_SCALE || (negative && mantissa == 0) {
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
            let general = any_amount(&text);
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
        let largest = "99999999999999999999999999.999999999999";
        assert!(parse_amount(largest).is_err(), "more than 28 digits");
        assert!(parse_amount("99999999999999999999999999").is_ok(), "26 digits fit");
        assert!(parse_amount("100000000000000000000000000").unwrap_err().contains("too large"));
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

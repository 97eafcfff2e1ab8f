//! Times: timestamps in the forms bills write them, naive ones local to the platform.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

/// How a profile's bills write a date whose year is not first: month first (`09/21/2023`,
/// Azure's EA exports) or day first (`21.09.2023`). Year-first dates read in every order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DateOrder {
    /// Only year-first dates: a date such as `03/04/2024` is refused, never guessed.
    #[default]
    Ymd,
    /// Month, day, year.
    Mdy,
    /// Day, month, year.
    Dmy,
}

/// Parses a timestamp. Naive times are local to `tz`; a trailing `Z` or `+08:00` is honoured.
///
/// Accepts `YYYY-MM-DD HH:MM:SS`, `YYYY-MM-DD HH:MM`, `YYYY/MM/DD …`, `YYYY-MM-DDTHH:MM:SSZ`,
/// fractional seconds (kept to the microsecond), `YYYY-MM-DD` and `YYYYMMDD` (midnight). Months and days may have one
/// digit (`2024/5/1 9:00`). A date whose year is last is refused: read it with
/// [`parse_time_in`] and the order the bill writes it in.
///
/// ```
/// use gpuaudit_core::parse_time;
/// let t = parse_time("2024-05-01 08:00:00", chrono_tz::Asia::Shanghai).unwrap();
/// assert_eq!(t.to_rfc3339(), "2024-05-01T00:00:00+00:00");
/// assert!(parse_time("2023-02-01T30:00:00Z", chrono_tz::UTC).is_err());
/// assert!(parse_time("03/04/2024", chrono_tz::UTC).unwrap_err().contains("March or April"));
/// ```
pub fn parse_time(text: &str, tz: Tz) -> Result<DateTime<Utc>, String> {
    parse_time_in(text, tz, DateOrder::Ymd)
}

/// [`parse_time`] for bills that write dates in `order`: with [`DateOrder::Mdy`],
/// `9/21/2023`, `09/21/2023 13:05:00` and `9/21/2023 1:05:00 PM` are read too (and
/// year-first dates still are).
///
/// ```
/// use gpuaudit_core::{DateOrder, parse_time_in};
/// let t = parse_time_in("09/21/2023", chrono_tz::UTC, DateOrder::Mdy).unwrap();
/// assert_eq!(t.to_rfc3339(), "2023-09-21T00:00:00+00:00");
/// assert!(parse_time_in("21/09/2023", chrono_tz::UTC, DateOrder::Mdy).is_err());
/// ```
pub fn parse_time_in(text: &str, tz: Tz, order: DateOrder) -> Result<DateTime<Utc>, String> {
    let t = text.trim();
    let bad = || match order {
        DateOrder::Ymd if year_last(t) => format!(
            "{text:?} is a date with its year last (is 03/04/2024 March or April?): the profile must say which with date_order = \"mdy\" or \"dmy\""
        ),
        DateOrder::Ymd => format!("{text:?} is not a time (expected YYYY-MM-DD HH:MM:SS)"),
        DateOrder::Mdy => {
            format!("{text:?} is not a time (expected MM/DD/YYYY or YYYY-MM-DD HH:MM:SS)")
        }
        DateOrder::Dmy => {
            format!("{text:?} is not a time (expected DD/MM/YYYY or YYYY-MM-DD HH:MM:SS)")
        }
    };
    let (naive, offset_seconds) = parse_naive(t, order).ok_or_else(bad)?;
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

/// Whether `t` starts with a date whose year is last: one or two digits, a separator, one or
/// two digits, the same separator, four digits.
fn year_last(t: &str) -> bool {
    let mut p = Cursor { b: t.as_bytes(), i: 0 };
    (|| {
        p.digits(1, 2)?;
        let sep = p.one_of(b"/.-")?;
        p.digits(1, 2)?;
        p.expect(sep)?;
        p.digits(4, 4)
    })()
    .is_some()
}

/// Splits `t` into a naive date-time and an optional UTC offset in seconds.
fn parse_naive(t: &str, order: DateOrder) -> Option<(NaiveDateTime, Option<i32>)> {
    let b = t.as_bytes();
    // YYYYMMDD
    if b.len() == 8 && b.iter().all(u8::is_ascii_digit) {
        let date = NaiveDate::from_ymd_opt(num(&b[..4])? as i32, num(&b[4..6])?, num(&b[6..])?)?;
        return Some((date.and_time(NaiveTime::MIN), None));
    }
    let mut p = Cursor { b, i: 0 };
    let date = if order != DateOrder::Ymd && year_last(t) {
        let first = p.digits(1, 2)?;
        let sep = p.one_of(b"/.-")?;
        let second = p.digits(1, 2)?;
        p.expect(sep)?;
        let year = p.digits(4, 4)? as i32;
        match order {
            DateOrder::Mdy => NaiveDate::from_ymd_opt(year, first, second)?,
            _ => NaiveDate::from_ymd_opt(year, second, first)?,
        }
    } else {
        let year = p.digits(4, 4)?;
        let sep = p.one_of(b"-/")?;
        let month = p.digits(1, 2)?;
        p.expect(sep)?;
        let day = p.digits(1, 2)?;
        NaiveDate::from_ymd_opt(year as i32, month, day)?
    };
    if p.done() {
        return Some((date.and_time(NaiveTime::MIN), None));
    }
    p.one_of(b" T")?;
    while p.peek() == Some(b' ') {
        p.i += 1;
    }
    let mut hour = p.digits(1, 2)?;
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
    // A twelve-hour clock (`1:05:00 PM`), in the bills that write the year last.
    if order != DateOrder::Ymd {
        let rest = &b[p.i..];
        let meridiem = [(&b" AM"[..], 0), (&b" PM"[..], 12)]
            .into_iter()
            .find(|(m, _)| rest.len() >= 3 && rest[..3].eq_ignore_ascii_case(m));
        if let Some((_, add)) = meridiem {
            if !(1..=12).contains(&hour) {
                return None;
            }
            hour = hour % 12 + add;
            p.i += 3;
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

    #[test]
    fn dates_with_the_year_last_need_the_profiles_order() {
        let utc = chrono_tz::UTC;
        let at = |t: &str, o| parse_time_in(t, utc, o).map(|d| d.to_rfc3339());
        assert!(at("03/04/2024", DateOrder::Ymd).unwrap_err().contains("March or April"));
        assert_eq!(at("03/04/2024", DateOrder::Mdy).unwrap(), "2024-03-04T00:00:00+00:00");
        assert_eq!(at("03/04/2024", DateOrder::Dmy).unwrap(), "2024-04-03T00:00:00+00:00");
        assert_eq!(
            at("9/21/2023 1:05:00 PM", DateOrder::Mdy).unwrap(),
            "2023-09-21T13:05:00+00:00"
        );
        assert_eq!(
            at("9/21/2023 12:05:00 AM", DateOrder::Mdy).unwrap(),
            "2023-09-21T00:05:00+00:00"
        );
        assert_eq!(at("2023-09-21", DateOrder::Mdy).unwrap(), "2023-09-21T00:00:00+00:00");
        for bad in ["21/09/2023", "2/30/2024", "9/21/2023 13:05:00 PM", "9/21/23"] {
            assert!(at(bad, DateOrder::Mdy).is_err(), "{bad}");
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

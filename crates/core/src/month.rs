//! Billing months ([`YearMonth`]), cut in a platform's zone.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

/// A billing month (账期), such as `2024-05`.
///
/// Kept as one number, the months since the start of year 0 (`year × 12 + month − 1`): four
/// bytes, in the order of months (a window of ten million charges holds one per charge).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct YearMonth {
    index: i32,
}

impl fmt::Debug for YearMonth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "YearMonth({self})")
    }
}

impl YearMonth {
    /// January 1970, the month of a blank charge.
    pub(crate) const EPOCH: YearMonth = YearMonth { index: 1970 * 12 };

    /// The month of `year` and `month` (1–12), unchecked.
    fn of_parts(year: i32, month: u32) -> Self {
        let index = year.saturating_mul(12).saturating_add(month as i32 - 1);
        YearMonth { index }
    }

    /// The month, if `month` is 1–12 and the year has four digits.
    pub fn new(year: i32, month: u32) -> Option<Self> {
        ((1..=12).contains(&month) && (1000..=9999).contains(&year))
            .then(|| YearMonth::of_parts(year, month))
    }

    /// The year.
    pub fn year(self) -> i32 {
        self.index.div_euclid(12)
    }

    /// The month, 1–12.
    pub fn month(self) -> u32 {
        self.index.rem_euclid(12) as u32 + 1
    }

    /// The month in which `instant` falls in zone `tz`.
    pub fn of(instant: DateTime<Utc>, tz: Tz) -> Self {
        let local = instant.with_timezone(&tz);
        YearMonth::of_parts(local.year(), local.month())
    }

    /// The first instant of the month in zone `tz`, in UTC.
    pub fn start(self, tz: Tz) -> DateTime<Utc> {
        let day = NaiveDate::from_ymd_opt(self.year(), self.month(), 1).unwrap_or_default();
        local_midnight(day, tz)
    }

    /// The month as UTC instants cut in zone `tz`: its first, and the next month's first.
    pub fn span(self, tz: Tz) -> (DateTime<Utc>, DateTime<Utc>) {
        (self.start(tz), self.next().start(tz))
    }

    /// The month before this one.
    pub fn previous(self) -> Self {
        YearMonth { index: self.index.saturating_sub(1) }
    }

    /// The month after this one.
    pub fn next(self) -> Self {
        YearMonth { index: self.index.saturating_add(1) }
    }
}

/// The UTC instant of midnight at the start of `day` in zone `tz` (the earliest, should a
/// zone ever skip or repeat midnight).
pub(crate) fn local_midnight(day: NaiveDate, tz: Tz) -> DateTime<Utc> {
    let naive = day.and_hms_opt(0, 0, 0).unwrap_or_default();
    tz.from_local_datetime(&naive)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|| Utc.from_utc_datetime(&naive))
}

impl fmt::Display for YearMonth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}", self.year(), self.month())
    }
}

impl FromStr for YearMonth {
    type Err = String;

    /// Accepts `YYYY-MM`, `YYYY/MM` and `YYYYMM`.
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let digits: String = t.chars().filter(char::is_ascii_digit).collect();
        let well_formed = match t.len() {
            6 => digits.len() == 6,
            7 => digits.len() == 6 && matches!(t.as_bytes()[4], b'-' | b'/'),
            _ => false,
        };
        let parsed = well_formed
            .then(|| Some((digits[..4].parse().ok()?, digits[4..].parse().ok()?)))
            .flatten()
            .and_then(|(y, m)| YearMonth::new(y, m));
        parsed.ok_or_else(|| format!("{s:?} is not a month (expected YYYY-MM)"))
    }
}

impl Serialize for YearMonth {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for YearMonth {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn year_month_parses_the_three_spellings_and_rejects_the_rest() {
        let may = YearMonth::new(2024, 5).unwrap();
        assert_eq!("2024-05".parse::<YearMonth>(), Ok(may));
        assert_eq!("202405".parse::<YearMonth>(), Ok(may));
        assert_eq!("2024/05".parse::<YearMonth>(), Ok(may));
        for bad in ["2024-13", "2024-5", "24-05", "2024-05-01", "abcdef", ""] {
            assert!(bad.parse::<YearMonth>().is_err(), "{bad} should not parse");
        }
        assert_eq!(may.to_string(), "2024-05");
        assert_eq!(YearMonth::new(2024, 12).unwrap().next().to_string(), "2025-01");
    }

    #[test]
    fn months_are_cut_in_the_platform_zone() {
        // 2024-05-31 16:30 UTC is 2024-06-01 00:30 in Beijing.
        let t = Utc.with_ymd_and_hms(2024, 5, 31, 16, 30, 0).unwrap();
        assert_eq!(YearMonth::of(t, chrono_tz::Asia::Shanghai).to_string(), "2024-06");
        assert_eq!(YearMonth::of(t, chrono_tz::UTC).to_string(), "2024-05");
        let june = YearMonth::new(2024, 6).unwrap();
        assert_eq!(
            june.start(chrono_tz::Asia::Shanghai),
            Utc.with_ymd_and_hms(2024, 5, 31, 16, 0, 0).unwrap()
        );
    }
}

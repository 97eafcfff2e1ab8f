//! [`Micros`]: an instant as a window's rows keep it.

use chrono::{DateTime, Duration, Utc};

/// An instant as a row keeps it: microseconds since the Unix epoch, UTC, as the ledger keeps
/// it (8 bytes where a `DateTime<Utc>` takes 12; compared and subtracted as an integer).
///
/// A time of a charge given to the library with a finer part than a microsecond is kept to
/// the microsecond below it, as the ledger keeps it: the library's window and a store's
/// agree. Every instant a `DateTime<Utc>` can be is one; [`Micros::time`] gives it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Micros(pub i64);

impl Micros {
    /// The earliest instant.
    pub const MIN: Micros = Micros(i64::MIN);
    /// The latest instant.
    pub const MAX: Micros = Micros(i64::MAX);

    /// `t`, to the microsecond below it.
    pub fn of(t: DateTime<Utc>) -> Micros {
        Micros(t.timestamp_micros())
    }

    /// `span` of chrono's instants as a row keeps them (see [`Micros::of`]).
    pub fn span((start, end): (DateTime<Utc>, DateTime<Utc>)) -> (Micros, Micros) {
        (Micros::of(start), Micros::of(end))
    }

    /// The instant, as chrono's: the first or last `DateTime<Utc>` for one beyond them
    /// ([`Micros::MIN`], [`Micros::MAX`]).
    pub fn time(self) -> DateTime<Utc> {
        DateTime::from_timestamp_micros(self.0).unwrap_or(if self.0 < 0 {
            DateTime::<Utc>::MIN_UTC
        } else {
            DateTime::<Utc>::MAX_UTC
        })
    }
}

impl From<DateTime<Utc>> for Micros {
    fn from(t: DateTime<Utc>) -> Micros {
        Micros::of(t)
    }
}

/// The time from `b` to `a` (saturating at the longest [`Duration`] of microseconds).
impl std::ops::Sub for Micros {
    type Output = Duration;
    fn sub(self, b: Micros) -> Duration {
        Duration::microseconds(self.0.saturating_sub(b.0))
    }
}

/// `d` later (saturating at [`Micros::MIN`] and [`Micros::MAX`]).
impl std::ops::Add<Duration> for Micros {
    type Output = Micros;
    fn add(self, d: Duration) -> Micros {
        let micros =
            d.num_microseconds().unwrap_or(if d < Duration::zero() { i64::MIN } else { i64::MAX });
        Micros(self.0.saturating_add(micros))
    }
}

/// `d` earlier (saturating).
impl std::ops::Sub<Duration> for Micros {
    type Output = Micros;
    fn sub(self, d: Duration) -> Micros {
        self + -d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_subtract_and_move_as_chrono_s_and_saturate_at_the_ends() {
        let t = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let (a, b) = (t("2024-05-01T00:00:00.000001Z"), t("2024-04-30T23:59:58.5Z"));
        assert_eq!(Micros::of(a) - Micros::of(b), a - b);
        assert_eq!(Micros::of(b) - Micros::of(a), b - a);
        assert_eq!((Micros::of(b) - Micros::of(a)).num_seconds(), (b - a).num_seconds());
        assert_eq!((Micros::of(a) + Duration::days(3)).time(), a + Duration::days(3));
        assert_eq!((Micros::of(a) - Duration::hours(7)).time(), a - Duration::hours(7));
        assert!(Micros::of(b) < Micros::of(a));
        // Below a microsecond: kept to the microsecond below, as the ledger keeps it.
        assert_eq!(Micros::of(t("1969-12-31T23:59:59.9999995Z")), Micros(-1));
        // The ends: no panic, no wrap.
        assert_eq!(Micros::MAX + Duration::days(1), Micros::MAX);
        assert_eq!(Micros::MIN - Duration::days(1), Micros::MIN);
        assert_eq!(Micros::MAX - Micros::MIN, Duration::microseconds(i64::MAX));
        assert_eq!(Micros::MAX.time(), DateTime::<Utc>::MAX_UTC);
        assert_eq!(Micros::MIN.time(), DateTime::<Utc>::MIN_UTC);
        let last = Micros::of(DateTime::<Utc>::MAX_UTC);
        assert_eq!(last.time(), DateTime::<Utc>::MAX_UTC - Duration::nanoseconds(999));
    }
}

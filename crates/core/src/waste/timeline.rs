//! Instance timelines: when each instance's compute was paid for, and so when it was off.
//!
//! Built once per audit from the compute charges (usage and subscription purchases; refunds
//! do not uncover time) and shared by every rule.
//!
//! A compute charge without a duration (a bill with one time column and no span rule for it)
//! covers no time, so it cannot say when an instance was off; but it is compute seen at that
//! instant, so it counts as the instance having run then ([`Timeline::ran_within`]): W003
//! does not call the disks of a running instance unattached because its bill has instants.

use rustc_hash::FxHashMap as HashMap;

use chrono::Duration;

use crate::charge::{Category, Kind};
use crate::window::{Micros, Row, Sym, Texts};

/// A half-open span of time `[start, end)`, as rows keep instants ([`Micros`]).
pub type Span = (Micros, Micros);

/// The merged compute coverage of one instance, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    /// Disjoint spans in which compute was paid for, in order.
    pub covered: Vec<Span>,
    /// Instants of compute charges without a duration, in order.
    pub seen: Vec<Micros>,
}

impl Timeline {
    /// Whether any coverage touches `[from, to)`, or compute was seen in it.
    pub fn ran_within(&self, from: Micros, to: Micros) -> bool {
        self.covered.iter().any(|&(s, e)| s < to && e > from)
            || self.seen.iter().any(|&t| t >= from && t < to)
    }

    /// Whether the timeline can tell when the instance was off: some of its compute covers
    /// time. One seen only at instants cannot, and W001, W002 and W004 leave it alone.
    pub fn knows_off(&self) -> bool {
        !self.covered.is_empty()
    }

    /// The spans of `within` that no coverage touches.
    pub fn off_periods(&self, within: Span) -> Vec<Span> {
        let mut off = Vec::new();
        let mut cursor = within.0;
        for &(s, e) in &self.covered {
            if e <= cursor {
                continue;
            }
            if s >= within.1 {
                break;
            }
            if s > cursor {
                off.push((cursor, s));
            }
            cursor = cursor.max(e);
        }
        if cursor < within.1 {
            off.push((cursor, within.1));
        }
        off
    }

    /// The off periods of `within`, each cut by `grace` from its start.
    pub fn off_after_grace(&self, within: Span, grace: Duration) -> Vec<Span> {
        self.off_periods(within)
            .into_iter()
            .filter_map(|(s, e)| (s + grace < e).then_some((s + grace, e)))
            .collect()
    }
}

/// Timelines of every instance, keyed by (platform, instance id); the rows of the platforms
/// in `closing` end their hours at `hh:59:59` ([`Row::end_closing`]).
pub fn build<'a>(
    charges: &[Row],
    texts: &'a Texts,
    closing: &[Sym],
) -> HashMap<(&'a str, &'a str), Timeline> {
    /// An instance's compute: spans paid for, and instants seen.
    type Compute = (Vec<Span>, Vec<Micros>);
    // By syms while the rows are read, by texts after.
    let mut spans: HashMap<(Sym, Sym), Compute> = HashMap::default();
    for c in charges {
        let compute =
            c.category == Category::Compute && matches!(c.kind, Kind::Usage | Kind::Purchase);
        if let (true, Some(instance)) = (compute, c.instance_id) {
            let entry = spans.entry((c.platform, instance)).or_default();
            if c.charge_end > c.charge_start {
                entry.0.push((c.charge_start, c.end_closing(closing)));
            } else {
                entry.1.push(c.charge_start);
            }
        }
    }
    spans
        .into_iter()
        .map(|(key, (mut list, mut seen))| {
            list.sort();
            seen.sort();
            let mut covered: Vec<Span> = Vec::with_capacity(list.len());
            for (s, e) in list {
                match covered.last_mut() {
                    Some(last) if s <= last.1 => last.1 = last.1.max(e),
                    _ => covered.push((s, e)),
                }
            }
            ((texts.get(key.0), texts.get(key.1)), Timeline { covered, seen })
        })
        .collect()
}

/// Seconds of `span` inside the union of `spans` (which are disjoint).
pub fn overlap_seconds(span: Span, spans: &[Span]) -> i64 {
    spans.iter().map(|&(s, e)| (span.1.min(e) - span.0.max(s)).num_seconds().max(0)).sum()
}

/// The spans of `spans` (in order and disjoint, as off periods are) that end after `from`
/// and start before `to`: found by halving, not by reading them all (an instance that stops
/// and starts all month has hundreds of off periods, read again for each of its disks' and
/// IPs' hourly charges).
pub(crate) fn near(spans: &[Span], from: Micros, to: Micros) -> &[Span] {
    debug_assert!(spans.windows(2).all(|w| w[0].0 < w[0].1 && w[0].1 <= w[1].0));
    let spans = &spans[spans.partition_point(|&(_, e)| e <= from)..];
    &spans[..spans.partition_point(|&(s, _)| s < to)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(d: u32, h: u32) -> Micros {
        Micros::of(chrono::Utc.with_ymd_and_hms(2024, 5, d, h, 0, 0).unwrap())
    }

    /// The spans `near` gives are those a read of them all finds touching, so the overlap and
    /// the first and last touching span are the same.
    #[test]
    fn the_spans_near_a_charge_are_those_touching_it() {
        let mut next = crate::xorshift(0x0ff_5ea5);
        // Seconds, so that overlaps count.
        let sec = |x: i64| Micros(x * 1_000_000);
        for _ in 0..300 {
            let mut spans = Vec::new();
            let mut at = 0i64;
            for _ in 0..(next() % 40) {
                let start = at + (next() % 5) as i64;
                let end = start + 1 + (next() % 7) as i64;
                spans.push((sec(start), sec(end)));
                at = end;
            }
            for _ in 0..50 {
                let from = (next() % 200) as i64 - 10;
                let (from, to) = (sec(from), sec(from + 1 + (next() % 30) as i64));
                let touching: Vec<Span> =
                    spans.iter().copied().filter(|&(s, e)| s < to && e > from).collect();
                assert_eq!(near(&spans, from, to), &touching[..], "{spans:?} {from:?} {to:?}");
                let whole = overlap_seconds((from, to), &spans);
                assert_eq!(overlap_seconds((from, to), near(&spans, from, to)), whole);
                assert!(whole > 0 || touching.is_empty());
            }
        }
    }

    #[test]
    fn off_periods_are_the_gaps_inside_the_window() {
        let tl = Timeline { covered: vec![(t(2, 0), t(3, 0)), (t(5, 0), t(6, 0))], seen: vec![] };
        assert_eq!(
            tl.off_periods((t(1, 0), t(10, 0))),
            vec![(t(1, 0), t(2, 0)), (t(3, 0), t(5, 0)), (t(6, 0), t(10, 0))]
        );
        assert_eq!(
            tl.off_after_grace((t(1, 0), t(10, 0)), Duration::hours(30)),
            vec![(t(4, 6), t(5, 0)), (t(7, 6), t(10, 0))]
        );
        assert!(tl.ran_within(t(2, 12), t(2, 13)));
        assert!(!tl.ran_within(t(3, 0), t(5, 0)));
        assert_eq!(overlap_seconds((t(4, 0), t(8, 0)), &[(t(4, 6), t(5, 0))]), 18 * 3600);
    }
}

//! The bill lines behind findings: places in the window the findings were made of, read
//! into [`Evidence`] when they are shown (DESIGN.md: evidence texts are fetched only for what
//! ends up in the output), and the claims that keep a charge's money in one finding.

use std::sync::Arc;

use rust_decimal::Decimal;
use rustc_hash::FxHashSet as HashSet;

use super::Context;
use crate::charge::ChargeId;
use crate::money;
use crate::window::{Row, Window};

/// One bill line behind a finding, as the window it was found in holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evidence<'a> {
    /// The charge.
    pub id: ChargeId,
    /// Its source file.
    pub file: &'a str,
    /// Its line in that file.
    pub line: u64,
    /// The bill's words for the item.
    pub item: &'a str,
    /// What the line billed.
    pub billed_cost: Decimal,
    /// The part of it counted as waste.
    pub wasted: Decimal,
}

/// The bill lines a finding rests on: places in the window it was found in (which the
/// finding keeps), each with the part of its cost counted as waste. A month's findings may
/// rest on millions of lines: each is 4 bytes until it is read ([`Lines::iter`]) while every
/// line's waste is its charge's whole billed cost (as most findings' are: a disk of no
/// instance, storage billed wholly inside an off period), 20 once one line's is a part.
#[derive(Clone)]
pub struct Lines {
    window: Arc<Window>,
    /// The lines' places in the window, in the order they were found.
    places: Vec<u32>,
    /// The part of each line's cost counted as waste, by the line's index in `places`; empty
    /// while each is its row's whole billed cost (the same digits and scale).
    wasted: Vec<Decimal>,
    /// The wasted money of the lines, summed in their order as they were pushed (by a rule,
    /// on its own thread); `None` once that is not their sum: lines taken out or added at
    /// once, or a sum that does not fit ([`Lines::total`] then sums them again).
    total: Option<money::Sum>,
    /// Whether the window's rows are at the places they were appended at, so that a line's
    /// id is read by its place, without its row ([`Lines::ids`]: the CSV lists millions).
    at_places: bool,
}

impl Lines {
    /// No lines yet, of rows of `window`; `at_places` when every row of it is at the place it
    /// was appended at (its `pos`).
    pub(crate) fn of(window: &Arc<Window>, room: usize, at_places: bool) -> Lines {
        let places = Vec::with_capacity(room);
        let total = Some(money::Sum::new());
        Lines { window: Arc::clone(window), places, wasted: Vec::new(), total, at_places }
    }

    /// Adds the row at `place` in the window, `wasted` of its cost.
    pub(crate) fn push_at(&mut self, place: u32, wasted: Decimal) {
        let whole = self.wasted.is_empty()
            && self
                .window
                .rows
                .get(place as usize)
                .is_some_and(|r| crate::window::packed(wasted) == (r.cost, r.cost_flags));
        if !whole {
            self.keep_wasted();
            self.wasted.push(wasted);
        }
        self.places.push(place);
        if let Some(total) = &mut self.total
            && total.add(wasted, "").is_err()
        {
            self.total = None;
        }
    }

    /// Keeps each line's waste in `wasted` (until now each its row's whole billed cost).
    fn keep_wasted(&mut self) {
        if self.wasted.len() < self.places.len() {
            self.wasted.reserve_exact(self.places.capacity());
            let (rows, places) = (&self.window.rows, &self.places);
            self.wasted.extend(places.iter().map(|&p| rows[p as usize].billed_cost()));
        }
    }

    /// The part of line `i`'s cost counted as waste.
    fn wasted_at(&self, i: usize) -> Decimal {
        match self.wasted.get(i) {
            Some(&wasted) => wasted,
            None => self.window.rows[self.places[i] as usize].billed_cost(),
        }
    }

    /// The exact sum of the lines' wasted money (what [`money::sum`] of
    /// [`Lines::wasted`] gives, or its error naming `what`).
    pub(crate) fn total(&self, what: &str) -> crate::Result<Decimal> {
        match self.total {
            Some(total) => Ok(total.value()),
            None => money::sum(self.wasted(), what),
        }
    }

    /// Adds `c`, one of `ctx`'s charges of the audited month, `wasted` of its cost (what a
    /// rule of one's own does, its lines from [`Context::lines`]). False, and nothing added,
    /// if `c` is not one of the charges of the window these lines are of, or not of the
    /// month: findings rest on the month's charges (a store does not even read the ids,
    /// files and lines of the look-back's).
    pub fn push(&mut self, ctx: &Context<'_>, c: &Row, wasted: Decimal) -> bool {
        match ctx.place(c) {
            Some(place)
                if Arc::ptr_eq(&self.window, ctx.window()) && c.billing_period == ctx.month =>
            {
                self.push_at(place, wasted);
                true
            }
            _ => false,
        }
    }

    /// Adds `other`'s lines (of the same window).
    pub(crate) fn append(&mut self, mut other: Lines) {
        debug_assert!(Arc::ptr_eq(&self.window, &other.window));
        if !(self.wasted.is_empty() && other.wasted.is_empty()) {
            self.keep_wasted();
            other.keep_wasted();
            self.wasted.extend(other.wasted);
        }
        self.places.extend(other.places);
        self.total = None;
    }

    /// The row of the first line, if any.
    pub(super) fn first_row(&self) -> Option<&Row> {
        self.places.first().map(|&place| &self.window.rows[place as usize])
    }

    /// Each line's place and row.
    fn rows(&self) -> impl Iterator<Item = (u32, &Row)> + '_ {
        self.places.iter().map(|&place| (place, &self.window.rows[place as usize]))
    }

    /// Keeps the lines whose place and row pass `keep`.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(u32, &Row) -> bool) {
        let (rows, before) = (&self.window.rows, self.places.len());
        if self.wasted.is_empty() {
            self.places.retain(|&place| keep(place, &rows[place as usize]));
        } else {
            // Both lists kept in step, in place.
            let mut kept = 0;
            for i in 0..before {
                let place = self.places[i];
                if keep(place, &rows[place as usize]) {
                    (self.places[kept], self.wasted[kept]) = (place, self.wasted[i]);
                    kept += 1;
                }
            }
            self.places.truncate(kept);
            self.wasted.truncate(kept);
        }
        if self.places.len() != before {
            self.total = None;
        }
    }

    /// The money of the lines counted as waste.
    pub(crate) fn wasted(&self) -> impl Iterator<Item = Decimal> + '_ {
        (0..self.places.len()).map(|i| self.wasted_at(i))
    }

    /// How many lines.
    pub fn len(&self) -> usize {
        self.places.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
    }

    /// The charge ids of the lines, in the order they were found: [`Lines::iter`]'s ids
    /// without reading the rest of each line.
    pub fn ids(&self) -> impl ExactSizeIterator<Item = ChargeId> + '_ {
        let (window, at_places) = (&*self.window, self.at_places);
        self.places.iter().map(move |&place| match at_places {
            // A row is 64 bytes the ids need nothing of: reading it was a twentieth of
            // writing a month's findings.
            true => window.id_at(place),
            false => window.id(&window.rows[place as usize]),
        })
    }

    /// The lines, in the order they were found.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Evidence<'_>> + '_ {
        let window = &*self.window;
        self.places.iter().enumerate().map(move |(i, &place)| {
            let c = &window.rows[place as usize];
            let wasted = self.wasted_at(i);
            let origin = window.origin(c);
            Evidence {
                id: window.id(c),
                file: window.texts.opt(origin.file).unwrap_or(""),
                line: origin.line,
                item: window.texts.opt(origin.item).unwrap_or(""),
                billed_cost: c.billed_cost(),
                wasted,
            }
        })
    }
}

impl PartialEq for Lines {
    fn eq(&self, other: &Lines) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Lines {}

impl std::fmt::Debug for Lines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The charges the findings so far rest on: by their places in a window that holds each
/// charge once (a ledger's: a bit per row), else by their ids.
pub(super) enum Claims {
    Places(Vec<u64>),
    Ids(HashSet<ChargeId>),
}

impl Claims {
    pub(super) fn new(window: &Window, room: usize) -> Claims {
        if window.distinct_ids {
            return Claims::Places(vec![0; window.rows.len().div_ceil(64)]);
        }
        let mut ids = HashSet::default();
        ids.reserve(room);
        Claims::Ids(ids)
    }

    /// Whether the charge at `place` in `window` (the window these claims were made for),
    /// `c`, is claimed.
    pub(super) fn has(&self, window: &Window, place: u32, c: &Row) -> bool {
        match self {
            Claims::Ids(ids) => ids.contains(&window.id(c)),
            Claims::Places(bits) => bits[place as usize / 64] >> (place % 64) & 1 == 1,
        }
    }

    /// Claims the charge at `place` in `window`, `c`.
    pub(super) fn claim(&mut self, window: &Window, place: u32, c: &Row) {
        match self {
            Claims::Ids(ids) => {
                ids.insert(window.id(c));
            }
            Claims::Places(bits) => bits[place as usize / 64] |= 1 << (place % 64),
        }
    }

    /// Claims the charges of `lines`.
    pub(super) fn claim_all(&mut self, lines: &Lines) {
        for (place, c) in lines.rows() {
            self.claim(&lines.window, place, c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Charge;
    use crate::window::rows_of;

    fn charge(id: u128, line: u64, billed: i64) -> Charge {
        let mut c =
            Charge { id: ChargeId(id), billed_cost: Decimal::new(billed, 2), ..Charge::blank() };
        c.origin.file = format!("bill-{}.csv", id % 2);
        c.origin.line = line;
        c.origin.item = format!("item {id}");
        c
    }

    /// A finding's lines are read from the rows at their places, and two findings are equal
    /// by what their lines read, whatever window holds them.
    #[test]
    fn lines_read_their_rows_and_compare_by_what_they_read() {
        let charges = [charge(1, 2, 150), charge(2, 3, 275), charge(3, 4, 990)];
        let reversed: Vec<Charge> = charges.iter().rev().cloned().collect();
        let (a, b) = (Arc::new(rows_of(&charges)), Arc::new(rows_of(&reversed)));
        let mut x = Lines::of(&a, 2, true);
        x.push_at(2, Decimal::new(99, 2));
        x.push_at(0, Decimal::new(150, 2));
        let mut y = Lines::of(&b, 2, true);
        y.push_at(0, Decimal::new(99, 2));
        y.push_at(2, Decimal::new(150, 2));
        let read: Vec<Evidence<'_>> = x.iter().collect();
        assert_eq!(read.len(), 2);
        assert_eq!((read[0].id, read[0].file, read[0].line), (ChargeId(3), "bill-1.csv", 4));
        assert_eq!((read[0].item, read[0].billed_cost), ("item 3", Decimal::new(990, 2)));
        assert_eq!((read[1].id, read[1].wasted), (ChargeId(1), Decimal::new(150, 2)));
        assert_eq!(x, y);
        let mut z = y.clone();
        z.push_at(1, Decimal::ONE);
        assert_ne!(x, z);
        z.retain(|place, _| place != 1);
        assert_eq!(x, z);
        assert_eq!(x.wasted().sum::<Decimal>(), Decimal::new(249, 2));
    }

    /// The total kept as lines are pushed is the sum of their wasted money, digit for digit
    /// and scale for scale, after lines are taken out or added at once too; a sum that does
    /// not fit is the error of summing them.
    #[test]
    fn the_total_kept_as_lines_come_is_the_sum_of_their_wasted_money() {
        let charges: Vec<Charge> = (0..6).map(|i| charge(i, i as u64 + 2, 100)).collect();
        let window = Arc::new(rows_of(&charges));
        let exact = |l: &Lines| money::sum(l.wasted(), "t").unwrap().serialize();
        let mut a = Lines::of(&window, 0, true);
        for (place, wasted) in [(0, "1.50"), (1, "-1.5"), (2, "2"), (3, "0.000"), (4, "0.25")] {
            a.push_at(place, wasted.parse().unwrap());
            assert_eq!(a.total("t").unwrap().serialize(), exact(&a));
        }
        assert!(a.total.is_some(), "kept, not summed again");
        a.retain(|place, _| place != 1);
        assert!(a.total.is_none());
        assert_eq!(a.total("t").unwrap().serialize(), exact(&a));
        let mut b = Lines::of(&window, 0, true);
        b.push_at(5, Decimal::new(-225, 2));
        a.append(b);
        assert_eq!(a.total("t").unwrap(), Decimal::new(150, 2));
        let mut huge = Lines::of(&window, 0, true);
        huge.push_at(0, Decimal::MAX);
        huge.push_at(1, Decimal::MAX);
        assert!(huge.total.is_none());
        let err = huge.total("a finding's wasted money").unwrap_err().to_string();
        assert!(err.starts_with("a finding's wasted money"), "{err}");
    }

    /// Lines read back the waste each was given, digit for digit and scale for scale,
    /// whether it is its row's whole cost (kept as the place alone while every line's is:
    /// 1.5 of a row billed 1.50 is not) or a part, through lines taken out and added at once.
    #[test]
    fn lines_read_back_the_waste_they_were_given_whole_or_in_part() {
        let billed = ["1.50", "2", "0.000", "-3.25", "7.125"];
        let charges: Vec<Charge> = (0..40)
            .map(|i| {
                let mut c = charge(i, i as u64 + 2, 0);
                c.billed_cost = billed[i as usize % billed.len()].parse().unwrap();
                c
            })
            .collect();
        let window = Arc::new(rows_of(&charges));
        let cost = |place: u32| window.rows[place as usize].billed_cost();
        let mut next = crate::xorshift(0x11_4e5);
        for round in 0..200 {
            let (mut lines, mut model) = (Lines::of(&window, 4, true), Vec::new());
            let mut other = (Lines::of(&window, 0, true), Vec::new());
            for k in 0..(next() % 12) {
                let place = (next() % 40) as u32;
                let wasted = match next() % 4 {
                    0 if round % 2 == 0 => Decimal::new(15, 1), // 1.5: whole only as given
                    1 => Decimal::new((next() % 1000) as i64, 3),
                    _ => cost(place),
                };
                let (to, m) = if k % 3 == 2 {
                    (&mut other.0, &mut other.1)
                } else {
                    (&mut lines, &mut model)
                };
                to.push_at(place, wasted);
                m.push((place, wasted));
            }
            let whole = model.iter().all(|&(p, w)| w.serialize() == cost(p).serialize());
            assert_eq!(lines.wasted.is_empty(), whole, "{model:?}");
            if next().is_multiple_of(2) {
                lines.append(other.0);
                model.extend(other.1);
            }
            let cut = (next() % 40) as u32;
            lines.retain(|place, _| place != cut);
            model.retain(|&(p, _)| p != cut);
            let read: Vec<_> = lines.iter().map(|e| (e.id, e.wasted.serialize())).collect();
            let want: Vec<_> =
                model.iter().map(|&(p, w)| (ChargeId(u128::from(p)), w.serialize())).collect();
            assert_eq!(read, want);
            let sum = money::sum(model.iter().map(|l| l.1), "t").unwrap();
            assert_eq!(lines.total("t").unwrap().serialize(), sum.serialize());
        }
    }

    /// A rule of one's own adds lines of the month's charges of its context's window, and
    /// nothing else.
    #[test]
    fn a_rule_s_lines_are_of_the_month_s_charges_of_its_window() {
        let (april, may) =
            (crate::YearMonth::new(2024, 4).unwrap(), crate::YearMonth::new(2024, 5).unwrap());
        let mut charges = [charge(1, 2, 150), charge(2, 3, 275)];
        charges[0].billing_period = april;
        charges[1].billing_period = may;
        let (window, other) = (Arc::new(rows_of(&charges)), Arc::new(rows_of(&charges)));
        let (config, platforms) =
            (crate::config::Config::default(), crate::platforms::Platforms::default());
        let ctx = Context::new(&window, may, &config, &platforms).unwrap();
        let mut lines = ctx.lines();
        assert!(!lines.push(&ctx, &window.rows[0], Decimal::ONE), "a charge of April");
        assert!(!lines.push(&ctx, &other.rows[1], Decimal::ONE), "a row of another window");
        assert!(lines.push(&ctx, &window.rows[1], Decimal::ONE));
        let read: Vec<_> = lines.iter().map(|e| (e.id, e.wasted)).collect();
        assert_eq!(read, [(ChargeId(2), Decimal::ONE)]);
    }

    /// A finding's ids are its rows' ids whether the window's rows are where they were
    /// appended (the ids then read by place, without the rows) or were reordered after.
    #[test]
    fn the_ids_of_lines_are_their_rows_ids_in_a_window_reordered_or_not() {
        let may = crate::YearMonth::new(2024, 5).unwrap();
        let mut charges: Vec<Charge> = (0..5).map(|i| charge(10 + i, i as u64 + 2, 100)).collect();
        for c in &mut charges {
            c.billing_period = may;
        }
        let (config, platforms) =
            (crate::config::Config::default(), crate::platforms::Platforms::default());
        let in_order = Arc::new(rows_of(&charges));
        let mut reordered = rows_of(&charges);
        reordered.rows.reverse();
        let reordered = Arc::new(reordered);
        for (window, at_places) in [(&in_order, true), (&reordered, false)] {
            let ctx = Context::new(window, may, &config, &platforms).unwrap();
            assert_eq!(ctx.at_places, at_places);
            let mut lines = ctx.lines();
            for place in [3, 0, 4] {
                assert!(lines.push(&ctx, &window.rows[place], Decimal::ONE));
            }
            let by_row: Vec<ChargeId> = lines.iter().map(|e| e.id).collect();
            assert_eq!(lines.ids().collect::<Vec<_>>(), by_row);
            let want: Vec<ChargeId> = [3, 0, 4].map(|p| window.id(&window.rows[p])).to_vec();
            assert_eq!(by_row, want);
        }
        // The same places name other charges in the two windows.
        assert_ne!(in_order.id(&in_order.rows[0]), reordered.id(&reordered.rows[0]));
    }

    /// Claims by place (a ledger's window: each charge once) and by id agree; in a window
    /// that holds a charge twice, claiming one row claims the other.
    #[test]
    fn claims_by_place_and_by_id_agree_and_a_charge_held_twice_is_claimed_once() {
        let charges: Vec<Charge> = (0..130).map(|i| charge(i, i as u64 + 2, 100)).collect();
        let mut distinct = rows_of(&charges);
        distinct.distinct_ids = true;
        let given = rows_of(&charges);
        let (mut by_place, mut by_id) = (Claims::new(&distinct, 0), Claims::new(&given, 8));
        for place in [0u32, 63, 64, 127, 129] {
            by_place.claim(&distinct, place, &distinct.rows[place as usize]);
            by_id.claim(&given, place, &given.rows[place as usize]);
        }
        for place in 0..130u32 {
            let claimed = [0, 63, 64, 127, 129].contains(&place);
            let (d, g) = (&distinct.rows[place as usize], &given.rows[place as usize]);
            assert_eq!(by_place.has(&distinct, place, d), claimed, "{place}");
            assert_eq!(by_id.has(&given, place, g), claimed, "{place}");
        }
        let twice = rows_of(&[charge(7, 2, 100), charge(8, 3, 100), charge(7, 2, 100)]);
        let mut claims = Claims::new(&twice, 1);
        claims.claim(&twice, 0, &twice.rows[0]);
        assert!(claims.has(&twice, 2, &twice.rows[2]));
        assert!(!claims.has(&twice, 1, &twice.rows[1]));
    }
}

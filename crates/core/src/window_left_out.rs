//! What the rows a window left out tell ([`LeftOut`]).

use rustc_hash::FxHashMap as HashMap;

use super::{Micros, Row, Sym, Texts};

/// What the rows a window left out (see [`Window::append_keeping`]) tell: per platform, the
/// time they cover; per platform and resource, when it was first charged.
#[derive(Debug, Default, Clone)]
pub struct LeftOut {
    /// Per platform: the earliest start and the latest end of its rows left out.
    pub spans: HashMap<Sym, (Micros, Micros)>,
    /// Per platform and resource (never an empty id): the earliest start of its rows left out.
    pub first_seen: HashMap<(Sym, Sym), Micros>,
    /// How many rows were left out.
    pub rows: u64,
}

impl LeftOut {
    /// Takes in what `r` tells (its texts `texts`'): what the waste context reads of every
    /// row it is given, as of those left out.
    pub fn add(&mut self, r: &Row, texts: &Texts) {
        let span = self.spans.entry(r.platform).or_insert((r.charge_start, r.charge_end));
        span.0 = span.0.min(r.charge_start);
        span.1 = span.1.max(r.charge_end);
        if let Some(key) = LeftOut::sighting(r, texts) {
            let seen = self.first_seen.entry(key).or_insert(r.charge_start);
            *seen = (*seen).min(r.charge_start);
        }
        self.rows += 1;
    }

    /// The key a row's first sighting is kept under (platform and resource): none for a row
    /// of no resource, or of an empty one.
    pub(crate) fn sighting(r: &Row, texts: &Texts) -> Option<(Sym, Sym)> {
        let resource = r.resource_id.filter(|&s| !texts.get(s).is_empty())?;
        Some((r.platform, resource))
    }

    /// Takes in what `other` tells, as if its rows were added.
    pub fn merge(&mut self, other: &LeftOut) {
        for (&platform, &(start, end)) in &other.spans {
            let span = self.spans.entry(platform).or_insert((start, end));
            *span = (span.0.min(start), span.1.max(end));
        }
        for (&key, &start) in &other.first_seen {
            let seen = self.first_seen.entry(key).or_insert(start);
            *seen = (*seen).min(start);
        }
        self.rows += other.rows;
    }
}

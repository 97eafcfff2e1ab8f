//! Whose line of the cost report a row belongs on: an instance's if that is a virtual machine,
//! else its service's, its platform's unattached line, or its not-linked line (on a platform
//! whose bills link no disk or IP to an instance); and which compute rows carry no GPU.

use std::collections::HashMap;

use rust_decimal::Decimal;

use crate::charge::Category;
use crate::platforms::Platforms;
use crate::window::{Row, Sym, Window};

/// A platform's facts as the report reads them: its sym, whether its bills link storage, its
/// VM id patterns (none: every instance is one), and which compute rows carry no GPU.
type Facts = (Sym, bool, Option<Vec<regex::Regex>>, Option<crate::charge::NoGpu>);

/// Whose a line is: an instance's, or what [`Apart`] says (a service by its sym).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Whose {
    Instance(Sym),
    Unattached,
    NotLinked,
    Service(Option<Sym>),
}

/// Platform facts, what decides whose line a row belongs on ([`Lines::whose`]): each platform's facts, and
/// whether each instance is a virtual machine, found once.
pub(super) struct Lines<'a> {
    window: &'a Window,
    platforms: &'a Platforms,
    /// Per platform: whether its bills link storage, its VM id patterns (none: every
    /// instance is one), and which compute rows carry no GPU.
    facts: Vec<Facts>,
    /// Whether each instance is a virtual machine.
    vms: HashMap<(Sym, Sym), bool>,
}

impl<'a> Lines<'a> {
    pub(super) fn new(window: &'a Window, platforms: &'a Platforms) -> Self {
        Lines { window, platforms, facts: Vec::new(), vms: HashMap::new() }
    }

    /// The facts of `platform`'s bills.
    fn facts(&mut self, platform: Sym) -> usize {
        if let Some(at) = self.facts.iter().position(|(p, _, _, _)| *p == platform) {
            return at;
        }
        let facts = self.platforms.bill_facts(self.window.texts.get(platform));
        // The profile's patterns were checked when it was read: one that fails here is none.
        let vm: Vec<regex::Regex> =
            facts.vm_ids.iter().filter_map(|r| regex::Regex::new(r).ok()).collect();
        let vm = (!vm.is_empty()).then_some(vm);
        self.facts.push((platform, facts.links_storage, vm, facts.no_gpu));
        self.facts.len() - 1
    }

    /// Whether compute row `r` carries no GPU whatever its instance's note says: its GPU count
    /// is 0, or its platform's bills say so of it (AutoDL's 无卡模式: its item's words, or an
    /// hourly rate at most the mode's).
    pub(super) fn no_gpu(&mut self, r: &Row) -> bool {
        if self.window.usage(r).gpu_count == Some(0) {
            return true;
        }
        let at = self.facts(r.platform);
        let Some(no_gpu) = &self.facts[at].3 else { return false };
        let item = self.window.item(r);
        if no_gpu.words.iter().any(|w| item.contains(w.as_str())) {
            return true;
        }
        let seconds = (r.charge_end - r.charge_start).num_seconds();
        match (no_gpu.max_hourly, seconds > 0) {
            // billed ÷ hours ≤ max ⇔ billed × 3600 ≤ max × seconds (exact; past 28 digits, no).
            (Some(max), true) => {
                let billed = r.billed_cost().checked_mul(Decimal::from(3600));
                let most = max.checked_mul(Decimal::from(seconds));
                billed.zip(most).is_some_and(|(b, m)| b <= m)
            }
            _ => false,
        }
    }

    /// Whose line `r` belongs on: its instance's, if that is a virtual machine; compute of no
    /// instance (or of one that is no VM: a NAT gateway, a function), its service's line
    /// where the bill names one or the platform's bills link nothing; the rest of no
    /// instance, its platform's unattached line, or not-linked line where its bills link
    /// nothing.
    pub(super) fn whose(&mut self, r: &Row) -> Whose {
        let at = self.facts(r.platform);
        let service = self.window.usage(r).service;
        if let Some(i) = r.instance_id {
            let vm = match &self.facts[at].2 {
                None => true,
                Some(patterns) => *self.vms.entry((r.platform, i)).or_insert_with(|| {
                    let id = self.window.texts.get(i);
                    patterns.iter().any(|p| p.is_match(id))
                }),
            };
            return if vm { Whose::Instance(i) } else { Whose::Service(service) };
        }
        let linked = self.facts[at].1;
        match (r.category == Category::Compute, service, linked) {
            (true, Some(s), _) => Whose::Service(Some(s)),
            (true, None, false) => Whose::Service(None),
            (_, _, true) => Whose::Unattached,
            (_, _, false) => Whose::NotLinked,
        }
    }
}

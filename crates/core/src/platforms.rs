//! What the rules need to know of each platform, as the profile that imported it says: the
//! zone its days and months are cut in, the money its unit prices multiply to, whether its
//! bills link disks and IPs to instances, the words by which they say an address was idle,
//! and whether an end at `hh:59:59` closes the hour.
//!
//! These are facts of a platform's bills, known to the profile that read them; the rules get
//! them from here rather than looking a profile up by name, so that a user profile's
//! platform is cut in the user profile's zone (`zone = "Asia/Shanghai"`), not in UTC. The
//! ledger records the facts of every file it imports ([`crate::ledger::Store::platforms`]);
//! [`Platforms::of_profiles`] gives those of a list of profiles. A platform no one describes
//! is cut in UTC and prices its list cost.
//!
//! This module knows profiles only as a source of these facts: waste and reconcile depend on
//! it, never on import.

use std::collections::BTreeMap;
use std::sync::Mutex;

use chrono_tz::Tz;

use crate::charge::UnitPriceOf;
use crate::import::Profile;

/// The facts of platforms, by platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platforms {
    zones: BTreeMap<String, Tz>,
    unit_price_of: BTreeMap<String, UnitPriceOf>,
    bill_facts: BTreeMap<String, BillFacts>,
}

/// What a platform's bills say and do not say, as its profile declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BillFacts {
    /// Whether a disk's, an IP's or a snapshot's row names its instance (or is billed on the
    /// instance's row): else an unlinked one is not known to be unattached.
    pub links_storage: bool,
    /// Words of a charge's usage text (or its item) by which the bill says a public IP was
    /// idle, lower case.
    pub idle_ip_usage: Vec<String>,
    /// Whether an end at `hh:59:59` closes the whole hour.
    pub end_second_inclusive: bool,
    /// Regexes of the instance ids that are virtual machines; empty: every instance is one.
    pub vm_ids: Vec<String>,
    /// Which compute rows carry no GPU (AutoDL's 无卡模式), if the bills have such rows.
    pub no_gpu: Option<crate::charge::NoGpu>,
}

impl Default for BillFacts {
    /// A platform no one describes: its bills link what they bill.
    fn default() -> Self {
        BillFacts {
            links_storage: true,
            idle_ip_usage: Vec::new(),
            end_second_inclusive: false,
            vm_ids: Vec::new(),
            no_gpu: None,
        }
    }
}

impl Default for Platforms {
    /// The facts of the built-in profiles' platforms.
    fn default() -> Self {
        Platforms::of_profiles(crate::import::profiles())
    }
}

impl Platforms {
    /// No platform described: every platform is cut in UTC and prices its list cost.
    pub fn none() -> Self {
        Platforms {
            zones: BTreeMap::new(),
            unit_price_of: BTreeMap::new(),
            bill_facts: BTreeMap::new(),
        }
    }

    /// The facts of `profiles`' platforms, a later profile winning for a platform named twice.
    pub fn of_profiles(profiles: &[&'static Profile]) -> Self {
        let mut platforms = Platforms::none();
        for p in profiles {
            for name in std::iter::once(p.platform()).chain(p.former_platform()) {
                platforms.set_zone(name, p.zone());
                platforms.unit_price_of.insert(name.to_owned(), p.unit_price_of());
                let facts = BillFacts {
                    links_storage: p.bill_links_storage(),
                    idle_ip_usage: p.idle_ip_usage(),
                    end_second_inclusive: p.end_second_inclusive(),
                    vm_ids: p.vm_ids().to_vec(),
                    no_gpu: p.no_gpu().cloned(),
                };
                platforms.bill_facts.insert(name.to_owned(), facts);
            }
        }
        platforms
    }

    /// Says that `platform` is cut in `zone`.
    pub fn set_zone(&mut self, platform: &str, zone: Tz) {
        self.zones.insert(platform.to_owned(), zone);
    }

    /// Says what `platform`'s unit prices multiply to.
    pub fn set_unit_price_of(&mut self, platform: &str, of: UnitPriceOf) {
        self.unit_price_of.insert(platform.to_owned(), of);
    }

    /// Adds the facts of `other`, which win where both describe a platform.
    pub fn extend(&mut self, other: &Platforms) {
        self.zones.extend(other.zones.iter().map(|(p, z)| (p.clone(), *z)));
        self.unit_price_of.extend(other.unit_price_of.iter().map(|(p, u)| (p.clone(), *u)));
        self.bill_facts.extend(other.bill_facts.iter().map(|(p, f)| (p.clone(), f.clone())));
    }

    /// Says what `platform`'s bills say ([`BillFacts`]).
    pub fn set_bill_facts(&mut self, platform: &str, facts: BillFacts) {
        self.bill_facts.insert(platform.to_owned(), facts);
    }

    /// What `platform`'s bills say: [`BillFacts::default`] when no one said.
    pub fn bill_facts(&self, platform: &str) -> BillFacts {
        self.bill_facts.get(platform).cloned().unwrap_or_default()
    }

    /// The syms, among `texts`, of the platforms whose bills end an hour at `hh:59:59`
    /// ([`BillFacts::end_second_inclusive`]): what [`crate::window::Row::end_closing`] takes.
    pub fn closing(&self, texts: &crate::window::Texts) -> Vec<crate::window::Sym> {
        let closing = self.bill_facts.iter().filter(|(_, f)| f.end_second_inclusive);
        closing.filter_map(|(p, _)| texts.find(p)).collect()
    }

    /// Whether `platform`'s bills link disks, IPs and snapshots to their instances.
    pub fn links_storage(&self, platform: &str) -> bool {
        self.bill_facts.get(platform).is_none_or(|f| f.links_storage)
    }

    /// The zone of `platform`: UTC when no one said.
    pub fn zone(&self, platform: &str) -> Tz {
        self.zones.get(platform).copied().unwrap_or(chrono_tz::UTC)
    }

    /// What `platform`'s unit prices multiply to: the list cost when no one said.
    pub fn unit_price_of(&self, platform: &str) -> UnitPriceOf {
        self.unit_price_of.get(platform).copied().unwrap_or_default()
    }
}

/// The most platform names a process keeps ([`kept_name`]).
pub const MAX_PLATFORM_NAMES: usize = 256;

/// Platform names kept for the life of the process: the profiles' (static already) and those
/// bills give their rows.
static KEPT: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// `name` as a text that lives as long as the process (the import keeps a charge's platform
/// so, as it keeps a profile's name), or `None` once [`MAX_PLATFORM_NAMES`] names are kept: a
/// bill naming a platform per row cannot take the memory. The parser refuses a row whose
/// platform cannot be kept.
pub fn kept_name(name: &str) -> Option<&'static str> {
    thread_local! {
        /// The last name kept on this thread: a bill names one platform row after row, and
        /// the lock is taken once per name, not once per row.
        static LAST: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
    }
    if let Some(last) = LAST.get()
        && last == name
    {
        return Some(last);
    }
    let kept = kept_name_locked(name);
    if kept.is_some() {
        LAST.set(kept);
    }
    kept
}

/// [`kept_name`] without its last-name memo.
fn kept_name_locked(name: &str) -> Option<&'static str> {
    if let Some(p) = crate::import::profiles().iter().find(|p| p.platform() == name) {
        return Some(p.platform());
    }
    let mut kept = KEPT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(&k) = kept.iter().find(|k| **k == name) {
        return Some(k);
    }
    if kept.len() >= MAX_PLATFORM_NAMES {
        return None;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    kept.push(leaked);
    Some(leaked)
}

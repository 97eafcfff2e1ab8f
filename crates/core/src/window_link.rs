//! [`link_rows`]: a window's storage, IP and traffic rows put with the instance they belong to.
//!
//! Two reads of every row of a window (its compute instances, then the rows that name one of
//! them as their resource), which on a window of millions of rows ran alone on one core
//! between the read of the window and the rules. Decisions:
//!
//! - Each read is split in as many runs of rows as [`crate::par::threads`], one thread each,
//!   the instances of every run put together before the second read; a window of fewer than
//!   [`ON_ONE_THREAD`] rows is read on the caller's thread.
//! - A bill's rows come a resource's hour at a time (its compute, traffic, disk and IP), so a
//!   run looks a key up in the slots of the keys it met last ([`Slots`]) before the set: most
//!   rows are answered without hashing into a set of thousands.
//!
//! The result does not depend on how the rows are split: the set of instances is the same
//! whatever the split, and each row's link depends on that set and the row only.

use super::{HashSet, Row, Sym};
use crate::charge::Category;
use crate::par::on_threads;
use crate::slots::Slots;

/// A window of fewer rows is linked on the caller's thread.
const ON_ONE_THREAD: usize = 1 << 16;

/// A compute instance: platform, account and its id.
type Key = (Sym, Option<Sym>, Sym);

/// The keys met last, with whether each is an instance.
type Recent = Slots<Key, bool, 64>;

/// `key` mixed into a word, for its slot in [`Recent`].
fn mix((platform, account, id): &Key) -> u64 {
    let account = account.map_or(0, |a| a.0.get());
    (u64::from(platform.0.get()) << 32 | u64::from(account)) ^ u64::from(id.0.get())
}

/// [`crate::link_to_instances`] for a window: a row with no instance whose resource is the
/// instance of a compute row of the same platform and account belongs to it. Gives how many
/// rows were linked.
pub fn link_rows(rows: &mut [Row]) -> usize {
    let threads = if rows.len() < ON_ONE_THREAD { 1 } else { crate::par::threads() };
    let run = rows.len().div_ceil(threads).max(1);
    let instances = if threads == 1 {
        instances(rows)
    } else {
        let found: Vec<HashSet<Key>> = on_threads(rows.chunks(run), instances);
        let mut found = found.into_iter();
        let mut all = found.next().unwrap_or_default();
        found.for_each(|set| all.extend(set));
        all
    };
    if instances.is_empty() {
        return 0;
    }
    let link = |rows: &mut [Row]| link(rows, &instances);
    if threads == 1 { link(rows) } else { on_threads(rows.chunks_mut(run), link).into_iter().sum() }
}

/// The compute instances of `rows`.
fn instances(rows: &[Row]) -> HashSet<Key> {
    let mut set = HashSet::default();
    let mut recent = Recent::default();
    for r in rows.iter().filter(|r| r.category == Category::Compute) {
        let Some(instance) = r.instance_id else { continue };
        let key = (r.platform, r.account, instance);
        if recent.get(mix(&key), &key).is_none() {
            set.insert(key);
            recent.put(mix(&key), key, true);
        }
    }
    set
}

/// Links the rows of `rows` with no instance whose resource is one of `instances`; gives how
/// many.
fn link(rows: &mut [Row], instances: &HashSet<Key>) -> usize {
    let mut recent = Recent::default();
    let mut linked = 0;
    for r in rows.iter_mut().filter(|r| r.instance_id.is_none()) {
        let Some(resource) = r.resource_id else { continue };
        let key = (r.platform, r.account, resource);
        let is_instance = match recent.get(mix(&key), &key) {
            Some(known) => known,
            None => {
                let known = instances.contains(&key);
                recent.put(mix(&key), key, known);
                known
            }
        };
        if is_instance {
            r.instance_id = Some(resource);
            linked += 1;
        }
    }
    linked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Charge;
    use crate::window::rows_of;

    /// What [`link_rows`] did before it was split and cached: the reference it must agree with.
    fn linked_plainly(rows: &mut [Row]) -> usize {
        let instances: HashSet<Key> = rows
            .iter()
            .filter(|r| r.category == Category::Compute)
            .filter_map(|r| Some((r.platform, r.account, r.instance_id?)))
            .collect();
        let mut linked = 0;
        for r in rows.iter_mut().filter(|r| r.instance_id.is_none()) {
            if let Some(resource) = r.resource_id
                && instances.contains(&(r.platform, r.account, resource))
            {
                r.instance_id = Some(resource);
                linked += 1;
            }
        }
        linked
    }

    fn charge(category: Category, account: &str, resource: &str, instance: Option<&str>) -> Charge {
        let mut c = Charge::blank();
        c.platform = "focus".into();
        c.category = category;
        c.account = Some(account.into());
        c.resource_id = Some(resource.into());
        c.instance_id = instance.map(Into::into);
        c
    }

    #[test]
    fn a_window_split_on_threads_links_the_rows_the_plain_reading_links() {
        // Hours of 300 instances, of account a for 300 hours, then of b: compute under the
        // instance's id; traffic under the VM's id, a disk and an IP, without an instance;
        // the IP's id is another instance's, and one hour in seven of account c, which has no
        // instances (not linked then). One instance's only compute row is the very last,
        // of account b: its traffic of account b is linked across the runs.
        let mut charges = Vec::new();
        for hour in 0..(ON_ONE_THREAD / 4 + 50) {
            let account = ["a", "b"][hour / 300 % 2];
            let (vm, next) = (format!("vm-{}", hour % 300), format!("vm-{}", (hour + 1) % 300));
            if hour % 300 != 7 {
                charges.push(charge(Category::Compute, account, &vm, Some(&vm)));
            }
            charges.push(charge(Category::Traffic, account, &vm, None));
            charges.push(charge(Category::DataDisk, account, &format!("disk-{hour}"), None));
            let ip_account = if hour % 7 == 0 { "c" } else { account };
            charges.push(charge(Category::PublicIp, ip_account, &next, None));
        }
        charges.push(charge(Category::Compute, "b", "vm-7", Some("vm-7")));
        let window = rows_of(&charges);
        assert!(window.rows.len() >= ON_ONE_THREAD, "the window is split on threads");
        let (mut split, mut plain) = (window.rows.clone(), window.rows.clone());
        let linked = link_rows(&mut split);
        assert_eq!(linked, linked_plainly(&mut plain));
        assert_eq!(split, plain);
        let linked_by = |category, resource: &str| {
            split
                .iter()
                .filter(|r| {
                    r.category == category && window.texts.opt(r.resource_id) == Some(resource)
                })
                .map(|r| r.instance_id.is_some())
                .collect::<Vec<_>>()
        };
        // The traffic of vm-7 of account b is linked (by the last row), of account a not.
        let vm7 = linked_by(Category::Traffic, "vm-7");
        assert!(vm7.contains(&true) && vm7.contains(&false), "{vm7:?}");
        assert!(linked_by(Category::DataDisk, "disk-0") == [false]);
        // Of the IPs named as another instance: those of its account linked, the others not.
        let ips = linked_by(Category::PublicIp, "vm-1");
        assert!(ips.contains(&true) && ips.contains(&false), "{ips:?}");
    }
}

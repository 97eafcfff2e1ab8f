//! Inventory snapshots: what the clouds' own CLIs say of an account's volumes, instances,
//! addresses and disk snapshots at a time, kept in the ledger beside the bills so that the
//! waste rules and `cost` can say what the big clouds' bills cannot (which volume is attached
//! to which instance, which is unattached, which instance is stopped, which snapshot's volume
//! is gone).
//!
//! Decisions:
//! - A snapshot is read from the JSON a CLI prints ([`parse`]: `aws ec2 describe-volumes`,
//!   `describe-instances`, `describe-addresses`, `describe-snapshots`; `az disk list`, `az vm
//!   list -d`, `az network public-ip list`, `az snapshot list`; `gcloud compute disks|
//!   instances|addresses|snapshots list --format=json`; `aliyun ecs DescribeDisks|
//!   DescribeInstances|DescribeEipAddresses|DescribeSnapshots`; `tccli cbs DescribeDisks`,
//!   `tccli cvm DescribeInstances`), its shape recognised from its keys, never from its name.
//! - Its time is the time it was taken: the file's own (a `{"taken_at": …, "output": …}`
//!   wrapper, which a script that runs the CLI writes), else the one the user gives (`--at`);
//!   never the file's modification time. Without either it is refused.
//! - A resource named twice in one snapshot with two states is refused (the file is not one
//!   moment of one account); named twice alike, it is kept once.
//! - What a snapshot says holds from its time until a later snapshot says otherwise: a
//!   volume unattached at 10:00 is unattached from 10:00 on (never before), until a later
//!   snapshot shows it attached or no longer lists it.
//! - Bill and inventory name a resource alike on AWS, Alibaba and Tencent (`vol-…`, `d-…`,
//!   `disk-…`); Azure's ids are compared without regard to case, and GCP's by the last part
//!   of their path (a disk's name), as the bills give them.

mod parse;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use parse::{parse, parse_at};

/// One inventory snapshot: what one CLI output said at one time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The platform its resources are billed on (`aws`, `azure`, `gcp`, `aliyun`, `tencent`).
    pub platform: String,
    /// When it was taken (UTC).
    pub taken: DateTime<Utc>,
    /// The command whose output it is (`aws ec2 describe-volumes` …).
    pub command: String,
    /// The volumes (disks) it lists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Volume>,
    /// The instances it lists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<Instance>,
    /// The public addresses it lists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<Address>,
    /// The disk snapshots it lists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<DiskSnapshot>,
}

/// A volume: attached to an instance, or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Volume {
    /// Its id.
    pub id: String,
    /// The instance it is attached to; none when it is unattached.
    pub attached_to: Option<String>,
}

/// An instance: running or not, and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instance {
    /// Its id.
    pub id: String,
    /// Whether it is running (else stopped, deallocated, terminated).
    pub running: bool,
    /// When it stopped, where the output says.
    pub stopped_at: Option<DateTime<Utc>>,
    /// The volumes attached to it.
    #[serde(default)]
    pub volumes: Vec<String>,
    /// The addresses bound to it.
    #[serde(default)]
    pub addresses: Vec<String>,
}

/// A public address: bound to an instance, or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Address {
    /// Its id (an allocation id, else the address).
    pub id: String,
    /// The address itself, when given.
    pub ip: Option<String>,
    /// The instance it is bound to; none when it is idle.
    pub attached_to: Option<String>,
}

/// A disk snapshot and the volume it was taken from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskSnapshot {
    /// Its id.
    pub id: String,
    /// Its source volume, when given.
    pub volume: Option<String>,
}

/// A resource's id as bills and inventories both give it: lower case, its last path part
/// (Azure's ids differ in case between a bill and the CLI; GCP's bills name a disk by its
/// name, the CLI by its URL too).
pub fn key(id: &str) -> String {
    let last = id.trim_end_matches('/').rsplit('/').next().unwrap_or(id);
    last.to_ascii_lowercase()
}

/// What a resource was, as the snapshots say, from a time on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State<'a> {
    /// Attached to (or bound to) this instance.
    On(&'a str),
    /// Listed, attached to nothing.
    Loose,
    /// No longer listed by a snapshot that lists its kind.
    Gone,
}

/// Every snapshot of a ledger, indexed for the rules: per platform and resource (by
/// [`key`]), its states in time order.
#[derive(Debug, Default)]
pub struct Inventory {
    /// Per (platform, resource key): (from, state) in time order.
    states: BTreeMap<Key, Vec<(DateTime<Utc>, Held)>>,
    /// Per (platform, instance key): (from, stopped since) while stopped, in time order.
    stopped: BTreeMap<Key, Vec<(Time, Option<Time>)>>,
    /// Per (platform, disk snapshot key): its source volume's key.
    sources: BTreeMap<(String, String), String>,
    /// Per platform: the times of its volume listings and the volumes each names.
    listings: BTreeMap<String, Vec<(Time, std::collections::BTreeSet<String>)>>,
    /// Whether any snapshot was given.
    any: bool,
}

/// An instant, UTC.
type Time = DateTime<Utc>;

/// A resource of a platform: (platform, the resource's [`key`]).
type Key = (String, String);

/// A state as the index keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Held {
    On(String),
    Loose,
    Gone,
}

impl Inventory {
    /// The index of `snapshots`.
    pub fn of(snapshots: &[Snapshot]) -> Inventory {
        let mut sorted: Vec<&Snapshot> = snapshots.iter().collect();
        sorted.sort_by_key(|s| s.taken);
        let mut inv = Inventory { any: !snapshots.is_empty(), ..Inventory::default() };
        for s in sorted {
            let platform = s.platform.clone();
            let mut at = |id: &str, held: Held| {
                let k = (platform.clone(), key(id));
                inv.states.entry(k).or_default().push((s.taken, held));
            };
            let on = |to: &Option<String>| to.as_ref().map_or(Held::Loose, |i| Held::On(key(i)));
            for v in &s.volumes {
                at(&v.id, on(&v.attached_to));
            }
            for a in &s.addresses {
                at(&a.id, on(&a.attached_to));
                if let Some(ip) = &a.ip {
                    at(ip, on(&a.attached_to));
                }
            }
            for i in &s.instances {
                for v in i.volumes.iter().chain(&i.addresses) {
                    at(v, Held::On(key(&i.id)));
                }
            }
            for i in &s.instances {
                let k = (platform.clone(), key(&i.id));
                let since = (!i.running).then(|| i.stopped_at.unwrap_or(s.taken));
                inv.stopped.entry(k).or_default().push((s.taken, since));
            }
            for d in &s.snapshots {
                if let Some(v) = &d.volume {
                    inv.sources.insert((platform.clone(), key(&d.id)), key(v));
                }
            }
            if !s.volumes.is_empty() {
                // A volume a later listing no longer names is gone from then on.
                let now: std::collections::BTreeSet<String> =
                    s.volumes.iter().map(|v| key(&v.id)).collect();
                let listings = inv.listings.entry(platform.clone()).or_default();
                if let Some((_, before)) = listings.last() {
                    for gone in before.difference(&now) {
                        let k = (platform.clone(), gone.clone());
                        inv.states.entry(k).or_default().push((s.taken, Held::Gone));
                    }
                }
                listings.push((s.taken, now));
            }
        }
        inv
    }

    /// Whether no snapshot was given.
    pub fn is_empty(&self) -> bool {
        !self.any
    }

    /// What resource `id` of `platform` was at `t`: the state of the last snapshot taken
    /// at or before `t` that names it; `None` when none does.
    pub fn state_at(&self, platform: &str, id: &str, t: DateTime<Utc>) -> Option<State<'_>> {
        let list = self.states.get(&(platform.to_owned(), key(id)))?;
        let i = list.partition_point(|(from, _)| *from <= t);
        let (_, held) = list.get(i.checked_sub(1)?)?;
        Some(match held {
            Held::On(i) => State::On(i),
            Held::Loose => State::Loose,
            Held::Gone => State::Gone,
        })
    }

    /// The spans in which resource `id` of `platform` was in a state `pick` accepts (the
    /// last state holding on for ever), in time order.
    pub fn spans(
        &self,
        platform: &str,
        id: &str,
        pick: impl Fn(State<'_>) -> bool,
    ) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        let Some(list) = self.states.get(&(platform.to_owned(), key(id))) else {
            return Vec::new();
        };
        let mut out: Vec<(DateTime<Utc>, DateTime<Utc>)> = Vec::new();
        for (i, (from, held)) in list.iter().enumerate() {
            let to = list.get(i + 1).map_or(DateTime::<Utc>::MAX_UTC, |n| n.0);
            let state = match held {
                Held::On(i) => State::On(i),
                Held::Loose => State::Loose,
                Held::Gone => State::Gone,
            };
            if pick(state) && from < &to {
                match out.last_mut() {
                    Some(last) if last.1 == *from => last.1 = to,
                    _ => out.push((*from, to)),
                }
            }
        }
        out
    }

    /// When instance `id` of `platform` stopped, if the last snapshot at or before `t` that
    /// lists it says it was stopped (its stop time where given, else that snapshot's time).
    pub fn stopped_since(
        &self,
        platform: &str,
        id: &str,
        t: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let list = self.stopped.get(&(platform.to_owned(), key(id)))?;
        let i = list.partition_point(|(from, _)| *from <= t);
        list.get(i.checked_sub(1)?)?.1
    }

    /// The instance (its key) resource `id` of `platform` was attached to at `t`; a disk
    /// snapshot's, through its source volume.
    pub fn instance_at(&self, platform: &str, id: &str, t: DateTime<Utc>) -> Option<String> {
        let id = match self.sources.get(&(platform.to_owned(), key(id))) {
            Some(volume) => volume.clone(),
            None => key(id),
        };
        match self.state_at(platform, &id, t)? {
            State::On(to) => Some(to.to_owned()),
            _ => None,
        }
    }

    /// Since when disk snapshot `id` of `platform`'s source volume is known to be gone at
    /// `t`: from the first of the volume listings up to `t` that no longer name it (the last
    /// of them naming none of it since).
    pub fn source_gone_since(
        &self,
        platform: &str,
        id: &str,
        t: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let volume = self.sources.get(&(platform.to_owned(), key(id)))?;
        let listings = self.listings.get(platform)?;
        let mut since = None;
        for (taken, names) in listings.iter().take_while(|(taken, _)| *taken <= t) {
            since = match (names.contains(volume), since) {
                (true, _) => None,
                (false, None) => Some(*taken),
                (false, kept) => kept,
            };
        }
        since
    }
}

impl Inventory {
    /// Links to their instances the rows of `window` that no row links (a disk, an IP, a disk
    /// snapshot billed under its own id) where a snapshot taken at or before the row's start
    /// says which instance holds them: the instance as the bill names it where it has
    /// compute in the window, else as the inventory does. Returns how many rows it linked.
    pub fn link_rows(&self, window: &mut crate::window::Window) -> usize {
        use crate::charge::Category;
        if self.is_empty() {
            return 0;
        }
        let texts = &window.texts;
        let mut named: std::collections::HashMap<(crate::window::Sym, String), crate::window::Sym> =
            Default::default();
        for r in &window.rows {
            if let (Category::Compute, Some(i)) = (r.category, r.instance_id) {
                named.entry((r.platform, key(texts.get(i)))).or_insert(i);
            }
        }
        let linkable =
            [Category::SystemDisk, Category::DataDisk, Category::PublicIp, Category::Snapshot];
        // Each resource's states found once (a month bills a disk hour after hour), then the
        // state at each row's time by halving.
        type States<'s> = Option<&'s [(Time, Held)]>;
        let mut memo: std::collections::HashMap<
            (crate::window::Sym, crate::window::Sym),
            States<'_>,
        > = Default::default();
        let mut found: Vec<(usize, crate::window::Sym, String)> = Vec::new();
        for (at, r) in window.rows.iter().enumerate() {
            let (None, Some(resource)) = (r.instance_id, r.resource_id) else { continue };
            if !linkable.contains(&r.category) {
                continue;
            }
            let states = *memo.entry((r.platform, resource)).or_insert_with(|| {
                let platform = texts.get(r.platform);
                let id = key(texts.get(resource));
                let id =
                    self.sources.get(&(platform.to_owned(), id.clone())).cloned().unwrap_or(id);
                self.states.get(&(platform.to_owned(), id)).map(Vec::as_slice)
            });
            let Some(states) = states else { continue };
            let t = r.charge_start.time();
            let i = states.partition_point(|(from, _)| *from <= t);
            if let Some((_, Held::On(instance))) = i.checked_sub(1).and_then(|i| states.get(i)) {
                found.push((at, r.platform, instance.clone()));
            }
        }
        for (at, platform, instance) in &found {
            let sym = match named.get(&(*platform, instance.clone())) {
                Some(&sym) => sym,
                None => window.texts.sym(instance),
            };
            window.rows[*at].instance_id = Some(sym);
        }
        found.len()
    }
}

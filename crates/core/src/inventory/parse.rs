//! Reading a cloud CLI's JSON as an inventory [`Snapshot`]: its shape recognised from its
//! keys, each resource's state taken from the fields the CLI's documentation gives, every
//! problem said with the JSON path where it is (`$.Volumes[3].State`).

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::Value;

use super::{Address, DiskSnapshot, Instance, Snapshot, Volume};
use crate::error::{ErrorKind, Result};

/// The largest inventory file read (a CLI's listing of 100,000 volumes is some 200 MB).
pub const MAX_INVENTORY_BYTES: u64 = 1 << 30;

/// An inventory refusal at `at` (a JSON path) of `path`.
fn bad(path: &Path, at: &str, message: impl Into<String>) -> crate::Error {
    ErrorKind::Inventory { path: path.to_owned(), at: at.to_owned(), message: message.into() }
        .into()
}

/// Reads `path` as a CLI's output, taken at the time the file says, else at `at`.
pub fn parse(path: &Path, at: Option<DateTime<Utc>>) -> Result<Snapshot> {
    let file = std::fs::File::open(path).map_err(|e| crate::Error::io(path, e))?;
    let size = file.metadata().map_err(|e| crate::Error::io(path, e))?.len();
    if size > MAX_INVENTORY_BYTES {
        return Err(bad(path, "$", format!("{size} bytes: more than an inventory file holds")));
    }
    let bytes = std::fs::read(path).map_err(|e| crate::Error::io(path, e))?;
    parse_at(path, &bytes, at)
}

/// [`parse`] of `bytes`, read from `path`.
pub fn parse_at(path: &Path, bytes: &[u8], at: Option<DateTime<Utc>>) -> Result<Snapshot> {
    let text = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let value: Value = serde_json::from_slice(text).map_err(|e| {
        bad(path, "$", format!("not JSON (line {}, column {}): {e}", e.line(), e.column()))
    })?;
    // A script's wrapper: {"taken_at": …, "output": <the CLI's JSON>}.
    let (value, root, taken) = match value.get("taken_at") {
        Some(t) => {
            let t = t.as_str().ok_or_else(|| bad(path, "$.taken_at", "not a time"))?;
            let t = DateTime::parse_from_rfc3339(t).map_err(|e| {
                bad(path, "$.taken_at", format!("{t:?} is not an RFC 3339 time: {e}"))
            })?;
            let output = value.get("output").cloned().ok_or_else(|| {
                bad(path, "$", "a wrapper with taken_at holds the CLI's JSON as output")
            })?;
            (output, "$.output", Some(t.with_timezone(&Utc)))
        }
        None => (value, "$", None),
    };
    // What it is first: a file of no known shape is refused as such, whatever its time.
    let r = Reader { path, root };
    let mut snap = r.read(&value)?;
    let taken = taken.or(at).ok_or_else(|| {
        bad(path, "$", "says not when it was taken: give --at TIME (RFC 3339), or wrap it as {\"taken_at\": …, \"output\": …}")
    })?;
    snap.taken = taken;
    r.check_twice(&snap)?;
    Ok(snap)
}

struct Reader<'a> {
    path: &'a Path,
    root: &'a str,
}

/// What to read a list of items as.
type Item<'v> = (String, &'v Value);

/// A reader of one CLI output's list.
type Shape<'r> = fn(&Reader<'r>, &Value, &str) -> Result<Snapshot>;

impl Reader<'_> {
    fn bad(&self, at: &str, message: impl Into<String>) -> crate::Error {
        bad(self.path, at, message)
    }

    /// The items of list `key` (a path from the root), each with its JSON path.
    fn items<'v>(&self, list: &'v Value, at: &str) -> Result<Vec<Item<'v>>> {
        let items = list.as_array().ok_or_else(|| self.bad(at, "not a list"))?;
        Ok(items.iter().enumerate().map(|(i, v)| (format!("{at}[{i}]"), v)).collect())
    }

    /// Text field `key` of `item`, required.
    fn text(&self, item: &Item<'_>, key: &str) -> Result<String> {
        self.opt(item, key)?.ok_or_else(|| self.bad(&format!("{}.{key}", item.0), "missing"))
    }

    /// Text field `key` of `item`; none when absent, null or empty.
    fn opt(&self, item: &Item<'_>, key: &str) -> Result<Option<String>> {
        match item.1.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(self.bad(&format!("{}.{key}", item.0), "not a text")),
        }
    }

    /// The snapshot `value` is, by its shape.
    fn read(&self, value: &Value) -> Result<Snapshot> {
        let root = self.root;
        let shapes: [(&str, &str, &str, Shape<'_>); 10] = [
            ("Volumes", "", "aws ec2 describe-volumes", Self::aws_volumes),
            ("Reservations", "", "aws ec2 describe-instances", Self::aws_instances),
            ("Addresses", "", "aws ec2 describe-addresses", Self::aws_addresses),
            ("Disks", "Disk", "aliyun ecs DescribeDisks", Self::aliyun_disks),
            ("Instances", "Instance", "aliyun ecs DescribeInstances", Self::aliyun_instances),
            ("EipAddresses", "EipAddress", "aliyun ecs DescribeEipAddresses", Self::aliyun_eips),
            ("DiskSet", "", "tccli cbs DescribeDisks", Self::tencent_disks),
            ("InstanceSet", "", "tccli cvm DescribeInstances", Self::tencent_instances),
            ("Snapshots", "Snapshot", "aliyun ecs DescribeSnapshots", Self::aliyun_snapshots),
            ("Snapshots", "", "aws ec2 describe-snapshots", Self::aws_snapshots),
        ];
        if let Some(obj) = value.as_object() {
            for (key, inner, command, read) in shapes {
                let Some(list) = obj.get(key) else { continue };
                let (list, at) = match (inner, list.get(inner)) {
                    ("", _) => (list, format!("{root}.{key}")),
                    (_, Some(l)) => (l, format!("{root}.{key}.{inner}")),
                    _ => continue,
                };
                let mut snap = read(self, list, &at)?;
                snap.command = command.to_owned();
                return Ok(snap);
            }
        }
        if let Some(items) = value.as_array() {
            return self.listing(value, items);
        }
        let keys: Vec<&str> = value
            .as_object()
            .map(|o| o.keys().map(String::as_str).take(8).collect())
            .unwrap_or_default();
        Err(self.bad(root, format!(
            "not the output of a CLI gpuaudit reads (keys: {}): aws ec2 describe-volumes|instances|addresses|snapshots, az disk|vm|network public-ip|snapshot list, gcloud compute disks|instances|addresses|snapshots list --format=json, aliyun ecs Describe…, tccli cbs DescribeDisks / cvm DescribeInstances",
            if keys.is_empty() {
                "none".to_owned()
            } else {
                keys.iter().map(|k| k.escape_debug().to_string()).collect::<Vec<_>>().join(", ")
            }
        )))
    }

    /// A top-level list: Azure's or Google Cloud's, by its first item's fields.
    fn listing(&self, value: &Value, items: &[Value]) -> Result<Snapshot> {
        let root = self.root;
        let Some(first) = items.first() else {
            return Err(self.bad(root, "an empty list: whose output it is cannot be told (wrap it as {\"taken_at\": …, \"output\": …} only once it lists something)"));
        };
        let has = |k: &str| first.get(k).is_some();
        let kind = first.get("kind").and_then(Value::as_str).unwrap_or("");
        let id = first.get("id").and_then(Value::as_str).unwrap_or("").to_ascii_lowercase();
        let (command, read): (&str, Shape<'_>) = match kind {
            "compute#disk" => ("gcloud compute disks list", Self::gcp_disks),
            "compute#instance" => ("gcloud compute instances list", Self::gcp_instances),
            "compute#address" => ("gcloud compute addresses list", Self::gcp_addresses),
            "compute#snapshot" => ("gcloud compute snapshots list", Self::gcp_snapshots),
            _ if has("diskState") || id.contains("/providers/microsoft.compute/disks/") => {
                ("az disk list", Self::azure_disks)
            }
            _ if has("storageProfile") || has("powerState") => ("az vm list -d", Self::azure_vms),
            _ if id.contains("/providers/microsoft.network/publicipaddresses/") => {
                ("az network public-ip list", Self::azure_ips)
            }
            _ if id.contains("/providers/microsoft.compute/snapshots/") => {
                ("az snapshot list", Self::azure_snapshots)
            }
            _ => {
                return Err(self.bad(&format!("{root}[0]"), "a list of items gpuaudit does not know (no kind compute#…, no Azure disk, VM, public IP or snapshot id)"));
            }
        };
        let mut snap = read(self, value, root)?;
        snap.command = command.to_owned();
        Ok(snap)
    }

    /// An empty snapshot of `platform` (its time set by [`parse_at`]).
    fn snap(platform: &str) -> Snapshot {
        Snapshot {
            platform: platform.to_owned(),
            taken: DateTime::<Utc>::UNIX_EPOCH,
            command: String::new(),
            volumes: Vec::new(),
            instances: Vec::new(),
            addresses: Vec::new(),
            snapshots: Vec::new(),
        }
    }

    /// One state per resource: a resource named twice with two states is refused.
    fn check_twice(&self, snap: &Snapshot) -> Result<()> {
        fn dedup<T: PartialEq + Clone>(
            r: &Reader<'_>,
            what: &str,
            items: &[T],
            id: impl Fn(&T) -> &str,
        ) -> Result<()> {
            let mut seen: BTreeMap<&str, &T> = BTreeMap::new();
            for item in items {
                match seen.insert(id(item), item) {
                    Some(before) if before != item => {
                        return Err(r.bad(r.root, format!(
                            "{what} {} is named twice with two states: not one moment of one account",
                            id(item).escape_debug()
                        )));
                    }
                    _ => {}
                }
            }
            Ok(())
        }
        dedup(self, "volume", &snap.volumes, |v| &v.id)?;
        dedup(self, "instance", &snap.instances, |i| &i.id)?;
        dedup(self, "address", &snap.addresses, |a| &a.id)?;
        dedup(self, "snapshot", &snap.snapshots, |s| &s.id)
    }
}

#[path = "shapes.rs"]
mod shapes;

/// A time in AWS's `StateTransitionReason` (`User initiated (2024-05-10 12:00:00 GMT)`).
fn transition_time(reason: &str) -> Option<DateTime<Utc>> {
    let inner = reason.split_once('(')?.1.split_once(" GMT)")?.0;
    NaiveDateTime::parse_from_str(inner, "%Y-%m-%d %H:%M:%S").ok().map(|t| t.and_utc())
}

//! Each CLI output's fields, as its documentation gives them.

use serde_json::Value;

use super::{Address, DiskSnapshot, Instance, Reader, Snapshot, Volume, transition_time};
use crate::error::Result;

impl Reader<'_> {
    /// `aws ec2 describe-volumes`: `Volumes[].VolumeId`, `State` (`available`: attached to
    /// nothing), `Attachments[].InstanceId`.
    pub(super) fn aws_volumes(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("aws");
        for item in self.items(list, at)? {
            let id = self.text(&item, "VolumeId")?;
            let state = self.text(&item, "State")?;
            let attached = match item.1.get("Attachments").and_then(Value::as_array) {
                Some(a) => a.iter().find_map(|a| a.get("InstanceId")?.as_str().map(str::to_owned)),
                None => None,
            };
            let attached_to = if state == "available" { None } else { attached };
            snap.volumes.push(Volume { id, attached_to });
        }
        Ok(snap)
    }

    /// `aws ec2 describe-instances`: `Reservations[].Instances[]`: `InstanceId`,
    /// `State.Name`, `StateTransitionReason` (the stop time), `BlockDeviceMappings[].Ebs.VolumeId`.
    pub(super) fn aws_instances(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("aws");
        for reservation in self.items(list, at)? {
            let Some(instances) = reservation.1.get("Instances") else { continue };
            for item in self.items(instances, &format!("{}.Instances", reservation.0))? {
                let id = self.text(&item, "InstanceId")?;
                let state = item.1.pointer("/State/Name").and_then(Value::as_str);
                let state =
                    state.ok_or_else(|| self.bad(&format!("{}.State.Name", item.0), "missing"))?;
                let reason = self.opt(&item, "StateTransitionReason")?.unwrap_or_default();
                let volumes = list_of(item.1.get("BlockDeviceMappings"), "/Ebs/VolumeId");
                let running = matches!(state, "running" | "pending");
                let stopped_at = (!running).then(|| transition_time(&reason)).flatten();
                snap.instances.push(Instance {
                    id,
                    running,
                    stopped_at,
                    volumes,
                    addresses: Vec::new(),
                });
            }
        }
        Ok(snap)
    }

    /// `aws ec2 describe-addresses`: `Addresses[]`: `AllocationId` (else `PublicIp`),
    /// `InstanceId` (absent: bound to no instance).
    pub(super) fn aws_addresses(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("aws");
        for item in self.items(list, at)? {
            let ip = self.opt(&item, "PublicIp")?;
            let id = match self.opt(&item, "AllocationId")? {
                Some(id) => id,
                None => {
                    ip.clone().ok_or_else(|| self.bad(&item.0, "no AllocationId nor PublicIp"))?
                }
            };
            let attached_to = self.opt(&item, "InstanceId")?;
            snap.addresses.push(Address { id, ip, attached_to });
        }
        Ok(snap)
    }

    /// `aws ec2 describe-snapshots`: `Snapshots[].SnapshotId`, `VolumeId`.
    pub(super) fn aws_snapshots(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("aws");
        for item in self.items(list, at)? {
            let id = self.text(&item, "SnapshotId")?;
            let volume = self.opt(&item, "VolumeId")?.filter(|v| v != "vol-ffffffff");
            snap.snapshots.push(DiskSnapshot { id, volume });
        }
        Ok(snap)
    }

    /// `az disk list`: `id`, `diskState` (`Unattached`), `managedBy` (the VM).
    pub(super) fn azure_disks(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("azure");
        for item in self.items(list, at)? {
            let id = self.text(&item, "id")?;
            let state = self.opt(&item, "diskState")?.unwrap_or_default();
            let managed_by = self.opt(&item, "managedBy")?;
            let attached_to =
                if state.eq_ignore_ascii_case("unattached") { None } else { managed_by };
            snap.volumes.push(Volume { id, attached_to });
        }
        Ok(snap)
    }

    /// `az vm list -d`: `id`, `powerState` (`VM running`), `storageProfile.osDisk.managedDisk.id`
    /// and `dataDisks[].managedDisk.id`.
    pub(super) fn azure_vms(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("azure");
        for item in self.items(list, at)? {
            let id = self.text(&item, "id")?;
            let power = self.opt(&item, "powerState")?.unwrap_or_default();
            let mut volumes =
                list_of(item.1.pointer("/storageProfile/dataDisks"), "/managedDisk/id");
            if let Some(os) =
                item.1.pointer("/storageProfile/osDisk/managedDisk/id").and_then(Value::as_str)
            {
                volumes.push(os.to_owned());
            }
            let running = power.eq_ignore_ascii_case("VM running") || power.is_empty();
            snap.instances.push(Instance {
                id,
                running,
                stopped_at: None,
                volumes,
                addresses: Vec::new(),
            });
        }
        Ok(snap)
    }

    /// `az network public-ip list`: `id`, `ipAddress`, `ipConfiguration.id` (the NIC's: bound).
    pub(super) fn azure_ips(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("azure");
        for item in self.items(list, at)? {
            let id = self.text(&item, "id")?;
            let ip = self.opt(&item, "ipAddress")?;
            let bound = item.1.pointer("/ipConfiguration/id").and_then(Value::as_str);
            snap.addresses.push(Address { id, ip, attached_to: bound.map(nic_owner) });
        }
        Ok(snap)
    }

    /// `az snapshot list`: `id`, `creationData.sourceResourceId`.
    pub(super) fn azure_snapshots(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("azure");
        for item in self.items(list, at)? {
            let id = self.text(&item, "id")?;
            let volume = item.1.pointer("/creationData/sourceResourceId").and_then(Value::as_str);
            snap.snapshots.push(DiskSnapshot { id, volume: volume.map(str::to_owned) });
        }
        Ok(snap)
    }

    /// `gcloud compute disks list --format=json`: `name`, `users[]` (its instances' URLs).
    pub(super) fn gcp_disks(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("gcp");
        for item in self.items(list, at)? {
            let id = self.text(&item, "name")?;
            let users = list_of(item.1.get("users"), "");
            snap.volumes
                .push(Volume { id, attached_to: users.first().map(|u| crate::inventory::key(u)) });
        }
        Ok(snap)
    }

    /// `gcloud compute instances list --format=json`: `name`, `status` (`RUNNING`),
    /// `lastStopTimestamp`, `disks[].source`, `networkInterfaces[].accessConfigs[].natIP`.
    pub(super) fn gcp_instances(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("gcp");
        for item in self.items(list, at)? {
            let id = self.text(&item, "name")?;
            let running = self.text(&item, "status")? == "RUNNING";
            let stopped_at = match self.opt(&item, "lastStopTimestamp")? {
                Some(t) if !running => Some(
                    chrono::DateTime::parse_from_rfc3339(&t)
                        .map_err(|e| {
                            self.bad(
                                &format!("{}.lastStopTimestamp", item.0),
                                format!("{t:?}: {e}"),
                            )
                        })?
                        .with_timezone(&chrono::Utc),
                ),
                _ => None,
            };
            let volumes = list_of(item.1.get("disks"), "/source")
                .iter()
                .map(|d| crate::inventory::key(d))
                .collect();
            let mut addresses = Vec::new();
            for nic in
                item.1.get("networkInterfaces").and_then(Value::as_array).into_iter().flatten()
            {
                addresses.extend(list_of(nic.get("accessConfigs"), "/natIP"));
            }
            snap.instances.push(Instance { id, running, stopped_at, volumes, addresses });
        }
        Ok(snap)
    }

    /// `gcloud compute addresses list --format=json`: `name`, `address`, `status` (`IN_USE`),
    /// `users[]`.
    pub(super) fn gcp_addresses(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("gcp");
        for item in self.items(list, at)? {
            let id = self.text(&item, "name")?;
            let ip = self.opt(&item, "address")?;
            let users = list_of(item.1.get("users"), "");
            let attached_to = users.first().map(|u| crate::inventory::key(u));
            snap.addresses.push(Address { id, ip, attached_to });
        }
        Ok(snap)
    }

    /// `gcloud compute snapshots list --format=json`: `name`, `sourceDisk`.
    pub(super) fn gcp_snapshots(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("gcp");
        for item in self.items(list, at)? {
            let id = self.text(&item, "name")?;
            let volume = self.opt(&item, "sourceDisk")?.map(|d| crate::inventory::key(&d));
            snap.snapshots.push(DiskSnapshot { id, volume });
        }
        Ok(snap)
    }

    /// `aliyun ecs DescribeDisks`: `Disks.Disk[].DiskId`, `Status` (`Available`), `InstanceId`.
    pub(super) fn aliyun_disks(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("aliyun");
        for item in self.items(list, at)? {
            let id = self.text(&item, "DiskId")?;
            let available = self.opt(&item, "Status")?.is_some_and(|s| s == "Available");
            let attached_to = if available { None } else { self.opt(&item, "InstanceId")? };
            snap.volumes.push(Volume { id, attached_to });
        }
        Ok(snap)
    }

    /// `aliyun ecs DescribeInstances`: `Instances.Instance[].InstanceId`, `Status`
    /// (`Running`), `EipAddress.AllocationId`.
    pub(super) fn aliyun_instances(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("aliyun");
        for item in self.items(list, at)? {
            let id = self.text(&item, "InstanceId")?;
            let running = self.text(&item, "Status")? == "Running";
            let eip = item.1.pointer("/EipAddress/AllocationId").and_then(Value::as_str);
            let addresses = eip.filter(|e| !e.is_empty()).map(str::to_owned).into_iter().collect();
            snap.instances.push(Instance {
                id,
                running,
                stopped_at: None,
                volumes: Vec::new(),
                addresses,
            });
        }
        Ok(snap)
    }

    /// `aliyun ecs DescribeEipAddresses`: `EipAddresses.EipAddress[].AllocationId`,
    /// `IpAddress`, `InstanceId`.
    pub(super) fn aliyun_eips(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("aliyun");
        for item in self.items(list, at)? {
            let id = self.text(&item, "AllocationId")?;
            let ip = self.opt(&item, "IpAddress")?;
            let attached_to = self.opt(&item, "InstanceId")?;
            snap.addresses.push(Address { id, ip, attached_to });
        }
        Ok(snap)
    }

    /// `aliyun ecs DescribeSnapshots`: `Snapshots.Snapshot[].SnapshotId`, `SourceDiskId`.
    pub(super) fn aliyun_snapshots(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("aliyun");
        for item in self.items(list, at)? {
            let id = self.text(&item, "SnapshotId")?;
            let volume = self.opt(&item, "SourceDiskId")?;
            snap.snapshots.push(DiskSnapshot { id, volume });
        }
        Ok(snap)
    }

    /// `tccli cbs DescribeDisks`: `DiskSet[].DiskId`, `Attached`, `InstanceId`.
    pub(super) fn tencent_disks(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("tencent");
        for item in self.items(list, at)? {
            let id = self.text(&item, "DiskId")?;
            let attached = item.1.get("Attached").and_then(Value::as_bool).unwrap_or(false);
            let attached_to = if attached { self.opt(&item, "InstanceId")? } else { None };
            snap.volumes.push(Volume { id, attached_to });
        }
        Ok(snap)
    }

    /// `tccli cvm DescribeInstances`: `InstanceSet[].InstanceId`, `InstanceState`
    /// (`RUNNING`), `SystemDisk.DiskId`, `DataDisks[].DiskId`, `PublicIpAddresses[]`.
    pub(super) fn tencent_instances(&self, list: &Value, at: &str) -> Result<Snapshot> {
        let mut snap = Self::snap("tencent");
        for item in self.items(list, at)? {
            let id = self.text(&item, "InstanceId")?;
            let running = self.text(&item, "InstanceState")? == "RUNNING";
            let mut volumes = list_of(item.1.get("DataDisks"), "/DiskId");
            volumes.extend(
                item.1.pointer("/SystemDisk/DiskId").and_then(Value::as_str).map(str::to_owned),
            );
            let addresses = list_of(item.1.get("PublicIpAddresses"), "");
            snap.instances.push(Instance { id, running, stopped_at: None, volumes, addresses });
        }
        Ok(snap)
    }
}

/// The texts at `pointer` of each item of list `value` (the items themselves for "").
fn list_of(value: Option<&Value>, pointer: &str) -> Vec<String> {
    let items = value.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    items
        .iter()
        .filter_map(|v| if pointer.is_empty() { Some(v) } else { v.pointer(pointer) })
        .filter_map(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The VM of a NIC's IP configuration id (`…/networkInterfaces/NIC/ipConfigurations/…`): the
/// NIC itself, which `az vm list -d` does not name; kept as the NIC, so the address is bound.
fn nic_owner(config: &str) -> String {
    config.split("/ipConfigurations/").next().unwrap_or(config).to_owned()
}

//! Inventory snapshots: every CLI output of the fixtures read into what it says (each
//! resource's state, counted by hand from the file), what a set of snapshots says over time,
//! and every malformed file refused naming the file and the JSON path.

use std::path::Path;

use chrono::{DateTime, TimeZone, Utc};
use gpuaudit_core::inventory::{Inventory, Snapshot, State, parse, parse_at};

fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 5, 20, 0, 0, 0).unwrap()
}

fn read(rel: &str) -> Snapshot {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/inventory").join(rel);
    parse(&path, Some(at())).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn every_cli_output_reads_as_what_it_says() {
    let cases: [(&str, &str, &str, [usize; 4]); 16] = [
        ("aws/describe-volumes.json", "aws", "aws ec2 describe-volumes", [3, 0, 0, 0]),
        ("aws/describe-instances.json", "aws", "aws ec2 describe-instances", [0, 2, 0, 0]),
        ("aws/describe-addresses.json", "aws", "aws ec2 describe-addresses", [0, 0, 2, 0]),
        ("aws/describe-snapshots.json", "aws", "aws ec2 describe-snapshots", [0, 0, 0, 2]),
        ("azure/az_disk_list.json", "azure", "az disk list", [2, 0, 0, 0]),
        ("azure/az_vm_list_d.json", "azure", "az vm list -d", [0, 1, 0, 0]),
        (
            "azure/az_network_public_ip_list.json",
            "azure",
            "az network public-ip list",
            [0, 0, 2, 0],
        ),
        ("azure/az_snapshot_list.json", "azure", "az snapshot list", [0, 0, 0, 1]),
        ("gcp/gcloud_compute_disks_list.json", "gcp", "gcloud compute disks list", [2, 0, 0, 0]),
        (
            "gcp/gcloud_compute_instances_list.json",
            "gcp",
            "gcloud compute instances list",
            [0, 1, 0, 0],
        ),
        (
            "gcp/gcloud_compute_addresses_list.json",
            "gcp",
            "gcloud compute addresses list",
            [0, 0, 2, 0],
        ),
        (
            "gcp/gcloud_compute_snapshots_list.json",
            "gcp",
            "gcloud compute snapshots list",
            [0, 0, 0, 1],
        ),
        ("aliyun/DescribeDisks.json", "aliyun", "aliyun ecs DescribeDisks", [2, 0, 0, 0]),
        ("aliyun/DescribeInstances.json", "aliyun", "aliyun ecs DescribeInstances", [0, 1, 0, 0]),
        (
            "aliyun/DescribeEipAddresses.json",
            "aliyun",
            "aliyun ecs DescribeEipAddresses",
            [0, 0, 2, 0],
        ),
        ("aliyun/DescribeSnapshots.json", "aliyun", "aliyun ecs DescribeSnapshots", [0, 0, 0, 1]),
    ];
    for (rel, platform, command, counts) in cases {
        let s = read(rel);
        assert_eq!((s.platform.as_str(), s.command.as_str()), (platform, command), "{rel}");
        let got = [s.volumes.len(), s.instances.len(), s.addresses.len(), s.snapshots.len()];
        assert_eq!(got, counts, "{rel}");
    }
    for (rel, volumes, instances) in
        [("tencent/cbs_DescribeDisks.json", 2, 0), ("tencent/cvm_DescribeInstances.json", 0, 1)]
    {
        let s = read(rel);
        assert_eq!(
            (s.platform.as_str(), s.volumes.len(), s.instances.len()),
            ("tencent", volumes, instances)
        );
    }
    // The states the rules read.
    let unattached: Vec<String> = [
        "aws/describe-volumes.json",
        "azure/az_disk_list.json",
        "gcp/gcloud_compute_disks_list.json",
        "aliyun/DescribeDisks.json",
        "tencent/cbs_DescribeDisks.json",
    ]
    .iter()
    .flat_map(|rel| read(rel).volumes.into_iter().filter(|v| v.attached_to.is_none()).map(|v| v.id))
    .collect();
    assert_eq!(
        unattached,
        [
            "vol-09409784ef6121644",
            "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/GPU/providers/Microsoft.Compute/disks/old-data",
            "scratch-old",
            "d-bp1spare",
            "disk-data002"
        ]
    );
    let stopped = read("aws/describe-instances.json").instances;
    let when = Utc.with_ymd_and_hms(2018, 11, 5, 4, 0, 0).unwrap();
    assert_eq!((stopped[0].running, stopped[0].stopped_at), (false, Some(when)));
    assert_eq!(stopped[0].volumes, ["vol-086a6ac5eec663f86"]);
    let gcp = read("gcp/gcloud_compute_instances_list.json").instances;
    let stop = Utc.with_ymd_and_hms(2024, 5, 11, 1, 30, 0).unwrap();
    assert_eq!((gcp[0].running, gcp[0].stopped_at), (false, Some(stop)));
    assert!(!read("azure/az_vm_list_d.json").instances[0].running, "deallocated");
    assert!(!read("tencent/cvm_DescribeInstances.json").instances[0].running);
    let idle: Vec<String> = [
        "aws/describe-addresses.json",
        "aliyun/DescribeEipAddresses.json",
        "gcp/gcloud_compute_addresses_list.json",
        "azure/az_network_public_ip_list.json",
    ]
    .iter()
    .flat_map(|rel| {
        read(rel)
            .addresses
            .into_iter()
            .filter(|a| a.attached_to.is_none())
            .map(|a| a.ip.unwrap_or_default())
    })
    .collect();
    assert_eq!(idle, ["203.0.113.0", "47.0.0.2", "34.0.0.1", "20.0.0.2"]);
}

#[test]
fn snapshots_say_what_holds_from_their_time_until_another_says_otherwise() {
    let path = Path::new("v.json");
    let volumes = |t: u32, body: &str| {
        let at = Utc.with_ymd_and_hms(2024, 5, t, 0, 0, 0).unwrap();
        parse_at(path, format!("{{\"Volumes\": [{body}]}}").as_bytes(), Some(at)).unwrap()
    };
    let attached =
        r#"{"VolumeId": "vol-1", "State": "in-use", "Attachments": [{"InstanceId": "i-1"}]}"#;
    let loose = r#"{"VolumeId": "vol-1", "State": "available", "Attachments": []}"#;
    let other = r#"{"VolumeId": "vol-2", "State": "available", "Attachments": []}"#;
    let snaps = vec![volumes(10, attached), volumes(12, loose), volumes(14, other)];
    let inv = Inventory::of(&snaps);
    let day = |d: u32| Utc.with_ymd_and_hms(2024, 5, d, 0, 0, 0).unwrap();
    assert_eq!(inv.state_at("aws", "vol-1", day(9)), None, "before any snapshot: unknown");
    assert_eq!(inv.state_at("aws", "vol-1", day(11)), Some(State::On("i-1")));
    assert_eq!(inv.state_at("aws", "vol-1", day(13)), Some(State::Loose));
    assert_eq!(inv.state_at("aws", "vol-1", day(20)), Some(State::Gone), "no longer listed");
    assert_eq!(inv.spans("aws", "vol-1", |s| s == State::Loose), [(day(12), day(14))]);
    assert_eq!(inv.instance_at("aws", "vol-1", day(11)).as_deref(), Some("i-1"));
}

#[test]
fn malformed_inventories_are_refused_naming_the_file_and_where() {
    let path = Path::new("inv.json");
    let t = Some(at());
    for (text, at, says) in [
        ("{not json", t, "inv.json: $: not JSON"),
        (r#"{"Volumes": [{"State": "available"}]}"#, t, "inv.json: $.Volumes[0].VolumeId: missing"),
        (r#"{"Volumes": {"x": 1}}"#, t, "inv.json: $.Volumes: not a list"),
        (r#"[]"#, t, "inv.json: $: an empty list"),
        (
            r#"[{"kind": "storage#bucket"}]"#,
            t,
            "inv.json: $[0]: a list of items gpuaudit does not know",
        ),
        (r#"{"Volumes": []}"#, None, "inv.json: $: says not when it was taken"),
        (
            r#"{"taken_at": "yesterday", "output": {"Volumes": []}}"#,
            None,
            "inv.json: $.taken_at: \"yesterday\" is not an RFC 3339 time",
        ),
        (
            r#"{"Reservations": [{"Instances": [{"InstanceId": "i-1", "State": {"Name": "running"}}, {"InstanceId": "i-1", "State": {"Name": "stopped"}}]}]}"#,
            t,
            "inv.json: $: instance i-1 is named twice with two states",
        ),
    ] {
        let err = parse_at(path, text.as_bytes(), at).unwrap_err().to_string();
        assert!(err.contains(says), "{text}:\n got: {err}\nwant: {says}");
    }
    // Named twice alike is one resource.
    let twice = r#"{"Volumes": [{"VolumeId": "vol-1", "State": "available"}, {"VolumeId": "vol-1", "State": "available"}]}"#;
    assert!(parse_at(path, twice.as_bytes(), t).is_ok());
}

/// A disk snapshot of AWS billed daily in May 2024 (the bill names no instance): W004 once a
/// volume listing no longer names the volume it was taken from, from that listing's time on;
/// and not before, nor without the listing.
#[test]
fn a_snapshot_whose_volume_is_gone_is_stale_from_the_listing_that_shows_it() {
    use gpuaudit_core::config::Config;
    use gpuaudit_core::platforms::Platforms;
    use gpuaudit_core::waste::{RULES, audit_inventory};
    use gpuaudit_core::{Category, Charge, ChargeId, Origin, YearMonth};
    use rust_decimal_macros::dec;
    let charges: Vec<Charge> = (1..=31)
        .map(|day| {
            let start = Utc.with_ymd_and_hms(2024, 5, day, 0, 0, 0).unwrap();
            Charge {
                id: ChargeId(u128::from(day)),
                platform: "aws".into(),
                billing_period: YearMonth::new(2024, 5).unwrap(),
                charge_start: start,
                charge_end: start + chrono::Duration::days(1),
                resource_id: Some(
                    "arn:aws:ec2:us-east-1:012345678910:snapshot/snap-066877671789bd71b".into(),
                ),
                category: Category::Snapshot,
                billed_cost: dec!(1.00),
                currency: "USD".into(),
                origin: Origin {
                    file: "cur.csv".into(),
                    line: u64::from(day) + 1,
                    item: "EBS:SnapshotUsage".into(),
                },
                usage_type: Some("EBS:SnapshotUsage".into()),
                ..Charge::blank()
            }
        })
        .collect();
    let window = std::sync::Arc::new(gpuaudit_core::window::rows_of(&charges));
    let may = YearMonth::new(2024, 5).unwrap();
    let audit = |snaps: &[Snapshot]| {
        let inv = Inventory::of(snaps);
        audit_inventory(RULES, &window, may, &Config::default(), &Platforms::default(), &inv)
            .unwrap()
    };
    let snapshots = read("aws/describe-snapshots.json");
    // The snapshots alone: whether the volume exists is not known.
    assert!(audit(std::slice::from_ref(&snapshots)).findings.is_empty());
    // A volume listing of May 10 that does not name vol-0aaaaaaaaaaaaaaaa: stale from then.
    let mut volumes = read("aws/describe-volumes.json");
    volumes.taken = Utc.with_ymd_and_hms(2024, 5, 10, 0, 0, 0).unwrap();
    let found = audit(&[snapshots, volumes]).findings;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].code, found[0].amount), ("W004", dec!(22.00)), "May 10 to 31: 22 days");
    assert!(found[0].recommendation.contains("is gone in the inventory taken 2024-05-10"));
}

//! Waste audit throughput: 1,000,000 generated charges (1,603 Alibaba-style instances with
//! hourly compute on 20 days of May, daily disks, IPs, snapshots and traffic), audited with
//! every rule. Criterion reports the time; after the run the bench prints the resident
//! memory before and after auditing (VmRSS / VmHWM).
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout)]

use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, TimeZone, Utc};
use criterion::{Criterion, Throughput, criterion_group};
use gpuaudit_core::config::Config;
use gpuaudit_core::waste::audit;
use gpuaudit_core::{Category, Charge, ChargeId, Kind, Origin, Pricing, YearMonth};
use rust_decimal::Decimal;

const INSTANCES: usize = 1_603;

fn charge(
    n: usize,
    instance: &str,
    resource: String,
    category: Category,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    cents: i64,
) -> Charge {
    Charge {
        id: ChargeId(n as u128),
        platform: "aliyun".into(),
        account: Some("1428306912345678".into()),
        sub_account: None,
        account_name: None,
        sub_account_name: None,
        billing_period: YearMonth::new(2024, 5).unwrap(),
        charge_start: start,
        charge_end: end,
        resource_id: Some(resource),
        resource_name: None,
        instance_id: Some(instance.to_owned()),
        region: Some("cn-hangzhou".into()),
        category,
        kind: Kind::Usage,
        pricing: Pricing::OnDemand,
        gpu_model: (category == Category::Compute).then(|| "A10".to_owned()),
        gpu_count: None,
        quantity: None,
        unit: None,
        unit_price: None,
        list_cost: None,
        billed_cost: Decimal::new(cents, 2),
        currency: "CNY".into(),
        balance_after: None,
        origin: Origin { file: "bench.csv".into(), line: n as u64 + 2, item: category.to_string() },
        service: None,
        usage_type: None,
    }
}

fn generate() -> Vec<Charge> {
    let day0 = Utc.with_ymd_and_hms(2024, 4, 30, 16, 0, 0).unwrap(); // May 1, Beijing
    let mut out = Vec::with_capacity(1_000_000);
    for k in 0..INSTANCES {
        let instance = format!("i-bp1{k:010x}");
        // instances run 20 days, starting on a different day each
        let first = k % 11;
        for d in 0..31 {
            let start = day0 + Duration::days(d as i64);
            let running = d >= first && d < first + 20;
            if running {
                for h in 0..24 {
                    let s = start + Duration::hours(h);
                    out.push(charge(
                        out.len(),
                        &instance,
                        instance.clone(),
                        Category::Compute,
                        s,
                        s + Duration::hours(1),
                        805,
                    ));
                }
                out.push(charge(
                    out.len(),
                    &instance,
                    instance.clone(),
                    Category::Traffic,
                    start,
                    start + Duration::days(1),
                    1480,
                ));
            }
            let end = start + Duration::days(1);
            out.push(charge(
                out.len(),
                &instance,
                instance.clone(),
                Category::SystemDisk,
                start,
                end,
                125,
            ));
            out.push(charge(
                out.len(),
                &instance,
                format!("d-{k}"),
                Category::DataDisk,
                start,
                end,
                1250,
            ));
            out.push(charge(
                out.len(),
                &instance,
                format!("eip-{k}"),
                Category::PublicIp,
                start,
                end,
                151,
            ));
            out.push(charge(
                out.len(),
                &instance,
                format!("s-{k}"),
                Category::Snapshot,
                start,
                end,
                80,
            ));
        }
    }
    out
}

fn status_mib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |kib| kib / 1024)
}

fn bench(c: &mut Criterion) {
    let charges = generate();
    let rss_before = status_mib("VmRSS:");
    let month = YearMonth::new(2024, 5).unwrap();
    let config = Config::default();
    let mut group = c.benchmark_group("waste");
    group.sample_size(10).measurement_time(StdDuration::from_secs(30));
    group.throughput(Throughput::Elements(charges.len() as u64));
    let mut findings = 0;
    group.bench_function(format!("audit_{}_charges", charges.len()), |b| {
        b.iter(|| {
            let f = audit(&charges, month, &config).expect("the generated charges fit");
            findings = f.len();
            f
        })
    });
    group.finish();
    println!(
        "waste: {} charges, {findings} findings; RSS with the charges loaded {rss_before} MiB, peak {} MiB",
        charges.len(),
        status_mib("VmHWM:")
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}

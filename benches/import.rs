//! Import throughput: a generated Alibaba BillingItemDetail bill of 1,000,000 rows (written
//! to the target folder at bench time, never committed) into a fresh ledger.
//!
//! Criterion reports time and MB/s; after the run the bench prints rows/s and the process's
//! peak resident memory (VmHWM). Set `GPUAUDIT_BENCH_ROWS` to change the row count.
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout)]

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group};
use gpuaudit_core::ledger::{ImportOptions, Store};

const HEADER: &str = "账期,财务单元,账号ID,账号,Owner账号,产品Code,产品,产品明细Code,产品明细,消费类型,消费时间,账单开始时间,账单结束时间,服务时长,订单号/账单号,账单类型,计费方式,实例ID,实例昵称,资源组,实例标签,实例配置,实例规格,公网IP,私网IP,地域,可用区,计费项,单价,单价单位,用量,用量单位,资源包抵扣,原价,优惠金额,优惠券抵扣,应付金额,现金支付,代金券抵扣,储值卡支付金额,欠费金额";

const ITEMS: &[(&str, &str, u32)] = &[
    ("实例规格", "小时", 847),
    ("系统盘", "GB", 125),
    ("数据盘", "GB", 1250),
    ("公网流量", "GB", 148),
];

fn rows() -> usize {
    std::env::var("GPUAUDIT_BENCH_ROWS").ok().and_then(|s| s.parse().ok()).unwrap_or(1_000_000)
}

/// Writes the bill: hourly rows of 4 items for many instances over May 2024.
fn generate(path: &Path, n: usize) {
    let mut w = BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(w, "{HEADER}").unwrap();
    for i in 0..n {
        let (item, unit, cents) = ITEMS[i % ITEMS.len()];
        let hour = (i / ITEMS.len()) % (31 * 24);
        let instance = i / (ITEMS.len() * 31 * 24);
        let (day, h) = (1 + hour / 24, hour % 24);
        let list = cents + (i % 7) as u32;
        let billed = list - list / 20;
        writeln!(
            w,
            "2024-05,默认财务单元,1428306912345678,gpu-lab,1428306912345678,ecs,云服务器 ECS,ecs,云服务器ECS-按量付费,后付费,\
2024-05-{day:02} {h:02}:59:59,2024-05-{day:02} {h:02}:00:00,2024-05-{day:02} {h:02}:59:59,3600,2024{day:02}{i:010},后付账单,按量付费,\
i-bp1{instance:010x},train-{instance},默认资源组,team:ml,CPU:8核;GPU:1*NVIDIA A10,ecs.gn7i-c8g1.2xlarge,47.96.{}.{},,华东1（杭州）,杭州 可用区I,\
{item},0.{:04},元/{unit},1,{unit},0,{}.{:02},{}.{:02},0.00,{}.{:02},{}.{:02},0.00,0.00,0.00",
            instance % 256,
            instance / 256 % 256,
            cents,
            list / 100,
            list % 100,
            (list - billed) / 100,
            (list - billed) % 100,
            billed / 100,
            billed % 100,
            billed / 100,
            billed % 100,
        )
        .unwrap();
    }
    w.flush().unwrap();
}

fn bench_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"), PathBuf::from);
    let dir = target.join("bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn peak_rss_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

fn import(c: &mut Criterion) {
    let n = rows();
    let dir = bench_dir();
    let bill = dir.join(format!("aliyun-{n}.csv"));
    if !bill.exists() {
        generate(&bill, n);
    }
    let bytes = std::fs::metadata(&bill).unwrap().len();
    let mut group = c.benchmark_group("import");
    group.sample_size(10).measurement_time(Duration::from_secs(60));
    group.throughput(Throughput::Bytes(bytes));
    let mut last = Duration::ZERO;
    group.bench_function(format!("aliyun_{n}_rows"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let ledger = tempfile::tempdir_in(&dir).unwrap();
                let store = Store::open(ledger.path().join(".gpuaudit"));
                let start = std::time::Instant::now();
                let out = store.import(std::slice::from_ref(&bill), &ImportOptions::default());
                total += start.elapsed();
                assert_eq!(out.unwrap().files[0].new, n as u64);
            }
            last = total / iters as u32;
            total
        })
    });
    group.finish();
    println!(
        "import: {n} rows, {:.1} MB in {:.2?} (last sample): {:.0} rows/s, {:.1} MB/s; peak RSS {} MiB",
        bytes as f64 / 1e6,
        last,
        n as f64 / last.as_secs_f64(),
        bytes as f64 / 1e6 / last.as_secs_f64(),
        peak_rss_mib().map_or("?".into(), |m| m.to_string()),
    );
}

criterion_group!(benches, import);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}

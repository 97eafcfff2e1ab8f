//! Hours as the bills mean them: an hour a bill closes at `hh:59:59` is the whole hour (Alibaba,
//! Tencent: a profile key says so), and AutoDL's 无卡模式 hours carry no GPU whatever the
//! instance's note says. Every figure is counted by hand from the rows the test writes.

use std::path::Path;

use gpuaudit_core::config::Config;
use gpuaudit_core::cost::{CostOptions, report};
use gpuaudit_core::{Charge, YearMonth, parse_bill};
use rust_decimal_macros::dec;

fn bill(name: &str, text: &str) -> Vec<Charge> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    parse_bill(&path, None).unwrap().charges
}

/// `n` consecutive local hours from 2024-05-01 00:00, each as (start, end at hh:59:59).
fn hours(n: i64) -> impl Iterator<Item = (String, String)> {
    let first = chrono::NaiveDate::from_ymd_opt(2024, 5, 1).unwrap().and_hms_opt(0, 0, 0).unwrap();
    (0..n).map(move |h| {
        let start = first + chrono::Duration::hours(h);
        let end = start + chrono::Duration::seconds(3599);
        (start.format("%Y-%m-%d %H:%M:%S").to_string(), end.format("%Y-%m-%d %H:%M:%S").to_string())
    })
}

fn may() -> YearMonth {
    YearMonth::new(2024, 5).unwrap()
}

#[test]
fn alibaba_hours_closed_at_59_59_are_whole_hours() {
    let mut rows = vec![
        "账期,产品,计费方式,实例ID,实例规格,计费项,应付金额,账单开始时间,账单结束时间".to_owned(),
    ];
    for (from, to) in hours(480) {
        rows.push(format!(
            "2024-05,云服务器 ECS,按量付费,i-gpu1,ecs.gn7i-c8g1.2xlarge,实例规格,8.05,{from},{to}"
        ));
    }
    let charges = bill("aliyun.csv", &(rows.join("\n") + "\n"));
    assert_eq!(charges.len(), 480);
    let r = report(&charges, may(), &Config::default(), &CostOptions::default()).unwrap();
    let line = r.instances.iter().find(|l| l.instance.as_deref() == Some("i-gpu1")).unwrap();
    // 480 rows of 10:00:00–10:59:59 are 480 hours, not 479.8667; no second between them off.
    assert_eq!(line.compute_hours(), dec!(480));
    assert_eq!(line.usage.off_seconds, Some(0));
}

#[test]
fn tencent_hours_closed_at_59_59_are_whole_hours() {
    let header = "支付者UIN,产品名称,计费模式,交易类型,交易ID,扣费时间,使用开始时间,使用结束时间,实例ID,实例名称,实例类型,地域,组件类型,组件名称,组件刊例价,组件用量,组件用量单位,原价,优惠后总价,账单月份";
    let mut rows = vec![header.to_owned()];
    for (i, (from, to)) in hours(480).enumerate() {
        rows.push(format!("100012345678,云服务器,按量计费,按量计费小时结,T{i:08},{to},{from},{to},ins-8x2k4mq1,train-t4,GN7.2XLARGE32,广州,GPU,GPU,8.00,1,卡*小时,8.00,7.20,2024-05"));
    }
    let charges = bill("tencent.csv", &(rows.join("\n") + "\n"));
    assert_eq!(charges.len(), 480);
    let notes = "[[instance]]\nplatform = \"tencent\"\nid = \"ins-8x2k4mq1\"\ngpu_count = 1\n";
    let config = Config::parse(notes, Path::new("gpuaudit.toml")).unwrap();
    let r = report(&charges, may(), &config, &CostOptions::default()).unwrap();
    let line = r.instances.iter().find(|l| l.instance.as_deref() == Some("ins-8x2k4mq1")).unwrap();
    assert_eq!((line.compute_hours(), line.gpu_hours()), (dec!(480), Some(dec!(480))));
}

#[test]
fn autodl_no_gpu_mode_hours_are_compute_hours_but_no_gpu_hours() {
    // 624 hours on the GPU at 1.98 an hour, then 24 in 无卡模式 at 0.10, and one hour whose
    // note says 无卡 (at a rate AutoDL might change): posted at hh:59:59, each covering the
    // hour since the previous row.
    let mut rows =
        vec!["流水号,交易时间,收支类型,交易类型,交易渠道,交易金额,账户余额,备注".to_owned()];
    let mut balance = dec!(5000);
    for (i, (_, at)) in hours(649).enumerate() {
        let (amount, note) = match i {
            0..624 => (dec!(1.98), "容器实例ID：ab12cd34ef"),
            624..648 => (dec!(0.10), "容器实例ID：ab12cd34ef"),
            _ => (dec!(0.20), "容器实例ID：ab12cd34ef 无卡模式"),
        };
        balance -= amount;
        rows.push(format!("A{i:05},{at},支出,按量计费,余额,{amount},{balance},{note}"));
    }
    let charges = bill("autodl.csv", &(rows.join("\n") + "\n"));
    let notes = "[[instance]]\nplatform = \"autodl\"\nid = \"ab12cd34ef\"\ngpu_model = \"RTX 4090\"\ngpu_count = 1\n";
    let config = Config::parse(notes, Path::new("gpuaudit.toml")).unwrap();
    let r = report(&charges, may(), &config, &CostOptions::default()).unwrap();
    let line = r.instances.iter().find(|l| l.instance.as_deref() == Some("ab12cd34ef")).unwrap();
    // The first row covers the hour that ends at its time (no row before it): 649 hours on,
    // 624 of them with the GPU.
    assert_eq!((line.compute_hours(), line.gpu_hours()), (dec!(649), Some(dec!(624))));
    let compute = dec!(1.98) * dec!(624) + dec!(0.10) * dec!(24) + dec!(0.20);
    assert_eq!(line.cost.compute, compute);
    assert_eq!(line.per_gpu_hour_compute().unwrap(), Some(compute / dec!(624)));
}

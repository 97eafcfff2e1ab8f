//! `cost`: usage and all-in cost per instance, with figures computed by hand in each test:
//! GPU-hours from AutoDL's since-previous-row spans, from daily rows, from CUR and FOCUS
//! rows with a GPU count; attached costs and the unattached line; prices from the ledger and
//! from the card; the unpriced residual; the break-even; totals equal to `summary`'s.

use std::path::Path;

use gpuaudit_core::config::Config;
use gpuaudit_core::cost::{Basis, CostKey, CostLine, CostOptions, CostReport, Measure, report};
use gpuaudit_core::report::{GroupKey, summarize};
use gpuaudit_core::{Charge, YearMonth, parse_bill};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;

fn may() -> YearMonth {
    YearMonth::new(2024, 5).unwrap()
}

fn config(text: &str) -> Config {
    Config::parse(text, Path::new("gpuaudit.toml")).unwrap()
}

/// The charges of bills written as `(name, text)` into a fresh folder.
fn bills(files: &[(&str, &str)]) -> Vec<Charge> {
    let dir = tempfile::tempdir().unwrap();
    let mut charges = Vec::new();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        charges.extend(parse_bill(&path, None).unwrap().charges);
    }
    charges
}

fn line<'a>(r: &'a CostReport, instance: Option<&str>) -> &'a CostLine {
    r.instances
        .iter()
        .find(|l| l.instance.as_deref() == instance)
        .unwrap_or_else(|| panic!("no line of {instance:?} in {:#?}", r.instances))
}

/// AutoDL: two hourly compute rows and one that ended 20 min 16 s after the previous; a data
/// disk posted daily; a top-up. Instance b has a disk row and no compute.
const AUTODL: &str = "流水号,交易时间,收支类型,交易类型,交易渠道,交易金额,账户余额,备注
A0006,2024-05-02 23:59:59,支出,数据盘,余额,1.60,93.77,容器实例ID：ab12cd34ef 数据盘
A0005,2024-05-02 23:59:59,支出,数据盘,余额,0.80,95.37,容器实例ID：ffee001122 数据盘
A0004,2024-05-02 12:20:15,支出,按量计费,余额,0.73,96.17,容器实例ID：ab12cd34ef
A0003,2024-05-02 11:59:59,支出,按量计费,余额,2.18,96.90,容器实例ID：ab12cd34ef
A0002,2024-05-02 10:59:59,支出,按量计费,余额,2.18,99.08,容器实例ID：ab12cd34ef
A0001,2024-05-02 09:00:00,收入,充值,支付宝,101.26,101.26,余额充值
";

const AUTODL_NOTES: &str = r#"
[[instance]]
platform = "autodl"
id = "ab12cd34ef"
gpu_model = "RTX 4090"
gpu_count = 2
data_disk_gb = 200
"#;

#[test]
fn gpu_hours_from_since_previous_row_spans_and_the_notes() {
    let charges = bills(&[("autodl.csv", AUTODL)]);
    let r = report(&charges, may(), &config(AUTODL_NOTES), &CostOptions::default()).unwrap();
    let a = line(&r, Some("ab12cd34ef"));
    // 1 h + 1 h + 20 min 16 s (since 11:59:59), two GPUs.
    let seconds = 3600 + 3600 + 20 * 60 + 16;
    assert_eq!(a.usage.compute_seconds, seconds);
    assert_eq!(a.usage.gpu_seconds, Some(2 * seconds));
    assert_eq!((a.gpu_model.as_deref(), a.gpu_count), (Some("RTX 4090"), Some(2)));
    assert_eq!(
        (a.cost.compute, a.cost.data_disk, a.all_in().unwrap()),
        (dec!(5.09), dec!(1.60), dec!(6.69))
    );
    let gpu_hours = Decimal::from(2 * seconds) / Decimal::from(3600);
    assert_eq!(a.per_gpu_hour_compute().unwrap(), Some(dec!(5.09) / gpu_hours));
    assert_eq!(a.per_gpu_hour_all_in().unwrap(), Some(dec!(6.69) / gpu_hours));
    assert_eq!(a.hidden_share().unwrap(), Some(dec!(1.60) / dec!(6.69)));
    // The disk row covers the day that ends at 23:59:59: 200 GB·days, of which the compute
    // covered 9:59:59 to 12:20:15 (8,416 s).
    let disk = a.usage.quantities[&Measure::DataDiskGbDays];
    assert_eq!(disk.on + disk.off, dec!(200));
    assert_eq!(disk.on, dec!(200) * Decimal::from(seconds) / Decimal::from(86_400));
    // Its time in the month runs from the first compute span's start to the disk row's end.
    assert_eq!(a.usage.on_seconds, seconds);
    let b = line(&r, Some("ffee001122"));
    assert_eq!((b.usage.compute_seconds, b.usage.gpu_seconds), (0, Some(0)));
    assert_eq!(b.gpu_model.as_deref(), Some("unknown"));
    assert_eq!(b.usage.unmeasured.data_disk, dec!(0.80), "no note: its usage is not stated");
    assert!(r.instances.iter().all(|l| l.attached), "the top-up is not spend");
}

/// Alibaba Cloud: daily on-demand rows of one A10 instance (three days), its data disk on
/// the first two, and a snapshot of a released instance.
fn aliyun_bill() -> String {
    let header = "账期,产品,计费方式,实例ID,实例配置,实例规格,计费项,单价,单价单位,用量,用量单位,原价,应付金额,账单开始时间,账单结束时间";
    let mut rows = vec![header.to_owned()];
    for day in 1..=3 {
        let (from, to) =
            (format!("2024-05-{day:02} 00:00:00"), format!("2024-05-{:02} 00:00:00", day + 1));
        rows.push(format!("2024-05,云服务器 ECS,按量付费,i-gpu1,GPU:1*NVIDIA A10,ecs.gn7i-c8g1.2xlarge,实例规格,8.05,元/小时,24,小时,193.20,193.20,{from},{to}"));
        if day <= 2 {
            rows.push(format!("2024-05,块存储,按量付费,d-data1,ESSD 500GB;绑定实例:i-gpu1,,数据盘,0.025,元/GB/天,500,GB,12.50,12.50,{from},{to}"));
        }
        rows.push(format!("2024-05,快照,按量付费,s-snap1,源实例:i-gone,,快照容量,0.004,元/GB/天,300,GB,1.20,1.20,{from},{to}"));
    }
    rows.join("\n") + "\n"
}

#[test]
fn gpu_hours_from_daily_rows_and_the_costs_attached_to_an_instance() {
    let charges = bills(&[("aliyun.csv", &aliyun_bill())]);
    let notes = "[[instance]]\nplatform = \"aliyun\"\nid = \"i-gpu1\"\ngpu_count = 1\n";
    let r = report(&charges, may(), &config(notes), &CostOptions::default()).unwrap();
    let gpu = line(&r, Some("i-gpu1"));
    assert_eq!((gpu.compute_hours(), gpu.gpu_hours()), (dec!(72), Some(dec!(72))));
    assert_eq!(gpu.gpu_model.as_deref(), Some("A10"), "from the bill's instance type");
    assert_eq!((gpu.cost.compute, gpu.cost.data_disk), (dec!(579.60), dec!(25.00)));
    assert_eq!(gpu.per_gpu_hour_compute().unwrap(), Some(dec!(8.05)));
    assert_eq!(gpu.per_gpu_hour_all_in().unwrap(), Some(dec!(604.60) / dec!(72)));
    let disk = gpu.usage.quantities[&Measure::DataDiskGbDays];
    assert_eq!((disk.on, disk.off), (dec!(1000), dec!(0)), "the disk billed only while on");
    // The snapshot's instance had no compute: its own line, all hidden.
    let gone = line(&r, Some("i-gone"));
    assert_eq!((gone.cost.snapshot, gone.usage.compute_seconds), (dec!(3.60), 0));
    assert_eq!(gone.usage.quantities[&Measure::SnapshotGbMonths].off, dec!(900) / dec!(30));
    assert_eq!(gone.hidden_share().unwrap(), Some(Decimal::ONE));
    assert_totals_equal_summary(&charges, &r);
}

#[test]
fn gpu_hours_from_cur_and_focus_rows_with_a_gpu_count() {
    let cur = parse_bill(&crate::fixture("aws-cur/valid/cur2_snake_case.csv"), None).unwrap();
    let r = report(&cur.charges, may(), &Config::default(), &CostOptions::default()).unwrap();
    let p4d = line(&r, Some("i-0abc123"));
    // Two hourly rows of one p4d.24xlarge hour each... of the same hour: one hour, 8 GPUs.
    assert_eq!((p4d.gpu_model.as_deref(), p4d.gpu_count), (Some("A100 40GB"), Some(8)));
    assert_eq!(p4d.usage.gpu_seconds, Some(8 * p4d.usage.compute_seconds));
    assert_eq!(p4d.cost.compute, dec!(65.5452));
    let unattached = r.instances.iter().find(|l| !l.attached).unwrap();
    assert_eq!((unattached.instance.as_deref(), unattached.cost.other), (None, dec!(3.10)));
    assert_totals_equal_summary(&cur.charges, &r);

    let focus = "BillingAccountId,BillingCurrency,BillingPeriodStart,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ChargeDescription,BilledCost,ResourceId,ServiceCategory,x_GpuCount
acct,USD,2024-05-01T00:00:00Z,2024-05-03T00:00:00Z,2024-05-03T01:00:00Z,Usage,ND96 hours,27.20,vm-1,Compute,8
acct,USD,2024-05-01T00:00:00Z,2024-05-03T01:00:00Z,2024-05-03T02:00:00Z,Usage,ND96 hours,27.20,vm-1,Compute,8
";
    let charges = bills(&[("focus.csv", focus)]);
    let r = report(&charges, may(), &Config::default(), &CostOptions::default()).unwrap();
    let vm = line(&r, Some("vm-1"));
    assert_eq!((vm.compute_hours(), vm.gpu_hours()), (dec!(2), Some(dec!(16))));
    assert_eq!(vm.per_gpu_hour_compute().unwrap(), Some(dec!(3.4)));
}

/// Every line of the month adds up, per currency, to `summary`'s total of the month.
fn assert_totals_equal_summary(charges: &[Charge], r: &CostReport) {
    let month: Vec<Charge> =
        charges.iter().filter(|c| c.billing_period == r.month).cloned().collect();
    for row in summarize(&month, &[GroupKey::Platform]).unwrap() {
        let lines = r.instances.iter().filter(|l| l.currency == row.currency);
        let ours = lines
            .filter(|l| l.platform == row.keys[0])
            .map(|l| l.all_in().unwrap())
            .sum::<Decimal>();
        assert_eq!(ours, row.billed_cost, "{:?} {}", row.keys, row.currency);
    }
    let grouped: Decimal = r.lines.iter().map(|l| l.all_in().unwrap()).sum();
    let instances: Decimal = r.instances.iter().map(|l| l.all_in().unwrap()).sum();
    assert_eq!(grouped, instances);
}

/// gpushare: an RTX 4090 at 2.38/h for 3 h with its storage billed for the day; the card
/// prices AutoDL's RTX 4090 at 2.18/h with a monthly plan of 1000.
const GPUSHARE: &str = "扣费时间,计费类型,实例,扣费金额,备注
2024-05-02 11:00:00,按量,gpu-7,2.38,RTX 4090 按量计费
2024-05-02 12:00:00,按量,gpu-7,2.38,RTX 4090 按量计费
2024-05-02 13:00:00,按量,gpu-7,2.38,RTX 4090 按量计费
2024-05-02 23:59:59,存储,gpu-7,0.96,hy-tmp 数据盘超出部分
";

const CARD: &str = r#"
[[rate]]
platform = "autodl"
gpu_model = "RTX 4090"
on_demand_hourly = "2.18"
monthly = "1000"
source = "price page"
as_of = 2024-05-01

[[platform_rate]]
platform = "gpushare"
data_disk_gb_day = "0.0096"
bills_while_off = []
currency = "CNY"

[[instance]]
platform = "gpushare"
id = "gpu-7"
gpu_model = "RTX 4090"
gpu_count = 1
data_disk_gb = 100
"#;

#[test]
fn the_usage_priced_elsewhere_by_the_ledger_and_by_the_card_with_the_unpriced_residual() {
    let charges = bills(&[("autodl.csv", AUTODL), ("gpushare.csv", GPUSHARE)]);
    let config = config(&format!("{AUTODL_NOTES}{CARD}"));
    let options = CostOptions { compare: true, ..CostOptions::default() };
    let r = report(&charges, may(), &config, &options).unwrap();
    let find = |instance: &str, target: &str, basis: Basis| {
        r.comparisons
            .iter()
            .find(|c| {
                c.keys[2].as_deref() == Some(instance) && c.target == target && c.basis == basis
            })
            .unwrap_or_else(|| panic!("no {instance} on {target} {basis:?}: {:#?}", r.comparisons))
    };
    // AutoDL's ab12cd34ef on gpushare, at what was paid there: 7.14 for 3 GPU-hours, and its
    // storage 0.96 for 100 GB·days (the note's size over the day that ends 23:59:59).
    let a = find("ab12cd34ef", "gpushare", Basis::Ledger);
    let gpu_hours = Decimal::from(2 * (2 * 3600 + 20 * 60 + 16)) / Decimal::from(3600);
    assert_eq!(a.figures[0].rate, dec!(7.14) / dec!(3));
    // Priced figures are kept to 12 decimals.
    assert_eq!(a.priced.compute, (gpu_hours * (dec!(7.14) / dec!(3))).round_dp(12));
    assert!(a.figures[0].whence.contains("2024-05"), "{:?}", a.figures[0]);
    // The card: gpushare keeps nothing billing while off, so only the disk's usage while on.
    let card = find("ab12cd34ef", "gpushare", Basis::Card);
    assert!(card.unpriced.iter().any(|u| u.actual == dec!(5.09)), "no card GPU rate: {card:#?}");
    let disk = r.instances.iter().find(|l| l.instance.as_deref() == Some("ab12cd34ef")).unwrap();
    let on = disk.usage.quantities[&Measure::DataDiskGbDays].on;
    assert_eq!(card.priced.data_disk, (on * dec!(0.0096)).round_dp(12));
    assert_eq!(card.comparable, dec!(1.60), "only the priced part is compared");
    // gpushare's instance priced on AutoDL by the card: 3 GPU-hours at 2.18; its storage has
    // no AutoDL card rate: unpriced with its 0.96, never zero.
    let g = find("gpu-7", "autodl", Basis::Card);
    assert_eq!(g.priced.compute, dec!(6.54));
    assert_eq!(g.unpriced.len(), 1);
    assert_eq!((g.unpriced[0].actual, g.comparable), (dec!(0.96), dec!(7.14)));
    assert_eq!(g.saving().unwrap(), dec!(0.60));
    // The break-even: 1000 / 2.18 hours a month; ab12cd34ef's 2.34 h are far below it.
    let b = &r.breakeven[0];
    assert_eq!(b.monthly_hours, Some(dec!(1000) / dec!(2.18)));
    assert_eq!(b.instances[0].instance, "ab12cd34ef");
    assert!(!b.instances[0].plan_wins);
    assert_eq!(b.instances[0].on_demand, b.instances[0].hours * dec!(2.18));
    // Grouped by platform and model, the comparison prices the group.
    let by = CostOptions { by: vec![CostKey::Platform, CostKey::GpuModel], compare: true };
    let grouped = report(&charges, may(), &config, &by).unwrap();
    assert!(grouped.comparisons.iter().all(|c| c.keys.len() == 2));
}

#[test]
fn a_card_in_another_currency_than_its_platform_s_bills_is_refused_naming_the_key() {
    let charges = bills(&[("autodl.csv", AUTODL)]);
    let usd = "[[rate]]\nplatform = \"autodl\"\ngpu_model = \"RTX 4090\"\nmonthly = 140\ncurrency = \"USD\"\n";
    let err = report(&charges, may(), &config(usd), &CostOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("gpuaudit.toml: rate[1].currency: \"USD\" differs"), "{text}");
    // A card for a platform without bills must say its currency once it is compared.
    let unknown =
        "[[rate]]\nplatform = \"elsewhere\"\ngpu_model = \"RTX 4090\"\non_demand_hourly = 2\n";
    let options = CostOptions { compare: true, ..CostOptions::default() };
    let err = report(&charges, may(), &config(unknown), &options).unwrap_err();
    assert!(err.to_string().contains("rate[1].currency: missing"), "{err}");
    assert!(report(&charges, may(), &config(unknown), &CostOptions::default()).is_ok());
}

#[test]
fn the_break_even_uses_a_plan_bought_in_the_ledger_and_the_rate_paid_there() {
    // No rate card: the 包月 order of a1f00d2c9e (1500.00 for 30 days) and b2c0ffee77's 672
    // on-demand hours at 2.58, both RTX 4090 by the notes, one GPU each.
    let bill =
        parse_bill(&crate::fixture("autodl/valid/monthly_plan_seen_in_the_ledger.csv"), None)
            .unwrap();
    let notes = "[[instance]]\nplatform = \"autodl\"\nid = \"a1f00d2c9e\"\ngpu_model = \"RTX 4090\"\n\
                 [[instance]]\nplatform = \"autodl\"\nid = \"b2c0ffee77\"\ngpu_model = \"RTX 4090\"\ngpu_count = 1\n";
    let r = report(&bill.charges, may(), &config(notes), &CostOptions::default()).unwrap();
    let b = &r.breakeven[0];
    assert_eq!((b.platform.as_str(), b.gpu_model.as_str()), ("autodl", "RTX 4090"));
    assert_eq!(
        (b.monthly, b.plan_basis, b.hourly_basis),
        (Some(dec!(1500)), Basis::Ledger, Basis::Ledger)
    );
    assert_eq!(b.hourly, dec!(2.58));
    assert_eq!(b.monthly_hours, Some(dec!(1500) / dec!(2.58)));
    assert_eq!(b.instances.len(), 1, "the plan's instance ran no hours: {:?}", b.instances);
    assert_eq!((b.instances[0].hours, b.instances[0].plan_wins), (dec!(672), true));
    assert_eq!(b.instances[0].on_demand, dec!(1733.76));
}

#[test]
fn three_compute_rows_of_one_hour_count_one_hour() {
    // Tencent prints CPU, memory and GPU as three compute rows of the same hour.
    let focus = "BillingAccountId,BillingCurrency,BillingPeriodStart,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ChargeDescription,BilledCost,ResourceId,ServiceCategory,x_GpuCount
acct,CNY,2024-05-01T00:00:00Z,2024-05-03T00:00:00Z,2024-05-03T01:00:00Z,Usage,CPU,0.50,ins-1,Compute,1
acct,CNY,2024-05-01T00:00:00Z,2024-05-03T00:00:00Z,2024-05-03T01:00:00Z,Usage,内存,0.30,ins-1,Compute,1
acct,CNY,2024-05-01T00:00:00Z,2024-05-03T00:00:00Z,2024-05-03T01:00:00Z,Usage,GPU,6.20,ins-1,Compute,1
acct,CNY,2024-05-01T00:00:00Z,2024-05-03T00:30:00Z,2024-05-03T01:30:00Z,Usage,GPU,3.10,ins-1,Compute,1
";
    let charges = bills(&[("tencent.csv", focus)]);
    let r = report(&charges, may(), &Config::default(), &CostOptions::default()).unwrap();
    let ins = line(&r, Some("ins-1"));
    // 00:00-01:30: the union of the spans, not four hours of rows.
    assert_eq!((ins.compute_hours(), ins.gpu_hours()), (dec!(1.5), Some(dec!(1.5))));
    assert_eq!(ins.per_gpu_hour_compute().unwrap(), Some(dec!(10.10) / dec!(1.5)));
    assert_eq!(ins.usage.off_seconds, Some(0));
}

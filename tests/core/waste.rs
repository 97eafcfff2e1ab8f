//! The waste rules on synthetic timelines: for each rule a positive case, a control that must
//! not fire and a boundary at its threshold, on AutoDL-style (hourly rows ending at the
//! posting time, daily disk rows) and Alibaba-style (daily rows) timelines.

use chrono::{DateTime, Duration, TimeZone, Utc};
use chrono_tz::Asia::Shanghai;
use gpuaudit_core::config::{Config, InstanceNote, RateCard};
use gpuaudit_core::waste::{Finding, audit};
use gpuaudit_core::{Category, Charge, ChargeId, Kind, Origin, Pricing, YearMonth, parse_bill};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;

fn may() -> YearMonth {
    YearMonth::new(2024, 5).unwrap()
}

/// Local (Beijing) time.
fn at(month: u32, day: u32, hour: u32) -> DateTime<Utc> {
    Shanghai.with_ymd_and_hms(2024, month, day, hour, 0, 0).unwrap().with_timezone(&Utc)
}

struct Book {
    platform: &'static str,
    charges: Vec<Charge>,
}

impl Book {
    fn autodl() -> Self {
        Book { platform: "autodl", charges: Vec::new() }
    }
    fn aliyun() -> Self {
        Book { platform: "aliyun", charges: Vec::new() }
    }

    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        category: Category,
        instance: Option<&str>,
        resource: Option<&str>,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        billed: Decimal,
        kind: Kind,
        pricing: Pricing,
    ) {
        let n = self.charges.len() as u128 + 1;
        let period = YearMonth::of(start, Shanghai);
        self.charges.push(Charge {
            id: ChargeId(n),
            platform: self.platform.into(),
            account: None,
            sub_account: None,
            account_name: None,
            sub_account_name: None,
            billing_period: period,
            charge_start: start,
            charge_end: end,
            resource_id: resource.map(Into::into),
            resource_name: None,
            instance_id: instance.map(Into::into),
            region: None,
            category,
            kind,
            pricing,
            gpu_model: None,
            gpu_count: None,
            quantity: None,
            unit: None,
            unit_price: None,
            list_cost: None,
            billed_cost: billed,
            currency: "CNY".into(),
            balance_after: None,
            origin: Origin {
                file: "bill.csv".into(),
                line: n as u64 + 1,
                item: category.to_string(),
            },
            service: None,
            usage_type: None,
        });
    }

    /// Compute of `instance` on `days` of `month`: AutoDL posts hourly rows from 10:00 to
    /// 22:00; Alibaba posts a row per whole day.
    fn runs(
        &mut self,
        instance: &str,
        month: u32,
        days: impl IntoIterator<Item = u32>,
        per_hour: Decimal,
    ) {
        for day in days {
            if self.platform == "autodl" {
                for h in 11..=22 {
                    let end = at(month, day, h);
                    self.add(
                        Category::Compute,
                        Some(instance),
                        Some(instance),
                        end - Duration::hours(1),
                        end,
                        per_hour,
                        Kind::Usage,
                        Pricing::OnDemand,
                    );
                }
            } else {
                let start = at(month, day, 0);
                self.add(
                    Category::Compute,
                    Some(instance),
                    Some(instance),
                    start,
                    start + Duration::days(1),
                    per_hour * dec!(24),
                    Kind::Usage,
                    Pricing::OnDemand,
                );
            }
        }
    }

    /// Compute of `instance` covering `[from, to)`: hourly rows (AutoDL) or daily rows
    /// (Alibaba); the last row is cut at `to`.
    fn covering(&mut self, instance: &str, from: DateTime<Utc>, to: DateTime<Utc>) {
        let step = if self.platform == "autodl" { Duration::hours(1) } else { Duration::days(1) };
        let mut t = from;
        while t < to {
            let end = (t + step).min(to);
            self.add(
                Category::Compute,
                Some(instance),
                Some(instance),
                t,
                end,
                dec!(2.00),
                Kind::Usage,
                Pricing::OnDemand,
            );
            t = end;
        }
    }

    /// A resource billed per local day on `days` of `month`.
    fn daily(
        &mut self,
        category: Category,
        instance: Option<&str>,
        resource: &str,
        month: u32,
        days: impl IntoIterator<Item = u32>,
        per_day: Decimal,
    ) {
        for day in days {
            let start = at(month, day, 0);
            self.add(
                category,
                instance,
                Some(resource),
                start,
                start + Duration::days(1),
                per_day,
                Kind::Usage,
                Pricing::OnDemand,
            );
        }
    }

    fn audit(&self, config: &Config) -> Vec<Finding> {
        audit(&self.charges, may(), config).unwrap()
    }
}

fn only<'a>(findings: &'a [Finding], code: &str) -> Vec<&'a Finding> {
    findings.iter().filter(|f| f.code == code).collect()
}

fn both() -> [Book; 2] {
    [Book::autodl(), Book::aliyun()]
}

// ---- W001 storage-while-off -------------------------------------------------------------

#[test]
fn w001_disk_billing_after_the_grace_of_a_long_stop_is_waste() {
    for mut book in both() {
        // runs May 1–3, then off for the rest of the month; its disk bills every day
        book.runs("ins-a", 5, 1..=3, dec!(2.00));
        book.daily(Category::DataDisk, Some("ins-a"), "disk-a", 5, 1..=31, dec!(1.60));
        let findings = book.audit(&Config::default());
        let w = only(&findings, "W001");
        assert_eq!(w.len(), 1, "{}: {findings:?}", book.platform);
        // off from May 3 22:00 (AutoDL) or May 4 00:00 (Alibaba); waste from 72 h later
        let expected = if book.platform == "autodl" {
            dec!(1.60) * dec!(7200) / dec!(86400) + dec!(1.60) * dec!(25)
        } else {
            dec!(1.60) * dec!(25)
        };
        assert_eq!(w[0].amount, expected, "{}", book.platform);
        let off_from = if book.platform == "autodl" { at(5, 6, 22) } else { at(5, 7, 0) };
        assert_eq!((w[0].period_start, w[0].period_end), (off_from, at(6, 1, 0)));
        assert_eq!(w[0].resource_id.as_deref(), Some("disk-a"));
        assert_eq!(w[0].monthly_projection, dec!(48.00), "still billing at the month's end");
        assert!(w[0].recommendation.contains("instance ins-a"), "{}", w[0].recommendation);
    }
}

#[test]
fn w001_an_instance_id_on_two_platforms_is_judged_by_each_platform_s_own_time() {
    // The same id on Alibaba (stopped after May 3) and on AutoDL (running every day): only
    // Alibaba's disk bills while its instance is off, whichever platform's rows come first.
    for alibaba_first in [true, false] {
        let (mut alibaba, mut autodl) = (Book::aliyun(), Book::autodl());
        alibaba.runs("ins-same", 5, 1..=3, dec!(2.00));
        alibaba.daily(Category::DataDisk, Some("ins-same"), "disk-ali", 5, 1..=31, dec!(1.60));
        autodl.runs("ins-same", 5, 1..=31, dec!(2.00));
        autodl.daily(Category::DataDisk, Some("ins-same"), "disk-adl", 5, 1..=31, dec!(1.60));
        let mut charges = Vec::new();
        let (first, second) = if alibaba_first { (&alibaba, &autodl) } else { (&autodl, &alibaba) };
        for (i, c) in first.charges.iter().chain(&second.charges).enumerate() {
            charges.push(Charge { id: ChargeId(i as u128 + 1), ..c.clone() });
        }
        let findings = audit(&charges, may(), &Config::default()).unwrap();
        let w = only(&findings, "W001");
        assert_eq!(w.len(), 1, "alibaba first: {alibaba_first}: {w:?}");
        assert_eq!(
            (w[0].platform.as_str(), w[0].resource_id.as_deref()),
            ("aliyun", Some("disk-ali"))
        );
        assert_eq!(w[0].amount, dec!(1.60) * dec!(25));
    }
}

#[test]
fn w001_a_stop_for_one_night_is_not_waste() {
    for mut book in both() {
        let days: Vec<u32> = (1..=31).filter(|d| d % 7 != 6).collect();
        book.runs("ins-a", 5, days, dec!(2.00)); // off one day a week and every night
        book.daily(Category::DataDisk, Some("ins-a"), "disk-a", 5, 1..=31, dec!(1.60));
        assert_eq!(only(&book.audit(&Config::default()), "W001"), Vec::<&Finding>::new());
    }
}

#[test]
fn w001_boundary_off_exactly_the_grace_is_forgiven_one_day_more_is_not() {
    for extra_days in [0i64, 1] {
        for mut book in both() {
            // off from May 10 22:00 (AutoDL's last hourly row) or May 11 00:00 (Alibaba's day)
            let off = if book.platform == "autodl" { at(5, 10, 22) } else { at(5, 11, 0) };
            let back = off + Duration::hours(72) + Duration::days(extra_days);
            book.covering("ins-a", at(5, 1, 0), off);
            book.covering("ins-a", back, at(6, 1, 0));
            book.daily(Category::SystemDisk, Some("ins-a"), "ins-a", 5, 1..=31, dec!(12.50));
            let w: Vec<Finding> =
                only(&book.audit(&Config::default()), "W001").into_iter().cloned().collect();
            if extra_days == 0 {
                assert!(w.is_empty(), "{}: {w:?}", book.platform);
            } else {
                assert_eq!(w.len(), 1, "{}", book.platform);
                assert_eq!(w[0].amount.round_dp(20), dec!(12.50), "{}", book.platform);
                let grace_end = off + Duration::hours(72);
                assert_eq!((w[0].period_start, w[0].period_end), (grace_end, back));
            }
        }
    }
}

#[test]
fn findings_below_min_amount_are_dropped_and_at_it_kept() {
    for (min, kept) in [(dec!(12.50), true), (dec!(12.51), false)] {
        let mut book = Book::aliyun();
        book.runs("ins-a", 5, 1..=10, dec!(2.00));
        book.runs("ins-a", 5, 15..=31, dec!(2.00));
        book.daily(Category::SystemDisk, Some("ins-a"), "ins-a", 5, 1..=31, dec!(12.50));
        let mut config = Config::default();
        config.waste.min_amount = min;
        assert_eq!(!only(&book.audit(&config), "W001").is_empty(), kept, "min {min}");
    }
}

// ---- W002 idle-public-ip ----------------------------------------------------------------

#[test]
fn w002_an_ip_of_a_stopped_instance_after_24_hours() {
    for mut book in both() {
        book.runs("ins-a", 5, 1..=12, dec!(2.00));
        book.daily(Category::PublicIp, Some("ins-a"), "eip-a", 5, 1..=31, dec!(1.51));
        let findings = book.audit(&Config::default());
        let w = only(&findings, "W002");
        assert_eq!(w.len(), 1, "{}: {findings:?}", book.platform);
        let expected = if book.platform == "autodl" {
            // off from May 12 22:00, waste from May 13 22:00: 2 h of May 13, then 18 days
            dec!(1.51) * dec!(7200) / dec!(86400) + dec!(1.51) * dec!(18)
        } else {
            dec!(1.51) * dec!(18) // off from May 13 00:00, waste from May 14
        };
        assert_eq!(w[0].amount, expected, "{}", book.platform);
        assert!(only(&findings, "W001").is_empty(), "an IP is not a disk");
    }
}

#[test]
fn w002_control_and_boundary_a_stop_of_at_most_24_hours() {
    for mut book in both() {
        book.runs("ins-a", 5, 1..=31, dec!(2.00)); // AutoDL: off 12 h every night
        book.daily(Category::PublicIp, Some("ins-a"), "eip-a", 5, 1..=31, dec!(1.51));
        assert!(only(&book.audit(&Config::default()), "W002").is_empty(), "{}", book.platform);
    }
    for (extra_hours, fires) in [(0i64, false), (1, true)] {
        for mut book in both() {
            let off = at(5, 10, 0);
            book.covering("ins-a", at(5, 1, 0), off);
            book.covering("ins-a", off + Duration::hours(24 + extra_hours), at(6, 1, 0));
            book.daily(Category::PublicIp, Some("ins-a"), "eip-a", 5, 1..=31, dec!(24.00));
            let w = only(&book.audit(&Config::default()), "W002")
                .into_iter()
                .map(|f| f.amount)
                .collect::<Vec<_>>();
            assert_eq!(
                w,
                if fires { vec![dec!(1.00)] } else { vec![] },
                "{} +{extra_hours} h",
                book.platform
            );
        }
    }
}

// ---- W003 unattached-storage ------------------------------------------------------------

#[test]
fn w003_a_disk_of_no_instance_or_of_a_released_one() {
    for mut book in both() {
        book.daily(Category::DataDisk, None, "d-orphan", 5, 1..=31, dec!(4.50));
        book.runs("ins-old", 3, 1..=5, dec!(2.00)); // last ran in March
        book.daily(Category::DataDisk, Some("ins-old"), "d-old", 5, 1..=31, dec!(1.00));
        let findings = book.audit(&Config::default());
        let w = only(&findings, "W003");
        assert_eq!(w.len(), 2, "{}: {findings:?}", book.platform);
        assert_eq!((w[0].resource_id.as_deref(), w[0].amount), (Some("d-orphan"), dec!(139.50)));
        assert!(w[0].recommendation.contains("linked to no instance"));
        assert_eq!((w[1].resource_id.as_deref(), w[1].amount), (Some("d-old"), dec!(31.00)));
        assert!(w[1].recommendation.contains("no compute in 30 days"), "{}", w[1].recommendation);
        assert!(only(&findings, "W001").is_empty(), "W001 and W003 never share a charge");
    }
}

#[test]
fn w003_control_a_disk_of_an_instance_that_runs_daily() {
    for mut book in both() {
        book.runs("ins-a", 5, 1..=31, dec!(2.00));
        book.daily(Category::DataDisk, Some("ins-a"), "disk-a", 5, 1..=31, dec!(1.60));
        let findings = book.audit(&Config::default());
        assert!(findings.is_empty(), "{}: {findings:?}", book.platform);
    }
}

#[test]
fn w003_boundary_the_look_back_window() {
    // compute ending exactly 30 days before May 1 is outside the window; an hour later is in
    for (last_end, released) in [(at(4, 1, 0), true), (at(4, 1, 1), false)] {
        for mut book in both() {
            book.covering("ins-a", at(3, 29, 0), last_end);
            book.daily(Category::DataDisk, Some("ins-a"), "disk-a", 5, 1..=31, dec!(1.00));
            let findings = book.audit(&Config::default());
            assert_eq!(
                !only(&findings, "W003").is_empty(),
                released,
                "{}: {findings:?}",
                book.platform
            );
            assert_eq!(
                !only(&findings, "W001").is_empty(),
                !released,
                "{}: {findings:?}",
                book.platform
            );
        }
    }
}

// ---- W004 stale-snapshot ----------------------------------------------------------------

#[test]
fn w004_a_snapshot_older_than_30_days_of_an_unknown_or_idle_instance() {
    for mut book in both() {
        book.daily(Category::Snapshot, None, "snap-a", 4, 1..=30, dec!(0.80));
        book.daily(Category::Snapshot, None, "snap-a", 5, 1..=31, dec!(0.80));
        book.runs("ins-b", 3, 1..=2, dec!(2.00));
        book.daily(Category::Snapshot, Some("ins-b"), "snap-b", 3, 1..=31, dec!(0.50));
        book.daily(Category::Snapshot, Some("ins-b"), "snap-b", 4, 1..=30, dec!(0.50));
        book.daily(Category::Snapshot, Some("ins-b"), "snap-b", 5, 1..=31, dec!(0.50));
        let findings = book.audit(&Config::default());
        let w = only(&findings, "W004");
        assert_eq!(w.len(), 2, "{}: {findings:?}", book.platform);
        assert_eq!((w[0].resource_id.as_deref(), w[0].amount), (Some("snap-a"), dec!(24.80)));
        assert_eq!((w[1].resource_id.as_deref(), w[1].amount), (Some("snap-b"), dec!(15.50)));
        // the April rows are not the audited month's
        assert!(
            w[0].charges.iter().all(|e| e.billed_cost == dec!(0.80)) && w[0].charges.len() == 31
        );
    }
}

#[test]
fn w004_control_a_snapshot_of_a_running_instance() {
    for mut book in both() {
        book.runs("ins-a", 4, 1..=30, dec!(2.00));
        book.runs("ins-a", 5, 1..=31, dec!(2.00));
        book.daily(Category::Snapshot, Some("ins-a"), "snap-a", 4, 1..=30, dec!(0.80));
        book.daily(Category::Snapshot, Some("ins-a"), "snap-a", 5, 1..=31, dec!(0.80));
        assert!(only(&book.audit(&Config::default()), "W004").is_empty(), "{}", book.platform);
    }
}

#[test]
fn w004_boundary_a_snapshot_turns_stale_on_its_30th_day() {
    for mut book in both() {
        book.daily(Category::Snapshot, None, "snap-a", 4, 2..=30, dec!(0.80)); // first seen April 2
        book.daily(Category::Snapshot, None, "snap-a", 5, 1..=31, dec!(0.80));
        let findings = book.audit(&Config::default());
        let w = only(&findings, "W004");
        assert_eq!(
            w[0].amount,
            dec!(24.00),
            "{}: May 1 is day 29, May 2 onwards is stale",
            book.platform
        );
        assert_eq!(w[0].period_start, at(5, 2, 0));
    }
}

// ---- W005 on-demand-over-subscription ---------------------------------------------------

fn rate(platform: &str, monthly: Decimal, weekly: Decimal) -> Config {
    let mut c = Config::default();
    c.rates.push(RateCard {
        platform: platform.into(),
        gpu_model: "RTX 4090".into(),
        on_demand_hourly: None,
        weekly: Some(weekly),
        monthly: Some(monthly),
        ..RateCard::default()
    });
    c.instances.push(InstanceNote {
        platform: platform.into(),
        id: "ins-a".into(),
        gpu_model: Some("RTX 4090".into()),
        gpu_count: Some(1),
        ..InstanceNote::default()
    });
    c
}

/// Around-the-clock hourly (AutoDL) or daily (Alibaba) on-demand rows on `days` of May.
fn around_the_clock(book: &mut Book, days: std::ops::RangeInclusive<u32>, per_hour: Decimal) {
    for day in days {
        if book.platform == "autodl" {
            for h in 1..=24 {
                let end = at(5, day, 0) + Duration::hours(h);
                book.add(
                    Category::Compute,
                    Some("ins-a"),
                    Some("ins-a"),
                    end - Duration::hours(1),
                    end,
                    per_hour,
                    Kind::Usage,
                    Pricing::OnDemand,
                );
            }
        } else {
            book.runs("ins-a", 5, [day], per_hour);
        }
    }
}

#[test]
fn w005_on_demand_all_month_costs_more_than_the_monthly_plan() {
    for mut book in both() {
        around_the_clock(&mut book, 6..=31, dec!(1.98)); // 624 h = 1235.52
        let findings = book.audit(&rate(book.platform, dec!(1000), dec!(329)));
        let w = only(&findings, "W005");
        assert_eq!(w.len(), 1, "{}: {findings:?}", book.platform);
        assert_eq!(w[0].amount.round_dp(20), dec!(235.52));
        assert!(
            w[0].recommendation.contains("monthly plan costs 1000.00"),
            "{}",
            w[0].recommendation
        );
    }
}

#[test]
fn w005_control_a_short_run_is_cheaper_on_demand() {
    for mut book in both() {
        around_the_clock(&mut book, 1..=10, dec!(1.98)); // 475.20 < 2 weeks (658) and a month
        assert!(only(&book.audit(&rate(book.platform, dec!(1000), dec!(329))), "W005").is_empty());
    }
}

#[test]
fn w005_boundary_on_demand_equal_to_the_plan_is_no_waste() {
    for mut book in both() {
        around_the_clock(&mut book, 1..=25, dec!(1.60)); // 960.00
        let p = book.platform;
        assert!(only(&book.audit(&rate(p, dec!(960), dec!(400))), "W005").is_empty(), "{p}");
        let over = only(&book.audit(&rate(p, dec!(959), dec!(400))), "W005")[0].amount;
        assert_eq!(over.round_dp(20), dec!(1.00), "{p}");
    }
}

#[test]
fn w005_uses_a_subscription_price_seen_in_the_ledger_without_a_rate_card() {
    let mut book = Book::aliyun();
    around_the_clock(&mut book, 1..=31, dec!(8.05)); // 5989.20
    book.add(
        Category::Compute,
        Some("ins-m"),
        Some("ins-m"),
        at(5, 20, 0),
        at(6, 19, 0),
        dec!(2691.00),
        Kind::Purchase,
        Pricing::Subscription,
    );
    for c in &mut book.charges {
        c.gpu_model = Some("A10".into());
    }
    let w = only(&book.audit(&Config::default()), "W005").into_iter().cloned().collect::<Vec<_>>();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].amount.round_dp(20), dec!(3298.20));
}

// ---- W006 traffic-heavy -----------------------------------------------------------------

#[test]
fn w006_traffic_over_30_percent_of_the_instance_cost() {
    // 40 of 100 fires (10 over the 30 % share); exactly 30 % is the boundary; 10 % the control
    for (traffic, excess) in [(dec!(40), Some(dec!(10))), (dec!(30), None), (dec!(10), None)] {
        for mut book in both() {
            // AutoDL-style: hourly compute rows; Alibaba-style: one daily row
            let rows = if book.platform == "autodl" { 20 } else { 1 };
            let per_row = (dec!(100) - traffic) / Decimal::from(rows);
            for h in 0..rows {
                let start = at(5, 1, 0) + Duration::hours(h);
                let end = if rows == 1 { at(5, 2, 0) } else { start + Duration::hours(1) };
                book.add(
                    Category::Compute,
                    Some("ins-a"),
                    Some("ins-a"),
                    start,
                    end,
                    per_row,
                    Kind::Usage,
                    Pricing::OnDemand,
                );
            }
            book.add(
                Category::Traffic,
                Some("ins-a"),
                Some("ins-a"),
                at(5, 1, 0),
                at(5, 2, 0),
                traffic,
                Kind::Usage,
                Pricing::OnDemand,
            );
            let w: Vec<Decimal> = only(&book.audit(&Config::default()), "W006")
                .into_iter()
                .map(|f| f.amount)
                .collect();
            assert_eq!(w.first().copied(), excess, "{}: traffic {traffic} of 100", book.platform);
        }
    }
}

// ---- across rules -----------------------------------------------------------------------

#[test]
fn no_charge_is_counted_by_two_findings_and_findings_name_their_lines() {
    let mut book = Book::aliyun();
    book.runs("ins-a", 5, 1..=3, dec!(2.00));
    book.daily(Category::DataDisk, Some("ins-a"), "disk-a", 5, 1..=31, dec!(1.60));
    book.daily(Category::PublicIp, Some("ins-a"), "ins-a", 5, 1..=31, dec!(1.00));
    book.daily(Category::DataDisk, None, "d-orphan", 5, 1..=31, dec!(4.50));
    book.daily(Category::Snapshot, None, "snap", 5, 1..=31, dec!(3.00));
    book.add(
        Category::Traffic,
        Some("ins-a"),
        Some("ins-a"),
        at(5, 1, 0),
        at(5, 2, 0),
        dec!(200),
        Kind::Usage,
        Pricing::OnDemand,
    );
    let findings = book.audit(&Config::default());
    let mut ids: Vec<ChargeId> =
        findings.iter().flat_map(|f| f.charges.iter().map(|e| e.id)).collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "a charge appears in two findings");
    let codes: Vec<&str> = findings.iter().map(|f| f.code).collect();
    for code in ["W001", "W002", "W003", "W004", "W006"] {
        assert!(codes.contains(&code), "{code} missing from {codes:?}");
    }
    for f in &findings {
        let sum: Decimal = f.charges.iter().map(|e| e.wasted).sum();
        assert_eq!(sum, f.amount);
        assert!(f.charges.iter().all(|e| e.file == "bill.csv" && e.line > 1));
    }
    let amounts: Vec<Decimal> = findings.iter().map(|f| f.amount).collect();
    let mut sorted = amounts.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(amounts, sorted, "largest first");
}

// ---- spans of bills with one time column ------------------------------------------------

#[test]
fn a_running_gpushare_instance_does_not_make_its_disk_unattached() {
    let bill =
        parse_bill(&super::fixture("gpushare/valid/running_instance_with_its_disk.csv"), None)
            .unwrap();
    assert_eq!(
        super::by_category(&bill.charges),
        super::cats(&[("compute", dec!(135.36)), ("data_disk", dec!(2.88))])
    );
    // Each hourly row covers the hour that ends at its time, each storage row the day.
    let disk: Vec<_> = bill.charges.iter().filter(|c| c.category == Category::DataDisk).collect();
    assert!(disk.iter().all(|c| c.charge_end - c.charge_start == Duration::hours(24)), "{disk:?}");
    let compute = bill.charges.iter().filter(|c| c.category == Category::Compute);
    assert!(compute.clone().all(|c| c.charge_end - c.charge_start == Duration::hours(1)));
    let findings = audit(&bill.charges, may(), &Config::default()).unwrap();
    assert_eq!(findings, vec![], "the disk of a running instance is neither unattached nor idle");
}

#[test]
fn compute_seen_only_at_instants_counts_as_run_for_w003_and_judges_no_off_time() {
    let mut book = Book::aliyun();
    for day in 1..=20 {
        let at = at(5, day, 9);
        book.add(
            Category::Compute,
            Some("ins-i"),
            Some("ins-i"),
            at,
            at,
            dec!(5.00),
            Kind::Usage,
            Pricing::OnDemand,
        );
    }
    book.daily(Category::DataDisk, Some("ins-i"), "d-i", 5, 1..=31, dec!(2.00));
    let findings = book.audit(&Config::default());
    assert_eq!(
        only(&findings, "W003"),
        Vec::<&Finding>::new(),
        "the instance ran in the look-back"
    );
    assert_eq!(only(&findings, "W001"), Vec::<&Finding>::new(), "its off time is unknown");
}

/// A rule of one's own reads where a charge was read from the context's window (kept there,
/// beside the rows): its file, its line and the bill's words for its item.
#[test]
fn a_rule_of_one_s_own_reads_a_charge_s_file_line_and_item_from_the_window() {
    let bill = parse_bill(&super::fixture("aliyun/valid/r006_above_rate_card.csv"), None).unwrap();
    let window = std::sync::Arc::new(gpuaudit_core::window::rows_of(&bill.charges));
    let (config, platforms) = (Config::default(), gpuaudit_core::platforms::Platforms::default());
    let ctx = gpuaudit_core::waste::Context::new(&window, may(), &config, &platforms).unwrap();
    let read: Vec<(String, u64, String)> = ctx
        .in_month()
        .map(|c| {
            let origin = ctx.window().origin(c);
            let file = ctx.opt(origin.file).unwrap_or_default().to_owned();
            (file, origin.line, ctx.window().item(c).to_owned())
        })
        .collect();
    let want: Vec<(String, u64, String)> = bill
        .charges
        .iter()
        .map(|c| (c.origin.file.clone(), c.origin.line, c.origin.item.clone()))
        .collect();
    assert_eq!(read, want);
    assert!(read.iter().any(|(_, _, item)| item == "数据盘"), "{read:?}");
}

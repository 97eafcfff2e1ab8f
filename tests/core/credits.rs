//! A finding's money is what was paid: credits of the month that name a flagged charge's
//! resource (or, with no resource, its usage) are netted from the finding, its lines showing
//! each credit's share; a finding credits pay for in full is not raised, and the audit says
//! how much flagged usage credits paid for. Figures computed by hand.

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use gpuaudit_core::config::Config;
use gpuaudit_core::platforms::Platforms;
use gpuaudit_core::waste::{RULES, audit_judged};
use gpuaudit_core::{Category, Charge, ChargeId, Kind, Origin, Pricing, YearMonth};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;

/// An Alibaba charge of May 2024 (Beijing time) of `resource`, its usage type `usage`.
fn charge(
    n: usize,
    resource: Option<&str>,
    usage: &str,
    (start, end): (DateTime<Utc>, DateTime<Utc>),
    kind: Kind,
    billed: Decimal,
) -> Charge {
    Charge {
        id: ChargeId(n as u128 + 1),
        platform: "aliyun".into(),
        billing_period: YearMonth::new(2024, 5).unwrap(),
        charge_start: start,
        charge_end: end,
        resource_id: resource.map(Into::into),
        category: Category::DataDisk,
        kind,
        pricing: Pricing::OnDemand,
        billed_cost: billed,
        currency: "CNY".into(),
        origin: Origin { file: "bill.csv".into(), line: n as u64 + 2, item: "数据盘".into() },
        usage_type: Some(usage.into()),
        ..Charge::blank()
    }
}

/// A month of daily rows of 1.00 of data disk `disk`, linked to no instance: W003 flags all
/// 31.00.
fn month_of(charges: &mut Vec<Charge>, disk: &str, usage: &str) {
    for day in 1..=31 {
        let start = Utc.with_ymd_and_hms(2024, 5, day, 0, 0, 0).unwrap() - Duration::hours(8);
        let span = (start, start + Duration::days(1));
        charges.push(charge(charges.len(), Some(disk), usage, span, Kind::Usage, dec!(1.00)));
    }
}

/// A credit of `amount` naming `resource` (with none, its usage `usage`), on the 31st.
fn credit(charges: &mut Vec<Charge>, resource: Option<&str>, usage: &str, amount: Decimal) {
    let at = Utc.with_ymd_and_hms(2024, 5, 31, 0, 0, 0).unwrap();
    charges.push(charge(charges.len(), resource, usage, (at, at), Kind::Credit, amount));
}

#[test]
fn findings_are_net_of_the_credits_that_name_their_resource_or_usage() {
    let mut charges = Vec::new();
    // d-paid: a credit of the whole month; d-half: 10.00 of its 31.00; d-usage: 6.20 by its
    // usage (the credit names no resource); d-other: a credit of another usage, not its.
    month_of(&mut charges, "d-paid", "ESSD PL1");
    credit(&mut charges, Some("d-paid"), "ESSD PL1", dec!(-31.00));
    month_of(&mut charges, "d-half", "ESSD PL1");
    credit(&mut charges, Some("d-half"), "ESSD PL1", dec!(-10.00));
    month_of(&mut charges, "d-usage", "ESSD PL0");
    credit(&mut charges, None, "ESSD PL0", dec!(-6.20));
    month_of(&mut charges, "d-other", "cloud_efficiency");
    credit(&mut charges, None, "cloud_ssd", dec!(-5.00));
    let window = Arc::new(gpuaudit_core::window::rows_of(&charges));
    let may = YearMonth::new(2024, 5).unwrap();
    let audit =
        audit_judged(RULES, &window, may, &Config::default(), &Platforms::default()).unwrap();
    let of = |disk: &str| audit.findings.iter().find(|f| f.resource_id.as_deref() == Some(disk));
    assert!(of("d-paid").is_none(), "paid for in full: not raised");
    let half = of("d-half").unwrap();
    assert_eq!((half.code, half.amount), ("W003", dec!(21.00)));
    // Its lines: 31 days of 1.00, and the credit's share, −10.00: they add up to it.
    let lines: Vec<Decimal> = half.charges.iter().map(|e| e.wasted).collect();
    assert_eq!(lines.len(), 32);
    assert_eq!(lines.iter().filter(|w| **w < Decimal::ZERO).collect::<Vec<_>>(), [&dec!(-10.00)]);
    assert_eq!(lines.iter().sum::<Decimal>(), dec!(21.00));
    // By usage: the credit pays 6.20 of the 31.00 that usage was billed.
    assert_eq!(of("d-usage").unwrap().amount, dec!(24.80));
    assert_eq!(of("d-other").unwrap().amount, dec!(31.00), "another usage's credit");
    assert_eq!(audit.credited, vec![("CNY".to_owned(), dec!(31.00) + dec!(10.00) + dec!(6.20))]);
}

//! Reconciliation checks on fixtures: each check has a bill that triggers it, with the exact
//! difference and the line asserted, and the clean bills trigger none.

use gpuaudit_core::config::{Config, InstanceNote, RateCard};
use gpuaudit_core::reconcile::{
    Discrepancy, Measure, ReconcileInput, check, footers_of, read_statement,
};
use gpuaudit_core::{Charge, ErrorKind, YearMonth, parse_bill};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;

use super::fixture;

fn may() -> YearMonth {
    YearMonth::new(2024, 5).unwrap()
}

/// Reads bills as `reconcile` sees them: charges, and the footers of their files.
fn read(files: &[&str]) -> (Vec<Charge>, ReconcileInput) {
    let mut charges = Vec::new();
    let mut input = ReconcileInput::default();
    for f in files {
        let bill = parse_bill(&fixture(f), None).unwrap();
        let r = &bill.report;
        input.footers.extend(footers_of(&r.path, r.profile, &r.control_totals, &r.totals));
        charges.extend(bill.charges);
    }
    (charges, input)
}

fn run(files: &[&str], config: Config) -> Vec<Discrepancy> {
    let (charges, mut input) = read(files);
    input.config = config;
    check(&charges, may(), &input).unwrap()
}

/// (code, expected, actual, difference, lines)
fn summary(found: &[Discrepancy]) -> Vec<(&str, Decimal, Decimal, Decimal, Vec<u64>)> {
    found
        .iter()
        .map(|d| {
            (
                d.code,
                d.expected,
                d.actual,
                d.difference,
                d.locations.iter().map(|l| l.line).collect(),
            )
        })
        .collect()
}

fn a10_card(price: Decimal) -> Config {
    let mut c = Config::default();
    c.rates.push(RateCard {
        platform: "aliyun".into(),
        gpu_model: "A10".into(),
        on_demand_hourly: Some(price),
        ..RateCard::default()
    });
    c
}

#[test]
fn clean_bills_have_no_discrepancy() {
    let files = ["aliyun/valid/reconcile_clean.csv", "autodl/valid/two_days.csv"];
    assert_eq!(run(&files, a10_card(dec!(8.47))), Vec::new());
}

#[test]
fn r001_price_times_quantity_differs_from_the_list_cost() {
    let found = run(&["aliyun/valid/r001_arithmetic.csv"], Config::default());
    assert_eq!(summary(&found), vec![("R001", dec!(12.50), dec!(13.00), dec!(0.50), vec![6])]);
    assert_eq!(found[0].measure, Measure::Money("CNY".into()));
    assert_eq!(found[0].detail, "0.025 × 500 = 12.50, but the bill says 13.00 (数据盘)");
}

#[test]
fn r002_the_same_disk_day_billed_twice() {
    let found = run(&["aliyun/valid/r002_double_charge.csv"], Config::default());
    assert_eq!(summary(&found), vec![("R002", dec!(12.50), dec!(25.00), dec!(12.50), vec![6, 7])]);
    assert_eq!(found[0].resource_id.as_deref(), Some("d-bp1clean002"));
}

#[test]
fn r003_a_missing_day_of_a_daily_disk_and_ip() {
    let found = run(&["aliyun/valid/r003_coverage_gap.csv"], Config::default());
    assert_eq!(
        summary(&found),
        vec![
            ("R003", dec!(72), dec!(48), dec!(-24), vec![6, 9]),
            ("R003", dec!(72), dec!(48), dec!(-24), vec![7, 10]),
        ]
    );
    assert_eq!(found[0].measure, Measure::Hours);
    assert_eq!(found[0].period, "2024-05-02T16:00:00Z/2024-05-03T16:00:00Z");
}

#[test]
fn r004_a_missing_row_breaks_the_balance_chain_once() {
    let found = run(&["autodl/valid/r004_balance_broken.csv"], Config::default());
    assert_eq!(summary(&found), vec![("R004", dec!(96.28), dec!(98.28), dec!(2.00), vec![5])]);
    assert_eq!(found[0].detail, "balance 98.28 after expense 1.60 should be 96.28");
}

#[test]
fn r005_a_footer_that_disagrees_with_its_rows() {
    let found = run(&["aliyun/valid/r005_footer_mismatch.csv"], Config::default());
    assert_eq!(summary(&found), vec![("R005", dec!(620.00), dec!(621.63), dec!(1.63), vec![11])]);
}

#[test]
fn r005_a_statement_file_catches_a_mismatch() {
    let (charges, mut input) =
        read(&["aliyun/valid/reconcile_clean.csv", "autodl/valid/two_days.csv"]);
    input.statements = read_statement(&fixture("statements/may_2024.csv")).unwrap();
    assert_eq!(input.statements.len(), 3);
    let found = check(&charges, may(), &input).unwrap();
    assert_eq!(summary(&found), vec![("R005", dec!(10.00), dec!(6.23), dec!(-3.77), vec![3])]);
    assert!(found[0].locations[0].file.ends_with("statements/may_2024.csv"));
}

#[test]
fn a_malformed_statement_is_refused_with_its_line_and_column() {
    let err = read_statement(&fixture("statements/invalid/total_not_a_number.csv")).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidLines { total: 1, .. }));
    assert!(
        err.to_string()
            .ends_with("total_not_a_number.csv:2: column total: \"12.3.4\" is not an amount"),
        "{err}"
    );
}

#[test]
fn r006_a_price_above_the_rate_card_and_one_equal_to_it() {
    let found = run(&["aliyun/valid/r006_above_rate_card.csv"], a10_card(dec!(8.47)));
    assert_eq!(summary(&found), vec![("R006", dec!(8.47), dec!(9.10), dec!(0.63), vec![5])]);
}

/// R006 takes a row's model from its instance's note when the row names none, the note and
/// the card found among a thousand others (each instance's looked up once, not each row's).
#[test]
fn r006_takes_the_model_from_the_instance_s_note_among_many() {
    let (mut charges, mut input) = read(&["aliyun/valid/r006_above_rate_card.csv"]);
    for c in &mut charges {
        c.gpu_model = None;
    }
    let mut config = a10_card(dec!(8.47));
    for i in 0..1_000 {
        let id = format!("i-other{i}");
        let model = Some("T4".to_owned());
        config.instances.push(InstanceNote {
            platform: "aliyun".into(),
            id,
            gpu_model: model,
            ..InstanceNote::default()
        });
        let card = RateCard {
            platform: "aliyun".into(),
            gpu_model: format!("M{i}"),
            on_demand_hourly: Some(dec!(1)),
            ..RateCard::default()
        };
        config.rates.insert(0, card);
    }
    let r006 = |config: &Config, input: &mut ReconcileInput| {
        input.config = config.clone();
        let found = check(&charges, may(), input).unwrap();
        found.into_iter().filter(|d| d.code == "R006").collect::<Vec<_>>()
    };
    assert!(r006(&config, &mut input).is_empty(), "no model named: no card applies");
    let note = InstanceNote {
        platform: "aliyun".into(),
        id: "i-bp1clean001".into(),
        gpu_model: Some("A10".into()),
        ..InstanceNote::default()
    };
    config.instances.push(note);
    let found = r006(&config, &mut input);
    assert_eq!(summary(&found), vec![("R006", dec!(8.47), dec!(9.10), dec!(0.63), vec![5])]);
    assert!(found[0].detail.starts_with("A10 billed at"), "{}", found[0].detail);
}

#[test]
fn r007_two_currencies_in_one_account_month() {
    let found = run(&["aliyun/valid/r007_mixed_currency.csv"], Config::default());
    assert_eq!(summary(&found), vec![("R007", dec!(1), dec!(2), dec!(1), vec![2, 11])]);
    assert_eq!(found[0].detail, "one account bills in 621.63 CNY and 1.20 USD");
}

#[test]
fn r008_a_charge_for_march_billed_in_may() {
    let found = run(&["aliyun/valid/r008_period_mismatch.csv"], Config::default());
    assert_eq!(summary(&found), vec![("R008", dec!(0), dec!(31), dec!(31), vec![11])]);
    assert_eq!(found[0].measure, Measure::Days);
}

#[test]
fn r001_compares_a_cur_rate_with_the_cost_it_prices_not_the_public_on_demand_cost() {
    // Reserved-instance hours (rate 0, cost 0, public on-demand 0.526), the RI fee, Savings
    // Plan covered hours and their negations (negative rates), the plan's recurring fee.
    let file = "aws-cur/valid/reservation_and_savings_plan.csv";
    let (charges, input) = read(&[file]);
    let spend = charges.iter().map(|c| c.billed_cost);
    assert_eq!(gpuaudit_core::money::sum(spend, "t").unwrap(), dec!(149.01));
    let by = super::by_category(&charges);
    assert_eq!(by, super::cats(&[("compute", dec!(147.06)), ("other", dec!(1.95))]));
    assert_eq!(check(&charges, may(), &input).unwrap(), vec![]);
    // Compared with the public on-demand cost instead, every reserved hour was a false hit.
    let list = ReconcileInput { platforms: gpuaudit_core::platforms::Platforms::none(), ..input };
    let found = check(&charges, may(), &list).unwrap();
    assert_eq!(
        summary(&found),
        vec![
            ("R001", dec!(0), dec!(0.526), dec!(0.526), vec![3]),
            ("R001", dec!(0), dec!(0.526), dec!(0.526), vec![4]),
            ("R001", dec!(0), dec!(0.526), dec!(0.526), vec![5]),
            ("R001", dec!(144.00), dec!(0), dec!(-144.00), vec![6]),
            ("R001", dec!(1.006), dec!(0), dec!(-1.006), vec![8]),
            ("R001", dec!(0.65), dec!(0), dec!(-0.65), vec![9]),
            ("R001", dec!(1.006), dec!(0), dec!(-1.006), vec![11]),
            ("R001", dec!(0.65), dec!(0), dec!(-0.65), vec![12]),
            ("R001", dec!(1.006), dec!(0), dec!(-1.006), vec![14]),
            ("R001", dec!(0.65), dec!(0), dec!(-0.65), vec![15]),
        ]
    );
}

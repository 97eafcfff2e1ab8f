//! FOCUS and AWS CUR bills, read by their built-in profile files: totals by category to the
//! cent, kinds and pricing, the spec's own examples, and the spec's impossible timestamp.

use gpuaudit_core::{Category, Kind, Pricing, parse_bill};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;

use super::{by_category, cats, fixture};

#[test]
fn focus_export_with_null_strings_and_times_without_t() {
    let bill = parse_bill(&fixture("focus/valid/messy_export.csv"), None).unwrap();
    assert_eq!(bill.report.profile, "focus");
    assert_eq!(
        by_category(&bill.charges),
        cats(&[
            ("compute", dec!(3.673)),
            ("data_disk", dec!(0.60)),
            ("other", dec!(-4.64)),
            ("public_ip", dec!(0.005)),
            ("snapshot", dec!(0.05)),
            ("system_disk", dec!(0.20)),
            ("traffic", dec!(1.17)),
        ])
    );
    let kinds: Vec<Kind> = bill.charges.iter().map(|c| c.kind).collect();
    assert_eq!(kinds.iter().filter(|k| **k == Kind::Tax).count(), 1);
    assert_eq!(kinds.iter().filter(|k| **k == Kind::Credit).count(), 1, "lower-case 'credit'");
    let committed = &bill.charges[1];
    assert_eq!((committed.pricing, committed.billed_cost), (Pricing::Reserved, dec!(0.00)));
    assert_eq!(committed.instance_id.as_deref(), Some("/subscriptions/s1/vm-train"));
    assert_eq!(committed.charge_start, bill.charges[0].charge_end, "T/Z and plain times agree");
    let transfer = bill.charges.iter().find(|c| c.category == Category::Traffic).unwrap();
    assert_eq!(transfer.resource_id, None, "NULL is no value");
    assert_eq!(bill.charges[0].account.as_deref(), Some("012345678901"), "ids keep leading zeros");
    assert_eq!(bill.charges[0].billing_period.to_string(), "2024-05");
}

#[test]
fn the_focus_specs_own_examples_import() {
    let cases = [
        ("focus/valid/commitment_discount_purchase_scenario_1.csv", 1, dec!(8760.00)),
        ("focus/valid/commitment_discount_usage_scenario_3.csv", 2, dec!(0.00)),
        (
            "focus/valid/one_hundred_percent_utilization_with_commitment_discount_flexibility_with_2_resources.csv",
            3,
            dec!(2.00),
        ),
    ];
    for (file, rows, billed) in cases {
        let bill = parse_bill(&fixture(file), None).unwrap();
        assert_eq!(bill.report.profile, "focus", "{file}");
        assert_eq!(bill.charges.len(), rows, "{file}");
        let total: Decimal = bill.charges.iter().map(|c| c.billed_cost).sum();
        assert_eq!(total, billed, "{file}");
        assert!(bill.charges.iter().all(|c| c.currency == "USD"));
    }
    let purchase = parse_bill(&fixture(cases[0].0), None).unwrap().charges.remove(0);
    assert_eq!((purchase.kind, purchase.pricing), (Kind::Purchase, Pricing::OnDemand));
}

#[test]
fn the_focus_examples_impossible_timestamp_is_refused_at_its_line() {
    let file = "focus/invalid/impossible_timestamp_commitment_discount_purchase_scenario_3.csv";
    let err = parse_bill(&fixture(file), None).unwrap_err().to_string();
    assert!(
        err.contains(
            "scenario_3.csv:5: column ChargePeriodEnd: \"2023-02-01T30:00:00Z\" is not a time"
        ),
        "{err}"
    );
}

#[test]
fn cur_2_snake_case_with_region_prefixed_usage_types() {
    let bill = parse_bill(&fixture("aws-cur/valid/cur2_snake_case.csv"), None).unwrap();
    assert_eq!(bill.report.profile, "aws-cur");
    assert_eq!(
        by_category(&bill.charges),
        cats(&[
            ("compute", dec!(65.7030)),
            ("data_disk", dec!(8.00)),
            ("other", dec!(3.10)),
            ("public_ip", dec!(0.005)),
            ("snapshot", dec!(2.50)),
            ("traffic", dec!(0.90)),
        ])
    );
    let c = &bill.charges;
    assert_ne!(c[0].id, c[1].id, "one LineItemId in two intervals is two charges");
    assert_eq!((c[0].gpu_model.as_deref(), c[0].pricing), (Some("A100 40GB"), Pricing::OnDemand));
    assert_eq!((c[2].kind, c[2].pricing), (Kind::Usage, Pricing::Reserved), "Savings Plan usage");
    assert_eq!((c[3].kind, c[3].billed_cost), (Kind::Adjustment, dec!(-1.006)), "SP negation");
    assert_eq!((c[8].pricing, c[8].gpu_model.as_deref()), (Pricing::Spot, Some("T4")));
    assert_eq!((c[9].kind, c[9].category), (Kind::Tax, Category::Other));
    assert_eq!(c[0].instance_id.as_deref(), Some("i-0abc123"));
    assert_eq!(c[5].instance_id, None, "a snapshot names no instance in CUR");
}

#[test]
fn cur_legacy_headers_read_alike() {
    let bill = parse_bill(&fixture("aws-cur/valid/legacy_headers.csv"), None).unwrap();
    assert_eq!(bill.report.profile, "aws-cur");
    assert_eq!(
        by_category(&bill.charges),
        cats(&[("compute", dec!(1.861)), ("data_disk", dec!(5.00))])
    );
    assert_eq!(bill.charges[0].gpu_model.as_deref(), Some("L40S"));
    let err = parse_bill(&fixture("aws-cur/invalid/cost_not_a_number.csv"), None).unwrap_err();
    assert!(
        err.to_string().contains(
            "cost_not_a_number.csv:2: column line_item_unblended_cost: \"32.77.26\" is not an amount"
        ),
        "{err}"
    );
}

#[test]
fn tencent_in_gb18030_with_title_rows_components_and_a_footer() {
    let bill =
        parse_bill(&fixture("tencent/valid/gb18030_title_rows_and_footer.csv"), None).unwrap();
    assert_eq!(bill.report.profile, "tencent");
    assert_eq!(
        by_category(&bill.charges),
        cats(&[
            ("compute", dec!(1057.92)),
            ("data_disk", dec!(0.60)),
            ("public_ip", dec!(0.20)),
            ("snapshot", dec!(0.10)),
            ("system_disk", dec!(0.05)),
            ("traffic", dec!(1.00)),
        ])
    );
    let c = &bill.charges;
    assert_eq!(c[0].origin.line, 4, "two title rows and the header come first");
    assert_eq!((c[2].gpu_model.as_deref(), c[2].pricing), (Some("T4"), Pricing::OnDemand));
    assert_eq!(c[5].instance_id.as_deref(), Some("ins-8x2k4mq1"), "a CVM's disk names the CVM");
    assert_eq!((c[8].kind, c[8].pricing), (Kind::Purchase, Pricing::Subscription));
    assert_eq!((c[9].kind, c[9].billed_cost), (Kind::Refund, dec!(-300.00)));
    assert_eq!(bill.report.control_totals[0].amount, Some(dec!(1059.87)));
    assert_eq!(bill.report.totals["CNY"], dec!(1059.87), "the footer agrees with the rows");
    let ids: std::collections::HashSet<_> = c.iter().map(|c| c.id).collect();
    assert_eq!(ids.len(), 10, "one 交易ID, one charge per component");
    let err =
        parse_bill(&fixture("tencent/invalid/fullwidth_digit_in_amount.csv"), None).unwrap_err();
    assert!(err.to_string().contains(":2: column 优惠后总价: \"0.4５\" is not an amount"), "{err}");
}

#[test]
fn ctyun_amounts_with_yen_signs_and_thousands_separators() {
    let bill = parse_bill(&fixture("ctyun/valid/yen_amounts.csv"), None).unwrap();
    assert_eq!(bill.report.profile, "ctyun");
    assert_eq!(
        by_category(&bill.charges),
        cats(&[
            ("compute", dec!(1645.44)),
            ("data_disk", dec!(1.20)),
            ("public_ip", dec!(4.80)),
            ("snapshot", dec!(0.30)),
        ])
    );
    let c = &bill.charges;
    assert_eq!(
        (c[0].kind, c[0].pricing, c[0].billed_cost),
        (Kind::Purchase, Pricing::Subscription, dec!(2880.00))
    );
    assert_eq!((c[1].kind, c[1].pricing), (Kind::Usage, Pricing::OnDemand), "codes 7 and 2");
    assert_eq!((c[3].kind, c[3].billed_cost), (Kind::Refund, dec!(-1234.56)), "退订 is negative");
    let err = parse_bill(&fixture("ctyun/invalid/month_not_a_month.csv"), None).unwrap_err();
    assert!(err.to_string().contains(":2: column 账期: \"2024-5月\" is not a month"), "{err}");
}

#[test]
fn gpushare_generic_aliases_and_top_ups_that_are_not_spend() {
    let bill = parse_bill(&fixture("gpushare/valid/generic_aliases.csv"), None).unwrap();
    assert_eq!(bill.report.profile, "gpushare");
    assert_eq!(
        by_category(&bill.charges),
        cats(&[("compute", dec!(163.76)), ("data_disk", dec!(0.96))])
    );
    assert_eq!((bill.charges[0].kind, bill.charges[0].billed_cost), (Kind::Payment, dec!(-100.00)));
    let weekly = bill.charges.iter().find(|c| c.origin.item.contains("包周")).unwrap();
    assert_eq!(weekly.pricing, Pricing::Subscription);
    // An hourly row covers the hour that ends at its time (the first at most an hour).
    let hourly = bill.charges.iter().find(|c| c.origin.line == 4).unwrap();
    assert_eq!(hourly.charge_end - hourly.charge_start, chrono::Duration::hours(1));
    let err = parse_bill(&fixture("gpushare/invalid/time_without_date.csv"), None).unwrap_err();
    assert!(err.to_string().contains(":2: column 时间: \"10:00:00\" is not a time"), "{err}");
}

#[test]
fn an_xlsx_bill_reads_like_its_csv() {
    let bill = parse_bill(&fixture("aliyun/valid/console_export.xlsx"), None).unwrap();
    assert_eq!(bill.report.profile, "aliyun");
    assert_eq!(
        by_category(&bill.charges),
        cats(&[
            ("compute", dec!(193.20)),
            ("data_disk", dec!(12.50)),
            ("system_disk", dec!(1.25)),
            ("traffic", dec!(3.456)),
        ])
    );
    let c = &bill.charges;
    assert_eq!(c[0].origin.line, 3, "sheet row 3: a title row and the header first");
    assert_eq!(c[0].unit_price, Some(dec!(8.47)), "numbers keep their digits");
    assert_eq!(c[0].charge_start.to_rfc3339(), "2024-05-01T16:00:00+00:00", "dates are local");
    assert_eq!(c[2].instance_id.as_deref(), Some("i-bp1xlsx0001"));
    assert_eq!(
        bill.report.size,
        std::fs::metadata(fixture("aliyun/valid/console_export.xlsx")).unwrap().len()
    );
}

#[test]
fn a_big_file_parsed_on_several_threads_comes_out_whole_and_in_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let rows = 9_000; // several batches of 2,048 rows
    let (path, total) = super::big_focus_file(dir.path(), rows);
    let bill = parse_bill(&path, None).unwrap();
    assert_eq!(bill.report.rows_read, rows as u64);
    assert_eq!(bill.charges.len(), rows);
    let lines: Vec<u64> = bill.charges.iter().map(|c| c.origin.line).collect();
    assert_eq!(lines, (2..rows as u64 + 2).collect::<Vec<_>>(), "file order, every line");
    let billed: Decimal = bill.charges.iter().map(|c| c.billed_cost).sum();
    assert_eq!(billed, total);
    assert_eq!(bill.report.totals["USD"], total);
    let resources: Vec<String> =
        bill.charges.iter().map(|c| c.resource_id.clone().unwrap_or_default()).collect();
    assert_eq!(resources[4_321], "res-4321");
    // The GB18030 cells after the first 64 KiB of ASCII are decoded, not rejected.
    assert_eq!(bill.charges[rows - 1].region.as_deref(), Some("华东1"));
    assert_eq!(bill.charges[rows - 11].region.as_deref(), Some("eastus"));
    let ids: std::collections::HashSet<_> = bill.charges.iter().map(|c| c.id).collect();
    assert_eq!(ids.len(), rows);
}

/// The parser fills one charge in place row after row: a field a row leaves empty must not
/// keep the previous row's value, and a row like an earlier one reads the same.
#[test]
fn rows_parsed_one_after_another_keep_nothing_of_the_row_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("focus.csv");
    let header = "BilledCost,ListCost,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,\
                  BillingCurrency,ResourceId,ResourceName,RegionId,PricingUnit,ServiceCategory,\
                  ChargeDescription,SubAccountId,BillingPeriodStart";
    let full = "3.673,4.000,2024-05-01 00:00:00,2024-05-01 01:00:00,Usage,USD,vm-1,gpu-box,\
                eastus,Hours,Compute,NC24ads_A100_v4 hours,acct-1,2024-05-01T00:00:00Z";
    let bare =
        "0.050,,2024-05-01 00:00:00,2024-05-01 01:00:00,Usage,EUR,,,NULL,,Storage,,,2024-05-01";
    std::fs::write(&path, format!("{header}\n{full}\n{bare}\n{full}\n")).unwrap();
    let charges = parse_bill(&path, None).unwrap().charges;
    assert_eq!(charges.len(), 3);
    let (first, second, third) = (&charges[0], &charges[1], &charges[2]);
    assert_eq!(first.resource_name.as_deref(), Some("gpu-box"));
    assert_eq!(first.sub_account.as_deref(), Some("acct-1"));
    assert_eq!(first.list_cost, Some(Decimal::new(4000, 3)));
    for (field, value) in [
        ("resource_id", &second.resource_id),
        ("resource_name", &second.resource_name),
        ("region", &second.region),
        ("unit", &second.unit),
        ("sub_account", &second.sub_account),
        ("gpu_model", &second.gpu_model),
        ("instance_id", &second.instance_id),
    ] {
        assert_eq!(*value, None, "{field} of the bare row");
    }
    assert_eq!(second.list_cost, None);
    assert_eq!(second.currency, "EUR");
    assert_eq!(second.origin.item, "");
    assert_eq!(second.category, Category::Storage);
    assert_eq!((first.origin.line, second.origin.line, third.origin.line), (2, 3, 4));
    let mut same = third.clone();
    same.origin.line = first.origin.line;
    same.id = first.id;
    assert_eq!(&same, first, "the third row reads like the first");
}

/// FOCUS makes BillingPeriodStart mandatory, but an export without it is still readable: the
/// billing month then comes from the charge's start, as for a missing period column.
#[test]
fn a_focus_export_without_billing_period_start_takes_the_month_of_the_charge() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no_period.csv");
    let rows = "BilledCost,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ServiceCategory\n\
                1.50,2024-05-31 23:00:00,2024-06-01 00:00:00,Usage,Compute\n\
                2.25,2024-06-01 00:00:00,2024-06-01 01:00:00,Usage,Compute\n";
    std::fs::write(&path, rows).unwrap();
    let bill = parse_bill(&path, None).unwrap();
    let months: Vec<String> = bill.charges.iter().map(|c| c.billing_period.to_string()).collect();
    assert_eq!(months, ["2024-05", "2024-06"]);
    assert_eq!(bill.report.profile, "focus");
}

//! Regression tests of the third month's bills: shapes the first fixtures did not have.

use gpuaudit_core::config::Config;
use gpuaudit_core::report::{GroupKey, summarize};
use gpuaudit_core::waste::audit;
use gpuaudit_core::{Category, YearMonth, parse_bill};
use rust_decimal_macros::dec;

use super::fixture;

#[test]
fn egress_of_a_focus_vm_on_its_resource_id_belongs_to_the_vm() {
    let bill =
        parse_bill(&fixture("focus/valid/vm_with_egress_on_its_resource_id.csv"), None).unwrap();
    let vm = "//compute.googleapis.com/projects/ml-lab/zones/us-central1-a/instances/4511923871736527610";
    let traffic: Vec<_> = bill.charges.iter().filter(|c| c.category == Category::Traffic).collect();
    assert_eq!(traffic.len(), 3);
    assert!(traffic.iter().all(|c| c.instance_id.as_deref() == Some(vm)), "{traffic:?}");
    let rows = summarize(&bill.charges, &[GroupKey::Instance, GroupKey::Category]).unwrap();
    let got: Vec<_> = rows.iter().map(|r| (r.keys.clone(), r.billed_cost)).collect();
    assert_eq!(
        got,
        [
            (vec![Some(vm.to_owned()), Some("compute".to_owned())], dec!(88.08)),
            (vec![Some(vm.to_owned()), Some("traffic".to_owned())], dec!(60.00)),
        ]
    );
    // Traffic is 60.00 of the VM's 148.08: 15.576 over the 30 % share.
    let may = YearMonth::new(2024, 5).unwrap();
    let findings = audit(&bill.charges, may, &Config::default()).unwrap();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!((findings[0].code, findings[0].amount), ("W006", dec!(15.576)));
    assert_eq!(findings[0].instance_id.as_deref(), Some(vm));
}

#[test]
fn the_tencent_resource_bill_reads_with_its_own_profile_on_the_tencent_platform() {
    // GB18030, two title rows, a 合计 footer, 8-decimal money, one row per resource.
    let bill = parse_bill(&fixture("tencent/valid/resource_bill_gb18030.csv"), None).unwrap();
    assert_eq!(bill.report.profile, "tencent-resource");
    assert!(bill.charges.iter().all(|c| c.platform == "tencent"));
    assert_eq!(
        super::by_category(&bill.charges),
        super::cats(&[
            ("compute", dec!(6736.61111111)),
            ("data_disk", dec!(432.00)),
            ("public_ip", dec!(5.28)),
            ("snapshot", dec!(3.72000001)),
        ])
    );
    let footer = &bill.report.control_totals[0];
    assert_eq!((footer.label.as_str(), footer.amount), ("合计", Some(dec!(7177.61111112))));
    assert_eq!(bill.report.totals["CNY"], dec!(7177.61111112), "the rows add up to the footer");
    let by_resource =
        |r: &str| bill.charges.iter().find(|c| c.resource_id.as_deref() == Some(r)).unwrap();
    let cvm = by_resource("ins-8x2k4mq1");
    assert_eq!(
        (cvm.gpu_model.as_deref(), cvm.pricing),
        (Some("T4"), gpuaudit_core::Pricing::OnDemand)
    );
    assert_eq!(
        cvm.charge_end - cvm.charge_start,
        chrono::Duration::days(30),
        "hours from its usage start and end"
    );
    assert_eq!(
        by_resource("disk-7m2qk9a1").instance_id.as_deref(),
        Some("ins-8x2k4mq1"),
        "by 配置描述"
    );
    assert_eq!(
        by_resource("eip-3k9d2m1x").instance_id.as_deref(),
        Some("ins-8x2k4mq1"),
        "by 扩展字段1"
    );
    let refund = bill.charges.iter().find(|c| c.kind == gpuaudit_core::Kind::Refund).unwrap();
    assert_eq!((refund.billed_cost, refund.gpu_model.as_deref()), (dec!(-445.50), Some("A10")));
    // The detail bill still reads with the `tencent` profile, on the same platform.
    let detail =
        parse_bill(&fixture("tencent/valid/gb18030_title_rows_and_footer.csv"), None).unwrap();
    assert_eq!(
        (detail.report.profile, detail.charges[0].platform.as_str()),
        ("tencent", "tencent")
    );
}

/// The findings and discrepancies of one bill's month, as `waste` and `reconcile` see it.
fn audit_and_reconcile(
    rel: &str,
) -> (Vec<gpuaudit_core::waste::Finding>, Vec<gpuaudit_core::reconcile::Discrepancy>) {
    use gpuaudit_core::reconcile::{ReconcileInput, check, footers_of};
    let bill = parse_bill(&fixture(rel), None).unwrap();
    let may = YearMonth::new(2024, 5).unwrap();
    let findings = audit(&bill.charges, may, &Config::default()).unwrap();
    let mut input = ReconcileInput::default();
    let r = &bill.report;
    input.footers.extend(footers_of(&r.path, r.profile, &r.control_totals, &r.totals));
    (findings, check(&bill.charges, may, &input).unwrap())
}

#[test]
fn the_third_months_bills_audit_and_reconcile_to_the_cent() {
    let (findings, found) = audit_and_reconcile("tencent/valid/resource_bill_gb18030.csv");
    assert_eq!(
        (findings, found),
        (vec![], vec![]),
        "the footer agrees; the disk and IP belong to a running CVM"
    );
    let (findings, found) =
        audit_and_reconcile("gpushare/valid/running_instance_with_its_disk.csv");
    assert_eq!((findings, found), (vec![], vec![]));
    let (findings, found) = audit_and_reconcile("aws-cur/valid/reservation_and_savings_plan.csv");
    assert_eq!((findings, found), (vec![], vec![]), "no false R001 on covered hours");
    let (findings, found) =
        audit_and_reconcile("focus/valid/vm_with_egress_on_its_resource_id.csv");
    let w: Vec<_> = findings.iter().map(|f| (f.code, f.amount, f.charges.len())).collect();
    assert_eq!(w, [("W006", dec!(15.576), 3)]);
    assert_eq!(found, vec![]);
}

#[test]
fn an_unclosed_quote_is_refused_at_the_line_it_opened_and_nothing_is_read() {
    let err = parse_bill(&fixture("autodl/invalid/unclosed_quote_in_note.csv"), None).unwrap_err();
    assert!(
        err.to_string().ends_with(
            "unclosed_quote_in_note.csv:5: column 备注: a quote opened here is never closed"
        ),
        "{err}"
    );
}

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

//! The audit context: what the rows tell reaches it whole, however the window was read.

use super::*;
use crate::Charge;
use crate::charge::ChargeId;
use chrono::TimeZone;

/// A store's window keeps of the look-back only its compute; what the rows it leaves out
/// tell (the time the ledger knows, first sightings) reaches the context all the same.
#[test]
fn a_window_that_leaves_out_the_look_back_s_storage_gives_the_same_context() {
    let at = |m: u32, d: u32| Utc.with_ymd_and_hms(2024, m, d, 0, 0, 0).unwrap();
    let charge = |id: u128, resource: &str, category: Category, start, end, month| Charge {
        id: ChargeId(id),
        platform: "p".into(),
        resource_id: Some(resource.into()),
        instance_id: (category == Category::Compute).then(|| resource.into()),
        category,
        charge_start: start,
        charge_end: end,
        billing_period: YearMonth::new(2024, month).unwrap(),
        billed_cost: Decimal::ONE,
        currency: "CNY".into(),
        ..Charge::blank()
    };
    let charges = vec![
        // The platform's earliest charge, and the snapshot's first: storage of April.
        charge(1, "snap-1", Category::Snapshot, at(4, 1), at(4, 2), 4),
        charge(2, "disk-1", Category::DataDisk, at(4, 3), at(4, 4), 4),
        charge(3, "vm-1", Category::Compute, at(4, 20), at(4, 21), 4),
        charge(4, "snap-1", Category::Snapshot, at(5, 1), at(5, 2), 5),
        charge(5, "vm-1", Category::Compute, at(5, 10), at(5, 11), 5),
    ];
    let may = YearMonth::new(2024, 5).unwrap();
    let whole = Arc::new(crate::window::rows_of(&charges));
    let mut texts = Texts::default();
    let rows = charges.iter().map(|c| crate::window::row_of(c, &mut texts)).collect();
    let mut trimmed = Window::default();
    let keep = |r: &Row, _: Option<&_>| r.billing_period == may || r.category == Category::Compute;
    trimmed.append_keeping(rows, Default::default(), &texts, &keep).unwrap();
    assert_eq!((trimmed.rows.len(), trimmed.left_out.rows), (3, 2));

    let (config, platforms) = (Config::default(), Platforms::default());
    let a = Context::new(&whole, may, &config, &platforms).unwrap();
    let trimmed = Arc::new(trimmed);
    let b = Context::new(&trimmed, may, &config, &platforms).unwrap();
    assert_eq!(a.known_span("p"), Some((at(4, 1).into(), at(5, 11).into())));
    assert_eq!(b.known_span("p"), a.known_span("p"));
    assert_eq!(b.first_seen("p", "snap-1"), Some(at(4, 1).into()));
    assert_eq!(b.first_seen("p", "disk-1"), a.first_seen("p", "disk-1"));
    assert!(a.timeline("p", "vm-1").is_some_and(|t| t.covered.len() == 2));
    assert_eq!(b.timeline("p", "vm-1"), a.timeline("p", "vm-1"));
}

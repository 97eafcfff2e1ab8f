//! Regression tests of the trust issue: money read wrong or lost with exit 0, inputs that
//! take the machine, rows that break the ledger. Each is named after the defect it pins down.

use gpuaudit_core::import::Profile;
use gpuaudit_core::{ErrorKind, parse_bill};
use rust_decimal_macros::dec;

use crate::fixture;

/// The row errors of a bill that must be refused.
fn row_errors(rel: &str, profile: Option<&'static gpuaudit_core::import::Profile>) -> Vec<String> {
    match parse_bill(&fixture(rel), profile).map(|_| ()).unwrap_err().into_kind() {
        ErrorKind::InvalidRows { errors, .. } => errors.iter().map(ToString::to_string).collect(),
        other => panic!("{rel}: {other}"),
    }
}

#[test]
fn decimal_commas_are_not_read_as_thousands_separators() {
    let focus = row_errors("focus/invalid/decimal_comma_in_billed_cost.csv", None);
    assert_eq!(focus.len(), 1);
    assert!(
        focus[0].ends_with(
            "decimal_comma_in_billed_cost.csv:3: column BilledCost: \"3,673\" is not an amount (a decimal comma?)"
        ),
        "{focus:?}"
    );
    let aliyun = row_errors("aliyun/invalid/decimal_comma_in_pretax_amount.csv", None);
    assert!(
        aliyun[0].ends_with(
            "decimal_comma_in_pretax_amount.csv:3: column PretaxAmount: \"193,20\" is not an amount (a decimal comma?)"
        ),
        "{aliyun:?}"
    );
}

#[test]
fn a_profile_with_a_decimal_comma_reads_semicolon_separated_bills() {
    let profile = Profile::load(&fixture("eurocloud/eurocloud.toml")).unwrap();
    let bill =
        parse_bill(&fixture("eurocloud/valid/semicolon_decimal_comma.csv"), Some(profile)).unwrap();
    let billed: Vec<_> = bill.charges.iter().map(|c| c.billed_cost).collect();
    assert_eq!(billed, [dec!(12.50), dec!(1234.56), dec!(0.99)]);
    let hours: Vec<_> = bill.charges.iter().map(|c| c.quantity).collect();
    assert_eq!(hours, [Some(dec!(1)), Some(dec!(1.5)), Some(dec!(24))]);
    assert_eq!(bill.charges[0].resource_id.as_deref(), Some("srv-1"));
    assert_eq!(bill.report.totals["EUR"], dec!(1248.05));
    // With a decimal comma, a point may only group thousands: `12.50` is refused.
    let errors = row_errors("eurocloud/invalid/decimal_point_in_a_comma_bill.csv", Some(profile));
    assert!(errors[0].ends_with(":2: column Betrag EUR: \"12.50\" is not an amount"), "{errors:?}");
}

/// A profile file of the least the README asks for, with `extra` columns.
fn minimal_profile(extra: &str) -> &'static Profile {
    let text = format!(
        "name = \"mini\"\ncurrency = \"USD\"\nzone = \"UTC\"\n\n\
         [[columns]]\nkey = \"posted\"\naliases = [\"When\"]\nrequired = true\n\n\
         [[columns]]\nkey = \"billed_cost\"\naliases = [\"Cost\"]\nrequired = true\n{extra}"
    );
    Profile::parse(&text, std::path::Path::new("mini.toml")).unwrap()
}

fn one_charge(profile: &'static Profile, header: &str, row: &str) -> gpuaudit_core::Charge {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mini.csv");
    std::fs::write(&path, format!("When,Cost{header}\n2024-05-03 10:00:00,1.25{row}\n")).unwrap();
    let mut bill = parse_bill(&path, Some(profile)).unwrap();
    assert_eq!(bill.charges.len(), 1);
    bill.charges.remove(0)
}

#[test]
fn a_profile_file_without_times_and_description_is_read_with_the_defaults() {
    let c = one_charge(minimal_profile(""), "", "");
    assert_eq!(
        (c.billed_cost, c.currency.as_str(), c.platform.as_str()),
        (dec!(1.25), "USD", "mini")
    );
    assert_eq!(c.charge_start.to_rfc3339(), "2024-05-03T10:00:00+00:00");
    assert_eq!(c.charge_end, c.charge_start);
    assert_eq!(c.billing_period.to_string(), "2024-05");
    let no_time =
        "name = \"t\"\nzone = \"UTC\"\n[[columns]]\nkey = \"billed_cost\"\naliases = [\"Cost\"]\n";
    let err = Profile::parse(no_time, std::path::Path::new("t.toml")).err().unwrap();
    assert!(err.to_string().contains("no column has the key `charge_start` or `posted`"), "{err}");
}

#[test]
fn every_documented_key_of_a_profile_file_fills_its_ledger_field() {
    let column = |key: &str| format!("\n[[columns]]\nkey = \"{key}\"\naliases = [\"X\"]\n");
    let charge = |key: &str, cell: &str| {
        one_charge(minimal_profile(&column(key)), ",X", &format!(",{cell}"))
    };
    let t = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&chrono::Utc);
    assert_eq!(
        charge("charge_start", "2024-05-03 09:00:00").charge_start,
        t("2024-05-03T09:00:00Z")
    );
    let end = charge("charge_end", "2024-05-03 11:00:00");
    assert_eq!(
        (end.charge_start, end.charge_end),
        (t("2024-05-03T10:00:00Z"), t("2024-05-03T11:00:00Z"))
    );
    assert_eq!(charge("billing_period", "2024-04").billing_period.to_string(), "2024-04");
    assert_eq!(charge("account", "acct-7").account.as_deref(), Some("acct-7"));
    assert_eq!(charge("resource_id", "vm-7").resource_id.as_deref(), Some("vm-7"));
    assert_eq!(charge("resource_name", "trainer").resource_name.as_deref(), Some("trainer"));
    assert_eq!(charge("region", "eu-west-1").region.as_deref(), Some("eu-west-1"));
    assert_eq!(charge("quantity", "2.5").quantity, Some(dec!(2.5)));
    assert_eq!(charge("unit", "Hours").unit.as_deref(), Some("Hours"));
    assert_eq!(charge("unit_price", "0.5").unit_price, Some(dec!(0.5)));
    assert_eq!(charge("list_cost", "1.50").list_cost, Some(dec!(1.50)));
    assert_eq!(charge("currency", "EUR").currency, "EUR");
    assert_eq!(charge("balance_after", "98.75").balance_after, Some(dec!(98.75)));
    assert_eq!(charge("gpu_count", "8").gpu_count, Some(8));
    let posted = one_charge(minimal_profile(""), "", "");
    assert_eq!(posted.charge_start, t("2024-05-03T10:00:00Z"), "posted");
}

#[test]
fn a_header_with_a_mapped_column_twice_is_refused() {
    let err = parse_bill(&fixture("aliyun/invalid/pretax_amount_twice.csv"), None).err().unwrap();
    assert!(
        err.to_string().ends_with(
            "pretax_amount_twice.csv:1: column PretaxAmount appears twice (columns 22 and 24)"
        ),
        "{err}"
    );
}

#[test]
fn sums_that_would_overflow_are_errors_in_waste_reconcile_and_summary() {
    use chrono::TimeZone;
    use gpuaudit_core::{Category, Charge, ChargeId, Kind, Origin, Pricing, YearMonth};
    let may = YearMonth::new(2024, 5).unwrap();
    let start = chrono::Utc.with_ymd_and_hms(2024, 5, 1, 0, 0, 0).unwrap();
    // Figures a caller built itself, past what import accepts: the library must not panic.
    let charges: Vec<Charge> = (0..2000)
        .map(|i| Charge {
            id: ChargeId(i),
            platform: "aliyun".into(),
            account: None,
            sub_account: None,
            account_name: None,
            sub_account_name: None,
            billing_period: may,
            charge_start: start + chrono::Duration::minutes(i as i64),
            charge_end: start + chrono::Duration::minutes(i as i64 + 1),
            resource_id: Some("d-orphan".into()),
            resource_name: None,
            instance_id: None,
            region: None,
            category: Category::DataDisk,
            kind: Kind::Usage,
            pricing: Pricing::OnDemand,
            gpu_model: None,
            gpu_count: None,
            quantity: Some(dec!(1)),
            unit: None,
            unit_price: Some(dec!(50000000000000000000000000)),
            list_cost: None,
            billed_cost: dec!(50000000000000000000000000),
            currency: "CNY".into(),
            balance_after: None,
            origin: Origin { file: "big.csv".into(), line: 2 + i as u64, item: "disk".into() },
            service: None,
            usage_type: None,
        })
        .collect();
    let config = gpuaudit_core::config::Config::default();
    let waste = gpuaudit_core::waste::audit(&charges, may, &config).unwrap_err();
    assert!(waste.to_string().contains("does not fit in 28 significant digits"), "{waste}");
    let summary =
        gpuaudit_core::report::summarize(&charges, &[gpuaudit_core::report::GroupKey::Platform]);
    assert!(summary.is_err());
    let input = gpuaudit_core::reconcile::ReconcileInput::default();
    let statement = gpuaudit_core::reconcile::StatementLine {
        platform: "aliyun".into(),
        account: None,
        month: may,
        currency: "CNY".into(),
        total: dec!(1),
        location: gpuaudit_core::reconcile::Line { file: "s.csv".into(), line: 2 },
    };
    let input = gpuaudit_core::reconcile::ReconcileInput { statements: vec![statement], ..input };
    assert!(gpuaudit_core::reconcile::check(&charges, may, &input).is_err());
}

#[test]
fn w005_uses_a_plan_price_seen_in_the_ledger() {
    // An AutoDL 包月 order for one RTX 4090 instance (its model from the [[instance]] notes),
    // and another RTX 4090 on demand all month, above that price; no rate card.
    let bill =
        parse_bill(&fixture("autodl/valid/monthly_plan_seen_in_the_ledger.csv"), None).unwrap();
    let notes = "[[instance]]\nplatform = \"autodl\"\nid = \"a1f00d2c9e\"\ngpu_model = \"RTX 4090\"\n\
                 [[instance]]\nplatform = \"autodl\"\nid = \"b2c0ffee77\"\ngpu_model = \"RTX 4090\"\n";
    let config =
        gpuaudit_core::config::Config::parse(notes, std::path::Path::new("g.toml")).unwrap();
    let may = gpuaudit_core::YearMonth::new(2024, 5).unwrap();
    let findings = gpuaudit_core::waste::audit(&bill.charges, may, &config).unwrap();
    let w005: Vec<_> = findings.iter().filter(|f| f.code == "W005").collect();
    assert_eq!(w005.len(), 1, "{findings:?}");
    // 672 h × 2.58 = 1733.76 on demand, against the 1500.00 the 包月 order paid for 30 days.
    assert_eq!(w005[0].amount.round_dp(12), dec!(233.76));
    assert_eq!(w005[0].instance_id.as_deref(), Some("b2c0ffee77"));
    assert!(
        w005[0].recommendation.contains("a monthly plan costs 1500.00"),
        "{}",
        w005[0].recommendation
    );
    // Without the notes the plan's GPU model is unknown: nothing to compare.
    let none = gpuaudit_core::waste::audit(&bill.charges, may, &Default::default()).unwrap();
    assert!(none.iter().all(|f| f.code != "W005"));
}

#[test]
fn errors_say_where_and_keep_their_cause() {
    use std::error::Error as _;
    let err =
        parse_bill(&fixture("focus/invalid/decimal_comma_in_billed_cost.csv"), None).err().unwrap();
    let at = err.location().unwrap();
    assert_eq!((at.line, at.column.as_deref()), (3, Some("BilledCost")));
    assert!(!err.to_string().contains("--skip-invalid"), "no CLI words in the library: {err}");
    let profile = Profile::parse("name = ", std::path::Path::new("p.toml")).err().unwrap();
    assert!(matches!(profile.kind(), ErrorKind::Profile { .. }));
    assert!(profile.source().is_some(), "the TOML error is kept as the cause");
    let config =
        gpuaudit_core::config::Config::parse("[waste]\nnope = 1", std::path::Path::new("g.toml"))
            .unwrap_err();
    assert!(matches!(config.kind(), ErrorKind::Config { .. }) && config.source().is_some());
    assert!(config.location().is_none());
}

/// A program's own sink: it keeps the billed cost of each charge, by id, built on the
/// parsing threads and handed over batch by batch in file order.
#[derive(Default)]
struct Costs {
    ids: Vec<gpuaudit_core::ChargeId>,
    kept: Vec<(gpuaudit_core::ChargeId, rust_decimal::Decimal)>,
    rejects: usize,
}

impl gpuaudit_core::import::Sink for Costs {
    type Batch = Vec<rust_decimal::Decimal>;
    fn new_batch(capacity: usize) -> Self::Batch {
        Vec::with_capacity(capacity)
    }
    fn push(batch: &mut Self::Batch, charge: &gpuaudit_core::Charge) {
        batch.push(charge.billed_cost);
    }
    fn charge(
        &mut self,
        facts: &gpuaudit_core::import::Facts,
        id: gpuaudit_core::ChargeId,
        _new: bool,
    ) -> gpuaudit_core::Result<()> {
        assert_eq!(facts.platform, "autodl");
        self.ids.push(id);
        Ok(())
    }
    fn batch(&mut self, batch: Self::Batch) -> gpuaudit_core::Result<()> {
        assert_eq!(batch.len(), self.ids.len(), "a batch comes after its charges");
        self.kept.extend(self.ids.drain(..).zip(batch));
        Ok(())
    }
    fn reject(
        &mut self,
        _error: gpuaudit_core::RowError,
        _cells: Vec<String>,
    ) -> gpuaudit_core::Result<()> {
        self.rejects += 1;
        Ok(())
    }
}

#[test]
fn a_program_reads_a_bill_into_a_sink_of_its_own() {
    let mut sink = Costs::default();
    let path = fixture("autodl/valid/two_days.csv");
    let report = gpuaudit_core::read_bill(&path, None, &mut sink).unwrap();
    assert_eq!((report.charges, sink.rejects), (7, 0));
    let whole = parse_bill(&path, None).unwrap();
    let mut want: Vec<_> = whole.charges.iter().map(|c| (c.id, c.billed_cost)).collect();
    let mut got = sink.kept;
    want.sort();
    got.sort();
    assert_eq!(got, want);
}

#[test]
fn the_embedding_path_names_the_line_and_the_check_of_figures_no_check_can_multiply() {
    let path = crate::fixture("aliyun/unauditable/figures_no_check_can_multiply.csv");
    let bill = gpuaudit_core::parse_bill(&path, None).unwrap();
    let may: gpuaudit_core::YearMonth = "2024-05".parse().unwrap();
    let config = gpuaudit_core::config::Config::default();
    let at = format!("{}:3: ", path.display());
    let waste = gpuaudit_core::waste::audit(&bill.charges, may, &config).unwrap_err().to_string();
    assert!(waste.starts_with(&format!("{at}W005 on-demand-over-subscription: ")), "{waste}");
    let input = gpuaudit_core::reconcile::ReconcileInput::default();
    let reconcile =
        gpuaudit_core::reconcile::check(&bill.charges, may, &input).unwrap_err().to_string();
    assert!(reconcile.starts_with(&format!("{at}R001 arithmetic: ")), "{reconcile}");
    for message in [waste, reconcile] {
        assert!(message.contains("(the charge of i-bp1huge0001 from 2024-04-30 16:00 UTC)"));
    }
}

//! Tests of the frame builder and the reader (`columns.rs`).

use super::super::mantissa::packed_from_mantissa;
use super::*;

fn column(values: &[Option<&str>]) -> Vec<Option<String>> {
    let mut column = TextColumn::Same { name: "t", value: None, count: 0, capacity: 4 };
    for v in values {
        column.push(*v);
    }
    let built = column.finish();
    assert_eq!(built.len(), values.len());
    built.iter().map(|v| v.map(str::to_owned)).collect()
}

/// A charge with every field set, and one with every optional field empty.
fn charges() -> Vec<Charge> {
    use crate::charge::{Category, Kind, Pricing};
    let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
    let full = Charge {
        id: ChargeId(0x0123_4567_89ab_cdef_0011_2233_4455_6677),
        platform: "aliyun".into(),
        account: Some("1234".into()),
        sub_account: Some("5678".into()),
        account_name: Some("Research".into()),
        sub_account_name: Some("Research GPU".into()),
        billing_period: "2024-05".parse().unwrap(),
        charge_start: at("2024-05-01T00:00:00Z"),
        charge_end: at("2024-05-01T01:00:00.000001Z"),
        resource_id: Some("d-007".into()),
        resource_name: Some("数据盘".into()),
        instance_id: Some("i-001".into()),
        region: Some("cn-beijing".into()),
        category: Category::DataDisk,
        kind: Kind::Refund,
        pricing: Pricing::Subscription,
        gpu_model: Some("A100".into()),
        gpu_count: Some(8),
        quantity: Some("0.000000000001".parse().unwrap()),
        unit: Some("GB".into()),
        unit_price: Some("1.5".parse().unwrap()),
        list_cost: Some("-99999999999999.99".parse().unwrap()),
        billed_cost: "-12.340000000001".parse().unwrap(),
        currency: "CNY".into(),
        balance_after: Some("0".parse().unwrap()),
        origin: Origin { file: "/bills/a.csv".into(), line: 42, item: "row 3".into() },
        service: Some("AmazonEC2".into()),
        usage_type: Some("USE1-EBS:VolumeUsage.gp3 / CreateVolume-Gp3".into()),
    };
    let mut empty = full.clone();
    empty.id = ChargeId(7);
    (empty.account, empty.resource_id, empty.resource_name) = (None, None, None);
    (empty.instance_id, empty.region, empty.gpu_model, empty.unit) = (None, None, None, None);
    (empty.gpu_count, empty.quantity, empty.unit_price) = (None, None, None);
    (empty.list_cost, empty.balance_after) = (None, None);
    (empty.service, empty.usage_type) = (None, None);
    empty.category = Category::Other;
    empty.origin.item = String::new();
    vec![full, empty]
}

#[test]
fn every_column_of_the_schema_is_built_and_read_back() {
    let want = charges();
    let mut builder = FrameBuilder::new(2);
    for c in &want {
        builder.push(c);
    }
    let ids: Vec<u128> = want.iter().map(|c| c.id.0).collect();
    let mut frame = with_ids(builder.finish().unwrap(), &ids).unwrap();
    let names: Vec<&str> = frame.get_column_names().iter().map(|n| n.as_str()).collect();
    assert_eq!(names, schema::COLUMNS);
    assert_eq!(from_frame(&frame).unwrap(), want);

    // And through a part file, as the ledger writes and reads it.
    let mut bytes = Vec::new();
    super::super::part::write(&mut bytes, &mut frame).unwrap();
    let read = ParquetReader::new(std::io::Cursor::new(bytes)).finish().unwrap();
    assert_eq!(from_frame(&read).unwrap(), want);
}

#[test]
fn a_frame_missing_a_column_or_with_the_wrong_type_is_an_error() {
    let mut builder = FrameBuilder::new(1);
    builder.push(&charges()[0]);
    let frame = with_ids(builder.finish().unwrap(), &[1]).unwrap();
    let without = frame.drop("region").unwrap();
    assert!(from_frame(&without).unwrap_err().contains("region"));
    let mut wrong = frame.clone();
    wrong.replace("billed_cost", Column::new("billed_cost".into(), ["1"])).unwrap();
    assert!(from_frame(&wrong).unwrap_err().contains("billed_cost"));
}

#[test]
fn text_columns_hold_what_was_pushed_whether_one_value_or_many() {
    let cases: [&[Option<&str>]; 6] = [
        &[],
        &[Some("focus"); 5],
        &[None, None, None],
        &[Some("a"), Some("a"), None, Some("b"), Some("a")],
        &[None, Some("x")],
        &[Some("/a/very/long/path/to/a/bill/export-2024-05.csv"), Some("")],
    ];
    for values in cases {
        let want: Vec<Option<String>> = values.iter().map(|v| v.map(str::to_owned)).collect();
        assert_eq!(column(values), want, "{values:?}");
    }
}

#[test]
fn a_mantissa_read_back_is_the_normalised_decimal_exactly_on_either_path_and_packed() {
    // Mantissas at the ledger's scale: within 64 bits (the fast path) and beyond it.
    let mut values: Vec<i128> = vec![0, 1, -1, 10, -10, 1_000_000_000_000, i64::MAX as i128];
    values.extend([i64::MIN as i128, i64::MAX as i128 + 1, -(i64::MAX as i128) - 10]);
    values.extend([
        123_450_000_000_000,
        -987_654_321_000,
        5_000_000_000_000_000,
        7 * 10i128.pow(20),
    ]);
    let mut x: i128 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..2000 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1) % (1i128 << 100);
        let zeros = 10i128.pow(x.rem_euclid(13) as u32);
        values.push((x % 1_000_000_000_007) * zeros * if x % 2 == 0 { 1 } else { -1 });
    }
    for v in values {
        for scale in [0, 2, 12, 28, 29, 38] {
            let want = Decimal::try_from_i128_with_scale(v, scale).map(|d| d.normalize());
            let got = decimal_from_mantissa(v, scale);
            // As a window's row keeps it: the same mantissa, sign and scale, and the same
            // error.
            let packed = packed_from_mantissa(v, scale);
            assert_eq!(packed, got.clone().map(crate::window::packed), "{v} at {scale}");
            if let Ok(want) = want {
                let got = got.unwrap();
                assert_eq!(
                    (got, got.scale(), got.to_string()),
                    (want, want.scale(), want.to_string())
                );
            }
        }
    }
}

/// Instants are made exactly as chrono makes them, on every day boundary, before the epoch,
/// at the ends of the range and out of it, in any order.
#[test]
fn instants_made_a_day_at_a_time_are_chrono_s() {
    let day = 86_400_000_000i64;
    let mut values = vec![0, -1, 1, day - 1, day, -day, -day - 1, i64::MIN, i64::MAX];
    values.extend([1_714_521_600_000_000, 1_714_521_599_999_999, 253_402_300_799_999_999]);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Mostly near one another (rows of a bill), sometimes anywhere.
        let near = 1_714_521_600_000_000 + (x % (40 * day as u64)) as i64;
        values.push(if x.is_multiple_of(7) { x as i64 } else { near });
    }
    let mut days = super::Days::default();
    let min = chrono::DateTime::<chrono::Utc>::MIN_UTC.timestamp_micros();
    let max = chrono::DateTime::<chrono::Utc>::MAX_UTC.timestamp_micros();
    values.extend([min, min - 1, max, max + 1]);
    for v in values {
        let want = chrono::DateTime::from_timestamp_micros(v);
        assert_eq!(days.instant(v), want, "{v}");
        // A window's rows take the same instants, and give them back.
        assert_eq!(super::instants().contains(&v), want.is_some(), "{v}");
        if let Some(t) = want {
            let m = crate::window::Micros(v);
            assert_eq!((m.time(), crate::window::Micros::of(t)), (t, m), "{v}");
        }
    }
}

/// The frame of [`charges`] with ids, as an import makes it.
fn frame_of_charges() -> DataFrame {
    let mut builder = FrameBuilder::new(2);
    for c in charges() {
        builder.push(&c);
    }
    with_ids(builder.finish().unwrap(), &[1, 2]).unwrap()
}

/// `frame` written as a part file and read back (its enums as texts), then read by the reader
/// of charges and by the reader of a window's rows (every column of them).
fn both_readers(
    mut frame: DataFrame,
) -> (Result<Vec<Charge>, String>, Result<super::super::rows::PartRows, String>) {
    let wanted = super::super::rows::Wanted {
        amounts: true,
        quantity_only: false,
        ids: true,
        lines: true,
        usage: true,
    };
    let mut bytes = Vec::new();
    super::super::part::write(&mut bytes, &mut frame).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("part.parquet");
    std::fs::write(&path, &bytes).unwrap();
    let frame = ParquetReader::new(std::io::Cursor::new(bytes)).finish().unwrap();
    let no_keys = super::super::keyed::Keyed::default();
    let rows = super::super::rows::rows_from_frame(&frame, &no_keys, wanted);
    // The window's reader proper reads the texts it maps as dictionary keys where it can:
    // the same rows and texts, or the same refusal.
    let names: Vec<String> = super::super::rows::MAPPED.iter().map(|n| (*n).to_owned()).collect();
    let (keyed, rest) = super::super::keyed::read(&path, names);
    assert!(rest.is_empty(), "every text column of a part file is read as keys: {rest:?}");
    let by_keys = super::super::rows::rows_from_frame(&frame, &keyed, wanted);
    assert_eq!(format!("{by_keys:?}"), format!("{rows:?}"));
    (from_frame(&frame), rows)
}

/// An instant no `DateTime` can be, in a part file's column, is refused alike by the reader
/// of charges and by the reader of a window's rows, and an instant at either end is taken.
#[test]
fn an_instant_beyond_chrono_s_is_refused_by_both_readers() {
    let frame = frame_of_charges();
    let first = DateTime::<Utc>::MIN_UTC.timestamp_micros();
    let last = DateTime::<Utc>::MAX_UTC.timestamp_micros();
    for (values, ok) in [([first, last], true), ([last + 1, 0], false), ([0, first - 1], false)] {
        let mut frame = frame.clone();
        let column = Int64Chunked::from_vec("charge_start".into(), values.to_vec())
            .into_datetime(TimeUnit::Microseconds, Some(TimeZone::UTC));
        frame.replace("charge_start", column.into_series().into_column()).unwrap();
        let (charges, rows) = both_readers(frame);
        assert_eq!((charges.is_ok(), rows.is_ok()), (ok, ok), "{values:?}");
        if let (Err(a), Err(b)) = (&charges, &rows) {
            assert_eq!(a, b);
            assert!(a.contains("charge_start: missing or invalid instant"), "{a}");
        }
        if let (Ok(charges), Ok((rows, ..))) = (charges, rows) {
            let starts: Vec<_> = rows.iter().map(|r| r.charge_start.time()).collect();
            assert_eq!(starts, charges.iter().map(|c| c.charge_start).collect::<Vec<_>>());
        }
    }
}

/// A part file whose billed costs, amounts, ids or texts are damaged (a null where none may
/// be, a text that is not an id, a figure no import writes: 10^15 or more) is refused alike,
/// with the same message, by the reader of charges and by the reader of a window's rows; what
/// may be missing or written otherwise (an amount, an account, an id in capitals) is read
/// alike, to the same digits, ids and texts.
#[test]
fn damaged_costs_amounts_and_ids_are_refused_alike_by_both_readers() {
    let frame = frame_of_charges();
    let decimals = |name: &str, values: [Option<i128>; 2]| {
        let values = Int128Chunked::from_iter_options(name.into(), values.into_iter());
        values.into_decimal(PRECISION, SCALE).unwrap().into_series().into_column()
    };
    let texts = |name: &str, values: [Option<&str>; 2]| {
        StringChunked::from_iter_options(name.into(), values.into_iter())
            .into_series()
            .into_column()
    };
    let id = format!("{:032X}", 0xabc_u128);
    let beyond = |name: &str, digits: usize| {
        format!("column {name}: a figure of {digits} digits before the point, beyond any a bill")
    };
    let (cost, quantity, price) =
        (beyond("billed_cost", 16), beyond("quantity", 19), beyond("unit_price", 26));
    let cases = [
        (decimals("billed_cost", [Some(-5), None]), Some("column billed_cost has a null")),
        (texts("id", [Some(&id), None]), Some("column id has a null")),
        (texts("id", [Some("zz"), Some(&id)]), Some("is not a charge id")),
        (texts("id", [Some(&id), Some(&id[1..])]), Some("is not a charge id")),
        (texts("id", [Some(&id), Some("0x0000000000000000000000000000ab")]), Some("not a charge")),
        (decimals("billed_cost", [Some(-1_230_000_000_000), Some(10i128.pow(27) - 1)]), None),
        (decimals("list_cost", [Some(1 - 10i128.pow(27)), None]), None),
        (decimals("billed_cost", [Some(5), Some(10i128.pow(27))]), Some(cost.as_str())),
        (decimals("quantity", [Some(-(10i128.pow(30))), None]), Some(quantity.as_str())),
        (decimals("unit_price", [Some(10i128.pow(38) - 1), None]), Some(price.as_str())),
        (decimals("quantity", [None, Some(7_000_000_000_000)]), None),
        (decimals("balance_after", [Some(0), Some(-1)]), None),
        (texts("id", [Some(&id), Some(&id.to_lowercase())]), None),
        // Texts: a null where none may be, in a chunk of its own or after a value; a text
        // that may be missing, before a value or after the same value.
        (texts("platform", [Some("autodl"), None]), Some("column platform has a null")),
        (texts("category", [None, Some("compute")]), Some("column category has a null")),
        (texts("account", [None, Some("acct-7")]), None),
        (texts("account", [Some("acct-7"), Some("acct-7")]), None),
        (texts("resource_id", [Some("i-1"), None]), None),
    ];
    for (column, refused) in cases {
        let mut frame = frame.clone();
        let name = column.name().to_string();
        frame.replace(&name, column).unwrap();
        let (charges, rows) = both_readers(frame);
        match (refused, charges, rows) {
            (Some(why), Err(a), Err(b)) => {
                assert_eq!(a, b, "{name}");
                assert!(a.contains(why), "{name}: {a}");
            }
            (None, Ok(charges), Ok((rows, side, texts))) => {
                for (i, (c, r)) in charges.iter().zip(&rows).enumerate() {
                    let read = [texts.opt(r.account), texts.opt(r.resource_id)];
                    assert_eq!(read, [c.account.as_deref(), c.resource_id.as_deref()], "{name}");
                    assert_eq!(texts.get(r.platform), c.platform, "{name}");
                    let (want, got) = (c.billed_cost, r.billed_cost());
                    assert_eq!((got, got.to_string()), (want, want.to_string()), "{name}");
                    assert_eq!(side.ids[i], c.id, "{name}");
                    let a = side.amounts[i];
                    let got = [a.quantity(), a.unit_price(), a.list_cost(), a.balance_after()];
                    let want = [c.quantity, c.unit_price, c.list_cost, c.balance_after];
                    let text = |v: [Option<Decimal>; 4]| v.map(|d| d.map(|d| d.to_string()));
                    assert_eq!(text(got), text(want), "{name}");
                }
                assert_eq!(rows.len(), 2);
            }
            (refused, charges, rows) => {
                panic!("{name}: want {refused:?}, got {:?} and {:?}", charges.err(), rows.err())
            }
        }
    }
}

//! Tests of [`super`]: rows, their texts, amounts, costs and ids.

use super::*;

#[test]
fn amounts_keep_every_decimal_exactly_and_their_absence() {
    let values = [
        Decimal::MAX,
        Decimal::MIN,
        Decimal::ZERO,
        -Decimal::ZERO,
        Decimal::new(-1, 28),
        Decimal::new(123_456_789_012_345, 12),
        Decimal::new(-99_999_999_999_999_999, 2),
        Decimal::new(24, 1),
        Decimal::new(1980, 3),
    ];
    for (i, &a) in values.iter().enumerate() {
        let b = values[(i + 3) % values.len()];
        let all = [Some(a), None, Some(b), Some(a)];
        let packed = Amounts::new(all);
        // Made from each figure's packed parts: the same amounts.
        assert_eq!(Amounts::of_packed(all.map(|d| d.map(super::packed))), packed, "{a} {b}");
        for (k, want) in all.iter().enumerate() {
            let got = packed.get(k);
            assert_eq!(got, *want, "{a} {b} at {k}");
            // The same digits and scale, not only an equal value.
            assert_eq!(got.map(|d| d.to_string()), want.map(|d| d.to_string()));
        }
    }
    assert_eq!(Amounts::new([None; 4]).get(3), None);
    // A row's billed cost too, and a window's ids.
    let id = ChargeId(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
    let charges: Vec<crate::Charge> = values
        .iter()
        .enumerate()
        .map(|(i, &d)| crate::Charge {
            id: ChargeId(id.0 ^ i as u128),
            billed_cost: d,
            ..crate::Charge::blank()
        })
        .collect();
    let window = rows_of(&charges);
    for (r, c) in window.rows.iter().zip(&charges) {
        assert_eq!(window.id(r), c.id);
        let got = r.billed_cost();
        assert_eq!(r.billed_positive(), c.billed_cost > Decimal::ZERO, "{}", c.billed_cost);
        assert_eq!(
            (got.to_string(), got.is_sign_negative()),
            (c.billed_cost.to_string(), c.billed_cost.is_sign_negative())
        );
    }
    let mut row = window.rows[0];
    row.set_billed_cost(Decimal::new(-150, 2));
    assert_eq!(row.billed_cost().to_string(), "-1.50");
}

#[test]
fn a_window_keeps_its_rows_amounts_exactly_those_of_twenty_digits_too() {
    let big = Decimal::from_i128_with_scale(123_456_789_012_345_678_901_234, 12);
    let all = [
        [Some(Decimal::new(24, 1)), Some(Decimal::new(-5, 3)), None, Some(Decimal::ZERO)],
        [Some(Decimal::MAX), None, Some(big), Some(Decimal::MIN)],
        [None; 4],
        [Some(Decimal::new(i64::MAX, 12)), Some(-Decimal::ZERO), Some(big), None],
    ];
    let mut texts = Texts::default();
    let rows: Vec<Row> = all.iter().map(|_| row_of(&crate::Charge::blank(), &mut texts)).collect();
    let mut window = Window::with_capacity(rows.len(), true, true);
    let amounts = all.iter().map(|a| Amounts::new(*a)).collect();
    window.append(rows, amounts, vec![ChargeId(1), ChargeId(2)], &texts).unwrap();
    assert_eq!(window.spilled.len(), 2, "the rows of twenty-digit figures are spilled");
    let read = |w: &Window| -> Vec<[Option<String>; 4]> {
        w.rows
            .iter()
            .map(|r| {
                let a = w.amounts(r);
                [a.quantity(), a.unit_price(), a.list_cost(), a.balance_after()]
                    .map(|d| d.map(|d| format!("{d} {}", d.is_sign_negative())))
            })
            .collect()
    };
    let want: Vec<[Option<String>; 4]> =
        all.iter().map(|a| a.map(|d| d.map(|d| format!("{d} {}", d.is_sign_negative())))).collect();
    assert_eq!(read(&window), want);
    // A subset renumbers its rows and keeps their amounts, spilled or not.
    let odd = window.subset(|r| r.pos % 2 == 1);
    assert_eq!(read(&odd), vec![want[1].clone(), want[3].clone()]);
    // And their ids: the rows appended without one have none.
    let ids = |w: &Window| w.rows.iter().map(|r| w.id(r).0).collect::<Vec<_>>();
    assert_eq!((ids(&window), ids(&odd)), (vec![1, 2, 0, 0], vec![2, 0]));
}

#[test]
fn equal_texts_are_one_sym_and_a_window_adopts_another_s_texts() {
    let mut texts = Texts::default();
    let (a, b, c) = (texts.sym("vm-1"), texts.sym("disk-1"), texts.sym("vm-1"));
    assert_eq!(a, c);
    assert_ne!(a, b);
    assert_eq!((texts.get(a), texts.get(b)), ("vm-1", "disk-1"));
    assert_eq!(std::mem::size_of::<Option<Sym>>(), 4);
    // A window of ten million rows holds 0.64 GB of rows: no field grows it unnoticed.
    assert_eq!(std::mem::size_of::<Row>(), 64);

    let mut other = Texts::default();
    other.sym("disk-1");
    let mut window = Window { texts: other, ..Window::default() };
    let charge = crate::Charge { platform: "p".into(), ..crate::Charge::blank() };
    let row = row_of(&charge, &mut texts);
    window.append(vec![row], Vec::new(), Vec::new(), &texts).unwrap();
    assert_eq!(window.texts.get(window.rows[0].platform), "p");
}

#[test]
fn a_window_keeps_each_row_s_origin_and_usage_beside_it_through_a_subset() {
    let charge = |line: u64, item: &str, gpus: Option<u16>| crate::Charge {
        origin: crate::charge::Origin {
            file: format!("bill-{}.csv", line % 2),
            line,
            item: item.to_owned(),
        },
        unit: gpus.map(|_| "Hours".to_owned()),
        gpu_count: gpus,
        ..crate::Charge::blank()
    };
    let charges = [charge(2, "包月 A100", Some(8)), charge(3, "", None), charge(4, "IP", Some(1))];
    let window = rows_of(&charges);
    type Shown = (String, u64, String, Option<String>, Option<u16>);
    let shown = |w: &Window| -> Vec<Shown> {
        w.rows
            .iter()
            .map(|r| {
                let (o, u) = (w.origin(r), w.usage(r));
                let file = w.texts.opt(o.file).unwrap_or_default().to_owned();
                let unit = w.texts.opt(u.unit).map(str::to_owned);
                (file, o.line, w.item(r).to_owned(), unit, u.gpu_count)
            })
            .collect()
    };
    let all = shown(&window);
    assert_eq!(all[0], ("bill-0.csv".into(), 2, "包月 A100".into(), Some("Hours".into()), Some(8)));
    // An empty item is none, read back as "".
    assert_eq!(window.origin(&window.rows[1]).item, None);
    assert_eq!((all[1].2.as_str(), all[1].3.clone(), all[1].4), ("", None, None));
    let odd = window.subset(|r| r.pos != 1);
    assert_eq!(shown(&odd), vec![all[0].clone(), all[2].clone()]);
    // Rows appended without them have neither.
    let mut texts = Texts::default();
    let row = row_of(&charges[0], &mut texts);
    let mut bare = Window::default();
    bare.append(vec![row], Vec::new(), Vec::new(), &texts).unwrap();
    assert_eq!((bare.origin(&bare.rows[0]), bare.usage(&bare.rows[0])), Default::default());
}

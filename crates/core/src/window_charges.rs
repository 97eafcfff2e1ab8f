//! The window of charges given as [`Charge`]s (an embedder's, a test's): their rows, texts,
//! amounts, ids, origins and usage, as a store's window holds them.

use super::{Amounts, Micros, Row, RowOrigin, Texts, Usage, Window, packed};
use crate::charge::Charge;

/// The window of `charges`, in order, with their amounts.
pub fn rows_of(charges: &[Charge]) -> Window {
    let mut texts = Texts::default();
    let mut rows: Vec<Row> = charges.iter().map(|c| row_of(c, &mut texts)).collect();
    for (i, r) in rows.iter_mut().enumerate() {
        r.pos = u32::try_from(i).unwrap_or(u32::MAX);
    }
    let mut window = Window { texts, rows, ..Window::default() };
    for (i, c) in charges.iter().enumerate() {
        window.keep(amounts_of(c));
        window.keep_id(i, c.id);
        let origin = origin_of(c, &mut window.texts);
        window.keep_origin(i, origin);
        let usage = usage_of(c, &mut window.texts);
        window.keep_usage(i, usage);
    }
    window
}

/// Where one charge was read, its texts among `texts` (an empty file or item as none).
pub fn origin_of(c: &Charge, texts: &mut Texts) -> RowOrigin {
    let mut sym = |t: &str| (!t.is_empty()).then(|| texts.sym(t));
    RowOrigin {
        file: sym(&c.origin.file),
        line: c.origin.line,
        item: sym(&c.origin.item),
        usage_type: c.usage_type.as_deref().and_then(&mut sym),
    }
}

/// What one charge measured, its unit among `texts`.
pub fn usage_of(c: &Charge, texts: &mut Texts) -> Usage {
    Usage {
        unit: texts.sym_opt(c.unit.as_deref()),
        gpu_count: c.gpu_count,
        service: texts.sym_opt(c.service.as_deref()),
    }
}

/// The amounts of one charge.
pub fn amounts_of(c: &Charge) -> Amounts {
    Amounts::new([c.quantity, c.unit_price, c.list_cost, c.balance_after])
}

/// The row of one charge, its texts among `texts` (its amounts are [`amounts_of`], its origin
/// [`origin_of`], its usage [`usage_of`]; its place in a window is set when the window takes
/// it).
pub fn row_of(c: &Charge, texts: &mut Texts) -> Row {
    let (cost, cost_flags) = packed(c.billed_cost);
    Row {
        platform: texts.sym(&c.platform),
        account: texts.sym_opt(c.account.as_deref()),
        billing_period: c.billing_period,
        charge_start: Micros::of(c.charge_start),
        charge_end: Micros::of(c.charge_end),
        resource_id: texts.sym_opt(c.resource_id.as_deref()),
        instance_id: texts.sym_opt(c.instance_id.as_deref()),
        category: c.category,
        kind: c.kind,
        pricing: c.pricing,
        gpu_model: texts.sym_opt(c.gpu_model.as_deref()),
        pos: 0,
        cost,
        cost_flags,
        currency: texts.sym(&c.currency),
    }
}

/// The values of `groups` (keyed by syms, hashed cheaply) in the order of their keys' texts
/// by `texts_of`: what a `BTreeMap` keyed by the texts gives, without comparing texts for
/// every row put in a group.
pub fn in_text_order<K, V, O: Ord>(
    groups: impl IntoIterator<Item = (K, V)>,
    texts_of: impl Fn(&K) -> O,
) -> Vec<(K, V)> {
    let mut groups: Vec<(K, V)> = groups.into_iter().collect();
    groups.sort_unstable_by_key(|g| texts_of(&g.0));
    groups
}

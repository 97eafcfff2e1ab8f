//! How a window keeps figures: a row's billed cost ([`packed`]) and the four amounts a row
//! may lack ([`Amounts`]), each exactly (digits, scale and sign as read).

use rust_decimal::Decimal;

/// The four amounts a row may lack ([`Amounts::quantity`], [`Amounts::unit_price`],
/// [`Amounts::list_cost`], [`Amounts::balance_after`]), exactly, in 52 bytes where four
/// `Option<Decimal>` take 80: each amount's 96-bit mantissa, and in one word each one's
/// presence, sign and scale (7 bits each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Amounts {
    pub(super) mantissas: [[u32; 3]; 4],
    pub(super) meta: u32,
}

impl Amounts {
    /// Quantity, unit price, list cost and balance after, in that order.
    pub fn new(values: [Option<Decimal>; 4]) -> Self {
        Amounts::of_packed(values.map(|d| d.map(packed)))
    }

    /// The four amounts as [`packed`] gives each (mantissa, then sign and scale): what a
    /// store reads from its columns without making their decimals.
    pub(crate) fn of_packed(values: [Option<Packed>; 4]) -> Self {
        let mut out = Amounts::default();
        for (i, value) in values.iter().enumerate() {
            let Some((mantissa, flags)) = value else { continue };
            out.mantissas[i] = *mantissa;
            let meta = 1 | (u32::from(flags >> 7) << 1) | (u32::from(flags & 0x1f) << 2);
            out.meta |= meta << (7 * i);
        }
        out
    }

    /// Quantity billed.
    pub fn quantity(&self) -> Option<Decimal> {
        self.get(0)
    }

    /// Unit price.
    pub fn unit_price(&self) -> Option<Decimal> {
        self.get(1)
    }

    /// List cost.
    pub fn list_cost(&self) -> Option<Decimal> {
        self.get(2)
    }

    /// Balance after the row (prepaid platforms).
    pub fn balance_after(&self) -> Option<Decimal> {
        self.get(3)
    }

    pub(crate) fn get(&self, i: usize) -> Option<Decimal> {
        let meta = (self.meta >> (7 * i)) & 0x7f;
        if meta & 1 == 0 {
            return None;
        }
        Some(decimal_of(self.mantissas[i], meta & 2 != 0, meta >> 2))
    }
}

/// `d` as a window keeps a figure: its 96-bit mantissa as three words (low first), its sign
/// and its scale, exactly as `Decimal::serialize` gives them.
fn parts_of(d: Decimal) -> ([u32; 3], bool, u32) {
    let b = d.serialize();
    let word = |k: usize| u32::from_le_bytes([b[k], b[k + 1], b[k + 2], b[k + 3]]);
    ([word(4), word(8), word(12)], d.is_sign_negative(), d.scale())
}

/// The decimal of [`parts_of`], digits, scale and sign (a zero keeps its sign, as
/// `Decimal::from_parts` would not).
pub(super) fn decimal_of(mantissa: [u32; 3], negative: bool, scale: u32) -> Decimal {
    let flags = (scale << 16) | (u32::from(negative) << 31);
    let mut bytes = [0u8; 16];
    for (k, word) in [flags, mantissa[0], mantissa[1], mantissa[2]].iter().enumerate() {
        bytes[4 * k..4 * k + 4].copy_from_slice(&word.to_le_bytes());
    }
    Decimal::deserialize(bytes)
}

/// How a window keeps a row's [`Amounts`]: each mantissa's low 64 bits and the meta word,
/// 36 bytes where [`Amounts`] take 52. A row with a mantissa of more than 64 bits (a figure
/// of twenty digits or more) has its amounts in the window's spill list instead, its place
/// in the first word.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Stored {
    pub(super) low: [[u32; 2]; 4],
    pub(super) meta: u32,
}

/// The bit of [`Stored::meta`] (unused by [`Amounts::meta`]'s 28) marking a spilled row.
pub(super) const SPILLED: u32 = 1 << 31;

/// A figure as a [`Row`] keeps it ([`packed`]): its mantissa's three words, low first, and
/// its sign (the high bit) and scale (the low five) in a byte.
pub(crate) type Packed = ([u32; 3], u8);

/// `d` as a [`Row`] keeps it: its mantissa's three words, and its sign and scale in a byte.
pub(crate) fn packed(d: Decimal) -> Packed {
    let (mantissa, negative, scale) = parts_of(d);
    pack(mantissa, negative, scale)
}

/// A figure's mantissa (three words, low first), sign and scale as a [`Row`] keeps them.
pub(crate) fn pack(mantissa: [u32; 3], negative: bool, scale: u32) -> Packed {
    (mantissa, (u8::from(negative) << 7) | (scale as u8 & 0x1f))
}

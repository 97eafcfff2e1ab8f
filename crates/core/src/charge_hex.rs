//! A charge id as text: 32 lower-case hex digits written, 32 hex digits of either case read.

use std::fmt;
use std::str::FromStr;

use super::ChargeId;

impl ChargeId {
    /// Appends the id's 32 lower-case hex digits to `out` (what `Display` writes, without the
    /// formatting machinery: the ledger writes one per charge).
    pub fn push_hex(self, out: &mut String) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = [0u8; 32];
        for (i, digit) in hex.iter_mut().enumerate() {
            *digit = DIGITS[((self.0 >> ((31 - i) * 4)) & 0xf) as usize];
        }
        // Hex digits are ASCII: this never fails.
        out.push_str(std::str::from_utf8(&hex).unwrap_or_default());
    }
}

impl fmt::Display for ChargeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::with_capacity(32);
        self.push_hex(&mut text);
        f.write_str(&text)
    }
}

impl ChargeId {
    /// The id written as exactly 32 hex digits (either case; nothing else, not even a sign),
    /// read two 64-bit halves at a time: a window reads one per charge, and the general
    /// radix parser, with its checked 128-bit steps, was a tenth of reading one.
    pub fn from_hex(text: &str) -> Option<ChargeId> {
        let bytes = text.as_bytes();
        if bytes.len() != 32 {
            return None;
        }
        // Each byte's digit value, 16 for what is not a digit: no branch per digit (random
        // digits and letters mispredicted half the branches of a `match`).
        const VALUES: [u8; 256] = {
            let mut table = [16u8; 256];
            let mut i = 0;
            while i < 10 {
                table[b'0' as usize + i] = i as u8;
                i += 1;
            }
            let mut i = 0;
            while i < 6 {
                table[b'a' as usize + i] = 10 + i as u8;
                table[b'A' as usize + i] = 10 + i as u8;
                i += 1;
            }
            table
        };
        let half = |digits: &[u8]| {
            let (mut value, mut bad) = (0u64, 0u8);
            for &c in digits {
                let d = VALUES[c as usize];
                bad |= d;
                value = (value << 4) | u64::from(d & 15);
            }
            (bad < 16).then_some(value)
        };
        let (high, low) = (half(&bytes[..16])?, half(&bytes[16..])?);
        Some(ChargeId((u128::from(high) << 64) | u128::from(low)))
    }
}

impl FromStr for ChargeId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ChargeId::from_hex(s).ok_or_else(|| format!("{s:?} is not a charge id (32 hex digits)"))
    }
}

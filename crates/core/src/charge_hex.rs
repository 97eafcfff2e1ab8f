//! A charge id as text: 32 lower-case hex digits written, 32 hex digits of either case read.

use std::fmt;
use std::str::FromStr;

use super::ChargeId;

impl ChargeId {
    /// Appends the id's 32 lower-case hex digits to `out` (what `Display` writes, without the
    /// formatting machinery: the ledger writes one per charge).
    pub fn push_hex(self, out: &mut String) {
        let mut hex = [0u8; 32];
        for (k, chunk) in hex.chunks_exact_mut(8).enumerate() {
            let digits = (self.0 >> (96 - 32 * k)) as u32;
            chunk.copy_from_slice(&eight_hex(digits).to_be_bytes());
        }
        // Hex digits are ASCII: this never fails.
        out.push_str(std::str::from_utf8(&hex).unwrap_or_default());
    }
}

/// The eight lower-case hex digits of `n` as the bytes of a word, first digit highest:
/// each nibble spread to a byte of its own, then made a digit in every byte at once.
fn eight_hex(n: u32) -> u64 {
    let x = u64::from(n);
    let x = ((x & 0xffff_0000) << 16) | (x & 0xffff);
    let x = ((x & 0x0000_ff00_0000_ff00) << 8) | (x & 0x0000_00ff_0000_00ff);
    let x = ((x & 0x00f0_00f0_00f0_00f0) << 4) | (x & 0x000f_000f_000f_000f);
    // A nibble of ten or more reaches 16 with six more: it is a letter, 39 past '0' + 10.
    let letters = ((x + every_byte(6)) & every_byte(0x10)) >> 4;
    x + every_byte(b'0') + letters * 39
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
    /// read eight digits at a time as one 64-bit word, each byte tested and turned into its
    /// digit in its lane at once: a window reads one per charge of its audited month, and
    /// the general radix parser, with its checked 128-bit steps, was a tenth of reading one;
    /// a table lookup per digit, a twentieth.
    pub fn from_hex(text: &str) -> Option<ChargeId> {
        let bytes: &[u8; 32] = text.as_bytes().try_into().ok()?;
        let mut value = 0u128;
        for chunk in bytes.chunks_exact(8) {
            let word = u64::from_be_bytes(chunk.try_into().ok()?);
            value = (value << 32) | u128::from(eight_digits(word)?);
        }
        Some(ChargeId(value))
    }
}

/// `x` repeated in every byte of a word.
const fn every_byte(x: u8) -> u64 {
    u64::from_ne_bytes([x; 8])
}

/// The value of eight hex digits (either case), their bytes in `word` first digit highest,
/// or `None` if one is not a hex digit. Each byte is tested and turned into its digit in
/// the word's lanes at once: a byte below 0x80 plus `0x80 - lo` reaches the lane's top bit
/// exactly when it is at least `lo`, and never carries into the next lane.
fn eight_digits(word: u64) -> Option<u32> {
    const TOP: u64 = every_byte(0x80);
    if word & TOP != 0 {
        return None;
    }
    let within = |lo: u8, hi: u8| {
        let at_least = word.wrapping_add(every_byte(0x80 - lo));
        let above = word.wrapping_add(every_byte(0x7f - hi));
        at_least & !above & TOP
    };
    let (digits, letters) = (within(b'0', b'9'), within(b'a', b'f') | within(b'A', b'F'));
    if digits | letters != TOP {
        return None;
    }
    // A digit's value is its low four bits; a letter's, its low four bits plus nine.
    let nibbles = (word & every_byte(0x0f)) + (letters >> 7) * 9;
    // Two nibbles to a byte, two bytes to 16 bits, two of those to 32.
    let bytes = (nibbles | (nibbles >> 4)) & 0x00ff_00ff_00ff_00ff;
    let pairs = (bytes | (bytes >> 8)) & 0x0000_ffff_0000_ffff;
    Some(((pairs | (pairs >> 16)) & 0xffff_ffff) as u32)
}

impl FromStr for ChargeId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ChargeId::from_hex(s).ok_or_else(|| format!("{s:?} is not a charge id (32 hex digits)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The digits of `text` read one at a time, as a table would: the oracle [`ChargeId::from_hex`]
    /// must agree with.
    fn by_digit(text: &str) -> Option<ChargeId> {
        (text.len() == 32).then_some(())?;
        let mut value = 0u128;
        for c in text.chars() {
            value = (value << 4) | u128::from(c.to_digit(16)?);
        }
        Some(ChargeId(value))
    }

    #[test]
    fn ids_are_read_as_digit_by_digit_whatever_byte_is_where() {
        let mut next = crate::xorshift(0x5eed_0f1d);
        let mut texts: Vec<String> = (0..2000)
            .map(|i| {
                let id = ChargeId(u128::from(next()) << 64 | u128::from(next()));
                let mut text = String::new();
                id.push_hex(&mut text);
                if i % 2 == 1 { text.to_uppercase() } else { text }
            })
            .collect();
        texts.extend(["0".repeat(32), "f".repeat(32), "F".repeat(32), "9".repeat(32)]);
        // Every ASCII byte at every place, and characters beyond ASCII.
        let base = "0123456789abcdefABCDEF0123456789";
        for at in 0..32 {
            for byte in 0u8..128 {
                let mut bytes = base.as_bytes().to_vec();
                bytes[at] = byte;
                texts.push(String::from_utf8(bytes).unwrap());
            }
            for wide in ["é", "€", "\u{1f600}"] {
                texts.push(format!(
                    "{}{wide}{}",
                    &base[..at],
                    &base[at + wide.len().min(32 - at)..]
                ));
            }
        }
        let short = ["", "0", &"0".repeat(31), &"0".repeat(33), &format!("+{}", "0".repeat(31))];
        texts.extend(short.map(String::from));
        for text in &texts {
            assert_eq!(ChargeId::from_hex(text), by_digit(text), "{text:?}");
        }
        let read = texts.iter().filter(|t| by_digit(t).is_some()).count();
        for text in texts.iter().filter(|t| by_digit(t).is_some()) {
            let mut written = String::new();
            by_digit(text).unwrap().push_hex(&mut written);
            assert_eq!(written, text.to_lowercase());
        }
        assert!(read > 2000 && read < texts.len() - 32 * 100, "{read} of {}", texts.len());
    }
}

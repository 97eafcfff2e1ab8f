//! [`Slots`]: the last few keys met, each in the slot of its hash, with what they map to.
//!
//! Readers of millions of rows whose values repeat (a column of a part file, a window's
//! resources hour after hour) look a key up here before a hash map or set: a slot is found
//! by one multiplication of the key mixed into a word, and a key met again soon after is
//! answered without hashing it into a map of thousands. A key takes the place of the one
//! before it in its slot.

/// `N` slots (a power of two) of keys `K` and their values `V`.
pub(crate) struct Slots<K, V, const N: usize> {
    slots: [Option<(K, V)>; N],
}

impl<K: Copy, V: Copy, const N: usize> Default for Slots<K, V, N> {
    fn default() -> Self {
        Slots { slots: [None; N] }
    }
}

impl<K: Copy + Eq, V: Copy, const N: usize> Slots<K, V, N> {
    /// The slot of a key that `mix` stands for: its top bits after a multiplication by the
    /// golden ratio's word (Fibonacci hashing).
    fn slot(mix: u64) -> usize {
        const { assert!(N.is_power_of_two() && N > 1) };
        (mix.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - N.trailing_zeros())) as usize
    }

    /// The value of `key` (mixed into `mix` by the caller), if it is in its slot.
    pub(crate) fn get(&self, mix: u64, key: &K) -> Option<V> {
        match self.slots[Self::slot(mix)] {
            Some((k, v)) if k == *key => Some(v),
            _ => None,
        }
    }

    /// Puts `key` (mixed into `mix`) with `value` in its slot.
    pub(crate) fn put(&mut self, mix: u64, key: K, value: V) {
        self.slots[Self::slot(mix)] = Some((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::Slots;

    #[test]
    fn a_key_is_found_in_its_slot_until_a_key_of_the_same_slot_takes_it() {
        let mut slots: Slots<u64, u32, 8> = Slots::default();
        assert_eq!(slots.get(5, &5), None);
        slots.put(5, 5, 50);
        assert_eq!(slots.get(5, &5), Some(50));
        // Another key of the same mix (its slot) is not taken for the first.
        assert_eq!(slots.get(5, &6), None);
        slots.put(5, 6, 60);
        assert_eq!((slots.get(5, &5), slots.get(5, &6)), (None, Some(60)));
        // Of a thousand keys, each slot keeps the last of its own, with its value.
        for key in 0..1000 {
            slots.put(key, key, key as u32 * 10);
        }
        let kept: Vec<u64> = (0..1000).filter(|k| slots.get(*k, k).is_some()).collect();
        assert!((2..=8).contains(&kept.len()), "{kept:?}");
        assert!(kept.iter().all(|k| slots.get(*k, k) == Some(*k as u32 * 10)));
        assert!(kept.contains(&999), "the last key put is kept");
    }
}

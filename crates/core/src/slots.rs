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

/// Values by key, each found through the [`Slots`] of the keys met last before the map: for
/// a read of millions of rows that adds to a value per resource, hour after hour (the keys
/// of an instance's compute, disk, IP and traffic rows take turns), most rows find their
/// value without hashing their key into a map of millions (whose lookups miss the cache).
pub(crate) struct SlotMap<K, V> {
    index: rustc_hash::FxHashMap<K, u32>,
    values: Vec<(K, V)>,
    recent: Slots<K, u32, 64>,
}

impl<K: Copy + Eq + std::hash::Hash, V> Default for SlotMap<K, V> {
    fn default() -> Self {
        SlotMap { index: Default::default(), values: Vec::new(), recent: Slots::default() }
    }
}

impl<K: Copy + Eq + std::hash::Hash, V> SlotMap<K, V> {
    /// The value of `key`, made by `make` if it has none yet.
    pub(crate) fn entry(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        // The key's slot from its own hash (a few multiplications for a key of a few words).
        let mix = std::hash::BuildHasher::hash_one(&rustc_hash::FxBuildHasher, key);
        let at = match self.recent.get(mix, &key) {
            Some(at) => at,
            None => {
                let next = u32::try_from(self.values.len()).unwrap_or(u32::MAX);
                let at = *self.index.entry(key).or_insert(next);
                if at == next {
                    self.values.push((key, make()));
                }
                self.recent.put(mix, key, at);
                at
            }
        };
        &mut self.values[at as usize].1
    }

    /// The keys and their values, in the order the keys were first met.
    pub(crate) fn into_values(self) -> Vec<(K, V)> {
        self.values
    }
}

#[cfg(test)]
mod tests {
    use super::{SlotMap, Slots};

    /// A slot map holds what a map would: each key's value, whatever key is in its slot,
    /// in the order the keys were first met.
    #[test]
    fn a_slot_map_adds_up_as_a_map_does() {
        let mut map: SlotMap<u32, u64> = SlotMap::default();
        let mut oracle = std::collections::BTreeMap::new();
        let mut next = crate::xorshift(0x51_07);
        let mut order = Vec::new();
        for i in 0..20_000u64 {
            // Keys take turns in runs, as a window's resources do, among many more.
            let key = if i % 3 == 0 { (next() % 5_000) as u32 } else { (i / 7 % 4) as u32 };
            *map.entry(key, || 0) += i;
            if !oracle.contains_key(&key) {
                order.push(key);
            }
            *oracle.entry(key).or_insert(0) += i;
        }
        let values = map.into_values();
        assert_eq!(values.iter().map(|&(k, _)| k).collect::<Vec<_>>(), order);
        let by_key: std::collections::BTreeMap<u32, u64> = values.into_iter().collect();
        assert_eq!(by_key, oracle);
    }

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

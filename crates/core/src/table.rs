//! A fixed-capacity, set-associative table: the register array of a switch
//! program, the hash map of a BPF program.
//!
//! `capacity` slots are allocated once, grouped in sets of [`WAYS`]. A key
//! lives only in the set its hash selects, so a lookup touches at most
//! [`WAYS`] slots (a bounded loop). When a set is full, the least recently
//! used slot of that set is replaced: an eviction rule a switch can run with
//! one timestamp per slot and a 4-way compare.

/// Slots per set.
pub const WAYS: usize = 4;

#[derive(Clone, Copy, Default, Debug)]
struct Slot<V> {
    valid: bool,
    key: u32,
    /// Value of the table's clock when the slot was last used (for LRU).
    stamp: u32,
    value: V,
}

#[derive(Clone, Debug)]
pub struct SetAssoc<V> {
    slots: Vec<Slot<V>>,
    set_bits: u32,
    clock: u32,
    evictions: u64,
}

/// Multiplicative (Fibonacci) hashing: one multiply and a shift, cheap in a
/// switch pipeline and in BPF.
fn set_index(key: u32, set_bits: u32) -> usize {
    debug_assert!(set_bits < 32, "a table of 2^{set_bits} sets");
    if set_bits == 0 {
        0
    } else {
        (key.wrapping_mul(0x9E37_79B1) >> (32 - set_bits)) as usize
    }
}

impl<V: Copy + Default> SetAssoc<V> {
    /// `capacity` must be a power of two and at least [`WAYS`].
    pub fn new(capacity: usize) -> Self {
        assert!(capacity >= WAYS && capacity.is_power_of_two(), "table capacity must be a power of two >= {WAYS}");
        let sets = capacity / WAYS;
        let table = SetAssoc {
            slots: vec![Slot::default(); capacity],
            set_bits: sets.trailing_zeros(),
            clock: 0,
            evictions: 0,
        };
        debug_assert_eq!(table.sets() * WAYS, capacity);
        table
    }

    pub fn capacity(&self) -> usize {
        debug_assert_eq!(self.slots.len(), self.sets() * WAYS);
        self.slots.len()
    }

    fn sets(&self) -> usize {
        1 << self.set_bits
    }

    /// Slots replaced while still valid, since creation.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    fn set_range(&self, key: u32) -> std::ops::Range<usize> {
        let base = set_index(key, self.set_bits) * WAYS;
        debug_assert!(base + WAYS <= self.slots.len(), "set {base} past the table");
        base..base + WAYS
    }

    /// The slot holding `key`: a key is held at most once, in its own set.
    fn find(&self, key: u32) -> Option<usize> {
        let mut held = self.set_range(key).filter(|&i| self.slots[i].valid && self.slots[i].key == key);
        let i = held.next();
        debug_assert!(held.next().is_none(), "key {key} held twice in its set");
        i
    }

    /// Looks up without changing recency.
    pub fn peek(&self, key: u32) -> Option<&V> {
        let i = self.find(key)?;
        debug_assert_eq!(self.slots[i].key, key, "a slot answered for another key");
        Some(&self.slots[i].value)
    }

    /// Looks up and marks the entry as recently used.
    pub fn get_mut(&mut self, key: u32) -> Option<&mut V> {
        let i = self.find(key)?;
        debug_assert!(self.slots[i].valid && self.slots[i].key == key, "a slot answered for another key");
        self.clock = self.clock.wrapping_add(1);
        self.slots[i].stamp = self.clock;
        Some(&mut self.slots[i].value)
    }

    /// The entry for `key`, created with `V::default()` if absent (replacing
    /// the least recently used slot of its set when the set is full).
    pub fn entry(&mut self, key: u32) -> &mut V {
        self.clock = self.clock.wrapping_add(1);
        let i = match self.find(key) {
            Some(i) => i,
            None => {
                let range = self.set_range(key);
                let clock = self.clock;
                let victim = range.clone().find(|&i| !self.slots[i].valid).unwrap_or_else(|| {
                    range.max_by_key(|&i| clock.wrapping_sub(self.slots[i].stamp)).expect("WAYS > 0")
                });
                debug_assert!(self.set_range(key).contains(&victim), "victim outside the key's set");
                if self.slots[victim].valid {
                    self.evictions += 1;
                }
                self.slots[victim] = Slot { valid: true, key, stamp: clock, value: V::default() };
                victim
            }
        };
        self.slots[i].stamp = self.clock;
        debug_assert!(self.slots[i].valid && self.slots[i].key == key, "the entry's key must match its slot");
        &mut self.slots[i].value
    }

    /// The slot [`SetAssoc::entry_if`] gives `key` at table clock `clock`:
    /// its own, else a free one, else the least recently used one whose
    /// value `evictable` allows (the last on ties, as `entry`).
    fn slot_for(&self, key: u32, clock: u32, evictable: &impl Fn(&V) -> bool) -> Option<usize> {
        if let Some(i) = self.find(key) {
            return Some(i);
        }
        let range = self.set_range(key);
        let slot = range.clone().find(|&i| !self.slots[i].valid).or_else(|| {
            range
                .clone()
                .filter(|&i| evictable(&self.slots[i].value))
                .max_by_key(|&i| clock.wrapping_sub(self.slots[i].stamp))
        });
        debug_assert!(slot.is_none_or(|i| range.contains(&i)), "slot outside the key's set");
        slot
    }

    /// Whether `key` is held or would find a slot that is free or whose
    /// value `evictable` allows replacing (recency unchanged).
    pub fn has_room(&self, key: u32, evictable: impl Fn(&V) -> bool) -> bool {
        debug_assert!(self.find(key).is_none() || self.slot_for(key, self.clock, &evictable).is_some());
        self.slot_for(key, self.clock, &evictable).is_some()
    }

    /// [`SetAssoc::entry`] that replaces only a slot whose value `evictable`
    /// allows; `None` when every slot of the set is valid and kept (the
    /// clock advances either way).
    pub fn entry_if(&mut self, key: u32, evictable: impl Fn(&V) -> bool) -> Option<&mut V> {
        self.clock = self.clock.wrapping_add(1);
        let i = self.slot_for(key, self.clock, &evictable)?;
        if self.slots[i].key != key || !self.slots[i].valid {
            if self.slots[i].valid {
                self.evictions += 1;
            }
            self.slots[i] = Slot { valid: true, key, stamp: 0, value: V::default() };
        }
        self.slots[i].stamp = self.clock;
        debug_assert!(self.slots[i].valid && self.slots[i].key == key, "the entry's key must match its slot");
        Some(&mut self.slots[i].value)
    }

    pub fn remove(&mut self, key: u32) {
        if let Some(i) = self.find(key) {
            self.slots[i].valid = false;
        }
        debug_assert!(self.find(key).is_none(), "key {key} still held after its removal");
    }

    /// Valid `(key, value)` pairs in slot order (for tests and map dumps).
    pub fn iter(&self) -> impl Iterator<Item = (u32, &V)> {
        debug_assert_eq!(self.slots.len(), self.sets() * WAYS);
        self.slots.iter().filter(|s| s.valid).map(|s| (s.key, &s.value))
    }

    pub fn len(&self) -> usize {
        let n = self.slots.iter().filter(|s| s.valid).count();
        debug_assert!(
            self.slots.iter().enumerate().all(|(i, s)| !s.valid || self.set_range(s.key).contains(&i)),
            "every entry sits in the set its key hashes to"
        );
        n
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_up_to_capacity_of_distinct_keys_per_set_and_evicts_lru() {
        let mut t: SetAssoc<u32> = SetAssoc::new(4); // one set
        for k in 0..4 {
            *t.entry(k) = k * 10;
        }
        assert_eq!(t.len(), 4);
        assert_eq!(t.get_mut(0).copied(), Some(0)); // 0 is now most recent
        *t.entry(99) = 990; // evicts 1, the least recently used
        assert_eq!(t.peek(1), None);
        assert_eq!(t.peek(0), Some(&0));
        assert_eq!(t.peek(99), Some(&990));
        assert_eq!(t.evictions(), 1);
    }

    #[test]
    fn entry_if_keeps_what_it_must_and_has_room_says_so() {
        let mut t: SetAssoc<u32> = SetAssoc::new(4); // one set
        for k in 0..4 {
            *t.entry_if(k, |_| true).unwrap() = k;
        }
        let odd_may_go = |v: &u32| v % 2 == 1;
        assert!(t.has_room(9, odd_may_go) && t.has_room(2, |_| false), "an odd value may go; a held key has room");
        *t.entry_if(9, odd_may_go).unwrap() = 9; // replaces 1, the older odd one
        assert_eq!((t.peek(1), t.peek(3), t.peek(9)), (None, Some(&3), Some(&9)));
        let keep_all = |_: &u32| false;
        assert!(!t.has_room(11, keep_all));
        assert!(t.entry_if(11, keep_all).is_none());
        assert_eq!((t.len(), t.evictions()), (4, 1));
    }

    #[test]
    fn never_exceeds_capacity() {
        let mut t: SetAssoc<u8> = SetAssoc::new(64);
        for k in 0..10_000u32 {
            *t.entry(k) = 1;
        }
        assert!(t.len() <= 64);
        assert!(t.evictions() >= 10_000 - 64);
    }
}

//! One-way delay emulation: a FIFO timer queue for one link.
//!
//! A packet pushed at `now` is released at `now + delay`. The delay of a link
//! is constant, so release times never decrease and the queue is FIFO: order
//! on a link is kept exactly, as on a wire. Holding packets here never blocks
//! the node's receiving, which goes on in its own thread.

use std::collections::VecDeque;
use std::time::Duration;

use innet_core::Time;

#[derive(Debug)]
pub struct DelayLine<T> {
    delay: Duration,
    queue: VecDeque<(Time, T)>,
}

impl<T> DelayLine<T> {
    pub fn new(delay: Duration) -> DelayLine<T> {
        DelayLine { delay, queue: VecDeque::new() }
    }

    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Whether packets pass without waiting (delay zero and nothing queued).
    pub fn is_passthrough(&self) -> bool {
        self.delay.is_zero() && self.queue.is_empty()
    }

    /// Holds `item` until `now + delay` (never before an earlier item).
    pub fn push(&mut self, now: Time, item: T) {
        let mut due = now + self.delay;
        if let Some((last, _)) = self.queue.back() {
            due = due.max(*last);
        }
        self.queue.push_back((due, item));
    }

    /// When the oldest held item is due.
    pub fn next_due(&self) -> Option<Time> {
        self.queue.front().map(|(t, _)| *t)
    }

    /// The oldest item if it is due at `now`.
    pub fn pop_due(&mut self, now: Time) -> Option<T> {
        if self.queue.front().is_some_and(|(t, _)| *t <= now) {
            self.queue.pop_front().map(|(_, x)| x)
        } else {
            None
        }
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_for_the_delay_and_keeps_fifo() {
        let mut d = DelayLine::new(Duration::from_millis(10));
        d.push(Time(0), 'a');
        d.push(Time(1_000_000), 'b');
        d.push(Time(1_000_000), 'c');
        assert_eq!(d.next_due(), Some(Time(10_000_000)));
        assert_eq!(d.pop_due(Time(9_999_999)), None);
        assert_eq!(d.pop_due(Time(10_000_000)), Some('a'));
        assert_eq!(d.pop_due(Time(10_000_000)), None);
        assert_eq!(d.pop_due(Time(20_000_000)), Some('b'));
        assert_eq!(d.pop_due(Time(20_000_000)), Some('c'));
        assert!(d.is_empty());
    }

    #[test]
    fn zero_delay_is_passthrough() {
        let mut d = DelayLine::new(Duration::ZERO);
        assert!(d.is_passthrough());
        d.push(Time(5), 1);
        assert!(!d.is_passthrough());
        assert_eq!(d.pop_due(Time(5)), Some(1));
    }
}

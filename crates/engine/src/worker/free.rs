//! Which connection a due request takes: the one that has had room for the
//! longest.
//!
//! A request "waited for a connection" only when no connection had room at
//! its due time, and send lateness is measured from the later of the due time
//! and the moment a connection had room. Both are exact only if the chosen
//! connection is the one free longest: taking the most recently freed one
//! (a stack) would report a wait, and hide generator lateness, whenever a
//! request fell due while an answer was being processed.
//!
//! Reading late over HTTP/2 (see the worker's module doc) is exact only on a
//! connection that carries one stream, so there due requests take the
//! connections with room in turn ([`Rotation`]): each is given its next
//! request as late as can be, when its last one has most likely been
//! answered. Lateness is still measured from the moment the connection free
//! longest had room, the front of the [`FreeQueue`].

use std::collections::VecDeque;

use crate::clock::Nanos;

/// Connections with room, oldest `free_since` first. Each entry carries the
/// `free_since` under which it was queued; an entry whose stamp no longer
/// matches (the connection filled up, failed, or became free again later)
/// is stale and dropped when it reaches the front.
#[derive(Default)]
pub(crate) struct FreeQueue {
    q: VecDeque<(usize, Nanos)>,
}

/// What the queue needs to know of a connection.
pub(crate) trait Slot {
    fn has_room(&self, depth: usize) -> bool;
    fn free_since(&self) -> Nanos;
    fn listed_at(&mut self) -> &mut Option<Nanos>;
    /// Whether it stands in the [`Rotation`].
    fn in_rotation(&mut self) -> &mut bool;
}

impl FreeQueue {
    pub fn with_capacity(n: usize) -> Self {
        FreeQueue {
            q: VecDeque::with_capacity(n),
        }
    }

    /// Queues connection `i` once per time it became free; `depth` is how
    /// many requests a connection may carry.
    pub fn list(&mut self, i: usize, c: &mut impl Slot, depth: usize) {
        let since = c.free_since();
        if c.has_room(depth) && *c.listed_at() != Some(since) {
            *c.listed_at() = Some(since);
            self.q.push_back((i, since));
        }
    }

    /// Up to `n` connections, in the order `first` would hand them out if
    /// each took one request, among those `current(i, stamp)` says its
    /// entry still stands for; nothing is dropped or changed.
    pub fn peek(&self, n: usize, mut current: impl FnMut(usize, Nanos) -> bool) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::with_capacity(n);
        for &(i, stamp) in &self.q {
            if out.len() >= n {
                break;
            }
            if current(i, stamp) && !out.contains(&i) {
                out.push(i);
            }
        }
        out
    }

    /// The connection free longest, left queued (a pipelining connection
    /// may take more than one request).
    pub fn first<S: Slot>(&mut self, conns: &mut [S], depth: usize) -> Option<usize> {
        if self.q.len() > 2 * conns.len() {
            // A front that stays valid (connections taken in turn, or one
            // the server lets carry more streams than the others) leaves
            // the stale entries of the others behind it: dropped here, so
            // the queue holds about one entry per connection.
            self.q
                .retain(|&(i, stamp)| current(&mut conns[i], stamp, depth));
        }
        while let Some(&(i, stamp)) = self.q.front() {
            if current(&mut conns[i], stamp, depth) {
                return Some(i);
            }
            self.q.pop_front();
        }
        None
    }
}

/// Whether an entry queued under `stamp` still stands for connection `c`
/// (it has room and was not freed again since). One that no longer does
/// is unlisted, if it was the connection's listing, so that the connection
/// is queued again when it is next free.
fn current(c: &mut impl Slot, stamp: Nanos, depth: usize) -> bool {
    let listed = *c.listed_at() == Some(stamp);
    if listed && c.has_room(depth) {
        return true;
    }
    if listed {
        *c.listed_at() = None;
    }
    false
}

/// Connections with room, the one given a request longest ago first.
#[derive(Default)]
pub(crate) struct Rotation {
    q: VecDeque<usize>,
}

impl Rotation {
    pub fn with_capacity(n: usize) -> Self {
        Rotation {
            q: VecDeque::with_capacity(n),
        }
    }

    /// Queues connection `i` at the back if it has room and is not queued.
    pub fn list(&mut self, i: usize, c: &mut impl Slot, depth: usize) {
        if c.has_room(depth) && !*c.in_rotation() {
            *c.in_rotation() = true;
            self.q.push_back(i);
        }
    }

    /// The connection given a request longest ago, left queued; those that
    /// have no room are dropped (listed again once they have).
    pub fn first<S: Slot>(&mut self, conns: &mut [S], depth: usize) -> Option<usize> {
        while let Some(&i) = self.q.front() {
            let c = &mut conns[i];
            if c.has_room(depth) {
                return Some(i);
            }
            self.q.pop_front();
            *c.in_rotation() = false;
        }
        None
    }

    /// Connection `i`, if it is the first, was given a request: it goes to
    /// the back.
    pub fn used(&mut self, i: usize) {
        if self.q.front() == Some(&i) {
            self.q.pop_front();
            self.q.push_back(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct C {
        room: bool,
        since: Nanos,
        listed: Option<Nanos>,
        rotating: bool,
    }

    impl Slot for C {
        fn has_room(&self, _: usize) -> bool {
            self.room
        }
        fn free_since(&self) -> Nanos {
            self.since
        }
        fn listed_at(&mut self) -> &mut Option<Nanos> {
            &mut self.listed
        }
        fn in_rotation(&mut self) -> &mut bool {
            &mut self.rotating
        }
    }

    fn conns(n: usize) -> Vec<C> {
        (0..n)
            .map(|_| C {
                room: false,
                since: 0,
                listed: None,
                rotating: false,
            })
            .collect()
    }

    fn free(q: &mut FreeQueue, cs: &mut [C], i: usize, at: Nanos) {
        cs[i].room = true;
        cs[i].since = at;
        q.list(i, &mut cs[i], 1);
    }

    #[test]
    fn the_connection_free_longest_goes_first() {
        let mut cs = conns(3);
        let mut q = FreeQueue::with_capacity(3);
        free(&mut q, &mut cs, 0, 10);
        free(&mut q, &mut cs, 1, 20);
        free(&mut q, &mut cs, 2, 30);
        assert_eq!(q.first(&mut cs, 1), Some(0));
        cs[0].room = false;
        assert_eq!(q.first(&mut cs, 1), Some(1));
    }

    #[test]
    fn a_connection_freed_again_goes_to_the_back() {
        let mut cs = conns(2);
        let mut q = FreeQueue::with_capacity(2);
        free(&mut q, &mut cs, 0, 10);
        free(&mut q, &mut cs, 1, 20);
        // 0 takes a request and is answered at 30, still queued in front
        // under its old stamp: that entry is stale, 1 has been free longer.
        cs[0].room = false;
        free(&mut q, &mut cs, 0, 30);
        assert_eq!(q.first(&mut cs, 1), Some(1));
        cs[1].room = false;
        assert_eq!(q.first(&mut cs, 1), Some(0));
        assert_eq!(cs[0].free_since(), 30);
    }

    #[test]
    fn listing_twice_under_one_stamp_queues_once() {
        let mut cs = conns(1);
        let mut q = FreeQueue::with_capacity(1);
        free(&mut q, &mut cs, 0, 10);
        q.list(0, &mut cs[0], 1);
        assert_eq!(q.q.len(), 1);
        cs[0].room = false;
        assert_eq!(q.first(&mut cs, 1), None);
        assert!(q.q.is_empty());
    }

    #[test]
    fn stale_entries_behind_a_front_that_stays_free_do_not_pile_up() {
        let mut cs = conns(3);
        let mut q = FreeQueue::with_capacity(3);
        free(&mut q, &mut cs, 0, 1);
        // 1 and 2 fill up and become free again, over and over; 0 keeps
        // its room and stays first.
        for t in 0..1000 {
            for i in 1..3 {
                cs[i].room = false;
                free(&mut q, &mut cs, i, 10 + t);
            }
            assert_eq!(q.first(&mut cs, 1), Some(0));
        }
        assert!(q.q.len() <= 7, "{} entries for 3 connections", q.q.len());
        // What was kept is still in order: 0, then the others.
        cs[0].room = false;
        assert!(matches!(q.first(&mut cs, 1), Some(1 | 2)));
    }

    #[test]
    fn connections_take_requests_in_turn() {
        let mut cs = conns(3);
        for c in cs.iter_mut() {
            c.room = true;
        }
        let mut q = Rotation::with_capacity(3);
        for (i, c) in cs.iter_mut().enumerate() {
            q.list(i, c, 4);
        }
        q.list(1, &mut cs[1], 4);
        assert_eq!(q.q.len(), 3, "listed once while queued");
        let mut order = Vec::new();
        for _ in 0..6 {
            let i = q.first(&mut cs, 4).unwrap();
            order.push(i);
            q.used(i);
        }
        assert_eq!(order, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn a_connection_without_room_leaves_the_rotation_until_listed_again() {
        let mut cs = conns(2);
        cs[1].room = true;
        let mut q = Rotation::with_capacity(2);
        // Not ready yet, or gone away: no room.
        q.list(0, &mut cs[0], 4);
        q.list(1, &mut cs[1], 4);
        assert_eq!(q.first(&mut cs, 4), Some(1));
        cs[1].room = false;
        assert_eq!(q.first(&mut cs, 4), None);
        assert!(!cs[1].rotating);
        cs[0].room = true;
        q.list(0, &mut cs[0], 4);
        assert_eq!(q.first(&mut cs, 4), Some(0));
        // Used while not first (taken as a fall-back): stays where it is.
        q.used(1);
        assert_eq!(q.first(&mut cs, 4), Some(0));
    }
}

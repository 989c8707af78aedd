//! Exact merging of parts of one load into one result: the load threads of
//! a generator, and the generators of a load, the same way.
//!
//! Histograms are added bucket for bucket (see [`crate::histogram`]), so the
//! merged percentiles are those of all the requests together, never an
//! average of percentiles. Counts, the ledger, CPU and connections are sums;
//! the busiest thread decides saturation; the worst host's steal decides
//! whether the result is steady.
//!
//! Intervals line up because every part shares one planned start: interval
//! `k` of each covers the same second. A merged interval spans from the
//! earliest part's start to the latest part's end of that interval.

use crate::bodies::BodySizes;
use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::histogram::new_histogram;
use crate::outcome::{Generator, Outcome, SecondSample, Sockets, TargetOutcome};
use crate::stats::ErrorCounts;
use crate::{AnswerClock, LoadModel, Schedule};

/// Interval `second` of several parts as one.
pub fn merge_interval(
    second: i64,
    items: &[(&SecondSample, &Histogram<u64>)],
) -> (SecondSample, Histogram<u64>) {
    let mut hist = new_histogram();
    let mut s = SecondSample {
        second,
        phase: items
            .first()
            .map_or(crate::Phase::Measure, |(x, _)| x.phase),
        start_s: f64::INFINITY,
        duration_s: 0.0,
        requests: 0,
        errors: 0,
        bytes: 0,
        p50_us: 0,
        p99_us: 0,
    };
    let mut end_s: f64 = 0.0;
    for (x, h) in items {
        s.start_s = s.start_s.min(x.start_s);
        end_s = end_s.max(x.start_s + x.duration_s);
        s.requests += x.requests;
        s.errors += x.errors;
        s.bytes += x.bytes;
        let _ = hist.add(*h);
    }
    if !s.start_s.is_finite() {
        s.start_s = 0.0;
    }
    s.duration_s = (end_s - s.start_s).max(0.0);
    if !hist.is_empty() {
        s.p50_us = hist.value_at_quantile(0.5);
        s.p99_us = hist.value_at_quantile(0.99);
    }
    (s, hist)
}

impl Outcome {
    /// The parts as one, with the merged series (merged interval by interval
    /// as it arrived, see [`LiveMerge`]).
    pub fn merge(parts: &[&Outcome], series: Vec<SecondSample>) -> Outcome {
        let Sums {
            latency,
            answered_latency,
            unexpected_latency,
            uncorrected,
            lateness,
            connect_time,
            handshake_time,
            status_codes,
            body_sizes,
            errors,
            sockets,
            planned,
            requests,
            arrived,
            bytes,
            connections,
            threads,
            cpu_s,
            thread_busy,
            warmup_s,
            measured_s,
            timeout_s,
            rate,
            schedule,
            interrupted,
        } = Sums::of(parts);
        let targets = merge_groups(parts.iter().map(|o| &o.targets[..]));
        let stages = merge_groups(parts.iter().map(|o| &o.stages[..]));
        Outcome {
            model: match rate {
                Some(rps) => LoadModel::ConstantRate { rps },
                None => LoadModel::ClosedLoop,
            },
            connections,
            threads,
            protocol: parts.first().map_or_else(Default::default, |o| o.protocol),
            h2: added(
                parts.iter().filter_map(|o| o.h2.as_ref()),
                crate::H2Report::add,
            ),
            h3: added(
                parts.iter().filter_map(|o| o.h3.as_ref()),
                crate::H3Report::add,
            ),
            pipeline: parts.first().map_or(1, |o| o.pipeline),
            timeout_s,
            warmup_s,
            measured_s,
            planned,
            requests,
            arrived,
            bytes_read: bytes,
            errors,
            latency,
            answered_latency,
            unexpected_latency,
            uncorrected,
            lateness,
            status_codes,
            body_sizes,
            expect_status: parts
                .first()
                .map_or_else(String::new, |o| o.expect_status.clone()),
            connect_time,
            handshake_time,
            keepalive: parts.iter().all(|o| o.keepalive),
            tls_error: parts.iter().find_map(|o| o.tls_error.clone()),
            series,
            generator: merge_generator(parts, cpu_s, thread_busy),
            schedule,
            sockets,
            interrupted,
            address: parts
                .first()
                .map_or_else(String::new, |o| o.address.clone()),
            proxy: parts.first().and_then(|o| o.proxy.clone()),
            auto_warmup: None,
            answer_clock: answer_clock(parts.iter().map(|o| o.answer_clock)),
            targets,
            stages,
            stage_plan: parts
                .first()
                .map_or_else(Vec::new, |o| o.stage_plan.clone()),
            timeout_mode: parts
                .first()
                .map_or_else(Default::default, |o| o.timeout_mode),
            late_answers: parts.iter().map(|o| o.late_answers).sum(),
            thread_req_sec: parts.iter().fold(Default::default(), |mut m, o| {
                m.merge(&o.thread_req_sec);
                m
            }),
            silences: crate::silence::Silences::merge(parts.iter().map(|o| &o.silences)),
        }
    }
}

/// The parts' HTTP/2 or HTTP/3 reports added up; `None` when none has one.
fn added<'a, R: Default + 'a>(
    reports: impl Iterator<Item = &'a R>,
    add: fn(&mut R, &R),
) -> Option<R> {
    reports.fold(None, |acc, r| {
        let mut m = acc.unwrap_or_default();
        add(&mut m, r);
        Some(m)
    })
}

/// What the parts add up to, gathered in one pass in their order:
/// histograms bucket for bucket, counts summed, the window's lengths the
/// longest, the rates of a schedule summed.
struct Sums {
    latency: Histogram<u64>,
    answered_latency: Histogram<u64>,
    unexpected_latency: Histogram<u64>,
    uncorrected: Histogram<u64>,
    lateness: Option<Histogram<u64>>,
    connect_time: Histogram<u64>,
    handshake_time: Option<Histogram<u64>>,
    status_codes: BTreeMap<u16, u64>,
    body_sizes: BodySizes,
    errors: ErrorCounts,
    sockets: Sockets,
    planned: u64,
    requests: u64,
    arrived: u64,
    bytes: u64,
    connections: usize,
    threads: usize,
    cpu_s: f64,
    thread_busy: Vec<f64>,
    warmup_s: f64,
    measured_s: f64,
    timeout_s: f64,
    rate: Option<f64>,
    schedule: Option<Schedule>,
    interrupted: bool,
}

impl Sums {
    fn of(parts: &[&Outcome]) -> Sums {
        let mut sums = Sums {
            latency: new_histogram(),
            answered_latency: new_histogram(),
            unexpected_latency: new_histogram(),
            uncorrected: new_histogram(),
            lateness: None,
            connect_time: new_histogram(),
            handshake_time: None,
            status_codes: BTreeMap::new(),
            body_sizes: BodySizes::default(),
            errors: ErrorCounts::default(),
            sockets: Sockets::default(),
            planned: 0,
            requests: 0,
            arrived: 0,
            bytes: 0,
            connections: 0,
            threads: 0,
            cpu_s: 0.0,
            thread_busy: Vec::new(),
            warmup_s: 0.0,
            measured_s: 0.0,
            timeout_s: 0.0,
            rate: None,
            schedule: None,
            interrupted: false,
        };
        for o in parts {
            sums.add_histograms(o);
            sums.add_counts(o);
        }
        sums
    }

    fn add_histograms(&mut self, o: &Outcome) {
        let _ = self.latency.add(&o.latency);
        let _ = self.answered_latency.add(&o.answered_latency);
        let _ = self.unexpected_latency.add(&o.unexpected_latency);
        let _ = self.uncorrected.add(&o.uncorrected);
        if let Some(l) = &o.lateness {
            let _ = self.lateness.get_or_insert_with(new_histogram).add(l);
        }
        let _ = self.connect_time.add(&o.connect_time);
        if let Some(h) = &o.handshake_time {
            let _ = self.handshake_time.get_or_insert_with(new_histogram).add(h);
        }
    }

    fn add_counts(&mut self, o: &Outcome) {
        for (code, n) in &o.status_codes {
            *self.status_codes.entry(*code).or_insert(0) += n;
        }
        self.body_sizes.merge(&o.body_sizes);
        self.errors.add(&o.errors);
        self.sockets.add(&o.sockets);
        self.planned += o.planned;
        self.requests += o.requests;
        self.arrived += o.arrived;
        self.bytes += o.bytes_read;
        self.connections += o.connections;
        self.threads += o.threads;
        self.cpu_s += o.generator.cpu_s;
        self.thread_busy.extend_from_slice(&o.generator.thread_busy);
        self.interrupted |= o.interrupted;
        self.warmup_s = self.warmup_s.max(o.warmup_s);
        self.measured_s = self.measured_s.max(o.measured_s);
        self.timeout_s = self.timeout_s.max(o.timeout_s);
        if let LoadModel::ConstantRate { rps } = o.model {
            *self.rate.get_or_insert(0.0) += rps;
        }
        if let Some(s) = &o.schedule {
            add_schedule(&mut self.schedule, s);
        }
    }
}

/// A part's constant-rate schedule added to the merged one: rates and
/// counts summed, the worst lateness and the widest send-ahead kept.
fn add_schedule(merged: &mut Option<Schedule>, s: &Schedule) {
    let m = merged.get_or_insert(Schedule {
        rate: 0.0,
        sent: 0,
        never_sent: 0,
        waited_for_connection: 0,
        send_ahead_us: s.send_ahead_us,
        sent_early: 0,
        early_max_us: 0.0,
        behind: false,
    });
    m.rate += s.rate;
    m.sent += s.sent;
    m.never_sent += s.never_sent;
    m.waited_for_connection += s.waited_for_connection;
    m.sent_early += s.sent_early;
    m.early_max_us = m.early_max_us.max(s.early_max_us);
    m.send_ahead_us = m.send_ahead_us.max(s.send_ahead_us);
    m.behind |= s.behind;
}

/// Stamped only if every part's answers were.
fn answer_clock(parts: impl Iterator<Item = AnswerClock>) -> AnswerClock {
    parts
        .reduce(|a, b| if a == b { a } else { AnswerClock::Read })
        .unwrap_or_default()
}

/// The generators' cost as one: CPU summed, the busiest thread deciding
/// saturation.
fn merge_generator(parts: &[&Outcome], cpu_s: f64, thread_busy: Vec<f64>) -> Generator {
    let busy_fraction = thread_busy.iter().cloned().fold(0.0, f64::max);
    Generator {
        cpu_s,
        busy_fraction,
        thread_busy,
        saturated: parts.iter().any(|o| o.generator.saturated),
        wait_fraction: parts
            .iter()
            .map(|o| o.generator.wait_fraction)
            .fold(0.0, f64::max),
        contended: parts.iter().any(|o| o.generator.contended),
        // The worst machine decides whether the merged result is
        // steady.
        steal_fraction: parts
            .iter()
            .filter_map(|o| o.generator.steal_fraction)
            .reduce(f64::max),
        // The worst machine decides, as for steal.
        memory_stall_fraction: parts
            .iter()
            .filter_map(|o| o.generator.memory_stall_fraction)
            .reduce(f64::max),
        unstamped: Generator::merge_unstamped(parts.iter().map(|o| o.generator.unstamped)),
        quota_pause: Generator::merge_quota(parts.iter().map(|o| o.generator.quota_pause.clone())),
        stalled: crate::stall::Stalled::merge(parts.iter().map(|o| o.generator.stalled.clone())),
    }
}

/// Named parts of the window (targets, stages), added name by name: every
/// part lists the same names in the same order.
fn merge_groups<'a>(parts: impl Iterator<Item = &'a [TargetOutcome]>) -> Vec<TargetOutcome> {
    let mut merged: Vec<TargetOutcome> = Vec::new();
    for groups in parts {
        for (i, t) in groups.iter().enumerate() {
            if i == merged.len() {
                merged.push(TargetOutcome {
                    name: t.name.clone(),
                    planned: 0,
                    requests: 0,
                    arrived: 0,
                    answered_within: 0,
                    errors: ErrorCounts::default(),
                    status_codes: BTreeMap::new(),
                    body_sizes: BodySizes::default(),
                    latency: new_histogram(),
                });
            }
            let m = &mut merged[i];
            m.planned += t.planned;
            m.requests += t.requests;
            m.arrived += t.arrived;
            m.answered_within += t.answered_within;
            m.errors.add(&t.errors);
            for (code, n) in &t.status_codes {
                *m.status_codes.entry(*code).or_insert(0) += n;
            }
            m.body_sizes.merge(&t.body_sizes);
            let _ = m.latency.add(&t.latency);
        }
    }
    merged
}

/// One part's interval, once it has arrived.
type Slot = Option<(SecondSample, Histogram<u64>)>;

/// Merges intervals as they arrive from several parts, handing out each
/// interval once every part still running has reported it. What it holds is
/// bounded by how far the parts drift apart (a second or two), not by the
/// length of the run.
pub struct LiveMerge {
    finished: Vec<bool>,
    pending: BTreeMap<i64, Vec<Slot>>,
}

impl LiveMerge {
    pub fn new(parts: usize) -> LiveMerge {
        LiveMerge {
            finished: vec![false; parts],
            pending: BTreeMap::new(),
        }
    }

    /// Part `i`'s interval; the merged intervals now complete, in order.
    pub fn add(
        &mut self,
        i: usize,
        s: SecondSample,
        h: Histogram<u64>,
    ) -> Vec<(SecondSample, Histogram<u64>)> {
        let n = self.finished.len();
        let slot = self
            .pending
            .entry(s.second)
            .or_insert_with(|| vec![None; n]);
        slot[i] = Some((s, h));
        self.ready()
    }

    /// Part `i` will report nothing more.
    pub fn finish(&mut self, i: usize) -> Vec<(SecondSample, Histogram<u64>)> {
        self.finished[i] = true;
        self.ready()
    }

    /// Everything still pending, whoever is missing.
    pub fn drain(&mut self) -> Vec<(SecondSample, Histogram<u64>)> {
        std::mem::take(&mut self.pending)
            .into_iter()
            .map(|(second, v)| merged(second, &v))
            .collect()
    }

    fn ready(&mut self) -> Vec<(SecondSample, Histogram<u64>)> {
        let mut out = Vec::new();
        while let Some(entry) = self.pending.first_entry() {
            let complete = entry
                .get()
                .iter()
                .zip(&self.finished)
                .all(|(got, done)| got.is_some() || *done);
            if !complete {
                break;
            }
            let (second, v) = entry.remove_entry();
            out.push(merged(second, &v));
        }
        out
    }
}

fn merged(second: i64, v: &[Slot]) -> (SecondSample, Histogram<u64>) {
    let items: Vec<(&SecondSample, &Histogram<u64>)> =
        v.iter().flatten().map(|(s, h)| (s, h)).collect();
    merge_interval(second, &items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Phase;

    fn sample(second: i64, requests: u64) -> SecondSample {
        SecondSample {
            second,
            phase: if second < 0 {
                Phase::Warmup
            } else {
                Phase::Measure
            },
            start_s: second as f64 + 1.0,
            duration_s: 1.0,
            requests,
            errors: 1,
            bytes: requests * 100,
            p50_us: 0,
            p99_us: 0,
        }
    }

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = new_histogram();
        for &v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn merged_percentiles_are_those_of_all_requests() {
        // One part fast, one slow: the merged p50 is of the union, not the
        // mean of the two medians.
        let a = hist(&[100; 90]);
        let b = hist(&[10_000; 10]);
        let (s, h) = merge_interval(0, &[(&sample(0, 90), &a), (&sample(0, 10), &b)]);
        assert_eq!(s.requests, 100);
        assert_eq!(s.errors, 2);
        assert_eq!(h.len(), 100);
        assert_eq!(s.p50_us, 100);
        assert!(h.equivalent(s.p99_us, 10_000));
    }

    #[test]
    fn merged_answers_are_stamped_only_if_every_parts_were() {
        use AnswerClock::{KernelStamp, Read};
        let clock = |v: &[AnswerClock]| answer_clock(v.iter().copied());
        assert_eq!(clock(&[KernelStamp, KernelStamp]), KernelStamp);
        assert_eq!(clock(&[KernelStamp, Read]), Read);
        assert_eq!(clock(&[Read, KernelStamp]), Read);
        assert_eq!(clock(&[]), Read);
        let late = |v: &[Option<u64>]| Generator::merge_unstamped(v.iter().copied());
        assert_eq!(late(&[None, None]), None);
        assert_eq!(late(&[None, Some(2), Some(0)]), Some(2));
    }

    #[test]
    fn a_merged_interval_spans_its_parts() {
        let h = hist(&[1]);
        let mut a = sample(3, 1);
        let mut b = sample(3, 1);
        a.start_s = 10.0;
        a.duration_s = 0.2;
        b.start_s = 10.0;
        b.duration_s = 0.5;
        let (s, _) = merge_interval(3, &[(&a, &h), (&b, &h)]);
        assert_eq!((s.start_s, s.duration_s), (10.0, 0.5));
    }

    #[test]
    fn live_merge_waits_for_every_running_part() {
        let h = hist(&[5]);
        let mut m = LiveMerge::new(2);
        assert!(m.add(0, sample(0, 1), h.clone()).is_empty());
        assert!(m.add(0, sample(1, 1), h.clone()).is_empty());
        let out = m.add(1, sample(0, 2), h.clone());
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0.requests, 3);
        // Part 1 ends: second 1 has all it will get.
        let out = m.finish(1);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0.second, 1);
        assert!(m.drain().is_empty());
    }
}

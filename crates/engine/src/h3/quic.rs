//! One QUIC connection for a load thread: quinn-proto's state machine (no
//! I/O of its own), a connected non-blocking UDP socket registered in the
//! thread's poller, and the thread's clock.
//!
//! Each connection has an endpoint of its own: a connected socket receives
//! only its peer's datagrams, so there is nothing to route between
//! connections, and a connection dropped before it drained leaves nothing
//! behind in a shared endpoint. quinn keeps time in `Instant`s, which on
//! Linux are the same monotonic clock as the engine's: one pair taken at
//! start converts between them.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::collections::VecDeque;

use bytes::BytesMut;
use quinn_proto::crypto::rustls::QuicClientConfig;
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig,
    IdleTimeout, TransportConfig, VarInt,
};

use super::report::{H3Report, Waits};
use super::udp::{self, Gso};
use crate::clock::{self, Nanos};

thread_local! {
    /// What a thread's connections read into, one after the other.
    static RX: std::cell::RefCell<udp::RxBatch> = std::cell::RefCell::new(udp::RxBatch::new());
}
/// The socket's receive buffer asked for: a large answer arrives in
/// bursts a flow-control window long, which the default buffer would drop.
const RECV_BUFFER: libc::c_int = 4 << 20;
/// Receive windows, bytes: per stream, and per connection.
const STREAM_WINDOW: u32 = 1_250_000;
const CONNECTION_WINDOW: u32 = 8 << 20;
/// The longest the client delays an acknowledgement, ms: quinn announces
/// QUIC's default `max_ack_delay` (RFC 9000 §18.2) and acknowledges every
/// second packet at once, the others within this delay or with the next
/// request.
pub(crate) const ACK_DELAY_MS: u64 = 25;

/// What every connection of a run shares.
#[derive(Clone)]
pub(crate) struct QuicSetup {
    client: ClientConfig,
    server_name: String,
    /// The engine's clock and quinn's at one moment.
    base: (Instant, Nanos),
    gso: Gso,
}

impl QuicSetup {
    /// `idle`: how long a connection may stay silent before quinn gives
    /// it up.
    pub fn new(tls: Arc<QuicClientConfig>, server_name: &str, idle: Duration) -> QuicSetup {
        let mut transport = TransportConfig::default();
        // The server opens no request streams towards a client, and HTTP/3
        // needs three unidirectional ones (control, QPACK encoder and
        // decoder), plus room for the ones it may add and ignore.
        transport.max_concurrent_bidi_streams(VarInt::from_u32(0));
        transport.max_concurrent_uni_streams(VarInt::from_u32(16));
        transport.max_idle_timeout(IdleTimeout::try_from(idle).ok());
        // What the server may send ahead of the client's reading: per stream
        // (quinn's default, 1.25 MB, for one large answer) and per
        // connection, which quinn leaves unbounded. The load thread reads
        // as data arrives, so these only bound memory when it falls behind:
        // 100 connections could otherwise hold every stream's window each.
        transport.stream_receive_window(VarInt::from_u32(STREAM_WINDOW));
        transport.receive_window(VarInt::from_u32(CONNECTION_WINDOW));
        let mut client = ClientConfig::new(tls);
        client.transport_config(Arc::new(transport));
        QuicSetup {
            client,
            server_name: server_name.to_string(),
            base: (Instant::now(), clock::now()),
            gso: Gso::default(),
        }
    }

    pub fn instant(&self, t: Nanos) -> Instant {
        let (i, n) = self.base;
        if t >= n {
            i + Duration::from_nanos(t - n)
        } else {
            i.checked_sub(Duration::from_nanos(n - t)).unwrap_or(i)
        }
    }

    pub fn nanos(&self, at: Instant) -> Nanos {
        let (i, n) = self.base;
        match at.checked_duration_since(i) {
            Some(d) => n + d.as_nanos() as Nanos,
            None => n.saturating_sub(i.duration_since(at).as_nanos() as Nanos),
        }
    }

    /// Starts a connection to `peer` at `now`: its first flight goes out
    /// at the next [`Link::flush`].
    pub fn open(&self, peer: SocketAddr, now: Nanos) -> io::Result<Link> {
        let local: SocketAddr = if peer.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let socket = UdpSocket::bind(local)?;
        socket.connect(peer)?;
        socket.set_nonblocking(true)?;
        // Refused, the default size stays.
        let _ = crate::sockopt::set_int_option(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            RECV_BUFFER,
        );
        let gro = udp::enable_gro(socket.as_raw_fd());
        let stamps = udp::enable_timestamps(socket.as_raw_fd());
        let mut endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, false, None);
        let (handle, conn) = endpoint
            .connect(
                self.instant(now),
                self.client.clone(),
                peer,
                &self.server_name,
            )
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        Ok(Link {
            conn,
            endpoint,
            handle,
            socket,
            peer,
            setup: self.clone(),
            buf: Vec::with_capacity(udp::GSO_MAX * 1_500),
            dropped: 0,
            gro,
            stamps,
            watch: None,
            drained_at: now,
            rx: VecDeque::new(),
            read_late: Waits::default(),
            unstamped: 0,
            io: Io::default(),
            handed: VecDeque::new(),
            stream_frames: 0,
            waits: Waits::default(),
        })
    }
}

/// One connection and its socket.
pub(crate) struct Link {
    pub conn: Connection,
    endpoint: Endpoint,
    handle: ConnectionHandle,
    socket: UdpSocket,
    peer: SocketAddr,
    setup: QuicSetup,
    buf: Vec<u8>,
    /// Datagrams not sent because the socket's buffer was full (QUIC
    /// sends them again as lost).
    pub dropped: u64,
    /// The kernel coalesces the datagrams this socket receives (GRO).
    gro: bool,
    /// The kernel stamps each datagram with its arrival, and every one
    /// read so far had its stamp: the socket may be read late.
    stamps: bool,
    /// What the load thread's poller wakes for on this socket: reads
    /// (`true`), only errors (`false`: read late), or (`None`) as it was
    /// registered.
    pub watch: Option<bool>,
    /// When a read last found the socket empty: no datagram read since
    /// arrived before it.
    drained_at: Nanos,
    /// Datagrams read and not yet handed to quinn, with their arrival.
    rx: VecDeque<(BytesMut, Nanos)>,
    /// How long each stamped datagram waited in the socket: its read
    /// time less its arrival.
    read_late: Waits,
    /// Datagrams read without a stamp (timed at their read).
    unstamped: u64,
    io: Io,
    /// When each piece of stream data not yet sent was handed to quinn,
    /// oldest first, and whether it was a request's (rather than the
    /// control stream's).
    handed: VecDeque<(Nanos, bool)>,
    /// STREAM frames quinn had sent when last looked at.
    stream_frames: u64,
    /// How long requests waited in quinn before their first packet left.
    waits: Waits,
}

/// The system calls of one connection's socket and what they carried.
#[derive(Debug, Default, Clone, Copy)]
struct Io {
    send_calls: u64,
    recv_calls: u64,
    datagrams_sent: u64,
    datagrams_received: u64,
}

impl Link {
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.socket.as_raw_fd()
    }

    pub fn now(&self, t: Nanos) -> Instant {
        self.setup.instant(t)
    }

    /// The socket stamps each datagram with its arrival: it may be read
    /// late, each datagram still handed to quinn at its arrival.
    pub fn stamps(&self) -> bool {
        self.stamps
    }

    /// Reads every datagram queued on the socket into the connection.
    /// `ConnectionRefused`: nothing listens on the peer's UDP port.
    pub fn receive(&mut self, now: Nanos) -> io::Result<()> {
        loop {
            let more = self.read(now)?;
            while self.next_datagram().is_some() {}
            if !more {
                return Ok(());
            }
        }
    }

    /// Reads one batch of the datagrams queued on the socket (`now`: a
    /// time at or before this call), each with its arrival time, for
    /// [`Link::next_datagram`] to hand to quinn; true when more may be
    /// queued.
    pub fn read(&mut self, now: Nanos) -> io::Result<bool> {
        RX.with(|rx| {
            let mut rx = rx.borrow_mut();
            loop {
                self.io.recv_calls += 1;
                match udp::recv_batch(self.socket.as_raw_fd(), &mut rx) {
                    Ok(()) => break,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.drained_at = now;
                        return Ok(false);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            let read_at = clock::now();
            let offset = clock::realtime() as i128 - read_at as i128;
            for i in 0..rx.got.len() {
                let g = rx.got[i];
                let at = match g.stamp {
                    Some(rt) => arrival_time(rt, offset, self.drained_at, read_at),
                    None => {
                        // A socket whose kernel gives no stamp is read at
                        // once from now on (see `h3::load`).
                        self.stamps = false;
                        read_at
                    }
                };
                // A coalesced train (GRO) is its datagrams end to end.
                let seg = g.segment.filter(|_| self.gro).unwrap_or(g.len).max(1);
                for d in rx.message(i).chunks(seg) {
                    self.io.datagrams_received += 1;
                    if g.stamp.is_some() {
                        self.read_late.record(read_at - at);
                    } else {
                        self.unstamped += 1;
                    }
                    self.rx.push_back((BytesMut::from(d), at));
                }
            }
            let more = rx.got.len() == udp::BATCH;
            if !more {
                self.drained_at = now;
            }
            Ok(more)
        })
    }

    /// Hands the next datagram read to quinn, at its arrival (so that its
    /// RTT samples and the ACK delay it reports are true however late it
    /// was read); returns that arrival.
    pub fn next_datagram(&mut self) -> Option<Nanos> {
        let (d, at) = self.rx.pop_front()?;
        self.datagram(self.now(at), d);
        Some(at)
    }

    /// Hands one datagram to quinn.
    fn datagram(&mut self, at: Instant, data: BytesMut) {
        self.buf.clear();
        match self
            .endpoint
            .handle(at, self.peer, None, None, data, &mut self.buf)
        {
            Some(DatagramEvent::ConnectionEvent(_, ev)) => self.conn.handle_event(ev),
            Some(DatagramEvent::Response(t)) => {
                let _ = self.socket.send(&self.buf[..t.size]);
            }
            _ => {}
        }
    }

    /// Stream data was handed to quinn now: its wait for its first packet
    /// is timed from here (`request`: a request's, rather than the control
    /// stream's, which is not counted).
    pub fn handed(&mut self, now: Nanos, request: bool) {
        self.handed.push_back((now, request));
    }

    /// Runs quinn's timers that are due, hands its endpoint events over,
    /// and sends every datagram it has to send.
    pub fn flush(&mut self, now: Nanos) -> io::Result<()> {
        let at = self.now(now);
        if self.conn.poll_timeout().is_some_and(|t| t <= at) {
            self.conn.handle_timeout(at);
        }
        while let Some(ev) = self.conn.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(self.handle, ev) {
                self.conn.handle_event(back);
            }
        }
        let max = if self.setup.gso.usable() {
            udp::GSO_MAX
        } else {
            1
        };
        loop {
            self.buf.clear();
            let Some(t) = self.conn.poll_transmit(at, max, &mut self.buf) else {
                return Ok(());
            };
            let sent = udp::send(
                self.socket.as_raw_fd(),
                &self.buf[..t.size],
                t.segment_size,
                &self.setup.gso,
            )?;
            self.io.send_calls += sent.calls;
            self.io.datagrams_sent += sent.datagrams;
            self.dropped += sent.dropped;
            if !self.handed.is_empty() {
                self.left();
            }
        }
    }

    /// Ends the wait of the stream data whose first STREAM frame quinn
    /// just sent, oldest first. quinn sends streams of one priority in the
    /// order they were written to, and a request's head fits one frame;
    /// a frame sent again after a loss ends a later request's wait early,
    /// so with losses the figure errs low.
    fn left(&mut self) {
        let frames = self.conn.stats().frame_tx.stream;
        let new = frames.saturating_sub(self.stream_frames);
        self.stream_frames = frames;
        if new == 0 {
            return;
        }
        let now = clock::now();
        for _ in 0..new {
            let Some((t, request)) = self.handed.pop_front() else {
                break;
            };
            if request {
                self.waits.record(now.saturating_sub(t));
            }
        }
    }

    /// Adds what this connection did to `r`: QUIC's packets and its view
    /// of the path (once the handshake is done: before, the RTT is
    /// quinn's guess), the socket's system calls, and the requests' waits.
    pub fn account(&self, r: &mut H3Report, connected: bool) {
        let stats = self.conn.stats();
        r.packets_sent += stats.path.sent_packets;
        r.packets_lost += stats.path.lost_packets;
        r.datagrams_dropped += self.dropped;
        r.acks_sent += stats.frame_tx.acks;
        if connected {
            r.path.add_connection(
                stats.path.rtt.as_micros() as u64,
                stats.path.min_rtt.as_micros() as u64,
                stats.path.cwnd,
                stats.path.congestion_events,
            );
        }
        let u = &mut r.udp;
        u.send_calls += self.io.send_calls;
        u.recv_calls += self.io.recv_calls;
        u.datagrams_sent += self.io.datagrams_sent;
        u.datagrams_received += self.io.datagrams_received;
        u.gro |= self.gro;
        u.gso_refused |= !self.setup.gso.usable();
        r.add_waits(&self.waits);
        r.reading.add_datagrams(&self.read_late, self.unstamped);
    }

    /// When quinn next needs the thread (a retransmission, an
    /// acknowledgement's delay, the idle timeout), on the engine's clock.
    pub fn deadline(&mut self) -> Option<Nanos> {
        self.conn.poll_timeout().map(|t| self.setup.nanos(t))
    }
}

/// A datagram's arrival stamp `rt` (CLOCK_REALTIME) on the engine's
/// clock, given `offset` = realtime − monotonic, as the TCP threads time
/// a segment: trusted only within [`floor`, `now`] (it cannot have come
/// before its socket was last found empty, nor after its read). Outside
/// that (the wall clock stepped between the stamp and the read), the read
/// time `now` stands, which can only lengthen a latency.
fn arrival_time(rt: u64, offset: i128, floor: Nanos, now: Nanos) -> Nanos {
    let t = rt as i128 - offset;
    if t < floor as i128 || t > now as i128 {
        return now;
    }
    t as Nanos
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_is_the_arrival_only_between_the_last_empty_read_and_the_read() {
        const OFFSET: i128 = 1_700_000_000_000_000_000;
        let rt = |t: i128| (OFFSET + t) as u64;
        assert_eq!(arrival_time(rt(5_000), OFFSET, 1_000, 9_000), 5_000);
        assert_eq!(arrival_time(rt(1_000), OFFSET, 1_000, 9_000), 1_000);
        // Before the socket was last found empty, or after the read: the
        // wall clock stepped; the read time stands.
        assert_eq!(arrival_time(rt(500), OFFSET, 1_000, 9_000), 9_000);
        assert_eq!(arrival_time(rt(9_500), OFFSET, 1_000, 9_000), 9_000);
    }

    #[test]
    fn the_two_clocks_convert_both_ways() {
        let tls = crate::tls::TlsClient::new(
            &crate::target::Target::parse("https://127.0.0.1:1/").unwrap(),
            &crate::tls::TlsOptions {
                insecure: true,
                ..Default::default()
            },
        )
        .unwrap()
        .quic()
        .unwrap();
        let s = QuicSetup::new(tls, "127.0.0.1", Duration::from_secs(1));
        let now = clock::now();
        for t in [now, now + 1_500_000_000, now.saturating_sub(7_000)] {
            assert_eq!(s.nanos(s.instant(t)), t);
        }
        let later = Instant::now() + Duration::from_millis(5);
        let n = s.nanos(later);
        assert!(n >= now + 4_000_000 && n < now + 1_000_000_000, "{n} {now}");
    }
}

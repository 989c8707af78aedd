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

use bytes::BytesMut;
use quinn_proto::crypto::rustls::QuicClientConfig;
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig,
    IdleTimeout, TransportConfig, VarInt,
};

use crate::clock::{self, Nanos};

/// The largest UDP payload read; QUIC datagrams are far smaller.
const DATAGRAM: usize = 65_535;
/// The socket's receive buffer asked for: a large answer arrives in
/// bursts a flow-control window long, which the default buffer would drop.
const RECV_BUFFER: libc::c_int = 4 << 20;

/// What every connection of a run shares.
#[derive(Clone)]
pub(crate) struct QuicSetup {
    client: ClientConfig,
    server_name: String,
    /// The engine's clock and quinn's at one moment.
    base: (Instant, Nanos),
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
        let mut client = ClientConfig::new(tls);
        client.transport_config(Arc::new(transport));
        QuicSetup {
            client,
            server_name: server_name.to_string(),
            base: (Instant::now(), clock::now()),
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
        // SAFETY: setsockopt with a valid int option; failure only leaves
        // the default size.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&RECV_BUFFER as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
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
            buf: Vec::with_capacity(DATAGRAM),
            rx: vec![0; DATAGRAM].into_boxed_slice(),
            dropped: 0,
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
    /// What one `recv` reads into.
    rx: Box<[u8]>,
    /// Datagrams not sent because the socket's buffer was full (QUIC
    /// sends them again as lost).
    pub dropped: u64,
}

impl Link {
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.socket.as_raw_fd()
    }

    pub fn now(&self, t: Nanos) -> Instant {
        self.setup.instant(t)
    }

    /// Reads every datagram queued on the socket into the connection.
    /// `ConnectionRefused`: nothing listens on the peer's UDP port.
    pub fn receive(&mut self, now: Nanos) -> io::Result<()> {
        let at = self.now(now);
        loop {
            match self.socket.recv(&mut self.rx) {
                Ok(n) => {
                    self.buf.clear();
                    let data = BytesMut::from(&self.rx[..n]);
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
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
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
        loop {
            self.buf.clear();
            let Some(t) = self.conn.poll_transmit(at, 1, &mut self.buf) else {
                return Ok(());
            };
            match self.socket.send(&self.buf[..t.size]) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.dropped += 1,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => self.dropped += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// When quinn next needs the thread (a retransmission, an
    /// acknowledgement's delay, the idle timeout), on the engine's clock.
    pub fn deadline(&mut self) -> Option<Nanos> {
        self.conn.poll_timeout().map(|t| self.setup.nanos(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

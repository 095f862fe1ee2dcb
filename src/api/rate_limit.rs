//! A request rate per client that belongs to the one who spends it.
//!
//! Why it exists: a rate limit keyed on whatever a request claims to be lets anyone
//! spend anyone's limit (a flood carrying a victim's public token key got the victim
//! 429s) and lets made-up keys escape it. So a client is either a token that has been
//! verified, or the peer address: a request without a token, or whose token fails
//! verification, is counted against its address. An address that is over its rate is
//! refused before its token is looked up, so a flood of made-up tokens costs no
//! database work; that needs a check that does not spend, which is why this is a small
//! GCRA of our own rather than `governor` (whose keyed check always spends a cell).
//!
//! GCRA (the generic cell rate algorithm): each client has a theoretical arrival time
//! `tat`; a request at `now` is allowed when `max(tat, now) + T - now <= burst * T`,
//! where `T` is one request's share of a second, and then moves `tat` on by `T`.

use super::error::ApiError;
use axum::extract::{ConnectInfo, Request};
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Whom a request is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Client {
    /// A verified token, by its public key.
    Token(String),
    /// The peer address (no token, a token that failed verification, or a server
    /// without tokens).
    Address(IpAddr),
    /// Clients that arrive while the table is full share one rate.
    Overflow,
}

/// Most clients remembered at once; past it, idle ones are forgotten first and new ones
/// share [`Client::Overflow`], so a flood from many addresses cannot grow the table
/// without bound.
const MAX_CLIENTS: usize = 100_000;

/// Requests per second per client (`--rate-limit-per-s`, `--rate-limit-burst`).
pub struct ClientRateLimit {
    pub per_s: u32,
    /// One request's share of a second (`T`).
    interval: Duration,
    /// How far ahead of now a client's `tat` may run: `burst * T`.
    tolerance: Duration,
    clients: Mutex<HashMap<Client, Instant>>,
}

impl ClientRateLimit {
    /// `None` when `per_s` is 0 (no rate limit). The burst is at least the rate.
    pub fn new(per_s: u32, burst: u32) -> Option<Arc<ClientRateLimit>> {
        if per_s == 0 {
            return None;
        }
        let interval = Duration::from_secs_f64(1.0 / f64::from(per_s));
        let tolerance = interval * burst.max(per_s);
        Some(Arc::new(ClientRateLimit { per_s, interval, tolerance, clients: Mutex::new(HashMap::new()) }))
    }

    /// Spend one request of `client`'s rate: `Err(whole seconds to wait)` when it is over.
    pub fn check(&self, client: Client) -> Result<(), u64> {
        self.check_at(client, Instant::now())
    }

    /// Whether `client` is over its rate, without spending: `Err(seconds to wait)` if so.
    pub fn peek(&self, client: &Client) -> Result<(), u64> {
        let now = Instant::now();
        let clients = self.clients.lock().expect("rate limit lock");
        match clients.get(client) {
            Some(&tat) => self.verdict(tat, now).map(|_| ()),
            None => Ok(()),
        }
    }

    fn check_at(&self, client: Client, now: Instant) -> Result<(), u64> {
        let mut clients = self.clients.lock().expect("rate limit lock");
        let client = if clients.len() >= MAX_CLIENTS && !clients.contains_key(&client) {
            clients.retain(|_, tat| *tat > now);
            if clients.len() >= MAX_CLIENTS {
                Client::Overflow
            } else {
                client
            }
        } else {
            client
        };
        let tat = clients.get(&client).copied().unwrap_or(now);
        let next = self.verdict(tat, now)?;
        clients.insert(client, next);
        Ok(())
    }

    /// The client's next `tat` if a request at `now` is allowed, else the wait.
    fn verdict(&self, tat: Instant, now: Instant) -> Result<Instant, u64> {
        let next = tat.max(now) + self.interval;
        let ahead = next - now;
        if ahead <= self.tolerance {
            Ok(next)
        } else {
            let wait = ahead - self.tolerance;
            Err(wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
        }
    }

    /// Forget clients whose `tat` has passed: they are back at their full burst.
    pub fn forget_idle(&self) {
        let now = Instant::now();
        let mut clients = self.clients.lock().expect("rate limit lock");
        clients.retain(|_, tat| *tat > now);
        clients.shrink_to_fit();
    }

    /// Clients remembered now (for tests).
    pub fn remembered(&self) -> usize {
        self.clients.lock().expect("rate limit lock").len()
    }
}

/// The peer address of a request, as the rate limit counts it.
pub fn peer_client(request: &Request) -> Client {
    match request.extensions().get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(addr)) => Client::Address(addr.ip()),
        None => Client::Overflow,
    }
}

/// The 429 for a client over its rate.
pub fn over_rate(limit: &ClientRateLimit, wait_s: u64) -> Response {
    ApiError::too_many("rate-limit-per-s", format!("more than {} requests per second from this client: slow down", limit.per_s), wait_s.max(1)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Client {
        Client::Address(s.parse().unwrap())
    }

    #[test]
    fn a_client_over_its_burst_is_told_to_wait_and_others_are_not() {
        let limit = ClientRateLimit::new(1, 3).unwrap();
        let now = Instant::now();
        for _ in 0..3 {
            assert_eq!(limit.check_at(ip("10.0.0.1"), now), Ok(()));
        }
        assert_eq!(limit.check_at(ip("10.0.0.1"), now), Err(1), "one request per second: wait about 1 s");
        assert_eq!(limit.check_at(ip("10.0.0.2"), now), Ok(()), "another client has its own burst");
        assert_eq!(limit.check_at(Client::Token("k".into()), now), Ok(()));
        // A second later one request's share is back.
        assert_eq!(limit.check_at(ip("10.0.0.1"), now + Duration::from_secs(1)), Ok(()));
        assert!(ClientRateLimit::new(0, 10).is_none(), "0 turns the limit off");
    }

    #[test]
    fn peeking_spends_nothing() {
        let limit = ClientRateLimit::new(1, 2).unwrap();
        let a = ip("10.0.0.1");
        for _ in 0..10 {
            assert_eq!(limit.peek(&a), Ok(()));
        }
        limit.check(a.clone()).unwrap();
        limit.check(a.clone()).unwrap();
        assert!(limit.peek(&a).is_err(), "over its burst after two");
        assert_eq!(limit.peek(&ip("10.0.0.9")), Ok(()));
    }

    #[test]
    fn the_table_is_bounded() {
        let limit = ClientRateLimit::new(1, 1).unwrap();
        let now = Instant::now();
        for i in 0..(MAX_CLIENTS as u32 + 50) {
            let _ = limit.check_at(Client::Address(IpAddr::from(i.to_be_bytes())), now);
        }
        assert!(limit.remembered() <= MAX_CLIENTS + 1, "{}", limit.remembered());
    }
}

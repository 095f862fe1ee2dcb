//! How a server decides whether requests need a token: the mode a listening address
//! gets. The tokens themselves (issuing, hashing, the role order) are
//! `topicd_store::auth`, re-exported here.

use std::net::SocketAddr;
pub use topicd_store::auth::*;

/// Whether requests must carry a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthMode {
    /// Every request is served without a token.
    Off,
    /// Every request but the open ones needs `Authorization: Bearer <token>`.
    Required,
}

/// The mode a server on `addr` runs with. Without `--auth`, a loopback address serves
/// without tokens and any other address requires them. Serving without tokens on a
/// non-loopback address is refused unless the operator says `--insecure-no-auth` (for
/// a proxy in front that authenticates); that flag alone also means `off`.
pub fn resolve_mode(addr: SocketAddr, requested: Option<AuthMode>, insecure_no_auth: bool) -> Result<AuthMode, String> {
    let loopback = addr.ip().is_loopback();
    let mode = match requested {
        Some(mode) => mode,
        None if loopback || insecure_no_auth => AuthMode::Off,
        None => AuthMode::Required,
    };
    if mode == AuthMode::Off && !loopback && !insecure_no_auth {
        return Err(format!(
            "refusing to serve without API tokens on {addr}, which is not a loopback address: drop --auth off (tokens are then \
             required; create one with `topicd token create --name NAME --role admin`), or pass --insecure-no-auth if something \
             in front of this server authenticates every request"
        ));
    }
    Ok(mode)
}

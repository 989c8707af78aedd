//! One colour per server, the same in every chart: the sorted list of the
//! run's server names indexes the Okabe–Ito palette (safe for the common
//! forms of colour blindness). Past eight servers the colours repeat and the
//! dash patterns of the lines tell them apart; legends always name them.

/// Okabe & Ito (2008), "Color Universal Design", yellow moved last because it
/// is faint on white.
pub const OKABE_ITO: [&str; 8] = [
    "#0072B2", // blue
    "#E69F00", // orange
    "#009E73", // bluish green
    "#D55E00", // vermillion
    "#CC79A7", // reddish purple
    "#56B4E9", // sky blue
    "#000000", // black
    "#F0E442", // yellow
];

/// Dash patterns for a server's variants (and for colours that repeat).
pub const DASHES: [&str; 5] = ["", "6 3", "2 3", "8 3 2 3", "1 2"];

/// The palette index of `server` in the sorted list `servers`.
pub fn index(servers: &[String], server: &str) -> usize {
    servers.iter().position(|s| s == server).unwrap_or(0)
}

pub fn colour(i: usize) -> &'static str {
    OKABE_ITO[i % OKABE_ITO.len()]
}

pub fn dash(i: usize) -> &'static str {
    DASHES[i % DASHES.len()]
}

//! One module per subcommand: each turns parsed arguments into calls on the
//! engine, the zoo or the store, and into output.

pub mod check;
pub mod load;
pub mod servers;

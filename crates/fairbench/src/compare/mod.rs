//! `compare`: two stored runs side by side. [`model`] lines their cases up
//! and says, metric by metric, whether B differs from A (a bootstrap
//! interval on the medians); [`paired`] adds the paired view where both
//! runs measured a reference beside each case; [`render`] prints it as an
//! aligned text table, Markdown or JSON.

pub mod model;
pub mod paired;
pub mod render;

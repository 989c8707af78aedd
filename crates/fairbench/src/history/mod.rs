//! `history`: a case's figures across every stored run, and where they
//! changed (docs/history.md). [`series`] reads one point per run from the
//! store; [`changepoint`] finds where the level moved; [`analysis`] sizes
//! each move with compare's interval and keeps those beyond the noise
//! floor; [`render`] prints text, CSV and JSON, [`chart`] the SVG.
//! [`order`] places the points along a project's commits or versions
//! instead of by date; [`within`] makes the windows of one long run the
//! points instead of runs.

pub mod analysis;
pub mod changepoint;
pub mod chart;
pub mod order;
pub mod render;
pub mod series;
pub mod within;

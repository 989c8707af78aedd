//! `body_sizes` in the load JSON, of the run, a target or a stage.

use serde::Serialize;

/// The body sizes of the answers with an expected status, and how many
/// of them were short (under half the largest, when the sizes are few
/// enough to be the endpoint's own; see `fairbench_engine::bodies`).
#[derive(Serialize)]
pub struct BodySizesJson<'a> {
    #[serde(flatten)]
    pub sizes: &'a fairbench_engine::bodies::BodySizes,
    pub short: u64,
}

impl<'a> BodySizesJson<'a> {
    pub fn of(sizes: &'a fairbench_engine::bodies::BodySizes) -> Self {
        BodySizesJson {
            sizes,
            short: sizes.short().map_or(0, |s| s.short),
        }
    }
}

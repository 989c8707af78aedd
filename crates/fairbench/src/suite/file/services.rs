//! The steps of `Suite::parse` about `[[service]]`s: running services
//! measured at their URLs instead of zoo servers.

use super::{Fields, LoadProfile, Service};

impl Fields<'_> {
    /// The `[[service]]`s, checked: a name each, unique, and an http(s)
    /// URL. A suite of services names no zoo scenario.
    pub(super) fn services(&self) -> anyhow::Result<Vec<Service>> {
        let raw = self.raw;
        if !raw.services.is_empty() && !raw.scenarios.is_empty() {
            return Err(self.bad(
                "scenarios",
                "a suite of [[service]]s measures running services at their URLs, not zoo scenarios: leave scenarios out".into(),
            ));
        }
        let mut out: Vec<Service> = Vec::new();
        for (i, s) in raw.services.iter().enumerate() {
            let name = s.name.trim();
            if name.is_empty() {
                return Err(self.bad(&format!("service[{i}].name"), "must not be empty".into()));
            }
            if out.iter().any(|o| o.name == name) {
                return Err(self.bad(
                    &format!("service[{i}].name"),
                    format!("{name:?} is given twice"),
                ));
            }
            fairbench_engine::Target::parse(&s.url)
                .map_err(|e| self.bad(&format!("service[{i}].url"), e.to_string()))?;
            out.push(Service {
                name: name.to_string(),
                url: s.url.clone(),
            });
        }
        Ok(out)
    }

    /// A suite of services sweeps none of them (yet).
    pub(super) fn check_no_service_sweep(
        &self,
        services: &[Service],
        loads: &[LoadProfile],
    ) -> anyhow::Result<()> {
        if let (false, Some(i)) = (
            services.is_empty(),
            loads
                .iter()
                .position(|l| matches!(l, LoadProfile::Sweep(_))),
        ) {
            return Err(self.bad(
                &format!("load[{i}].model"),
                "a sweep of a [[service]] is not supported yet (`fairbench load URL --knee p99<=10ms` searches one URL's knee)".into(),
            ));
        }
        Ok(())
    }
}

//! The steps of `Suite::parse` about `[[service]]`s: running services
//! measured at their URLs instead of zoo servers.

use std::path::Path;

use super::raw::RawService;
use super::{Fields, LoadProfile, Service};
use crate::request_options::{Body, RequestOptions, DEFAULT_EXPECT_STATUS};

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
            let request = self.request_options(s);
            // Routed as it will be measured: its name may resolve only
            // through `connect_to` (a rule's own mistake is named later).
            let routes = request.routes(&|k| k.to_string()).unwrap_or_default();
            let parsed = match &request.unix_socket {
                // The URL names the Host header and path only; whether the
                // socket is there is asked when the run is planned.
                Some(p) => {
                    fairbench_engine::Target::parse_unix(&s.url, p).map_err(|e| e.to_string())
                }
                None => request.target(&s.url, &routes, &|k| k.replace('-', "_")),
            };
            parsed.map_err(|e| self.bad(&format!("service[{i}].url"), e))?;
            if s.http2 && s.http3 {
                return Err(self.bad(
                    &format!("service[{i}].http3"),
                    "give http2 or http3, not both (a service is loaded over one protocol)".into(),
                ));
            }
            if s.body.is_some() && s.body_file.is_some() {
                return Err(self.bad(
                    &format!("service[{i}].body"),
                    "give body or body_file, not both".into(),
                ));
            }
            if s.targets.is_some() && (s.body.is_some() || s.body_file.is_some()) {
                return Err(self.bad(
                    &format!("service[{i}].targets"),
                    "each target gives its own body: leave body and body_file out".into(),
                ));
            }
            out.push(Service {
                name: name.to_string(),
                url: s.url.clone(),
                request,
                thresholds: s.thresholds.clone(),
                version: s.version.clone(),
            });
        }
        Ok(out)
    }

    /// A service's request and connection keys, its files named relative
    /// to the suite file (as a team keeps them beside it); checked when the
    /// run is planned, by the same code as `load`'s flags.
    fn request_options(&self, s: &RawService) -> RequestOptions {
        let dir = Path::new(self.shown).parent().unwrap_or(Path::new(""));
        let file = |p: &Option<String>| p.as_ref().map(|p| dir.join(p));
        let defaults = RequestOptions::default();
        RequestOptions {
            method: s.method.clone().unwrap_or(defaults.method),
            headers: s.headers.clone(),
            body: match (&s.body, file(&s.body_file)) {
                (Some(b), _) => Body::Text(b.clone()),
                (None, Some(p)) => Body::File(p),
                (None, None) => Body::None,
            },
            targets: file(&s.targets),
            pool: s.pool.unwrap_or(defaults.pool),
            seed: s.seed.unwrap_or(defaults.seed),
            http2: s.http2,
            http3: s.http3,
            streams: s.streams,
            insecure: s.insecure,
            cacert: file(&s.cacert),
            cert: file(&s.cert),
            key: file(&s.key),
            connect_to: s.connect_to.clone(),
            resolve: s.resolve.clone(),
            unix_socket: file(&s.unix_socket),
            proxy: s.proxy.clone(),
            expect_status: s
                .expect_status
                .clone()
                .unwrap_or_else(|| DEFAULT_EXPECT_STATUS.into()),
        }
    }

    /// A sweep of a service searches its knee as `load URL --knee` does;
    /// what only judges one load cannot judge it, so a service with
    /// thresholds in a suite with a sweep is refused rather than judged
    /// on some cases and silently not on the sweep.
    pub(super) fn check_service_sweeps(
        &self,
        services: &[Service],
        loads: &[LoadProfile],
    ) -> anyhow::Result<()> {
        let sweep = loads
            .iter()
            .position(|l| matches!(l, LoadProfile::Sweep(_)));
        let judged = services.iter().position(|s| !s.thresholds.is_empty());
        if let (Some(l), Some(i)) = (sweep, judged) {
            return Err(self.bad(
                &format!("service[{i}].thresholds"),
                format!("each checks one load, and load[{l}] is a sweep, which reports the knee itself (as `load --knee` takes no --threshold): put the sweep in a suite of its own"),
            ));
        }
        Ok(())
    }
}

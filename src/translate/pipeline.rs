//! The one entry of the translation: Kubernetes objects → the desired router, as a list of short
//! named phases (see `docs/architecture.md`, "Translation: front ends and the route table"):
//!
//! 1. **front ends**: our Ingresses, oldest first → route claims and warnings ([`super::ingress`]);
//! 2. **claim**: the route table keeps the first claim of each match ([`super::table`]);
//! 3. **TLS**: certificates, the HTTPS listener and the HTTP→HTTPS redirects ([`super::tls`]);
//! 4. **backends**: pool keys and names, the reserved pools, where unmatched requests go;
//! 5. **order**: both listeners' policies by host precedence and the front ends' order keys;
//! 6. **pools**: members and weights of every pool, and their health monitors ([`super::pools`]).

use std::collections::BTreeMap;

use super::backends::{Feed, FeedView, PoolKey, Services, index_services, name_of_one, pool_names_of};
use super::claim::RouteClaim;
use super::ingress::{self, IngressRoutes};
use super::ingress_class::ours_by_age;
use super::options::{Source, TranslateOptions};
use super::pools::{build_pools, health_monitors};
use super::status::reserved;
use super::table::{
    RouteTable, Stops, guard_policies, needs_server_error_pool, needs_unavailable_pool, number, order_policies,
    route_feed_view,
};
use super::tenancy::host_owners;
use super::tls::{on_https, translate_tls};
use crate::model::{DesiredRouter, HttpsListener, Policy, Pool, UNAVAILABLE_POOL, Warning};

/// Translate Kubernetes objects into the desired L7 router. Pure and deterministic. The objects
/// are read borrowed ([`Source`]): owned `Inputs` or the caches' `Snapshot`, never copied.
pub fn translate(inputs: &(impl Source + ?Sized), opts: &TranslateOptions) -> DesiredRouter {
    let inputs = &inputs.view();
    let mut warnings = Vec::new();
    let services = index_services(&inputs.services);
    let ours = ours_by_age(inputs, opts);
    let owners = host_owners(&ours, inputs, opts);
    let cx = ingress::Context { services: &services, owners: owners.as_ref(), tenancy: &opts.tenancy };
    let IngressRoutes { claims, router_default, router_default_owners } = ingress::routes(&ours, &cx, &mut warnings);
    let routes = RouteTable::claim_all(claims, &mut warnings).routes();
    let tls = translate_tls(&ours, inputs, &opts.tls, owners.as_ref(), &mut warnings);
    let backends = Backends::of(&routes, router_default, &services, opts, &mut warnings);
    let https = https_listener(tls.https, &routes, &tls.tls_hosts, &backends);
    let policies = order_policies(routes, &backends.names, &backends.stops(), &mut warnings);
    let mut pools = build_pools(inputs, opts, &backends.names, &services, &mut warnings);
    pools.extend(backends.reserved_empty.into_iter().map(|p| (p.name.clone(), p)));
    let health_monitors = health_monitors(&pools, &services, opts, &mut warnings);
    warnings.sort();
    warnings.dedup();
    DesiredRouter {
        policies,
        default_pool: backends.default_pool,
        default_pool_owners: router_default_owners,
        pools,
        warnings,
        https,
        redirects: tls.redirects,
        // An Ingress router has one HTTP listener.
        more_http: Default::default(),
        more_https: Default::default(),
        health_monitors,
        quota: None,
        empty_since: None,
    }
}

/// The backends phase: every pool the routes need, by key and name, and where the requests no
/// route matches go. Shared by every front end (see `crate::gateway::router`).
pub(crate) struct Backends {
    /// Every pool a Service (or several) fills, by what fills it.
    pub(crate) names: BTreeMap<Feed, String>,
    /// Reserved pools that no Service fills.
    pub(crate) reserved_empty: Vec<Pool>,
    /// The listeners' default pool: the router-wide default backend, else the 404 pool.
    pub(crate) default_pool: Option<String>,
    /// The pool of the hosts' guard policies (see [`Stops::guard_pool`]).
    guard_pool: Option<String>,
    router_default: bool,
}

impl Backends {
    pub(crate) fn of(
        routes: &[RouteClaim],
        router_default: Option<PoolKey>,
        services: &Services<'_>,
        opts: &TranslateOptions,
        warnings: &mut Vec<Warning>,
    ) -> Self {
        // Each feed copied once, not once per route: most are one Service port, borrowed.
        let mut ones: Vec<&PoolKey> = Vec::with_capacity(routes.len());
        let mut feeds: Vec<Feed> = Vec::new();
        for r in routes {
            match route_feed_view(&r.action) {
                FeedView::None => {}
                FeedView::One(k) => ones.push(k),
                FeedView::Split(f) => feeds.push(f),
            }
        }
        ones.sort_unstable();
        ones.dedup();
        feeds.extend(ones.into_iter().cloned().map(Feed::One));
        feeds.extend(router_default.clone().map(Feed::One));
        let mut names = pool_names_of(feeds.into_iter().collect());
        // With a router-wide default backend and no responder, a named host's unmatched paths are
        // guarded to the empty 503 pool: they must never reach another tenant's catch-all.
        let guard_to_unavailable =
            opts.status_responder.is_none() && router_default.is_some() && routes.iter().any(|r| !r.host.is_empty());
        let unservable = needs_unavailable_pool(routes);
        let reserved = reserved(
            opts.status_responder.as_ref(),
            services,
            guard_to_unavailable || unservable,
            needs_server_error_pool(routes),
            &opts.lb_algorithm,
            warnings,
        );
        names.extend(reserved.from_service.into_iter().map(|(k, n)| (Feed::One(k), n)));
        // No default backend: requests no route matches go to the 404 pool, when there is one.
        let default_pool =
            router_default.as_ref().and_then(|k| name_of_one(&names, k).cloned()).or(reserved.not_found.clone());
        let guard_pool =
            reserved.not_found.clone().or_else(|| guard_to_unavailable.then(|| UNAVAILABLE_POOL.to_string()));
        Backends {
            names,
            reserved_empty: reserved.empty,
            default_pool,
            guard_pool,
            router_default: router_default.is_some(),
        }
    }

    fn stops(&self) -> Stops<'_> {
        Stops {
            default_pool: self.default_pool.as_deref(),
            guard_pool: self.guard_pool.as_deref(),
            router_default: self.router_default,
        }
    }
}

/// The order phase for HTTPS: the TLS hosts' routes and the host-less ones, sharing the pools.
fn https_listener(
    https: Option<HttpsListener>,
    routes: &[RouteClaim],
    tls_hosts: &[String],
    backends: &Backends,
) -> Option<HttpsListener> {
    let mut https = https?;
    let stops = backends.stops();
    let (on, off): (Vec<RouteClaim>, Vec<RouteClaim>) =
        routes.iter().cloned().partition(|r| on_https(&r.host, tls_hosts));
    let any_hostless = on.iter().any(|r| r.host.is_empty());
    // Warnings of the HTTPS ordering repeat the HTTP ones (same routes): not collected twice.
    let mut policies: Vec<Policy> = order_policies(on, &backends.names, &stops, &mut Vec::new());
    // A named host without TLS has no route on HTTPS; its requests there must not reach the
    // router-wide catch-all or host-less routes either: a guard each, first (they match their
    // own host only, and no host on this listener is covered by them).
    if let Some(gp) = stops.guard_pool
        && (stops.router_default || any_hostless)
    {
        let mut guarded = guard_policies(&off, gp);
        guarded.append(&mut policies);
        policies = guarded;
        number(&mut policies);
    }
    https.policies = policies;
    https.default_pool = backends.default_pool.clone();
    Some(https)
}

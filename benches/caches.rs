//! What the controller's caches and indexes save per event, side by side with the scans and
//! parses they replaced (docs/benchmarks.md, "Caches and indexes"):
//!
//! - the Ingresses naming a Service (a Service event): a scan of every Ingress vs the index;
//! - a Service's EndpointSlices (an endpoint change, the Members path): a scan of every slice vs
//!   the index;
//! - a translation with TLS: every Secret parsed vs the parsed-certificate cache;
//! - the memory of TLS Secrets nothing names: cached whole vs without their data.
//!
//! Run: `cargo bench --bench caches` (std::time, no harness). Without `--bench` in argv (as in
//! `cargo test --all-targets`) it runs a smoke-size workload so the test suite stays fast.

mod common;

use common::*;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::{Ingress, IngressTLS};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::watcher::Event;
use kuryr_l7_router::certificate::{CertificateCache, ParsedCertificate};
use kuryr_l7_router::controller::context::{StoreWriters, Stores};
use kuryr_l7_router::controller::ingress::ingresses_naming;
use kuryr_l7_router::controller::services::members::endpoints_of;
use kuryr_l7_router::translate::members::SliceCache;
use kuryr_l7_router::translate::{IpFamily, TranslateOptions, translate};
use std::sync::Arc;
use std::time::Instant;

#[global_allocator]
static ALLOC: mem::Counting = mem::Counting;

fn best_of<T>(n: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::MAX;
    let mut out = None;
    for _ in 0..n {
        let t = Instant::now();
        out = Some(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best, out.unwrap())
}

/// Mean time of `f` over `iters` calls, in µs.
fn per_call(iters: usize, mut f: impl FnMut() -> usize) -> (f64, usize) {
    let t = Instant::now();
    let mut n = 0;
    for _ in 0..iters {
        n = std::hint::black_box(f());
    }
    (t.elapsed().as_secs_f64() * 1e6 / iters as f64, n)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    println!("mode: {}", if full { "full (--bench)" } else { "smoke (no --bench in argv)" });
    let (n_ing, n_svc) = if full { (10_000, 10_000) } else { (100, 100) };
    let inp = apps(n_ing, n_svc, 10);
    let (stores, mut w) = StoreWriters::new();
    for i in &inp.ingresses {
        w.ingresses.apply_watcher_event(&Event::Apply(i.clone()));
    }
    for s in &inp.endpoint_slices {
        w.slices.apply_watcher_event(&Event::Apply(s.clone()));
    }
    println!("\n## {n_ing} Ingresses, {n_svc} Services (one EndpointSlice each) in the caches");
    service_lookups(&stores, &inp.services[4242 % n_svc], if full { 200 } else { 10 });
    certificates(if full { 2_000 } else { 20 }, if full { 5 } else { 1 });
    unnamed_secrets(if full { 10_000 } else { 100 });
}

/// The Ingresses naming a Service and the Service's slices: the scans as the handlers made them
/// before the indexes, and the index lookups.
fn service_lookups(stores: &Stores, svc: &k8s_openapi::api::core::v1::Service, iters: usize) {
    let (ns, name) = (svc.metadata.namespace.clone().unwrap(), svc.metadata.name.clone().unwrap());
    let (scan, n_scan) = per_call(iters, || {
        stores
            .ingresses
            .state()
            .iter()
            .filter(|i| i.metadata.namespace.as_deref() == Some(&ns) && names(i, &name))
            .count()
    });
    let (index, n_index) = per_call(iters, || ingresses_naming(stores, svc).len());
    assert_eq!(n_scan, n_index);
    println!("Ingresses naming a Service ({n_index} found): scan {scan:.1} µs, index {index:.2} µs");
    let opts = TranslateOptions::default();
    let (scan, n_scan) = per_call(iters, || {
        let mut cache = SliceCache::new(IpFamily::V4);
        let label = |s: &kuryr_l7_router::translate::slices::CompactSlice| {
            s.metadata.labels.as_ref().and_then(|l| l.get("kubernetes.io/service-name")).is_some_and(|n| *n == name)
        };
        for s in stores.slices.state().iter().filter(|s| s.metadata.namespace.as_deref() == Some(&ns) && label(s)) {
            cache.upsert(s);
        }
        cache.len()
    });
    let (index, n_index) = per_call(iters, || endpoints_of(svc, stores, &opts).len());
    assert_eq!(n_scan, n_index);
    println!("a Service's EndpointSlices, digested ({n_index} slice): scan {scan:.1} µs, index {index:.2} µs");
}

/// `n` TLS Secrets nothing names, cached as the Secret watch caches them: whole (`slim` only,
/// as before) vs without their data (`NamedSecrets::keep_data_if_named`, now). Sizes of a
/// cert-manager Secret: an RSA-2048 key (PKCS#8 PEM) and a leaf + intermediate chain.
fn unnamed_secrets(n: usize) {
    let (crt, key) = (vec![b'c'; 3_800], vec![b'k'; 1_704]);
    let (stores, _) = StoreWriters::new();
    let named = stores.named_secrets.clone();
    let fill = |strip: bool| {
        let (store, mut w) = kube::runtime::reflector::store::<Secret>();
        for i in 0..n {
            let data = [("tls.crt", crt.clone()), ("tls.key", key.clone()), ("ca.crt", crt.clone())];
            let mut s = Secret {
                metadata: ObjectMeta {
                    namespace: Some(NS.into()),
                    name: Some(format!("unnamed{i}")),
                    uid: Some(format!("0b3c6f0e-9d1a-4c55-8f0e-{i:012}")),
                    resource_version: Some("123456".into()),
                    ..Default::default()
                },
                type_: Some("kubernetes.io/tls".into()),
                data: Some(data.into_iter().map(|(k, v)| (k.to_string(), ByteString(v))).collect()),
                ..Default::default()
            };
            kuryr_l7_router::controller::slim::slim(&mut s);
            if strip {
                named.keep_data_if_named(&mut s);
            }
            w.apply_watcher_event(&Event::Apply(s));
        }
        (store, w)
    };
    let (before, _, _, whole) = mem::measure_live(|| fill(false));
    drop(before);
    let (now, _, _, stripped) = mem::measure_live(|| fill(true));
    assert!(now.0.state().iter().all(|s| s.data.is_none()));
    let per = |mib: f64| mib * 1024.0 * 1024.0 / n as f64;
    println!(
        "\n## {n} TLS Secrets nothing names, in the Secret cache (live bytes)\n\
         whole (before): {whole:.1} MiB, {:.0} B per Secret; without their data (now): {stripped:.1} MiB, {:.0} B per Secret",
        per(whole),
        per(stripped)
    );
}

/// Whether an Ingress routes to the Service `name` (the scan's predicate before the index).
fn names(ing: &Ingress, name: &str) -> bool {
    let Some(spec) = ing.spec.as_ref() else { return false };
    let is = |b: &k8s_openapi::api::networking::v1::IngressBackend| b.service.as_ref().is_some_and(|s| s.name == name);
    spec.default_backend.as_ref().is_some_and(is)
        || spec.rules.iter().flatten().flat_map(|r| r.http.iter().flat_map(|h| &h.paths)).any(|p| is(&p.backend))
}

/// `n` Ingresses, each with its own TLS Secret (ECDSA P-256, as cert-manager issues one per
/// Ingress): a translation parsing every Secret, then with the cache warm.
fn certificates(n: usize, reps: usize) {
    let t = Instant::now();
    let mut inp = apps(n, n, 2);
    for (i, ing) in inp.ingresses.iter_mut().enumerate() {
        let host = format!("app{i}.example.com");
        ing.spec.as_mut().unwrap().tls =
            Some(vec![IngressTLS { hosts: Some(vec![host.clone()]), secret_name: Some(format!("tls{i}")) }]);
        inp.secrets.push(tls_secret(i, &host));
    }
    inp.now = Some(std::time::SystemTime::now());
    println!("\n## {n} Ingresses with one TLS Secret each (generated in {:.1} s)", t.elapsed().as_secs_f64());
    let opts = TranslateOptions::default();
    let (parse_all, uncached) = best_of(reps, || translate(&inp, &opts));
    let cache = Arc::new(CertificateCache::default());
    inp.certificates = Some(cache.clone());
    let t = Instant::now();
    let first = translate(&inp, &opts);
    let cold = t.elapsed().as_secs_f64();
    let parses_cold = cache.parses();
    let (warm, cached) = best_of(reps, || translate(&inp, &opts));
    assert_eq!(cache.parses(), parses_cold, "a warm cache parses nothing");
    assert_eq!(uncached.https, cached.https);
    assert_eq!(first.https.as_ref().map(|h| h.certificates.len()), Some(n));
    let field = |s: &Secret, k: &str| s.data.as_ref().unwrap()[k].0.clone();
    let pems: Vec<(String, Vec<u8>, Vec<u8>)> = inp
        .secrets
        .iter()
        .map(|s| (s.metadata.uid.clone().unwrap(), field(s, "tls.crt"), field(s, "tls.key")))
        .collect();
    let (parse_only, _) =
        best_of(reps, || pems.iter().filter(|(_, c, k)| ParsedCertificate::from_pem(c, k).is_ok()).count());
    let (lookup_only, _) = best_of(reps, || pems.iter().filter(|(u, c, k)| cache.parse(u, "1", c, k).is_ok()).count());
    println!(
        "the {n} Secrets alone: parsed {:.1} ms, from the warm cache {:.2} ms",
        parse_only * 1e3,
        lookup_only * 1e3
    );
    println!(
        "translate: every Secret parsed {:.1} ms; cache cold (first translation) {:.1} ms, {parses_cold} parses; \
         cache warm {:.1} ms, 0 parses",
        parse_all * 1e3,
        cold * 1e3,
        warm * 1e3
    );
}

fn tls_secret(i: usize, host: &str) -> Secret {
    let key = rcgen::KeyPair::generate().unwrap();
    let crt = rcgen::CertificateParams::new(vec![host.to_string()]).unwrap().self_signed(&key).unwrap();
    let data = [("tls.crt", crt.pem()), ("tls.key", key.serialize_pem())];
    Secret {
        metadata: ObjectMeta {
            namespace: Some(NS.into()),
            name: Some(format!("tls{i}")),
            uid: Some(format!("uid-{i}")),
            resource_version: Some("1".into()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(data.into_iter().map(|(k, v)| (k.to_string(), ByteString(v.into_bytes()))).collect()),
        ..Default::default()
    }
}

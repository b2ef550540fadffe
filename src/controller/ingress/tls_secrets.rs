//! The Secret cache holds the key material of the TLS Secrets something names, not of every TLS
//! Secret of the cluster.
//!
//! Named: by an Ingress's `spec.tls[].secretName` (any class: the Ingress index), a Gateway's
//! `tls.certificateRefs` (any class), or the configured default certificate. A Secret that is
//! named by none when its watch event arrives is cached without its data, marked
//! [`DATA_NOT_HELD`] (its metadata stays: we know it exists). A Secret that loses its last name
//! keeps its data until its next event (renewal, re-list).
//!
//! When a name is given to a Secret held without data, the Secret watch is restarted (one
//! LIST), never a GET beside it: the watch's order is the only order of a Secret's versions, and
//! a GET answered before a renewal's event but applied after it would put the old certificate
//! back (or bring a deleted Secret back). Until the LIST is done the Secret is *pending*: the
//! translation keeps the certificate's last stored content and says nothing about it (it is not
//! missing), so a working HTTPS route is never taken off.
//!
//! Both sides check after writing their own state (the Ingress index, the Secret cache), so a
//! name given while the Secret's event is being stripped is seen by one of them.

use crate::controller::named_secrets::{NamedSecrets, key_of};
pub use crate::translate::tls::{DATA_NOT_HELD, held_without_data};
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::sync::Arc;
use std::time::Duration;

/// Pause after a re-list before the next one, so that a rollout naming many Secrets one by one
/// costs a few LISTs, not one per Ingress.
const RELIST_PAUSE: Duration = Duration::from_secs(1);

/// Where the TLS Secrets are watched (`[kubernetes] secret_namespaces`).
#[derive(Clone)]
pub enum SecretSource {
    /// Every namespace: one cluster-wide watch (built once per process: its size does not matter).
    All(Box<Api<Secret>>),
    /// These namespaces only: a watch each, merged (`super::secret_namespaces`).
    Namespaces(Vec<(String, Api<Secret>)>),
}

impl SecretSource {
    /// The source `[kubernetes] secret_namespaces = namespaces` asks for (empty: all).
    pub fn of(client: &kube::Client, namespaces: &[String]) -> SecretSource {
        if namespaces.is_empty() {
            return SecretSource::All(Box::new(Api::all(client.clone())));
        }
        SecretSource::Namespaces(
            namespaces.iter().map(|ns| (ns.clone(), Api::namespaced(client.clone(), ns))).collect(),
        )
    }

    /// The watch events of the source, as one watch's.
    fn watch(
        &self,
        config: &watcher::Config,
        cache: &Store<Secret>,
    ) -> futures::stream::BoxStream<'static, watcher::Result<watcher::Event<Secret>>> {
        match self {
            SecretSource::All(api) => watcher((**api).clone(), config.clone()).default_backoff().boxed(),
            SecretSource::Namespaces(apis) => {
                let each =
                    apis.iter().map(|(ns, api)| (ns.clone(), watcher(api.clone(), config.clone()).default_backoff()));
                super::secret_namespaces::merged(each.collect(), cache.clone()).boxed()
            }
        }
    }
}

/// The TLS Secret watch feeding `writer` (see the module docs): started once the Ingresses are
/// cached (so that the first LIST already knows their names), restarted when `named` asks for
/// a re-list. Each object touched is sent on the returned stream (the Ingress Controller's
/// trigger).
pub fn watch_tls_secrets(
    mut writer: reflector::store::Writer<Secret>,
    source: SecretSource,
    config: watcher::Config,
    named: Arc<NamedSecrets>,
    ingresses: Store<Ingress>,
) -> (impl std::future::Future<Output = ()> + Send + 'static, impl Stream<Item = Secret> + Send + 'static) {
    let (tx, rx) = futures::channel::mpsc::unbounded();
    let secrets = writer.as_reader();
    let task = async move {
        while tokio::time::timeout(Duration::from_millis(100), ingresses.wait_until_ready()).await.is_err() {}
        loop {
            let keep = named.clone();
            let mut events = source
                .watch(&config, &secrets)
                .modify(move |s| {
                    crate::controller::slim::slim(s);
                    keep.keep_data_if_named(s);
                })
                .boxed();
            let mut listing = true;
            loop {
                tokio::select! {
                    ev = events.next() => match ev {
                        Some(Ok(ev)) => {
                            writer.apply_watcher_event(&ev);
                            listing &= !matches!(ev, watcher::Event::InitDone);
                            if let watcher::Event::Apply(s) | watcher::Event::InitApply(s) | watcher::Event::Delete(s) = ev {
                                // Named while its event was being stripped: see the module docs.
                                if held_without_data(&s) && named.is_named(&key_of(&s)) {
                                    named.ask_relist();
                                }
                                let _ = tx.unbounded_send(s);
                            }
                        }
                        Some(Err(e)) => tracing::warn!(kind = "Secret", error = %e, "watch error (retrying)"),
                        None => return,
                    },
                    _ = named.relist_asked(), if !listing => {
                        if named.any_named_pending(&secrets) {
                            named.relisted();
                            tracing::info!("a TLS Secret held without its data is named now: listing the TLS Secrets again");
                            break;
                        }
                    }
                }
            }
            tokio::time::sleep(RELIST_PAUSE).await;
        }
    };
    (task, rx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::indexes::{Index, secrets_of_ingress};
    use crate::gateway::api::{Gateway, ListenerSet};
    use k8s_openapi::ByteString;
    use serde_json::json;

    fn secret(name: &str) -> Secret {
        Secret {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                namespace: Some("shop".into()),
                ..Default::default()
            },
            type_: Some("kubernetes.io/tls".into()),
            data: Some([("tls.key".to_string(), ByteString(b"PRIVATE KEY".to_vec()))].into()),
            ..Default::default()
        }
    }

    fn ingress_naming(secret: &str) -> Ingress {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"tls": [{"secretName": secret}]}
        }))
        .unwrap()
    }

    fn named_by(ingresses: &[Ingress]) -> NamedSecrets {
        let index = Index::default();
        for ing in ingresses {
            index.apply(&watcher::Event::Apply(ing.clone()), secrets_of_ingress);
        }
        NamedSecrets::new(index)
    }

    #[test]
    fn a_secret_nothing_names_is_kept_without_its_data_and_marked() {
        let named = named_by(&[ingress_naming("named")]);
        let mut unnamed = secret("unnamed");
        named.keep_data_if_named(&mut unnamed);
        assert_eq!(unnamed.data, None, "the key of an unnamed Secret is not held");
        assert!(held_without_data(&unnamed));
        assert!(!format!("{unnamed:?}").contains("PRIVATE"));
        let mut kept = secret("named");
        named.keep_data_if_named(&mut kept);
        assert_eq!(kept, secret("named"), "a named Secret is kept whole");
    }

    #[test]
    fn the_default_certificate_and_gateways_name_secrets_too() {
        let named = named_by(&[]);
        let key = ("shop".to_string(), "default".to_string());
        assert!(!named.is_named(&key));
        named.set_default(Some(key.clone()));
        assert!(named.is_named(&key));
        let (store, mut w) = reflector::store::<Gateway>();
        let gw: Gateway = serde_json::from_value(json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": "gw", "namespace": "infra"},
            "spec": {"gatewayClassName": "any", "listeners": [{"name": "https", "port": 443, "protocol": "HTTPS",
                "tls": {"certificateRefs": [{"name": "own"}, {"name": "other", "namespace": "certs"}]}}]}
        }))
        .unwrap();
        w.apply_watcher_event(&watcher::Event::Apply(gw));
        named.watch_gateways(store);
        assert!(named.is_named(&("infra".into(), "own".into())));
        assert!(named.is_named(&("certs".into(), "other".into())));
        assert!(!named.is_named(&("infra".into(), "other".into())));
    }

    /// A ListenerSet's HTTPS listener names a Secret of its own namespace by default: its key
    /// material is kept, as for a Gateway's.
    #[test]
    fn a_listener_set_names_secrets_too() {
        let named = named_by(&[]);
        let (store, mut w) = reflector::store::<ListenerSet>();
        let ls: ListenerSet = serde_json::from_value(json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "ListenerSet",
            "metadata": {"name": "extra", "namespace": "team"},
            "spec": {"parentRef": {"name": "gw", "namespace": "infra"},
                "listeners": [{"name": "https", "port": 443, "protocol": "HTTPS",
                "tls": {"certificateRefs": [{"name": "team-tls"}]}}]}
        }))
        .unwrap();
        w.apply_watcher_event(&watcher::Event::Apply(ls));
        assert!(!named.is_named(&("team".into(), "team-tls".into())), "not before the loop watches them");
        named.watch_listener_sets(store);
        assert!(named.is_named(&("team".into(), "team-tls".into())));
        assert!(!named.is_named(&("infra".into(), "team-tls".into())));
    }

    fn gateway_naming(secret: &str) -> Gateway {
        serde_json::from_value(json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": "gw", "namespace": "shop"},
            "spec": {"gatewayClassName": "any", "listeners": [{"name": "https", "port": 443, "protocol": "HTTPS",
                "tls": {"certificateRefs": [{"name": secret}]}}]}
        }))
        .unwrap()
    }

    /// The Gateways' routers translate from the same Snapshot: a Secret only a Gateway names is
    /// handed over too (it would read as not found).
    #[test]
    fn the_translation_gets_the_secrets_a_gateway_names() {
        let (stores, mut w) = crate::controller::context::StoreWriters::new();
        w.secrets.apply_watcher_event(&watcher::Event::Apply(secret("gw-tls")));
        w.secrets.apply_watcher_event(&watcher::Event::Apply(secret("nobody")));
        let (gateways, mut wg) = reflector::store::<Gateway>();
        wg.apply_watcher_event(&watcher::Event::Apply(gateway_naming("gw-tls")));
        stores.named_secrets.watch_gateways(gateways);
        let names: Vec<_> = stores.inputs().secrets.iter().map(|s| s.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, vec!["gw-tls"]);
    }

    #[tokio::test]
    async fn an_ingress_naming_a_secret_held_without_data_asks_for_a_relist() {
        let named = named_by(&[]);
        let (secrets, mut w) = reflector::store::<Secret>();
        let mut s = secret("late");
        named.keep_data_if_named(&mut s);
        w.apply_watcher_event(&watcher::Event::Apply(s));
        let asked = || async { tokio::time::timeout(Duration::from_millis(50), named.relist_asked()).await.is_ok() };
        named.ingress_changed(&secrets, &watcher::Event::Apply(ingress_naming("other")));
        assert!(!asked().await, "a name held with nothing cached: no re-list");
        named.ingress_changed(&secrets, &watcher::Event::Apply(ingress_naming("late")));
        assert!(asked().await, "the Secret is held without data: re-list");
    }
}

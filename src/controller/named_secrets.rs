//! What names the TLS Secrets (an Ingress, a Gateway's or a ListenerSet's listener, the
//! configured default certificate): the Secret cache keeps only their key material (see
//! `crate::controller::ingress::tls_secrets`, the watch that asks it). Plumbing of the caches
//! ([`crate::controller::context::Stores`]): every side reads it, none owns it.

use crate::controller::indexes::{Index, tls_secrets_of};
use crate::gateway::api::{Gateway, Listener, ListenerSet};
use crate::translate::namespace_of;
use crate::translate::tls::{DATA_NOT_HELD, held_without_data};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::Ingress;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use tokio::sync::Notify;

/// (namespace, name) of a Secret.
pub type SecretKey = (String, String);

pub(crate) fn key_of(secret: &Secret) -> SecretKey {
    (namespace_of(&secret.metadata).to_string(), secret.metadata.name.clone().unwrap_or_default())
}

/// What names TLS Secrets, and the request to re-list the Secrets. Shared by the caches
/// ([`crate::controller::context::Stores`]), the Secret watch
/// (`crate::controller::ingress::tls_secrets`) and the Gateway loop.
#[derive(Debug, Default)]
pub struct NamedSecrets {
    by_ingress: Index,
    default: RwLock<Option<SecretKey>>,
    gateways: RwLock<Option<Store<Gateway>>>,
    /// The ListenerSets' cache: their HTTPS listeners name Secrets too.
    listener_sets: RwLock<Option<Store<ListenerSet>>>,
    relist: Notify,
    relists: AtomicU64,
}

impl NamedSecrets {
    /// Named by the Ingresses of `by_ingress` (the Ingress writer keeps it).
    pub(crate) fn new(by_ingress: Index) -> Self {
        Self { by_ingress, ..Self::default() }
    }

    /// The configured default certificate's Secret.
    pub fn set_default(&self, key: Option<SecretKey>) {
        *self.default.write().expect("lock") = key;
    }

    /// The Gateways' cache (domain objects, converted when their watch event arrived), once the
    /// Gateway loop watches them.
    pub fn watch_gateways(&self, gateways: Store<Gateway>) {
        *self.gateways.write().expect("lock") = Some(gateways);
    }

    /// The ListenerSets' cache, once the Gateway loop watches them.
    pub fn watch_listener_sets(&self, sets: Store<ListenerSet>) {
        *self.listener_sets.write().expect("lock") = Some(sets);
    }

    /// Whether a listener of a Gateway or of a ListenerSet names `key`.
    pub fn named_by_gateway(&self, key: &SecretKey) -> bool {
        let names = |ns: &str, listeners: &[Listener]| {
            listeners
                .iter()
                .filter_map(|l| l.tls.as_ref())
                .flat_map(|t| t.certificate_refs.iter())
                .any(|r| r.name == key.1 && r.namespace.as_deref().unwrap_or(ns) == key.0)
        };
        let gateways = self.gateways.read().expect("lock");
        let sets = self.listener_sets.read().expect("lock");
        gateways.iter().flat_map(|s| s.state()).any(|g| names(namespace_of(&g.metadata), &g.spec.listeners))
            || sets.iter().flat_map(|s| s.state()).any(|l| names(namespace_of(&l.metadata), &l.spec.listeners))
    }

    /// Whether anything names `key` now.
    pub fn is_named(&self, key: &SecretKey) -> bool {
        self.by_ingress.is_named(key)
            || self.default.read().expect("lock").as_ref() == Some(key)
            || self.named_by_gateway(key)
    }

    /// The watch's step on receipt: a Secret nothing names loses its data and is marked.
    pub fn keep_data_if_named(&self, secret: &mut Secret) {
        if self.is_named(&key_of(secret)) {
            return;
        }
        secret.data = None;
        secret.string_data = None;
        secret.metadata.annotations.get_or_insert_default().insert(DATA_NOT_HELD.to_string(), String::new());
    }

    /// Asks for a re-list when one of `keys` is held without data in `secrets`.
    pub fn relist_if_held_without_data(&self, secrets: &Store<Secret>, keys: impl IntoIterator<Item = SecretKey>) {
        let pending = keys
            .into_iter()
            .any(|(ns, name)| secrets.get(&ObjectRef::new(&name).within(&ns)).is_some_and(|s| held_without_data(&s)));
        if pending {
            self.ask_relist();
        }
    }

    /// After an Ingress event (its names are in the index already).
    pub fn ingress_changed(&self, secrets: &Store<Secret>, event: &watcher::Event<Ingress>) {
        if let watcher::Event::Apply(ing) | watcher::Event::InitApply(ing) = event {
            self.relist_if_held_without_data(secrets, tls_secrets_of(ing));
        }
    }

    /// The Ingress watch's observer: `indexes` (the Ingress index among them), then
    /// [`NamedSecrets::ingress_changed`].
    pub(crate) fn after_ingress_indexes(
        self: Arc<Self>,
        secrets: Store<Secret>,
        mut indexes: impl FnMut(&watcher::Event<Ingress>) + Send + 'static,
    ) -> impl FnMut(&watcher::Event<Ingress>) + Send + 'static {
        move |ev| {
            indexes(ev);
            self.ingress_changed(&secrets, ev);
        }
    }

    /// The re-lists asked for and done so far.
    pub fn relists(&self) -> u64 {
        self.relists.load(Ordering::Relaxed)
    }

    /// The Secret watch is asked to list the Secrets again.
    pub(crate) fn ask_relist(&self) {
        self.relist.notify_one();
    }

    /// Resolves when a re-list is asked for (a permit is kept while nobody waits).
    pub(crate) fn relist_asked(&self) -> tokio::sync::futures::Notified<'_> {
        self.relist.notified()
    }

    /// One more re-list done.
    pub(crate) fn relisted(&self) {
        self.relists.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether a Secret of `secrets` is named and held without data.
    pub(crate) fn any_named_pending(&self, secrets: &Store<Secret>) -> bool {
        secrets.state().iter().any(|s| held_without_data(s) && self.is_named(&key_of(s)))
    }
}

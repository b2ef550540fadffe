//! Host ownership across both kinds in the Gateway loop (`crate::gateway::host_owners`): each
//! pass reads the Ingresses' claims and the remembered owners, and afterwards hands the Gateway
//! API's claims to the Ingress side and remembers the owners in the controller's store
//! ([`OwnerBook`], shared with the Ingress translation).

use crate::controller::context::Context;
use crate::controller::outputs::Scope;
use crate::controller::owner_store::OwnerBook;
use crate::gateway::build::Translation;
use crate::gateway::host_owners::ingress_tenancy;
use crate::gateway::world::HostTenancy;
use crate::translate::TranslateOptions;
use crate::translate::options::View;
use crate::translate::tenancy::next_release;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::runtime::reflector::Store;
use std::sync::Arc;
use tokio::sync::watch;

/// What the Gateway loop reads of the Ingress side for host ownership (`[kubernetes]
/// host_ownership` on).
pub struct IngressHosts {
    pub ingresses: Store<Ingress>,
    pub classes: Store<IngressClass>,
    pub opts: TranslateOptions,
    pub book: Arc<OwnerBook>,
}

impl IngressHosts {
    /// The Ingresses' claims and the remembered owners now.
    pub fn tenancy(&self) -> HostTenancy {
        let mut ingresses = self.ingresses.state();
        ingresses.retain(|i| i.metadata.deletion_timestamp.is_none());
        let classes = self.classes.state();
        let view = View {
            ingresses: ingresses.iter().map(|i| &**i).collect(),
            ingress_classes: classes.iter().map(|c| &**c).collect(),
            ..View::default()
        };
        // Kept in the store (the controller), else on our IngressClass (as the Ingress side
        // reads them). An IngressHosts exists only with host ownership on, so the tenancy is
        // always there.
        ingress_tenancy(&view, &self.opts, self.book.remembered()).unwrap_or_default()
    }

    /// After a pass: the Gateway API's claims to the Ingress side, and the owners to the store
    /// when they changed (only with a store: without, the Ingress side keeps them on the class).
    /// Returns when the loop must pass again for a vacated host's grace to end (None: no host
    /// is vacated): a host its owner gave up is given to the waiting claimant then.
    pub async fn after(&self, t: &Translation, before: &HostTenancy) -> Option<std::time::Duration> {
        self.book.set_gateway_claims(t.host_claims.clone());
        let next = t.remember.as_ref()?;
        let grace = self.opts.tenancy.host_ownership_grace;
        let release = next_release(next, &before.remembered, std::time::SystemTime::now(), grace);
        if *next != before.remembered && self.book.has_store() {
            let json = serde_json::to_string(next).expect("plain JSON");
            self.book.remember(&json).await;
            tracing::info!(hosts = next.len(), "host owners remembered (Gateway API)");
        }
        release
    }
}

/// With host ownership: an Ingress Sync each time the Gateway API's claims on hosts change (the
/// Gateway loop's pass, [`IngressHosts::after`]), so that an Ingress losing a host to an older
/// HTTPRoute or Gateway is told and loses its route at once, not at the next resync.
pub(crate) async fn sync_on_claims(ctx: Arc<Context>, mut stop: watch::Receiver<bool>) {
    let book = ctx.owner_book();
    loop {
        tokio::select! {
            _ = book.claims_changed.notified() => {}
            _ = stop.wait_for(|v| *v) => return,
        }
        tokio::select! {
            _ = ctx.wait_caches() => {}
            _ = stop.wait_for(|v| *v) => return,
        }
        if let Err(e) = ctx.sync_for(false, Scope::Conflicts).await {
            tracing::warn!(error = %e, "sync after the Gateway API's host claims changed failed");
        }
    }
}

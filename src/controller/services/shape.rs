//! Which Service events can change an Ingress: the Ingress Controller is triggered by a Service
//! only when it appears, disappears, or changes what the translation reads of it (its spec, its
//! labels, its annotations other than the routers' notices). The notices are what the Service
//! handler itself writes on every Service a router uses: each write used to re-reconcile every
//! Ingress naming that Service, and the Ingress Controller's debounce postponed them again at
//! each one (at start-up, 20,000 notices at 10,000 Ingresses).

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use k8s_openapi::api::core::v1::Service;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::controller::outputs::notice::ServiceNotice;
use crate::controller::{NOTICE_ANNOTATION, NOTICE_ANNOTATION_PREFIX};

/// The shape of each Service the Ingresses last saw, by (namespace, name).
#[derive(Default)]
pub(crate) struct ServiceShapes {
    seen: Mutex<HashMap<(String, String), u64>>,
}

/// A router's notice (ours or another controller's): written by the Service handlers, read by
/// no translation.
fn is_notice(key: &str, value: &str) -> bool {
    key == NOTICE_ANNOTATION || (key.starts_with(NOTICE_ANNOTATION_PREFIX) && ServiceNotice::parse(value).is_ok())
}

/// What an Ingress's translation can read of `svc`, hashed.
pub fn shape(svc: &Service) -> u64 {
    let mut h = DefaultHasher::new();
    serde_json::to_string(&svc.spec).unwrap_or_default().hash(&mut h);
    svc.metadata.labels.hash(&mut h);
    for (k, v) in svc.metadata.annotations.iter().flatten() {
        if !is_notice(k, v) {
            (k, v).hash(&mut h);
        }
    }
    h.finish()
}

impl ServiceShapes {
    /// Whether the Service of this event, as the cache holds it now (absent: deleted), differs
    /// from what the Ingresses last saw; remembers it.
    pub fn changed(&self, cache: &Store<Service>, svc: &Service) -> bool {
        let key = (svc.metadata.namespace.clone().unwrap_or_default(), svc.metadata.name.clone().unwrap_or_default());
        let now = cache.get(&ObjectRef::from_obj(svc)).map(|s| shape(&s));
        let mut seen = self.seen.lock().expect("lock");
        let before = match now {
            Some(s) => seen.insert(key, s),
            None => seen.remove(&key),
        };
        before != now || now.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::outputs::notice::notice_annotation;
    use crate::translate::health::HEALTH_MONITOR_ANNOTATION;
    use kube::runtime::reflector;
    use kube::runtime::watcher::Event;

    fn svc(port: i32, annotations: &[(&str, &str)]) -> Service {
        serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "shop", "name": "web",
                "annotations": annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<HashMap<_, _>>()},
            "spec": {"ports": [{"name": "http", "port": port}]},
        }))
        .unwrap()
    }

    #[test]
    fn a_notice_written_on_a_service_is_no_change_for_the_ingresses_and_the_rest_is() {
        let (cache, mut w) = reflector::store::<Service>();
        let shapes = ServiceShapes::default();
        let mut apply = |s: Service| {
            w.apply_watcher_event(&Event::Apply(s.clone()));
            shapes.changed(&cache, &s)
        };
        assert!(apply(svc(80, &[])), "a new Service");
        let notice = ServiceNotice { router: "r1".into(), pools: vec!["shop_web_80".into()], ingresses: vec![] };
        let ours = notice_annotation("r1");
        assert!(!apply(svc(80, &[(&ours, &notice.to_annotation())])), "our notice");
        let theirs = notice_annotation("r2");
        let both = [(ours.as_str(), notice.to_annotation()), (theirs.as_str(), notice.to_annotation())];
        let both: Vec<(&str, &str)> = both.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert!(!apply(svc(80, &both)), "another router's notice");
        assert!(apply(svc(8080, &both)), "a port change");
        let hm = [both[0], both[1], (HEALTH_MONITOR_ANNOTATION, "{\"type\":\"HTTP\"}")];
        assert!(apply(svc(8080, &hm)), "a health-monitor annotation (same prefix as the notices)");
        let gone = svc(8080, &hm);
        w.apply_watcher_event(&Event::Delete(gone.clone()));
        assert!(shapes.changed(&cache, &gone), "a deleted Service");
    }
}

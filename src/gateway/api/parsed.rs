//! An object of a generated Gateway API kind as its watch delivers it: read by the generated type,
//! or not.
//!
//! kube's watcher parses a whole list page, and each watch event, as the watched type. An object
//! that the generated v1.6.1 standard-channel types cannot read (a CRD of another release or of
//! the experimental channel: an enum value they do not know, such as an experimental filter type)
//! would fail the list of its whole kind, and the watch would retry that list forever: one such
//! HTTPRoute would stop every route of the cluster. So the watches read [`Parsed`]: every object
//! parses, and one that `G` cannot read is kept as JSON with the error, naming the field, for the
//! conversion to the domain types to deal with, one object at a time
//! (`convert::domain_of`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{Deserialize, DeserializeOwned, Deserializer};
use std::borrow::Cow;

/// An object as the watch of kind `G` read it.
#[derive(Clone, Debug)]
pub enum Parsed<G> {
    /// Read by the generated type.
    Read(G),
    /// Not read by the generated type.
    Unread(Box<Unread>),
}

/// An object the generated type could not read.
#[derive(Clone, Debug)]
pub struct Unread {
    /// Its metadata (default when even that is unreadable).
    pub metadata: ObjectMeta,
    /// The object as the API server sent it.
    pub object: serde_json::Value,
    /// Why: the field's path and serde's error, e.g.
    /// `spec.rules[0].filters[0].type: unknown variant `ExternalAuth`, expected one of ...`.
    pub error: String,
}

impl<'de, G: DeserializeOwned> Deserialize<'de> for Parsed<G> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let object = serde_json::Value::deserialize(d)?;
        if let Ok(g) = G::deserialize(&object) {
            return Ok(Parsed::Read(g));
        }
        // Read again only to name the field: the tracking costs on every field, failures are rare.
        let error = match serde_path_to_error::deserialize::<_, G>(&object) {
            Err(e) => format!("{}: {}", e.path(), e.inner()),
            Ok(_) => "cannot be read".to_string(),
        };
        let metadata = object.get("metadata").and_then(|m| ObjectMeta::deserialize(m).ok()).unwrap_or_default();
        Ok(Parsed::Unread(Box::new(Unread { metadata, object, error })))
    }
}

/// The kind, group, version and plural are `G`'s: the watch of `Parsed<G>` lists `G`'s resource.
impl<G: kube::Resource<DynamicType = ()>> kube::Resource for Parsed<G> {
    type DynamicType = ();
    type Scope = G::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        G::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        G::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        G::version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        G::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        match self {
            Parsed::Read(g) => g.meta(),
            Parsed::Unread(u) => &u.metadata,
        }
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Parsed::Read(g) => g.meta_mut(),
            Parsed::Unread(u) => &mut u.metadata,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::api::generated::httproutes::HttpRoute;
    use serde_json::json;

    fn route(name: &str, filter_type: &str) -> serde_json::Value {
        json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"parentRefs": [{"name": "gw"}],
                     "rules": [{"filters": [{"type": filter_type}], "backendRefs": [{"name": "web", "port": 80}]}]}
        })
    }

    /// A list with one object of another release parses whole: the others are read, the one is
    /// kept with its name and the field that failed (as a plain `Vec<HttpRoute>` the list fails).
    #[test]
    fn one_unreadable_object_does_not_fail_the_list() {
        let list = json!([route("good", "RequestRedirect"), route("newer", "ExternalAuth")]);
        assert!(serde_json::from_value::<Vec<HttpRoute>>(list.clone()).is_err(), "the generated type refuses it");
        let parsed: Vec<Parsed<HttpRoute>> = serde_json::from_value(list).unwrap();
        assert!(matches!(&parsed[0], Parsed::Read(r) if r.metadata.name.as_deref() == Some("good")));
        let Parsed::Unread(u) = &parsed[1] else { panic!("read: {:?}", parsed[1]) };
        assert_eq!(u.metadata.name.as_deref(), Some("newer"));
        assert_eq!(u.metadata.namespace.as_deref(), Some("shop"));
        assert!(u.error.starts_with("spec.rules[0].filters[0].type: unknown variant `ExternalAuth`"), "{}", u.error);
        assert_eq!(u.object["spec"]["rules"][0]["filters"][0]["type"], "ExternalAuth");
        use kube::Resource;
        assert_eq!(Parsed::<HttpRoute>::plural(&()), "httproutes");
        assert_eq!(parsed[1].meta().name.as_deref(), Some("newer"));
    }
}

//! The conformance manifests (tests/fixtures/gateway/: cases/ and own/), read as the watches read them (the
//! generated types, then `From`), give the same domain objects as read directly.

use super::*;
use serde_json::Value;
use std::path::PathBuf;

/// Every Gateway API document of the fixtures, as JSON.
fn fixture_documents() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gateway");
    let mut files = vec![dir.join("base.yaml")];
    // The upstream tests' cases, then the project's own.
    for sub in ["cases", "own"] {
        let mut cases: Vec<PathBuf> = std::fs::read_dir(dir.join(sub)).unwrap().map(|e| e.unwrap().path()).collect();
        cases.sort();
        files.extend(cases);
    }
    let mut docs = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let parsed: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
        for (i, d) in parsed.into_iter().enumerate() {
            let kind = d.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
            if ["GatewayClass", "Gateway", "HTTPRoute", "ListenerSet", "ReferenceGrant"].contains(&kind.as_str()) {
                docs.push((format!("{} document {i} ({kind})", f.display()), d));
            }
        }
    }
    docs
}

/// `doc` read directly as the domain type `D`, and through the generated type `G`, as JSON.
fn both_ways<G, D>(what: &str, doc: &Value) -> (Value, Value)
where
    G: serde::de::DeserializeOwned,
    D: serde::de::DeserializeOwned + Serialize + for<'a> From<&'a G>,
{
    let direct: D = serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{what}: domain: {e}"));
    let generated: G = serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{what}: generated: {e}"));
    (serde_json::to_value(&direct).unwrap(), serde_json::to_value(D::from(&generated)).unwrap())
}

#[test]
fn conversion_keeps_every_field() {
    let docs = fixture_documents();
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for (what, doc) in &docs {
        let kind = doc["kind"].as_str().unwrap();
        *kinds.entry(kind.to_string()).or_default() += 1;
        let (direct, converted) = match kind {
            "GatewayClass" => both_ways::<gatewayclasses::GatewayClass, GatewayClass>(what, doc),
            "Gateway" => both_ways::<gateways::Gateway, Gateway>(what, doc),
            "HTTPRoute" => both_ways::<httproutes::HttpRoute, HTTPRoute>(what, doc),
            "ListenerSet" => both_ways::<listenersets::ListenerSet, ListenerSet>(what, doc),
            _ => both_ways::<referencegrants::ReferenceGrant, ReferenceGrant>(what, doc),
        };
        assert_eq!(converted, direct, "{what}: the conversion lost or changed a field");
    }
    // The fixtures hold every kind, so no conversion goes untested.
    assert_eq!(
        kinds.keys().map(String::as_str).collect::<Vec<_>>(),
        ["Gateway", "GatewayClass", "HTTPRoute", "ListenerSet", "ReferenceGrant"]
    );
    assert!(docs.len() > 50, "{} documents", docs.len());
}

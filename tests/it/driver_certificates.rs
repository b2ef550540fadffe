//! Certificate planning against Barbican (pure): create, reuse, rotation, last good content,
//! copies and garbage. Contents are read from JSON (as `plan -o json` prints them), which is all
//! the planner looks at: the content id.

use kuryr_l7_router::driver::certificates::{
    SecretScope, StoredSecret, garbage, has_legacy, listener_refs, plan_certificates, secret_uuid,
};
use kuryr_l7_router::model::{Certificate, CertificateContent, HttpsListener, KubeRef};
use std::collections::BTreeMap;

const CLUSTER: &str = "c1";

/// The router under test, and another router of the same cluster.
fn scope() -> SecretScope {
    SecretScope::new(CLUSTER, "r1")
}

fn other_router() -> SecretScope {
    SecretScope::new(CLUSTER, "r2")
}

fn secret_name(_cluster: &str, cert: &str, content: &str) -> String {
    scope().name(cert, content)
}

/// A secret named after the cluster alone, as the versions before per-router names stored them.
fn legacy(uuid: &str, cert: &str, content: &str) -> StoredSecret {
    StoredSecret {
        secret_ref: r(uuid),
        name: format!("kuryr-l7-router:{CLUSTER}:{cert}:{content}"),
        created: "t".into(),
    }
}

fn content(id: &str) -> CertificateContent {
    serde_json::from_value(serde_json::json!({
        "subject": "CN=x", "fingerprint": "ff", "not_after": "2030-01-01T00:00:00Z", "chain_len": 1, "content_id": id
    }))
    .unwrap()
}

fn cert(name: &str, content_id: Option<&str>) -> Certificate {
    let (ns, secret) = name.split_once('_').unwrap();
    Certificate {
        name: name.into(),
        secret: KubeRef::new("Secret", ns, secret),
        hosts: vec![],
        owners: vec![],
        content: content_id.map(content),
    }
}

fn listener(certs: &[Certificate], default: &str) -> HttpsListener {
    HttpsListener {
        port: 443,
        certificates: certs.iter().map(|c| (c.name.clone(), c.clone())).collect(),
        default_certificate: default.into(),
        policies: vec![],
        default_pool: None,
        client_validation: None,
    }
}

fn stored(uuid: &str, cert: &str, content: &str, created: &str) -> StoredSecret {
    StoredSecret {
        secret_ref: format!("http://127.0.0.1:9311/v1/secrets/{uuid}"),
        name: secret_name(CLUSTER, cert, content),
        created: created.into(),
    }
}

fn r(uuid: &str) -> String {
    format!("http://127.0.0.1:9311/v1/secrets/{uuid}")
}

#[test]
fn names_round_trip_and_foreign_names_are_not_ours() {
    let n = scope().name("shop_tls", "0123abcd");
    assert_eq!(n, "kuryr-l7-router:c1:r1:shop_tls:0123abcd");
    assert_eq!(scope().parse(&n), Some(("shop_tls", "0123abcd")));
    assert_eq!(scope().parse_legacy(&n), None, "a router's secret is not a legacy one");
    assert_eq!(other_router().parse(&n), None, "another router's secret");
    assert_eq!(SecretScope::new("c2", "r1").parse(&n), None, "another cluster's secret");
    assert_eq!(scope().parse("my-own-secret"), None);
    assert_eq!(scope().parse("kuryr-l7-router:c1:r1:"), None);
    assert_eq!(scope().parse_legacy("kuryr-l7-router:c1:shop_tls:0123abcd"), Some(("shop_tls", "0123abcd")));
    assert_eq!(scope().parse("kuryr-l7-router:c1:shop_tls:0123abcd"), None);
    assert_eq!(secret_uuid("http://h:9311/v1/secrets/abc/"), "abc");
}

#[test]
fn new_contents_are_created_and_stored_ones_reused() {
    let want = listener(&[cert("shop_a", Some("aaaa")), cert("shop_b", Some("bbbb"))], "shop_a");
    let have = [stored("u1", "shop_a", "aaaa", "2026-01-01T00:00:00")];
    let plan = plan_certificates(&want, &scope(), &have, &[]);
    assert_eq!(plan.refs, BTreeMap::from([("shop_a".to_string(), r("u1"))]));
    assert_eq!(plan.create, vec![("shop_b".to_string(), secret_name(CLUSTER, "shop_b", "bbbb"))]);
    assert!(plan.unavailable.is_empty());
}

#[test]
fn rotation_creates_the_new_content_and_the_old_one_becomes_garbage_after_the_switch() {
    let want = listener(&[cert("shop_a", Some("new1"))], "shop_a");
    let have = [stored("old", "shop_a", "old1", "2026-01-01T00:00:00")];
    let plan = plan_certificates(&want, &scope(), &have, &[r("old")]);
    assert_eq!(plan.create, vec![("shop_a".to_string(), secret_name(CLUSTER, "shop_a", "new1"))]);
    assert!(plan.refs.is_empty(), "the old content is not used for a certificate that has new content");
    // After the new secret exists and the listener was switched to it:
    let mut after = have.to_vec();
    after.push(stored("new", "shop_a", "new1", "2026-02-01T00:00:00"));
    let again = plan_certificates(&want, &scope(), &after, &[r("old")]);
    assert_eq!(again.refs["shop_a"], r("new"));
    assert!(again.create.is_empty(), "a restart after the create does not create it twice");
    let gone: Vec<_> = garbage(&scope(), &after, &[r("new")], &[]).iter().map(|s| s.secret_ref.clone()).collect();
    assert_eq!(gone, vec![r("old")]);
}

#[test]
fn a_broken_secret_keeps_the_last_good_content() {
    let want = listener(&[cert("shop_a", None), cert("shop_b", None)], "shop_a");
    let have =
        [stored("a1", "shop_a", "c1", "2026-01-01T00:00:00"), stored("a2", "shop_a", "c2", "2026-03-01T00:00:00")];
    // The listener uses a1: keep it, even though a2 is newer.
    let plan = plan_certificates(&want, &scope(), &have, &[r("a1")]);
    assert_eq!(plan.refs["shop_a"], r("a1"));
    assert_eq!(plan.unavailable, vec!["shop_b".to_string()], "never stored: nothing to serve");
    assert!(plan.create.is_empty());
    // Not in use (e.g. the listener was deleted by hand): the newest stored content.
    let plan = plan_certificates(&want, &scope(), &have, &[]);
    assert_eq!(plan.refs["shop_a"], r("a2"));
}

#[test]
fn copies_of_one_content_keep_the_one_in_use_else_the_oldest_and_the_rest_is_garbage() {
    let want = listener(&[cert("shop_a", Some("c1"))], "shop_a");
    let have =
        [stored("late", "shop_a", "c1", "2026-01-02T00:00:00"), stored("early", "shop_a", "c1", "2026-01-01T00:00:00")];
    assert_eq!(plan_certificates(&want, &scope(), &have, &[]).refs["shop_a"], r("early"));
    assert_eq!(plan_certificates(&want, &scope(), &have, &[r("late")]).refs["shop_a"], r("late"));
    let gone: Vec<_> = garbage(&scope(), &have, &[r("early")], &[]).iter().map(|s| s.secret_ref.clone()).collect();
    assert_eq!(gone, vec![r("late")]);
}

#[test]
fn garbage_never_includes_foreign_other_cluster_or_other_router_secrets() {
    let mut have = vec![stored("mine", "shop_a", "c1", "t")];
    have.push(StoredSecret { secret_ref: r("foreign"), name: "db-password".into(), created: "t".into() });
    let other_cluster = SecretScope::new("c2", "r1").name("shop_a", "c1");
    have.push(StoredSecret { secret_ref: r("other"), name: other_cluster, created: "t".into() });
    // Another router of the same cluster (another IngressClass, another node pool), even one
    // serving the same TLS Secret: its certificates are never ours to collect.
    let neighbour = other_router().name("shop_a", "c1");
    have.push(StoredSecret { secret_ref: r("neighbour"), name: neighbour, created: "t".into() });
    let gone: Vec<_> = garbage(&scope(), &have, &[], &[]).iter().map(|s| s.secret_ref.clone()).collect();
    assert_eq!(gone, vec![r("mine")]);
}

#[test]
fn a_legacy_secret_is_replaced_by_the_routers_own_and_kept_while_any_listener_references_it() {
    let want = listener(&[cert("shop_a", Some("c1")), cert("shop_b", None)], "shop_a");
    // Before the upgrade: the listener serves the cluster-named secrets.
    let have = vec![legacy("old-a", "shop_a", "c1"), legacy("old-b", "shop_b", "c9")];
    assert!(has_legacy(&scope(), &have));
    let plan = plan_certificates(&want, &scope(), &have, &[r("old-a"), r("old-b")]);
    // A certificate with content gets this router's own copy (switched in one listener PUT);
    // a broken one keeps serving the legacy secret, its last good content.
    assert_eq!(plan.create, vec![("shop_a".to_string(), scope().name("shop_a", "c1"))]);
    assert_eq!(plan.refs, BTreeMap::from([("shop_b".to_string(), r("old-b"))]));
    let mut after = have.clone();
    after.push(stored("new-a", "shop_a", "c1", "t"));
    // After the switch: old-a is still on another router's listener (it shared the cluster name).
    let keep = [r("new-a"), r("old-b")];
    let elsewhere = [r("new-a"), r("old-b"), r("old-a")];
    assert!(garbage(&scope(), &after, &keep, &elsewhere).is_empty());
    // Once no listener references it, the legacy secret is collected.
    let gone: Vec<_> = garbage(&scope(), &after, &keep, &keep).iter().map(|s| s.secret_ref.clone()).collect();
    assert_eq!(gone, vec![r("old-a")]);
    // Another router of the cluster never collects this router's own secrets, legacy or not.
    let theirs: Vec<_> = garbage(&other_router(), &after, &[], &keep).iter().map(|s| s.secret_ref.clone()).collect();
    assert_eq!(theirs, vec![r("old-a")], "only the unreferenced legacy one");
}

#[test]
fn listener_refs_use_the_default_when_available_else_the_first() {
    let want = listener(&[cert("a_x", Some("1")), cert("b_y", Some("2"))], "b_y");
    let refs = BTreeMap::from([("a_x".to_string(), r("ua")), ("b_y".to_string(), r("ub"))]);
    assert_eq!(listener_refs(&want, &refs), Some((r("ub"), vec![r("ua"), r("ub")])));
    let only_a = BTreeMap::from([("a_x".to_string(), r("ua"))]);
    assert_eq!(listener_refs(&want, &only_a), Some((r("ua"), vec![r("ua")])));
    assert_eq!(listener_refs(&want, &BTreeMap::new()), None);
}

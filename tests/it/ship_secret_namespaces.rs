//! etc/overlays/secret-namespaces: the shipped manifests without the cluster-wide read of
//! Secrets, a Role per namespace instead, and `[kubernetes] secret_namespaces` naming the same
//! namespaces; together still exactly the controller's API calls
//! (`crate::ship_manifests::rbac_grants_exactly_the_controller_api_calls` for the base).

use crate::ship_manifests::{CONTROLLER_API_CALLS, NAMESPACE, Object, expand, kuryr_conf, load_all, manifests_dir};
use crate::ship_manifests::{parse_doc, pod_spec};
use kuryr_l7_router::config::{Needs, load_texts_as};
use serde_json::{Value, json};
use std::collections::BTreeSet;

type Grant = (String, String, String);

fn secrets_read() -> BTreeSet<Grant> {
    ["list", "watch"].iter().map(|v| (String::new(), "secrets".to_string(), v.to_string())).collect()
}

fn read(file: &str) -> String {
    let path = manifests_dir().join("../overlays/secret-namespaces").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("overlays/secret-namespaces/{file}: {e}"))
}

/// The (kind, name) of the objects the overlay's `$patch: delete` patches remove.
fn deleted(k: &Value) -> BTreeSet<(String, String)> {
    let patches = k["patches"].as_array().expect("patches:");
    let deletes = patches.iter().filter_map(|p| {
        let v: Value = serde_saphyr::from_str(p["patch"].as_str()?).ok()?;
        if v.get("$patch")? != "delete" {
            return None;
        }
        Some((v["kind"].as_str()?.to_string(), v["metadata"]["name"].as_str()?.to_string()))
    });
    deletes.collect()
}

#[test]
fn secret_namespaces_overlay_reads_secrets_only_in_its_namespaces() {
    let k: Value = serde_saphyr::from_str(&read("kustomization.yaml")).expect("kustomization.yaml is YAML");
    assert_eq!(k["resources"], json!(["../../manifests", "secrets-role.yaml"]));
    let gone = deleted(&k);
    let docs = load_all();

    // What it deletes: exactly the base's cluster-wide grant of Secrets (a ClusterRole that
    // grants nothing else, so nothing else is lost) and its binding.
    let mut cluster_grants = BTreeSet::new();
    for d in &docs {
        let removed = gone.contains(&(d.kind.clone(), d.name.clone()));
        match &d.object {
            Object::ClusterRole(r) => {
                let grants = expand(&d.name, r.rules.as_deref().unwrap_or_default());
                let secrets = grants.iter().any(|g| g.1 == "secrets");
                assert_eq!(
                    removed, secrets,
                    "{}: ClusterRole {} (Secrets: {secrets}) removed: {removed}",
                    d.file, d.name
                );
                if removed {
                    assert_eq!(grants, secrets_read(), "{}: the removed ClusterRole grants only the Secrets", d.file);
                } else {
                    cluster_grants.extend(grants);
                }
            }
            Object::ClusterRoleBinding(b) => {
                let of_removed = gone.contains(&("ClusterRole".to_string(), b.role_ref.name.clone()));
                assert_eq!(removed, of_removed, "{}: ClusterRoleBinding {} removed with its role", d.file, d.name);
            }
            _ => assert!(!removed, "{}: the overlay removes {} {}", d.file, d.kind, d.name),
        }
    }
    assert_eq!(gone.len(), 2, "a ClusterRole and its binding: {gone:?}");

    // What it adds: a Role and a RoleBinding of our ServiceAccount in one namespace, granting
    // list and watch of Secrets, no more.
    let added: Vec<_> = serde_saphyr::from_multiple::<Value>(&read("secrets-role.yaml"))
        .expect("secrets-role.yaml is YAML")
        .into_iter()
        .map(|v| parse_doc("secrets-role.yaml", v))
        .collect();
    assert_eq!(added.len(), 2, "a Role and its RoleBinding");
    let ns = added[0].namespace.clone().expect("namespaced");
    assert_ne!(ns, NAMESPACE, "the Role is for a namespace of TLS Secrets, not the controller's");
    let (mut role, mut bound) = (None, None);
    for d in &added {
        assert_eq!(d.namespace.as_deref(), Some(ns.as_str()), "both in one namespace");
        match &d.object {
            Object::Role(r) => role = Some((d.name.clone(), expand(&d.name, r.rules.as_deref().unwrap_or_default()))),
            Object::RoleBinding(b) => {
                let s = b.subjects.as_deref().unwrap_or_default();
                assert!(s.len() == 1 && s[0].kind == "ServiceAccount" && s[0].namespace.as_deref() == Some(NAMESPACE));
                bound = Some((b.role_ref.kind.clone(), b.role_ref.name.clone()));
            }
            _ => panic!("secrets-role.yaml: {} {}", d.kind, d.name),
        }
    }
    let (role_name, role_grants) = role.expect("a Role");
    assert_eq!(role_grants, secrets_read(), "the Role grants list and watch of Secrets");
    assert_eq!(bound, Some(("Role".to_string(), role_name)), "the RoleBinding binds that Role");

    // The controller told so: secret-namespaces.conf, read after the shipped kuryr.conf, sets
    // secret_namespaces to the Role's namespace and changes nothing else; the Deployment reads it.
    let load = |files: &[(&str, String)]| {
        let files: Vec<(String, String)> = files.iter().map(|(n, t)| (n.to_string(), t.clone())).collect();
        load_texts_as(&files, Vec::new(), Needs::Offline).expect("the config loads").settings
    };
    let base = load(&[("kuryr.conf", kuryr_conf())]);
    assert!(base.kubernetes.secret_namespaces.is_empty(), "the base reads every namespace's Secrets");
    let layered = load(&[("kuryr.conf", kuryr_conf()), ("secret-namespaces.conf", read("secret-namespaces.conf"))]);
    let mut want = base.clone();
    want.kubernetes.secret_namespaces = vec![ns.clone()];
    assert_eq!(layered, want, "secret-namespaces.conf sets secret_namespaces = {ns} only");
    let generated = &k["configMapGenerator"][0];
    assert_eq!(generated["files"], json!(["secret-namespaces.conf"]));
    let patch = k["patches"].as_array().unwrap().iter().find(|p| p["target"]["kind"] == "Deployment").expect("a patch");
    assert_eq!(patch["target"]["name"], "kuryr-l7-router");
    let ops: Vec<Value> = serde_saphyr::from_str(patch["patch"].as_str().unwrap()).expect("a JSON 6902 patch");
    let added_at = |path: &str| -> Vec<Value> {
        ops.iter().filter(|o| o["op"] == "add" && o["path"] == path).map(|o| o["value"].clone()).collect()
    };
    assert_eq!(pod_spec(&docs).containers[0].args.as_deref().unwrap_or_default()[0], "run");
    assert_eq!(
        added_at("/spec/template/spec/containers/0/args/-"),
        ["--config-file", "/etc/kuryr/secret-namespaces.conf"]
    );
    let mount = &added_at("/spec/template/spec/containers/0/volumeMounts/-")[0];
    assert_eq!(mount["mountPath"], "/etc/kuryr/secret-namespaces.conf");
    let volume = &added_at("/spec/template/spec/volumes/-")[0];
    assert_eq!((&volume["name"], &volume["configMap"]["name"]), (&mount["name"], &generated["name"]));

    // Together: no cluster-wide Secret, and still every call the controller makes (the Secrets
    // from the Role; the leader election's Role of the base is unchanged).
    assert!(!cluster_grants.iter().any(|g| g.1 == "secrets"), "Secrets still granted cluster-wide");
    let base_roles: BTreeSet<Grant> = docs
        .iter()
        .filter_map(|d| if let Object::Role(r) = &d.object { Some(expand(&d.name, r.rules.as_deref()?)) } else { None })
        .flatten()
        .collect();
    let granted: BTreeSet<Grant> = cluster_grants.into_iter().chain(base_roles).chain(role_grants).collect();
    let want: BTreeSet<Grant> =
        CONTROLLER_API_CALLS.iter().map(|(g, r, v)| (g.to_string(), r.to_string(), v.to_string())).collect();
    assert_eq!(granted, want, "the overlay's RBAC and the controller's calls");
}

//! The cluster manifests under etc/manifests/: every document parses into its k8s-openapi type
//! without unknown fields, the RBAC rules grant exactly what the controller calls
//! ([`CONTROLLER_API_CALLS`]), the pod runs hardened and non-root, the ConfigMap's kuryr.conf is
//! complete and secret-free, and kustomization.yaml lists every file.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, PodSpec, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::IngressClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every Kubernetes API call of the controller, from the controller code itself.
pub(crate) const CONTROLLER_API_CALLS: &[(&str, &str, &str)] = kuryr_l7_router::controller::API_CALLS;

/// Calls of [`CONTROLLER_API_CALLS`] (group, resource, verbs; empty: every verb) made only in the
/// controller's own namespace, so granted by a namespaced Role rather than the ClusterRole. The
/// ConfigMaps are written there only, but listed and watched cluster-wide (the Gateways' CA
/// bundles).
const NAMESPACED_ONLY: &[(&str, &str, &[&str])] =
    &[("coordination.k8s.io", "leases", &[]), ("", "configmaps", &["get", "create", "patch", "delete"])];

pub(crate) const NAMESPACE: &str = "kuryr-l7-router";
const INGRESS_CONTROLLER: &str = "openstack.org/kuryr-l7-router";

pub(crate) fn manifests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("etc/manifests")
}

/// One parsed document.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Object {
    Namespace(Namespace),
    ServiceAccount(ServiceAccount),
    ClusterRole(ClusterRole),
    ClusterRoleBinding(ClusterRoleBinding),
    Role(Role),
    RoleBinding(RoleBinding),
    Deployment(Deployment),
    ConfigMap(ConfigMap),
    Secret(Secret),
    IngressClass(IngressClass),
    PodDisruptionBudget(PodDisruptionBudget),
    Service(Service),
}

pub(crate) struct Doc {
    pub(crate) file: String,
    pub(crate) kind: String,
    pub(crate) name: String,
    /// `None` for cluster-scoped kinds; `Some("")` for a namespaced object without a namespace.
    pub(crate) namespace: Option<String>,
    pub(crate) object: Object,
}

/// Parses `value` as `T` and checks that serializing it back gives the same JSON: k8s-openapi
/// ignores unknown fields, so this is what catches a misspelled or misplaced field.
fn typed<T: DeserializeOwned + Serialize>(file: &str, value: &Value) -> T {
    let parsed: T = serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{file}: {e}"));
    let back = serde_json::to_value(&parsed).unwrap();
    if back != *value {
        let mut diffs = Vec::new();
        diff_json("", value, &back, &mut diffs);
        panic!("{file}: fields lost or changed by parsing (misspelled or misplaced?):\n  {}", diffs.join("\n  "));
    }
    parsed
}

fn diff_json(path: &str, want: &Value, got: &Value, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let p = format!("{path}.{k}");
                match b.get(k) {
                    Some(w) => diff_json(&p, v, w, out),
                    None => out.push(format!("{p}: unknown field")),
                }
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                out.push(format!("{path}.{k}: added by parsing"));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                diff_json(&format!("{path}[{i}]"), v, w, out);
            }
        }
        _ if want == got => {}
        _ => out.push(format!("{path}: {want} became {got}")),
    }
}

pub(crate) fn parse_doc(file: &str, value: Value) -> Doc {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or_else(|| panic!("{file}: no kind")).to_string();
    let object = match kind.as_str() {
        "Namespace" => Object::Namespace(typed(file, &value)),
        "ServiceAccount" => Object::ServiceAccount(typed(file, &value)),
        "ClusterRole" => Object::ClusterRole(typed(file, &value)),
        "ClusterRoleBinding" => Object::ClusterRoleBinding(typed(file, &value)),
        "Role" => Object::Role(typed(file, &value)),
        "RoleBinding" => Object::RoleBinding(typed(file, &value)),
        "Deployment" => Object::Deployment(typed(file, &value)),
        "ConfigMap" => Object::ConfigMap(typed(file, &value)),
        "Secret" => Object::Secret(typed(file, &value)),
        "IngressClass" => Object::IngressClass(typed(file, &value)),
        "PodDisruptionBudget" => Object::PodDisruptionBudget(typed(file, &value)),
        "Service" => Object::Service(typed(file, &value)),
        other => panic!("{file}: kind {other} is not one this test knows; add it to parse_doc"),
    };
    let cluster_scoped = matches!(kind.as_str(), "Namespace" | "ClusterRole" | "ClusterRoleBinding" | "IngressClass");
    let meta = &value["metadata"];
    let name = meta["name"].as_str().unwrap_or_else(|| panic!("{file}: {kind} without metadata.name")).to_string();
    let namespace = meta.get("namespace").and_then(Value::as_str).unwrap_or("").to_string();
    if cluster_scoped {
        assert!(namespace.is_empty(), "{file}: cluster-scoped {kind} {name} has a namespace");
    }
    Doc { file: file.to_string(), kind, name, namespace: (!cluster_scoped).then_some(namespace), object }
}

/// Files of etc/manifests/ (sorted, relative names), kustomization.yaml excluded.
fn manifest_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(manifests_dir())
        .expect("etc/manifests/ exists")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f != "kustomization.yaml")
        .collect();
    files.sort();
    files
}

pub(crate) fn load_all() -> Vec<Doc> {
    let mut docs = Vec::new();
    for file in manifest_files() {
        assert!(file.ends_with(".yaml"), "etc/manifests/{file}: only .yaml files belong here");
        let text = std::fs::read_to_string(manifests_dir().join(&file)).unwrap();
        let values: Vec<Value> =
            serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{file}: not valid YAML: {e}"));
        assert!(!values.is_empty(), "{file}: no document");
        for v in values {
            docs.push(parse_doc(&file, v));
        }
    }
    docs
}

fn one<'a, T>(docs: &'a [Doc], pick: impl Fn(&'a Object) -> Option<&'a T>, what: &str) -> &'a T {
    let found: Vec<&T> = docs.iter().filter_map(|d| pick(&d.object)).collect();
    assert_eq!(found.len(), 1, "expected exactly one {what}");
    found[0]
}

const CONTROLLER_DEPLOYMENT: &str = "kuryr-l7-router";

/// The Deployment named `name` (the controller's, or the status responder's).
fn deployment<'a>(docs: &'a [Doc], name: &str) -> &'a Deployment {
    let named = |o: &'a Object| match o {
        Object::Deployment(d) if d.metadata.name.as_deref() == Some(name) => Some(d),
        _ => None,
    };
    one(docs, named, &format!("Deployment {name}"))
}

pub(crate) fn pod_spec(docs: &[Doc]) -> &PodSpec {
    let d = deployment(docs, CONTROLLER_DEPLOYMENT);
    d.spec.as_ref().unwrap().template.spec.as_ref().expect("Deployment has a pod spec")
}

/// Expands rules into (apiGroup, resource, verb), rejecting wildcards and unsupported fields.
pub(crate) fn expand(what: &str, rules: &[PolicyRule]) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for r in rules {
        assert!(r.non_resource_urls.is_none(), "{what}: nonResourceURLs granted");
        if let Some(names) = &r.resource_names {
            named_rule(what, r, names);
        }
        for g in r.api_groups.as_deref().unwrap_or_default() {
            for res in r.resources.as_deref().unwrap_or_default() {
                for v in &r.verbs {
                    for s in [g, res, v] {
                        assert!(!s.contains('*'), "{what}: wildcard in {g:?} {res:?} {v:?}");
                    }
                    let new = out.insert((g.clone(), res.clone(), v.clone()));
                    assert!(new, "{what}: ({g:?}, {res}, {v}) granted twice");
                }
            }
        }
    }
    out
}

/// The rules narrowed by `resourceNames` (the names of our own IngressClass and Lease, as the
/// shipped ConfigMap's kuryr.conf sets them): each names exactly these, and never with a verb that
/// RBAC cannot narrow by name (create: no name yet; list/watch: only with a field selector,
/// which the controller's watches do not send).
const NAMED: &[(&str, &str, &str, &str)] = &[
    ("networking.k8s.io", "ingressclasses", "kuryr-l7-router", "ingress_class"),
    ("coordination.k8s.io", "leases", "kuryr-l7-router", "lease_name"),
];

fn named_rule(what: &str, r: &PolicyRule, names: &[String]) {
    for v in &r.verbs {
        assert!(!matches!(v.as_str(), "create" | "list" | "watch"), "{what}: {v} cannot be narrowed by resourceNames");
    }
    for g in r.api_groups.as_deref().unwrap_or_default() {
        for res in r.resources.as_deref().unwrap_or_default() {
            let (.., name, option) = NAMED
                .iter()
                .find(|(ng, nr, ..)| ng == g && nr == res)
                .unwrap_or_else(|| panic!("{what}: resourceNames on {g:?} {res} (not in NAMED)"));
            assert_eq!(names, [name.to_string()], "{what}: {res} narrowed to another name");
            let conf = kuryr_conf();
            let line = format!("{option} = {name}");
            assert!(
                conf.lines().any(|l| l.trim() == line),
                "the shipped kuryr.conf sets `{line}`: {res} resourceNames"
            );
        }
    }
}

/// The kuryr.conf of the shipped ConfigMap.
pub(crate) fn kuryr_conf() -> String {
    let text = std::fs::read_to_string(manifests_dir().join("configmap.yaml")).unwrap();
    let cm: ConfigMap = serde_saphyr::from_str(&text).unwrap();
    cm.data.unwrap_or_default().remove("kuryr.conf").expect("kuryr.conf in the ConfigMap")
}

#[test]
fn every_manifest_parses_and_is_in_the_controller_namespace() {
    let docs = load_all();
    let mut kinds = BTreeMap::<&str, usize>::new();
    for d in &docs {
        *kinds.entry(d.kind.as_str()).or_default() += 1;
        if let Some(ns) = &d.namespace {
            assert_eq!(ns, NAMESPACE, "{}: {} {} must be in namespace {NAMESPACE}", d.file, d.kind, d.name);
        }
    }
    for kind in [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
        "ConfigMap",
        "Secret",
        "IngressClass",
        "PodDisruptionBudget",
    ] {
        assert!(kinds.contains_key(kind), "no {kind} in etc/manifests/");
    }
    let ns = one(&docs, |o| if let Object::Namespace(n) = o { Some(n) } else { None }, "Namespace");
    assert_eq!(ns.metadata.name.as_deref(), Some(NAMESPACE));
}

#[test]
fn rbac_grants_exactly_the_controller_api_calls() {
    let docs = load_all();
    let want: BTreeSet<(String, String, String)> =
        CONTROLLER_API_CALLS.iter().map(|(g, r, v)| (g.to_string(), r.to_string(), v.to_string())).collect();
    assert_eq!(want.len(), CONTROLLER_API_CALLS.len(), "CONTROLLER_API_CALLS has duplicates");

    let sa = one(&docs, |o| if let Object::ServiceAccount(s) = o { Some(s) } else { None }, "ServiceAccount");
    let sa_name = sa.metadata.name.clone().unwrap();
    assert_eq!(pod_spec(&docs).service_account_name.as_deref(), Some(sa_name.as_str()), "pod runs as another SA");
    let our_sa = |subjects: &Option<Vec<Subject>>| {
        let s = subjects.as_deref().unwrap_or_default();
        s.len() == 1
            && s[0].kind == "ServiceAccount"
            && s[0].name == sa_name
            && s[0].namespace.as_deref() == Some(NAMESPACE)
    };

    // Bindings: each binds one role to our ServiceAccount only; remember which roles are bound.
    let mut bound = BTreeSet::new();
    for d in &docs {
        let (subjects, role_ref): (&Option<Vec<Subject>>, &RoleRef) = match &d.object {
            Object::ClusterRoleBinding(b) => (&b.subjects, &b.role_ref),
            Object::RoleBinding(b) => (&b.subjects, &b.role_ref),
            _ => continue,
        };
        assert!(our_sa(subjects), "{}: {} {} must bind exactly our ServiceAccount", d.file, d.kind, d.name);
        assert_eq!(role_ref.api_group, "rbac.authorization.k8s.io", "{}", d.file);
        if d.kind == "ClusterRoleBinding" {
            assert_eq!(role_ref.kind, "ClusterRole", "{}: a ClusterRoleBinding of a Role", d.file);
        }
        bound.insert((role_ref.kind.clone(), role_ref.name.clone()));
    }

    let mut granted_cluster = BTreeSet::new();
    let mut granted_ns = BTreeSet::new();
    for d in &docs {
        let (rules, set) = match &d.object {
            Object::ClusterRole(r) => (&r.rules, &mut granted_cluster),
            Object::Role(r) => (&r.rules, &mut granted_ns),
            _ => continue,
        };
        assert!(bound.contains(&(d.kind.clone(), d.name.clone())), "{}: {} {} is not bound", d.file, d.kind, d.name);
        for t in expand(&format!("{} {}", d.kind, d.name), rules.as_deref().unwrap_or_default()) {
            assert!(set.insert(t.clone()), "{t:?} granted by two {}s", d.kind);
        }
    }
    for (kind, name) in &bound {
        let exists = docs.iter().any(|d| &d.kind == kind && &d.name == name);
        assert!(exists, "a binding refers to {kind} {name}, which is not in etc/manifests/");
    }

    let namespaced_only = |t: &(String, String, String)| {
        NAMESPACED_ONLY
            .iter()
            .any(|(g, r, verbs)| t.0 == *g && t.1 == *r && (verbs.is_empty() || verbs.contains(&t.2.as_str())))
    };
    for t in &granted_cluster {
        assert!(!namespaced_only(t), "{t:?} is granted cluster-wide; it belongs in the namespaced Role");
    }
    for t in &granted_ns {
        assert!(namespaced_only(t), "{t:?} is granted by a Role but used cluster-wide");
    }

    let granted: BTreeSet<_> = granted_cluster.union(&granted_ns).cloned().collect();
    let extra: Vec<_> = granted.difference(&want).collect();
    let missing: Vec<_> = want.difference(&granted).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "RBAC differs from CONTROLLER_API_CALLS\n  granted but not called: {extra:?}\n  called but not granted: {missing:?}"
    );
}

#[test]
fn deployment_is_hardened_highly_available_and_wired() {
    let docs = load_all();
    let dep = deployment(&docs, CONTROLLER_DEPLOYMENT);
    let spec = dep.spec.as_ref().unwrap();
    assert_eq!(spec.replicas, Some(2));
    let pod = pod_spec(&docs);

    let psc = pod.security_context.as_ref().expect("pod securityContext");
    assert_eq!(psc.run_as_non_root, Some(true));
    let uid = psc.run_as_user.expect("numeric runAsUser (runAsNonRoot cannot verify a user name)");
    assert!(uid > 0, "runAsUser {uid} is root");
    assert_eq!(uid, 65532, "the image's USER is 65532");
    assert_eq!(psc.seccomp_profile.as_ref().map(|s| s.type_.as_str()), Some("RuntimeDefault"));
    assert_eq!(pod.enable_service_links, Some(false), "service links would inject KURYR_*-looking variables");

    assert_eq!(pod.containers.len(), 1);
    let c = &pod.containers[0];
    let sc = c.security_context.as_ref().expect("container securityContext");
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_ne!(sc.privileged, Some(true));
    assert_eq!(sc.run_as_non_root, Some(true));
    assert!(sc.run_as_user.is_none_or(|u| u == uid));
    let drop = sc.capabilities.as_ref().and_then(|c| c.drop.clone()).unwrap_or_default();
    assert_eq!(drop, ["ALL"], "capabilities must drop ALL");
    assert!(sc.capabilities.as_ref().unwrap().add.is_none(), "no capability may be added");

    assert_eq!(
        c.args.as_deref().unwrap_or_default(),
        ["run", "--config-file", "/etc/kuryr/kuryr.conf"],
        "args must match the image's CMD"
    );
    let health_port = c.ports.as_deref().unwrap_or_default().iter().find(|p| p.container_port == 8080);
    let port_name = health_port.and_then(|p| p.name.clone()).expect("a named container port 8080");
    for (probe, path) in [(&c.liveness_probe, "/healthz"), (&c.readiness_probe, "/readyz")] {
        let get = probe.as_ref().and_then(|p| p.http_get.as_ref()).unwrap_or_else(|| panic!("{path} probe"));
        assert_eq!(get.path.as_deref(), Some(path));
        assert!(matches!(&get.port, IntOrString::String(n) if *n == port_name) || get.port == IntOrString::Int(8080));
    }
    let res = c.resources.as_ref().expect("resources");
    for key in ["cpu", "memory"] {
        assert!(res.requests.as_ref().is_some_and(|r| r.contains_key(key)), "no {key} request");
        assert!(res.limits.as_ref().is_some_and(|r| r.contains_key(key)), "no {key} limit");
    }

    // The ConfigMap is mounted as /etc/kuryr/kuryr.conf.
    let cm = one(&docs, |o| if let Object::ConfigMap(c) = o { Some(c) } else { None }, "ConfigMap");
    let cm_name = cm.metadata.name.clone().unwrap();
    let mount = c.volume_mounts.as_deref().unwrap_or_default().iter().find(|m| m.mount_path == "/etc/kuryr/kuryr.conf");
    let mount = mount.expect("kuryr.conf mounted at /etc/kuryr/kuryr.conf");
    assert_eq!(mount.sub_path.as_deref(), Some("kuryr.conf"));
    let vol = pod.volumes.as_deref().unwrap_or_default().iter().find(|v| v.name == mount.name).expect("its volume");
    assert_eq!(vol.config_map.as_ref().map(|c| c.name.as_str()), Some(cm_name.as_str()));

    // Env: downward API and the credentials from the Secret.
    let env = c.env.as_deref().unwrap_or_default();
    let var = |n: &str| env.iter().find(|e| e.name == n).unwrap_or_else(|| panic!("no env {n}"));
    for (n, field) in [("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace")] {
        let f = var(n).value_from.as_ref().and_then(|v| v.field_ref.as_ref()).map(|f| f.field_path.as_str());
        assert_eq!(f, Some(field), "{n} from the downward API");
    }
    let secret = one(&docs, |o| if let Object::Secret(s) = o { Some(s) } else { None }, "Secret");
    let secret_keys: BTreeSet<&String> =
        secret.string_data.iter().flat_map(|m| m.keys()).chain(secret.data.iter().flat_map(|m| m.keys())).collect();
    let secret_ref = |n: &str| var(n).value_from.as_ref().and_then(|v| v.secret_key_ref.clone());
    // Password authentication is the default: TLS listeners fail with an application credential
    // (Octavia cannot re-scope its token, docs/tls.md).
    let pw = secret_ref("KURYR_NEUTRON__PASSWORD").expect("password from a Secret");
    assert_eq!(Some(pw.name.as_str()), secret.metadata.name.as_deref());
    assert!(secret_keys.contains(&pw.key), "the Secret has no key {}", pw.key);
    assert_eq!(pw.key, "password");
    let app = secret_ref("KURYR_NEUTRON__APPLICATION_CREDENTIAL_SECRET").expect("app credential override");
    assert_eq!(app.optional, Some(true), "the application credential key is optional (HTTP-only deployments)");
    for e in env {
        assert!(e.value.is_none() || !e.name.contains("SECRET") && !e.name.contains("PASSWORD"), "{} inline", e.name);
    }

    // The PodDisruptionBudget selects these pods and keeps one.
    let pdb = one(&docs, |o| if let Object::PodDisruptionBudget(p) = o { Some(p) } else { None }, "PDB");
    let pdb_spec = pdb.spec.as_ref().unwrap();
    assert_eq!(pdb_spec.min_available, Some(IntOrString::Int(1)));
    let labels = dep.spec.as_ref().unwrap().template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap();
    let sel = pdb_spec.selector.as_ref().and_then(|s| s.match_labels.clone()).expect("PDB matchLabels");
    assert!(sel.iter().all(|(k, v)| labels.get(k) == Some(v)), "PDB selector does not match the pods");
    assert_eq!(spec.selector.match_labels.as_ref(), Some(&sel), "Deployment and PDB select the same pods");
}

/// Minimal oslo.config-style INI: `[section]`, `key = value`, `#`/`;` comments.
fn parse_ini(text: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out = BTreeMap::<String, BTreeMap<String, String>>::new();
    let mut section: Option<String> = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            assert!(!out.contains_key(s), "kuryr.conf line {}: section [{s}] twice", n + 1);
            out.insert(s.to_string(), BTreeMap::new());
            section = Some(s.to_string());
            continue;
        }
        let (k, v) = line.split_once('=').unwrap_or_else(|| panic!("kuryr.conf line {}: not key = value", n + 1));
        let sec = section.as_ref().unwrap_or_else(|| panic!("kuryr.conf line {}: option before any section", n + 1));
        let prev = out.get_mut(sec).unwrap().insert(k.trim().to_string(), v.trim().to_string());
        assert!(prev.is_none(), "kuryr.conf line {}: {} set twice", n + 1, k.trim());
    }
    out
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12]) && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

#[test]
fn configmap_kuryr_conf_is_complete_and_secret_free() {
    let docs = load_all();
    let cm = one(&docs, |o| if let Object::ConfigMap(c) = o { Some(c) } else { None }, "ConfigMap");
    let data = cm.data.as_ref().expect("ConfigMap data");
    assert_eq!(data.keys().collect::<Vec<_>>(), ["kuryr.conf"]);
    let ini = parse_ini(&data["kuryr.conf"]);
    let get = |s: &str, k: &str| {
        ini.get(s).and_then(|sec| sec.get(k)).map(String::as_str).unwrap_or_else(|| panic!("kuryr.conf: no [{s}] {k}"))
    };

    assert!(get("kubernetes", "enable_ingress").eq_ignore_ascii_case("true"));
    let class = get("kubernetes", "ingress_class");
    assert!(!get("kubernetes", "cluster_name").is_empty());
    assert!(get("kubernetes", "leader_election").eq_ignore_ascii_case("true"), "2 replicas need leader election");
    assert_eq!(get("kubernetes", "lease_namespace"), NAMESPACE, "the Lease Role is in {NAMESPACE}");
    if let Some(port) = ini["kubernetes"].get("health_port") {
        assert_eq!(port, "8080", "probes and EXPOSE use 8080");
    }
    for k in ["lb_subnet", "external_svc_subnet"] {
        assert!(is_uuid(get("neutron_defaults", k)), "[neutron_defaults] {k} is a subnet UUID");
    }
    if let Some(ip) = ini["neutron_defaults"].get("l7_router_ip") {
        ip.parse::<std::net::IpAddr>().expect("[neutron_defaults] l7_router_ip is an IP address");
    }
    for k in ["l7_router_name", "lb_algorithm", "router_zone"] {
        assert!(!get("octavia_defaults", k).is_empty());
    }
    // availability_zone is sent to Octavia: on a cloud without Octavia availability zones the
    // load balancer create fails. The shipped config names the zone for weighting only.
    assert!(
        !ini["octavia_defaults"].contains_key("availability_zone"),
        "[octavia_defaults] availability_zone makes the router create fail on clouds without Octavia AZs: use router_zone"
    );
    assert!(["ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP"].contains(&get("octavia_defaults", "lb_algorithm")));
    assert!(get("neutron", "auth_url").starts_with("http"));
    assert_eq!(get("neutron", "auth_type"), "password", "TLS listeners need password authentication");
    for k in ["username", "project_name", "region_name", "interface"] {
        assert!(!get("neutron", k).is_empty());
    }
    for (s, keys) in &ini {
        for k in keys.keys() {
            assert!(
                !["password", "application_credential_secret", "token"].contains(&k.as_str()),
                "[{s}] {k} in the ConfigMap: secrets belong in the Secret (KURYR_<SECTION>__<KEY>)"
            );
        }
    }

    // The IngressClass this config serves.
    let ic = one(&docs, |o| if let Object::IngressClass(i) = o { Some(i) } else { None }, "IngressClass");
    assert_eq!(ic.metadata.name.as_deref(), Some(class), "IngressClass name = [kubernetes] ingress_class");
    assert_eq!(ic.spec.as_ref().and_then(|s| s.controller.as_deref()), Some(INGRESS_CONTROLLER));
}

#[test]
fn kustomization_lists_every_manifest() {
    let text = std::fs::read_to_string(manifests_dir().join("kustomization.yaml")).expect("kustomization.yaml");
    let k: Value = serde_saphyr::from_str(&text).expect("kustomization.yaml is YAML");
    assert_eq!(k["kind"], "Kustomization");
    let listed: Vec<String> = k["resources"]
        .as_array()
        .expect("resources: list")
        .iter()
        .map(|v| v.as_str().expect("resource is a path").to_string())
        .collect();
    let unique: BTreeSet<&String> = listed.iter().collect();
    assert_eq!(unique.len(), listed.len(), "a resource is listed twice");
    let files = manifest_files();
    let missing: Vec<_> = files.iter().filter(|f| !listed.contains(f)).collect();
    let dangling: Vec<_> = listed.iter().filter(|f| !files.contains(f)).collect();
    assert!(missing.is_empty(), "not in kustomization.yaml resources: {missing:?}");
    assert!(dangling.is_empty(), "kustomization.yaml lists missing files: {dangling:?}");
    // The Deployment's image name is the one kustomize rewrites.
    let images = k["images"].as_array().expect("images:");
    let docs = load_all();
    let image = pod_spec(&docs).containers[0].image.clone().unwrap();
    assert!(images.iter().any(|i| i["name"] == image.as_str()), "images: does not rewrite {image}");
}

/// The shipped grace period covers what the shutdown path needs after SIGTERM (no write after
/// the one in flight, bounded drain, handlers, lease release: `SHUTDOWN_BUDGET`), and the docs
/// state the same number (before: 30 s shipped while the docs asked for more than
/// `write_timeout`, 300 s, and the writer drained its whole job).
#[test]
fn termination_grace_period_covers_the_shutdown_and_agrees_with_the_docs() {
    let docs = load_all();
    let grace = pod_spec(&docs).termination_grace_period_seconds.expect("terminationGracePeriodSeconds is set");
    let budget = kuryr_l7_router::controller::runtime::SHUTDOWN_BUDGET.as_secs() as i64;
    assert!(grace > budget, "terminationGracePeriodSeconds {grace} must exceed the shutdown budget {budget} s");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let line = format!("terminationGracePeriodSeconds: {grace}");
    for doc in ["docs/operations.md", "docs/deployment.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        assert!(text.contains(&line), "{doc} must say `{line}` as the manifest does");
        assert!(text.contains(&format!("{budget} s")), "{doc} must state the shutdown budget ({budget} s)");
    }
}

/// The status responder (docs/deployment.md): hardened like the controller, no credentials and
/// no Kubernetes API token, probes on its health port, its Service exposing the two answer ports
/// that kuryr.conf names, all three ports those of `[status_responder]`.
#[test]
fn status_responder_is_shipped_hardened_and_wired() {
    let docs = load_all();
    let dep = deployment(&docs, "kuryr-status-responder");
    let spec = dep.spec.as_ref().unwrap();
    assert_eq!(spec.replicas, Some(2), "one pod down must not turn every 404 into a 503");
    let pod = spec.template.spec.as_ref().unwrap();
    let controller = pod_spec(&docs);
    assert_eq!(pod.security_context, controller.security_context, "same pod securityContext as the controller");
    assert_eq!(pod.automount_service_account_token, Some(false), "it never calls the Kubernetes API");
    assert_eq!(pod.enable_service_links, Some(false));
    assert_eq!(pod.containers.len(), 1);
    let c = &pod.containers[0];
    assert_eq!(c.security_context, controller.containers[0].security_context, "same container securityContext");
    assert_eq!(c.image, controller.containers[0].image, "the same image as the controller");
    assert_eq!(c.args.as_deref().unwrap_or_default(), ["status-responder", "--config-file", "/etc/kuryr/kuryr.conf"]);
    assert!(c.env.is_none() && c.env_from.is_none(), "no credentials in the responder");
    let res = c.resources.as_ref().expect("resources");
    assert!(res.requests.is_some() && res.limits.is_some());

    // kuryr.conf: the same ConfigMap; its [status_responder] names this Service and its ports.
    let cm = one(&docs, |o| if let Object::ConfigMap(c) = o { Some(c) } else { None }, "ConfigMap");
    let vol = pod.volumes.as_deref().unwrap_or_default().iter().find_map(|v| v.config_map.as_ref()).expect("config");
    assert_eq!(Some(&vol.name), cm.metadata.name.as_ref());
    let ini = parse_ini(&cm.data.as_ref().unwrap()["kuryr.conf"]);
    let sr = &ini["status_responder"];
    let svc = one(&docs, |o| if let Object::Service(s) = o { Some(s) } else { None }, "Service");
    let svc_name = format!("{}/{}", svc.metadata.namespace.as_deref().unwrap(), svc.metadata.name.as_deref().unwrap());
    assert_eq!(sr["service"], svc_name);
    let port_of = |listen: &str| sr[listen].rsplit_once(':').unwrap().1.parse::<i32>().unwrap();
    let container_port = |name: &str| {
        c.ports
            .as_deref()
            .unwrap_or_default()
            .iter()
            .find(|p| p.name.as_deref() == Some(name))
            .map(|p| p.container_port)
    };
    let svc_spec = svc.spec.as_ref().unwrap();
    for (conf_port, listen) in [
        ("service_not_found_port", "not_found_listen"),
        ("service_unavailable_port", "unavailable_listen"),
        ("service_server_error_port", "server_error_listen"),
    ] {
        let name = &sr[conf_port];
        let p = svc_spec.ports.as_deref().unwrap_or_default().iter().find(|p| p.name.as_ref() == Some(name));
        let p = p.unwrap_or_else(|| panic!("the Service has no port {name}"));
        let target = match p.target_port.as_ref().expect("targetPort") {
            IntOrString::String(n) => container_port(n).expect("a named container port"),
            IntOrString::Int(n) => *n,
        };
        assert_eq!(target, port_of(listen), "Service port {name} reaches [status_responder] {listen}");
    }
    assert_eq!(container_port("http-health"), Some(port_of("health_listen")));
    for probe in [&c.liveness_probe, &c.readiness_probe] {
        let get = probe.as_ref().and_then(|p| p.http_get.as_ref()).expect("HTTP probe");
        assert_eq!(get.path.as_deref(), Some("/healthz"));
        assert_eq!(get.port, IntOrString::String("http-health".into()), "probes on the health port, never 404/503");
    }
    let labels = spec.template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap();
    let selector = svc_spec.selector.clone().expect("selector");
    assert!(selector.iter().all(|(k, v)| labels.get(k) == Some(v)), "the Service selects the responder pods");
    assert_eq!(spec.selector.match_labels.as_ref(), Some(&selector));
}

/// etc/overlays/node-port (NodePort mode on top of etc/manifests): its node-port.conf, read after
/// the shipped kuryr.conf, changes `member_mode` to NodePort and nothing else; the controller
/// container (not the responder) gets it as a second `--config-file` from the generated
/// ConfigMap; the Service turned `type: NodePort` is the one `[status_responder] service` names
/// (in NodePort mode a Service without node ports has no members: the reserved pools would be
/// empty and every unmatched request a 503 instead of the responder's 404).
#[test]
fn node_port_overlay_sets_the_mode_and_makes_the_responder_service_a_node_port() {
    use kuryr_l7_router::config::MemberMode;
    use kuryr_l7_router::config::{Needs, load_texts_as};
    let dir = manifests_dir().join("../overlays/node-port");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("overlays/node-port/{f}: {e}"));
    let k: Value = serde_saphyr::from_str(&read("kustomization.yaml")).expect("kustomization.yaml is YAML");
    assert_eq!(k["resources"], serde_json::json!(["../../manifests"]));

    let docs = load_all();
    let cm = one(&docs, |o| if let Object::ConfigMap(c) = o { Some(c) } else { None }, "ConfigMap");
    let base_conf = cm.data.as_ref().unwrap()["kuryr.conf"].clone();
    let load = |files: &[(&str, String)]| {
        let files: Vec<(String, String)> = files.iter().map(|(n, t)| (n.to_string(), t.clone())).collect();
        load_texts_as(&files, Vec::new(), Needs::Offline).expect("the config loads").settings
    };
    let base = load(&[("kuryr.conf", base_conf.clone())]);
    let layered = load(&[("kuryr.conf", base_conf), ("node-port.conf", read("node-port.conf"))]);
    assert_eq!(base.octavia_defaults.member_mode, MemberMode::L3, "the base manifests keep the default mode");
    let mut want = base.clone();
    want.octavia_defaults.member_mode = MemberMode::NodePort;
    assert_eq!(layered, want, "node-port.conf changes member_mode only");

    let generated = &k["configMapGenerator"][0];
    assert_eq!(generated["files"], serde_json::json!(["node-port.conf"]));
    assert_eq!(generated["options"]["disableNameSuffixHash"], true, "the Deployment names it as is");
    let patch_of = |kind: &str| -> (String, Vec<Value>) {
        let p = k["patches"].as_array().unwrap().iter().find(|p| p["target"]["kind"] == kind).expect("a patch");
        let ops = serde_saphyr::from_str(p["patch"].as_str().unwrap()).expect("a JSON 6902 patch");
        (p["target"]["name"].as_str().unwrap().to_string(), ops)
    };
    let (dep_name, ops) = patch_of("Deployment");
    let dep = deployment(&docs, &dep_name);
    let pod = dep.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert_eq!(pod, pod_spec(&docs), "the controller's Deployment");
    assert_eq!(pod.containers[0].args.as_deref().unwrap_or_default()[0], "run", "containers/0 is the controller");
    let added = |path: &str| -> Vec<Value> {
        ops.iter().filter(|o| o["op"] == "add" && o["path"] == path).map(|o| o["value"].clone()).collect()
    };
    assert_eq!(added("/spec/template/spec/containers/0/args/-"), ["--config-file", "/etc/kuryr/node-port.conf"]);
    let mount = &added("/spec/template/spec/containers/0/volumeMounts/-")[0];
    assert_eq!(
        (&mount["mountPath"], &mount["subPath"]),
        (&"/etc/kuryr/node-port.conf".into(), &"node-port.conf".into())
    );
    let volume = &added("/spec/template/spec/volumes/-")[0];
    assert_eq!((&volume["name"], &volume["configMap"]["name"]), (&mount["name"], &generated["name"]));

    let (svc_name, ops) = patch_of("Service");
    let svc = one(&docs, |o| if let Object::Service(s) = o { Some(s) } else { None }, "Service");
    assert_eq!(Some(svc_name.as_str()), svc.metadata.name.as_deref());
    let named = base.status_responder.service.as_ref().map(|(ns, name)| (ns.as_str(), name.as_str()));
    assert_eq!(named, Some((svc.metadata.namespace.as_deref().unwrap(), svc_name.as_str())));
    assert_eq!(ops, [serde_json::json!({"op": "replace", "path": "/spec/type", "value": "NodePort"})]);
}

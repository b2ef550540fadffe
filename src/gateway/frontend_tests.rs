use super::*;
use crate::gateway::world::{ca_pem, gateway_yaml, world};
use crate::model::ClientAuthentication::{Mandatory, Optional};

const LISTENERS: &str = "  - {name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: cert}]}}";

/// A world whose Gateway `infra/gw` has `spec.tls.frontend` = `frontend` (YAML indented by 4).
fn with_frontend(frontend: &str, extra: &str) -> World {
    let gw =
        gateway_yaml(LISTENERS).replace("  listeners:\n", &format!("  tls:\n    frontend:\n{frontend}  listeners:\n"));
    world(&format!("{gw}---\n{extra}"))
}

fn default_refs(refs: &str) -> String {
    format!("      default: {{validation: {{caCertificateRefs: [{refs}]}}}}\n")
}

fn add_ca(w: &mut World, ns: &str, name: &str, text: Option<impl AsRef<str>>) {
    w.ca_config_maps.insert((ns.into(), name.into()), text.map(|t| std::sync::Arc::from(t.as_ref())));
}

fn reasons(v: &PortValidation) -> (Option<&str>, Option<&str>) {
    (v.refs_problem.as_ref().map(|(r, _)| *r), v.refused.as_ref().map(|c| c.reason.as_str()))
}

/// The upstream test's four cases (GatewayInvalidFrontendClientCertificateValidation), and the
/// CA bundle problems a ConfigMap can have: each gives `ResolvedRefs=False` with the spec's
/// reason and, as it is the only reference, `Accepted=False NoValidCACertificate`.
#[test]
fn each_invalid_reference_gets_its_reason_and_no_valid_ca_refuses_the_port() {
    let cases: &[(&str, &str, Option<&str>, &str, &str)] = &[
        ("{kind: ConfigMap, group: '', name: missing}", "", None, "InvalidCACertificateRef", "ConfigMap not found"),
        ("{kind: Service, group: '', name: web}", "", None, "InvalidCACertificateKind", "only core ConfigMaps"),
        ("{kind: Secret, group: '', name: ca}", "", None, "InvalidCACertificateKind", "(Secret infra/ca)"),
        ("{kind: ConfigMap, group: example.com, name: ca}", "", None, "InvalidCACertificateKind", "only core"),
        (
            "{kind: ConfigMap, group: '', name: ca, namespace: other}",
            "",
            None,
            "RefNotPermitted",
            "no ReferenceGrant in other",
        ),
        ("{kind: ConfigMap, group: '', name: ca}", "ca", None, "InvalidCACertificateRef", "has no key ca.crt"),
        (
            "{kind: ConfigMap, group: '', name: ca}",
            "ca",
            Some("hello"),
            "InvalidCACertificateRef",
            "no PEM CERTIFICATE",
        ),
    ];
    for (refs, cm, text, reason, says) in cases {
        let mut w = with_frontend(&default_refs(refs), "");
        if !cm.is_empty() {
            add_ca(&mut w, "infra", cm, *text);
        }
        // A CA in the other namespace exists: only the grant is missing.
        add_ca(&mut w, "other", "ca", Some(&ca_pem("other")));
        let v = port_validation(&w.gateways[0], 443, &w);
        assert_eq!(reasons(&v), (Some(*reason), Some("NoValidCACertificate")), "{refs}");
        let (_, message) = v.refs_problem.as_ref().unwrap();
        assert!(message.contains(says), "{refs}: {message}");
        assert!(message.contains("spec.tls.frontend.default.validation.caCertificateRefs[0]"), "{message}");
        assert_eq!(v.validation, None, "{refs}: never served without the check");
    }
}

/// The controller without the RBAC to read ConfigMaps: the reference says so.
#[test]
fn unreadable_config_maps_are_named_as_the_cause() {
    let mut w = with_frontend(&default_refs("{kind: ConfigMap, group: '', name: ca}"), "");
    add_ca(&mut w, "infra", "ca", Some(&ca_pem("ca")));
    w.config_maps_unread = true;
    let v = port_validation(&w.gateways[0], 443, &w);
    assert_eq!(reasons(&v), (Some("InvalidCACertificateRef"), Some("NoValidCACertificate")));
    assert!(v.refs_problem.unwrap().1.contains("RBAC"));
}

/// A ConfigMap in another namespace is trusted only when a ReferenceGrant there allows the
/// Gateway's namespace to name it (from Gateway, to ConfigMap).
#[test]
fn a_reference_grant_permits_another_namespaces_ca() {
    let grant = "kind: ReferenceGrant\napiVersion: gateway.networking.k8s.io/v1beta1\nmetadata: {name: g, namespace: other}\nspec:\n  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: infra}]\n  to: [{group: '', kind: ConfigMap, name: ca}]\n";
    let refs = default_refs("{kind: ConfigMap, group: '', name: ca, namespace: other}");
    let mut w = with_frontend(&refs, grant);
    add_ca(&mut w, "other", "ca", Some(&ca_pem("other")));
    let v = port_validation(&w.gateways[0], 443, &w);
    assert_eq!(reasons(&v), (None, None));
    let got = v.validation.unwrap();
    assert_eq!((got.ca.name.as_str(), got.mode), ("other_ca", Mandatory));
    // A grant for Secrets (or for another ConfigMap) does not.
    let mut w = with_frontend(&refs, &grant.replace("kind: ConfigMap, name: ca", "kind: Secret, name: ca"));
    add_ca(&mut w, "other", "ca", Some(&ca_pem("other")));
    assert_eq!(reasons(&port_validation(&w.gateways[0], 443, &w)).0, Some("RefNotPermitted"));
}

/// One valid and one invalid reference: the listener stays Accepted (the spec refuses it only
/// when ALL are invalid), ResolvedRefs is False, and nothing is served half-checked.
#[test]
fn a_partly_invalid_list_is_accepted_but_not_resolved() {
    let refs = default_refs("{kind: ConfigMap, group: '', name: ca}, {kind: ConfigMap, group: '', name: gone}");
    let mut w = with_frontend(&refs, "");
    add_ca(&mut w, "infra", "ca", Some(&ca_pem("ca")));
    let v = port_validation(&w.gateways[0], 443, &w);
    assert_eq!(reasons(&v), (Some("InvalidCACertificateRef"), None));
    assert!(v.refs_problem.unwrap().1.contains("caCertificateRefs[1]"));
    assert_eq!(v.validation, None);
}

/// Several valid references make one bundle (in order), named after the first and the content.
#[test]
fn several_cas_make_one_bundle() {
    let refs = default_refs("{kind: ConfigMap, group: '', name: a}, {kind: ConfigMap, group: '', name: b}");
    let mut w = with_frontend(&refs, "");
    let (a, b) = (ca_pem("a"), ca_pem("b"));
    add_ca(&mut w, "infra", "a", Some(&a));
    add_ca(&mut w, "infra", "b", Some(&b));
    let ca = port_validation(&w.gateways[0], 443, &w).validation.unwrap().ca;
    let strip = |s: &str| s.replace(['\n', '\r'], "");
    assert_eq!(strip(&ca.pem), strip(&format!("{a}{b}")));
    assert_eq!(ca.name, format!("infra_a+1-{}", &ca.content_id[..12]));
    assert_eq!(ca.source, KubeRef::new("ConfigMap", "infra", "a"));
    // Another list with the same first CA is another bundle name.
    add_ca(&mut w, "infra", "b", Some(&ca_pem("c")));
    let other = port_validation(&w.gateways[0], 443, &w).validation.unwrap().ca;
    assert_ne!(other.name, ca.name);
}

/// The mode: AllowValidOnly (default) is MANDATORY, AllowInsecureFallback OPTIONAL (and the
/// Gateway's InsecureFrontendValidationMode condition), anything else is refused by name.
#[test]
fn the_mode_maps_to_octavias_client_authentication() {
    let refs = "[{kind: ConfigMap, group: '', name: ca}]";
    let cases: &[(&str, Option<crate::model::ClientAuthentication>, Option<&str>)] = &[
        ("", Some(Mandatory), None),
        ("mode: AllowValidOnly, ", Some(Mandatory), None),
        ("mode: AllowInsecureFallback, ", Some(Optional), None),
        ("mode: Sometimes, ", None, Some("UnsupportedValue")),
    ];
    for (mode, want, refused) in cases {
        let mut w = with_frontend(&format!("      default: {{validation: {{{mode}caCertificateRefs: {refs}}}}}\n"), "");
        add_ca(&mut w, "infra", "ca", Some(&ca_pem("ca")));
        let v = port_validation(&w.gateways[0], 443, &w);
        assert_eq!(v.validation.as_ref().map(|v| v.mode), *want, "{mode}");
        assert_eq!(v.refused.as_ref().map(|c| c.reason.as_str()), *refused, "{mode}");
        let insecure = insecure_fallback(&w.gateways[0]);
        assert_eq!(insecure.is_some(), mode.contains("AllowInsecureFallback"), "{mode}");
    }
}

/// The Gateway condition names each field asking for the fallback, per port too, and goes away
/// with it.
#[test]
fn the_insecure_fallback_condition_names_its_fields() {
    let frontend = "      default: {validation: {caCertificateRefs: [{kind: ConfigMap, group: '', name: ca}]}}\n      perPort:\n      - {port: 8443, tls: {validation: {mode: AllowInsecureFallback, caCertificateRefs: [{kind: ConfigMap, group: '', name: ca}]}}}\n";
    let w = with_frontend(frontend, "");
    let c = insecure_fallback(&w.gateways[0]).expect("the condition");
    assert_eq!((c.kind, c.ok, c.reason.as_str()), (INSECURE_FRONTEND_VALIDATION_MODE, true, "ConfigurationChanged"));
    assert!(c.message.contains("spec.tls.frontend.perPort[0].tls.validation.mode"), "{}", c.message);
    assert!(!c.message.contains("default"), "{}", c.message);
    let w = with_frontend(&frontend.replace("mode: AllowInsecureFallback", "mode: AllowValidOnly"), "");
    assert_eq!(insecure_fallback(&w.gateways[0]), None);
}

/// What the controller reads and watches: the ConfigMaps the validations name, defaulting to the
/// Gateway's namespace; other kinds are not ConfigMaps to read.
#[test]
fn the_named_config_maps_are_the_core_config_map_references() {
    let frontend = "      default: {validation: {caCertificateRefs: [{kind: ConfigMap, group: '', name: a}, {kind: Secret, group: '', name: s}]}}\n      perPort:\n      - {port: 8443, tls: {validation: {caCertificateRefs: [{kind: ConfigMap, group: '', name: b, namespace: other}]}}}\n";
    let w = with_frontend(frontend, "");
    assert_eq!(
        named_config_maps(&w.gateways[0]),
        [("infra".to_string(), "a".to_string()), ("other".to_string(), "b".to_string())]
    );
    let plain = world(&gateway_yaml(LISTENERS));
    assert!(named_config_maps(&plain.gateways[0]).is_empty());
}

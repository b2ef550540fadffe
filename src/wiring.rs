//! Glue from the validated kuryr.conf [`Settings`] to the clients and the driver, so that the
//! commands and the controller build them the same way.

use crate::config::{AuthType, Settings};
use crate::driver::ownership::Ownership;
use crate::driver::{Router, RouterSpec};
use crate::model::HealthMonitorSpec;
use crate::openstack::{
    AppCredentialRef, AuthMethod, AuthOptions, DomainRef, Neutron, Observer, Octavia, OctaviaOptions, ProjectScope,
    Session, UserRef,
};

/// `[neutron]` as Keystone auth options. The settings are validated, so the fields each auth
/// type needs are present; a missing one falls back to an empty value that Keystone refuses
/// with a clear 401 rather than a panic here.
pub fn auth_options(s: &Settings) -> AuthOptions {
    let n = &s.neutron;
    let domain = |id: &Option<String>, name: &str| match id {
        Some(id) => DomainRef::Id(id.clone()),
        None => DomainRef::Name(name.to_string()),
    };
    let user = match (&n.user_id, &n.username) {
        (Some(id), _) => UserRef::Id(id.clone()),
        (None, name) => UserRef::Name {
            name: name.clone().unwrap_or_default(),
            domain: domain(&n.user_domain_id, &n.user_domain_name),
        },
    };
    let method = match n.auth_type {
        AuthType::Password => AuthMethod::Password {
            user,
            password: n.password.clone().unwrap_or_default(),
            project: match (&n.project_id, &n.project_name) {
                (Some(id), _) => ProjectScope::Id(id.clone()),
                (None, name) => ProjectScope::Name {
                    name: name.clone().unwrap_or_default(),
                    domain: domain(&n.project_domain_id, &n.project_domain_name),
                },
            },
        },
        AuthType::ApplicationCredential => AuthMethod::ApplicationCredential {
            credential: match (&n.application_credential_id, &n.application_credential_name) {
                (Some(id), _) => AppCredentialRef::Id(id.clone()),
                (None, name) => AppCredentialRef::Name { name: name.clone().unwrap_or_default(), user },
            },
            secret: n.application_credential_secret.clone().unwrap_or_default(),
        },
    };
    AuthOptions {
        // `load` requires it; empty (refused by the Keystone client) only after `load_offline`.
        auth_url: n.auth_url.as_ref().map(|u| u.to_string()).unwrap_or_default(),
        method,
        region_name: n.region_name.clone(),
        interface: match n.interface {
            crate::config::Interface::Public => crate::openstack::Interface::Public,
            crate::config::Interface::Internal => crate::openstack::Interface::Internal,
            crate::config::Interface::Admin => crate::openstack::Interface::Admin,
        },
        cafile: n.cafile.clone(),
        insecure: n.insecure,
        timeout: s.octavia_defaults.request_timeout.min(n.timeout).max(std::time::Duration::from_secs(1)),
    }
}

pub fn ownership(s: &Settings) -> Ownership {
    Ownership::new(&s.kubernetes.cluster_name)
        .with_extra_tags(&s.neutron_defaults.resource_tags)
        .with_set(&s.octavia_defaults.l7_router_name)
}

pub fn health_monitor(s: &Settings) -> Option<HealthMonitorSpec> {
    s.octavia_defaults.health_monitor.then(|| health_monitor_values(s))
}

/// `[octavia_defaults] health_monitor*` as a monitor, enabled or not (the base of a Service's
/// health-monitor annotation).
pub fn health_monitor_values(s: &Settings) -> HealthMonitorSpec {
    let o = &s.octavia_defaults;
    let http = matches!(o.health_monitor_type, crate::config::HealthMonitorType::Http);
    HealthMonitorSpec {
        monitor_type: o.health_monitor_type.as_str().to_string(),
        delay: o.health_monitor_delay.as_secs() as u32,
        timeout: o.health_monitor_timeout.as_secs() as u32,
        max_retries: o.health_monitor_max_retries,
        url_path: http.then(|| o.health_monitor_url_path.clone()),
        expected_codes: http.then(|| o.health_monitor_expected_codes.clone()),
    }
}

pub fn router_spec(s: &Settings) -> RouterSpec {
    let o = &s.octavia_defaults;
    RouterSpec {
        name: o.l7_router_name.clone(),
        uuid: o.l7_router_uuid.clone(),
        vip_subnet_id: s.neutron_defaults.lb_subnet.clone(),
        availability_zone: o.availability_zone.clone(),
        provider: Some(o.provider.clone()).filter(|p| !p.is_empty()),
        listener_port: o.listener_port,
        fully_populated_create: o.fully_populated_create,
        max_create_body_bytes: o.max_create_body_bytes,
        floating_ip: s.neutron_defaults.l7_router_ip,
        external_svc_subnet: s.neutron_defaults.external_svc_subnet.clone(),
        ownership: ownership(s),
        // Validated: L2 has a pod_subnet.
        member_subnet: match o.member_mode {
            crate::config::MemberMode::L2 => s.neutron_defaults.pod_subnet.clone(),
            crate::config::MemberMode::L3 | crate::config::MemberMode::NodePort => None,
        },
        health_monitor: health_monitor(s),
        create_timeout: o.lb_create_timeout,
        write_timeout: o.write_timeout,
        insert_forwarded_headers: o.insert_forwarded_headers,
        secret_read_users: o.tls_secret_read_users.clone(),
    }
}

/// The spec of router `index` of a scale-out set: named `<l7_router_name>-N`
/// (`placement::router_name`). Only the first adopts `l7_router_uuid` and `l7_router_ip`, so an
/// upgrade keeps the single router and its address; each other router gets a floating IP of its
/// own from `external_svc_subnet`, found again by its description, which names the router (the
/// configuration check refuses `l7_router_ip` without `external_svc_subnet` in a set: the others
/// would publish their private VIP addresses).
pub fn router_spec_at(s: &Settings, index: crate::placement::RouterIndex) -> RouterSpec {
    let mut spec = router_spec(s);
    if index > 0 {
        spec.name = crate::placement::router_name(&spec.name, index);
        spec.uuid = None;
        spec.floating_ip = None;
    }
    spec
}

/// The spec of a Gateway's router: its own load balancer `name`
/// (`gateway::naming::load_balancer_name`), its HTTP listener on `port`, the Gateway's static
/// `address` (a pre-created floating IP) else its own floating IP from `external_svc_subnet`
/// (never `l7_router_uuid` nor `l7_router_ip`, which are the Ingress router's).
pub fn gateway_router_spec(s: &Settings, name: &str, port: u16, address: Option<std::net::IpAddr>) -> RouterSpec {
    let mut spec = router_spec(s);
    spec.name = name.to_string();
    spec.uuid = None;
    spec.floating_ip = address;
    spec.listener_port = port;
    spec
}

/// A Gateway's router ([`gateway_router_spec`]), its writes bounded by `permits` shared with the
/// other routers of the process.
pub fn gateway_router_observed(
    s: &Settings,
    observer: Option<Observer>,
    name: &str,
    port: u16,
    address: Option<std::net::IpAddr>,
    permits: crate::driver::WritePermits,
) -> Result<Router, crate::openstack::Error> {
    let (octavia, neutron) = clients_observed(s, observer)?;
    let barbican = crate::openstack::Barbican::new(octavia.session().clone());
    let spec = gateway_router_spec(s, name, port, address);
    Ok(Router::new(octavia, neutron, spec)
        .with_barbican(barbican)
        .with_write_permits(permits)
        .with_verify_per_resync(s.octavia_defaults.verify_per_resync))
}

/// One Keystone session shared by the Octavia and Neutron clients.
pub fn clients(s: &Settings) -> Result<(Octavia, Neutron), crate::openstack::Error> {
    clients_observed(s, None)
}

/// [`clients`] with an `observer` of every request (the controller counts them in its metrics).
pub fn clients_observed(
    s: &Settings,
    observer: Option<Observer>,
) -> Result<(Octavia, Neutron), crate::openstack::Error> {
    let session = match observer {
        Some(o) => Session::with_observer(auth_options(s), o)?,
        None => Session::new(auth_options(s))?,
    };
    let octavia = Octavia::new(
        session.clone(),
        OctaviaOptions { busy_retry: s.octavia_defaults.write_timeout, ..OctaviaOptions::default() },
    );
    Ok((octavia, Neutron::new(session)))
}

pub fn router(s: &Settings) -> Result<Router, crate::openstack::Error> {
    router_observed(s, None)
}

/// [`router`] with an `observer` of every request (see [`clients_observed`]).
pub fn router_observed(s: &Settings, observer: Option<Observer>) -> Result<Router, crate::openstack::Error> {
    // One router per process here; a caller that builds several gives them this one's permits
    // (`Router::write_permits`), or builds each with [`router_observed_at`] and shared permits,
    // so that the bound holds across them.
    let permits = write_permits(s);
    router_observed_at(s, observer, 0, permits)
}

/// The write permits of one process, as configured (`parallel_writes`, `parallel_creates`):
/// every router it builds, the Gateways' included, shares one set of them.
pub fn write_permits(s: &Settings) -> crate::driver::WritePermits {
    crate::driver::WritePermits::new(s.octavia_defaults.parallel_writes, s.octavia_defaults.parallel_creates)
}

/// Router `index` of a scale-out set ([`router_spec_at`]; 0 is the router of [`router_observed`]),
/// its writes bounded by `permits` shared with the other routers of the process.
pub fn router_observed_at(
    s: &Settings,
    observer: Option<Observer>,
    index: crate::placement::RouterIndex,
    permits: crate::driver::WritePermits,
) -> Result<Router, crate::openstack::Error> {
    let (octavia, neutron) = clients_observed(s, observer)?;
    // Same session (token, catalog): Barbican is found in the catalog when a certificate is
    // first stored, so clouds without it work until an Ingress asks for TLS.
    let barbican = crate::openstack::Barbican::new(octavia.session().clone());
    Ok(Router::new(octavia, neutron, router_spec_at(s, index))
        .with_barbican(barbican)
        .with_write_permits(permits)
        .with_verify_per_resync(s.octavia_defaults.verify_per_resync))
}

/// "router zone: zone-a ([octavia_defaults] router_zone)": which zone zone-aware weighting uses
/// and where it comes from, for `plan`.
pub fn router_zone_text(s: &Settings) -> String {
    let o = &s.octavia_defaults;
    match (&o.router_zone, &o.availability_zone) {
        (Some(z), _) => format!("router zone: {z} ([octavia_defaults] router_zone)"),
        (None, Some(z)) => {
            format!("router zone: {z} ([octavia_defaults] availability_zone; router_zone unset)")
        }
        (None, None) => {
            "router zone: none (router_zone and availability_zone unset: zone-aware pools get even weights)".into()
        }
    }
}

/// The address family of the router's VIP, which picks the endpoints' addresses: the VIP
/// subnet's `ip_version` as read from Neutron (`run` reads it at start), else the family of
/// `l7_router_ip` (`plan`, which runs without OpenStack), else IPv4.
pub fn vip_family(s: &Settings) -> crate::translate::IpFamily {
    use crate::translate::IpFamily;
    match (s.neutron_defaults.vip_ip_version, s.neutron_defaults.l7_router_ip) {
        (Some(6), _) => IpFamily::V6,
        (Some(_), _) => IpFamily::V4,
        (None, Some(std::net::IpAddr::V6(_))) => IpFamily::V6,
        (None, _) => IpFamily::V4,
    }
}

/// `[kubernetes]` and `[octavia_defaults]` as translation options (the VIP family: see
/// [`vip_family`]).
pub fn translate_options(s: &Settings) -> crate::translate::TranslateOptions {
    use crate::translate::{TranslateOptions, ZoneMode};
    let k = &s.kubernetes;
    let o = &s.octavia_defaults;
    TranslateOptions {
        ingress_class: k.effective_ingress_class(),
        use_endpoint_slices: k.use_endpoint_slices,
        node_pool: k.node_pool.clone(),
        node_pool_label: k.node_pool_label.clone(),
        router_zone: o.router_zone.clone().or_else(|| o.availability_zone.clone()),
        zone_aware_default: o.zone_aware_default,
        zone_overload_threshold: o.zone_overload_threshold,
        zone_min_local_endpoints: o.zone_min_local_endpoints,
        zone_mode: match o.zone_weighting_mode {
            crate::config::ZoneWeightingMode::Weight => ZoneMode::Weight,
            crate::config::ZoneWeightingMode::Backup => ZoneMode::Backup,
        },
        lb_algorithm: o.lb_algorithm.as_str().to_string(),
        vip_family: vip_family(s),
        tls: crate::translate::options::TlsOptions {
            https_port: o.https_listener_port,
            default_certificate: o.default_tls_secret.clone(),
            ssl_redirect: o.ssl_redirect,
            redirect_code: o.ssl_redirect_code.code(),
            secret_namespaces: k.secret_namespaces.clone(),
        },
        tenancy: crate::translate::options::TenancyOptions {
            default_backend_namespaces: k.default_backend_namespaces.clone(),
            host_ownership: k.host_ownership,
            host_ownership_grace: k.host_ownership_grace_period,
        },
        status_responder: status_responder(&s.status_responder),
        health_monitor_defaults: health_monitor_values(s),
        member_mode: match o.member_mode {
            crate::config::MemberMode::L3 => crate::model::MemberMode::L3,
            crate::config::MemberMode::L2 => crate::model::MemberMode::L2,
            crate::config::MemberMode::NodePort => crate::model::MemberMode::NodePort,
        },
        member_mode_annotation: o.member_mode_annotation,
        ..TranslateOptions::default()
    }
}

/// `[status_responder]` as the translation needs it; `None` when `service` is unset.
fn status_responder(s: &crate::config::StatusResponderSettings) -> Option<crate::translate::options::StatusResponder> {
    s.service.as_ref().map(|(namespace, name)| crate::translate::options::StatusResponder {
        namespace: namespace.clone(),
        name: name.clone(),
        not_found_port: s.service_not_found_port.clone(),
        unavailable_port: s.service_unavailable_port.clone(),
        server_error_port: s.service_server_error_port.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_router_of_a_set_has_its_name_and_only_the_first_the_configured_address() {
        let conf = "[octavia_defaults]\nl7_router_name = edge\nscale_out = true\n\
                    [neutron_defaults]\nl7_router_ip = 203.0.113.7\nlb_subnet = 11111111-2222-3333-4444-555555555555\n\
                    external_svc_subnet = 66666666-2222-3333-4444-555555555555\n\
                    [neutron]\nauth_url = https://keystone/v3\nusername = u\npassword = p\nproject_name = p\n";
        let s = crate::config::load_texts(&[("t.conf".into(), conf.into())], Vec::new()).unwrap().settings;
        let first = router_spec_at(&s, 0);
        assert_eq!(
            (first.name.as_str(), first.floating_ip.map(|ip| ip.to_string())),
            ("edge", Some("203.0.113.7".into()))
        );
        let third = router_spec_at(&s, 2);
        assert_eq!((third.name.as_str(), third.floating_ip, third.uuid), ("edge-3", None, None));
        assert_eq!(third.vip_subnet_id, first.vip_subnet_id, "same VIP subnet");
        // Its own floating IP, from external_svc_subnet (the configuration check requires it).
        assert_eq!(third.external_svc_subnet.as_deref(), Some("66666666-2222-3333-4444-555555555555"));
        assert_eq!(third.ownership, first.ownership, "same cluster: the router name tells them apart");
    }
}

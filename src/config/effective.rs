//! The effective configuration, option by option, as kuryr.conf text (`check-config`).

use super::options::{SECTIONS, options};
use super::problem::MASKED_VALUE;
use super::settings::Settings;
use std::path::PathBuf;
use std::time::Duration;

fn show<T: ToString>(v: &Option<T>) -> Option<String> {
    v.as_ref().map(ToString::to_string)
}

fn path(v: &Option<PathBuf>) -> Option<String> {
    v.as_ref().map(|p| p.display().to_string())
}

fn secs(d: Duration) -> Option<String> {
    Some(d.as_secs().to_string())
}

impl Settings {
    /// The effective value of an option, as kuryr.conf text (`Some(None)`: unset; `None`: not an
    /// option). Secrets are given in clear here; [`Settings::render_masked`] masks them.
    pub(crate) fn effective(&self, section: &str, key: &str) -> Option<Option<String>> {
        let (d, k, nd, od, n) =
            (&self.default, &self.kubernetes, &self.neutron_defaults, &self.octavia_defaults, &self.neutron);
        let s = |v: &str| Some(v.to_owned());
        Some(match (section, key) {
            ("DEFAULT", "debug") => secs_bool(d.debug),
            ("DEFAULT", "log_format") => s(d.log_format.as_str()),
            ("kubernetes", "api_root") => show(&k.api_root),
            ("kubernetes", "ssl_ca_crt_file") => path(&k.ssl_ca_crt_file),
            ("kubernetes", "token_file") => path(&k.token_file),
            ("kubernetes", "kubeconfig") => path(&k.kubeconfig),
            ("kubernetes", "enable_ingress") => secs_bool(k.enable_ingress),
            ("kubernetes", "ingress_class") => Some(k.effective_ingress_class()),
            ("kubernetes", "use_endpoint_slices") => secs_bool(k.use_endpoint_slices),
            ("kubernetes", "node_pool") => show(&k.node_pool),
            ("kubernetes", "node_pool_label") => s(&k.node_pool_label),
            ("kubernetes", "cluster_name") => s(&k.cluster_name),
            ("kubernetes", "resync_period") => secs(k.resync_period),
            ("kubernetes", "member_change_window_ms") => Some(k.member_change_window.as_millis().to_string()),
            ("kubernetes", "leader_election") => secs_bool(k.leader_election),
            ("kubernetes", "lease_name") => s(&k.lease_name),
            ("kubernetes", "lease_namespace") => s(&k.lease_namespace),
            ("kubernetes", "health_port") => Some(k.health_port.to_string()),
            ("kubernetes", "default_backend_namespaces") => Some(k.default_backend_namespaces.join(", ")),
            ("kubernetes", "secret_namespaces") => Some(k.secret_namespaces.join(", ")),
            ("kubernetes", "host_ownership") => Some(k.host_ownership.to_string()),
            ("kubernetes", "host_ownership_grace_period") => secs(k.host_ownership_grace_period),
            ("neutron_defaults", "external_svc_subnet") => show(&nd.external_svc_subnet),
            ("neutron_defaults", "l7_router_ip") => show(&nd.l7_router_ip),
            ("neutron_defaults", "lb_subnet") => show(&nd.lb_subnet),
            ("neutron_defaults", "pod_subnet") => show(&nd.pod_subnet),
            ("neutron_defaults", "resource_tags") => Some(nd.resource_tags.join(", ")),
            ("octavia_defaults", "l7_router_name") => s(&od.l7_router_name),
            ("octavia_defaults", "l7_router_uuid") => show(&od.l7_router_uuid),
            ("octavia_defaults", "lb_algorithm") => s(od.lb_algorithm.as_str()),
            ("octavia_defaults", "provider") => s(&od.provider),
            ("octavia_defaults", "availability_zone") => show(&od.availability_zone),
            ("octavia_defaults", "router_zone") => show(&od.router_zone),
            ("octavia_defaults", "zone_overload_threshold") => Some(format!("{:?}", od.zone_overload_threshold)),
            ("octavia_defaults", "member_mode") => s(od.member_mode.as_str()),
            ("octavia_defaults", "member_mode_annotation") => secs_bool(od.member_mode_annotation),
            ("octavia_defaults", "listener_port") => Some(od.listener_port.to_string()),
            ("octavia_defaults", "fully_populated_create") => secs_bool(od.fully_populated_create),
            ("octavia_defaults", "verify_per_resync") => Some(od.verify_per_resync.to_string()),
            ("octavia_defaults", "max_create_body_bytes") => Some(od.max_create_body_bytes.to_string()),
            ("octavia_defaults", "lb_create_timeout") => secs(od.lb_create_timeout),
            ("octavia_defaults", "write_timeout") => secs(od.write_timeout),
            ("octavia_defaults", "parallel_writes") => Some(od.parallel_writes.to_string()),
            ("octavia_defaults", "parallel_creates") => Some(od.parallel_creates.to_string()),
            ("octavia_defaults", "scale_out") => secs_bool(od.scale_out.enabled),
            ("octavia_defaults", "max_policies_per_router") => Some(od.scale_out.capacity.max_policies.to_string()),
            ("octavia_defaults", "max_certificates_per_router") => {
                Some(od.scale_out.capacity.max_certificates.to_string())
            }
            ("octavia_defaults", "dns_record_ttl") => secs(od.dns_record_ttl),
            ("octavia_defaults", "move_dns_grace") => secs(od.scale_out.move_dns_grace),
            ("octavia_defaults", "empty_router_grace") => secs(od.scale_out.empty_router_grace),
            ("octavia_defaults", "move_target_timeout") => secs(od.scale_out.move_target_timeout),
            ("octavia_defaults", "gateway_kept_grace") => secs(od.gateway_kept_grace.unwrap_or_default()),
            ("octavia_defaults", "move_request_namespaces") => Some(od.scale_out.move_request_namespaces.join(", ")),
            ("octavia_defaults", "gateways_per_namespace") => {
                Some(od.gateway_limits.per_namespace.unwrap_or_default().to_string())
            }
            ("octavia_defaults", "gateways_per_cluster") => {
                Some(od.gateway_limits.per_cluster.unwrap_or_default().to_string())
            }
            ("octavia_defaults", "gateway_address_tag") => {
                Some(od.gateway_limits.address_tag.clone().unwrap_or_default())
            }
            ("octavia_defaults", "gateway_addresses") => Some(od.gateway_limits.addresses.join(", ")),
            ("octavia_defaults", "request_timeout") => secs(od.request_timeout),
            ("octavia_defaults", "zone_aware_default") => secs_bool(od.zone_aware_default),
            ("octavia_defaults", "zone_weighting_mode") => s(od.zone_weighting_mode.as_str()),
            ("octavia_defaults", "zone_overload_factor") => Some(format!("{:?}", od.zone_overload_factor)),
            ("octavia_defaults", "zone_min_local_endpoints") => Some(od.zone_min_local_endpoints.to_string()),
            ("octavia_defaults", "health_monitor") => secs_bool(od.health_monitor),
            ("octavia_defaults", "health_monitor_type") => s(od.health_monitor_type.as_str()),
            ("octavia_defaults", "health_monitor_url_path") => s(&od.health_monitor_url_path),
            ("octavia_defaults", "health_monitor_expected_codes") => s(&od.health_monitor_expected_codes),
            ("octavia_defaults", "health_monitor_delay") => secs(od.health_monitor_delay),
            ("octavia_defaults", "health_monitor_timeout") => secs(od.health_monitor_timeout),
            ("octavia_defaults", "https_listener_port") => Some(od.https_listener_port.to_string()),
            ("octavia_defaults", "default_tls_secret") => {
                od.default_tls_secret.as_ref().map(|(n, s)| format!("{n}/{s}"))
            }
            ("octavia_defaults", "ssl_redirect") => secs_bool(od.ssl_redirect),
            ("octavia_defaults", "ssl_redirect_code") => s(od.ssl_redirect_code.as_str()),
            ("octavia_defaults", "insert_forwarded_headers") => secs_bool(od.insert_forwarded_headers),
            ("octavia_defaults", "tls_secret_read_users") => Some(od.tls_secret_read_users.join(", ")),
            ("octavia_defaults", "preflight_role_check") => secs_bool(od.preflight_role_check),
            ("octavia_defaults", "health_monitor_max_retries") => Some(od.health_monitor_max_retries.to_string()),
            ("neutron", "auth_url") => n.auth_url.as_ref().map(|u| u.to_string()),
            ("neutron", "auth_type") => s(n.auth_type.as_str()),
            ("neutron", "username") => show(&n.username),
            ("neutron", "user_id") => show(&n.user_id),
            ("neutron", "password") => n.password.as_ref().map(|p| p.expose().to_owned()),
            ("neutron", "user_domain_name") => s(&n.user_domain_name),
            ("neutron", "user_domain_id") => show(&n.user_domain_id),
            ("neutron", "project_name") => show(&n.project_name),
            ("neutron", "project_id") => show(&n.project_id),
            ("neutron", "project_domain_name") => s(&n.project_domain_name),
            ("neutron", "project_domain_id") => show(&n.project_domain_id),
            ("neutron", "application_credential_id") => show(&n.application_credential_id),
            ("neutron", "application_credential_name") => show(&n.application_credential_name),
            ("neutron", "application_credential_secret") => {
                n.application_credential_secret.as_ref().map(|p| p.expose().to_owned())
            }
            ("neutron", "region_name") => show(&n.region_name),
            ("neutron", "interface") => s(n.interface.as_str()),
            ("neutron", "cafile") => path(&n.cafile),
            ("neutron", "insecure") => secs_bool(n.insecure),
            ("neutron", "timeout") => secs(n.timeout),
            ("status_responder", key) => return self.status_responder.effective(key),
            _ => return None,
        })
    }

    /// The effective configuration as kuryr.conf text: every option of [`options()`] with its
    /// value, secrets as `********`, unset options as `#key = <None>`. For `check-config`.
    pub fn render_masked(&self) -> String {
        let mut out = String::new();
        for section in SECTIONS {
            out.push_str(&format!("[{section}]\n"));
            for spec in options().iter().filter(|o| o.section == *section) {
                match self.effective(spec.section, spec.key).flatten() {
                    None => out.push_str(&format!("#{} = <None>\n", spec.key)),
                    Some(_) if spec.secret => out.push_str(&format!("{} = {MASKED_VALUE}\n", spec.key)),
                    Some(v) => {
                        // A list value keeps its continuation-line layout readable and reloadable.
                        let v = v.replace('\n', "\n    ");
                        out.push_str(&format!("{} = {v}\n", spec.key));
                    }
                }
            }
            out.push('\n');
        }
        out
    }
}

fn secs_bool(b: bool) -> Option<String> {
    Some(if b { "true" } else { "false" }.to_owned())
}

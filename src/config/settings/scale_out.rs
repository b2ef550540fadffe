//! `[octavia_defaults] scale_out` and the limits of the router set: one controller drives
//! `<l7_router_name>`, `<l7_router_name>-2`, ... (docs/scale-out.md).

use super::Reader;
use crate::placement::{Capacity, DNS_UPDATE_MARGIN_SECS, MoveTimings, router_index};
use std::net::IpAddr;
use std::time::Duration;

/// `[octavia_defaults] scale_out` and the limits of the router set (docs/scale-out.md).
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleOut {
    pub enabled: bool,
    /// `max_policies_per_router`, `max_certificates_per_router`.
    pub capacity: Capacity,
    /// How long a moved group is published with both addresses, and how long the old routes stay
    /// after only the new address is published: `move_dns_grace` when set, else
    /// `[octavia_defaults] dns_record_ttl` plus the external-dns interval
    /// ([`DNS_UPDATE_MARGIN_SECS`]).
    pub move_dns_grace: Duration,
    /// How long a router other than the first stays empty before it is deleted.
    pub empty_router_grace: Duration,
    /// How long a move waits for its target to be ACTIVE with the group's routes before it is
    /// rolled back (`controller::router_set::rollback`).
    pub move_target_timeout: Duration,
    /// Namespaces whose Ingresses may ask for a move with the `move-to` annotation (empty: none).
    pub move_request_namespaces: Vec<String>,
}

impl ScaleOut {
    /// The move's graces: `move_dns_grace` with both addresses published, and as long again
    /// with only the target's before the old routes go.
    pub fn move_timings(&self) -> MoveTimings {
        let secs = self.move_dns_grace.as_secs();
        MoveTimings { dns_grace_secs: secs, old_routes_grace_secs: secs }
    }
}

impl Reader {
    /// `dns_record_ttl`: `[octavia_defaults] dns_record_ttl`, read.
    pub(super) fn scale_out(&mut self, dns_record_ttl: Duration) -> ScaleOut {
        let od = "octavia_defaults";
        // An explicit grace wins; else a resolver may hold the old record a whole TTL after
        // external-dns wrote the new one, up to its interval after the status changed.
        let derived = dns_record_ttl.saturating_add(Duration::from_secs(DNS_UPDATE_MARGIN_SECS));
        let move_dns_grace = self.get(od, "move_dns_grace").unwrap_or(derived);
        ScaleOut {
            enabled: self.value(od, "scale_out"),
            capacity: Capacity {
                max_policies: self.value(od, "max_policies_per_router"),
                max_certificates: self.value(od, "max_certificates_per_router"),
            },
            move_dns_grace,
            empty_router_grace: self.value(od, "empty_router_grace"),
            move_target_timeout: self.value(od, "move_target_timeout"),
            move_request_namespaces: self.value(od, "move_request_namespaces"),
        }
    }

    /// With a set, every router's address is published in the Ingress status. The first router
    /// adopts `l7_router_ip`; the others get a floating IP from `external_svc_subnet` only, so
    /// without it they would publish their private VIP addresses beside the first's public one:
    /// refused, naming the fix.
    pub(super) fn check_scale_out_addresses(
        &mut self,
        scale_out: &ScaleOut,
        l7_router_ip: Option<IpAddr>,
        external_svc_subnet: Option<&str>,
    ) {
        let (Some(ip), None, true) = (l7_router_ip, external_svc_subnet, scale_out.enabled) else { return };
        self.problem(
            "neutron_defaults",
            "l7_router_ip",
            true,
            format!(
                "with [octavia_defaults] scale_out = true, requires [neutron_defaults] external_svc_subnet: \
                 only the first router of the set gets {ip}, the others take their floating IPs from \
                 external_svc_subnet, and without it they would publish their private VIP addresses in the \
                 Ingress status. Set external_svc_subnet (a subnet of the external network of {ip}), or \
                 unset l7_router_ip to publish every router's VIP address deliberately"
            ),
        );
    }

    /// The router set is found by name (`<l7_router_name>`, `<l7_router_name>-2`, ...): refuse what
    /// would make its names ambiguous or unusable.
    /// `uuid_set`: `l7_router_uuid` is set; `name`: `l7_router_name`.
    pub(super) fn check_scale_out(&mut self, scale_out: &ScaleOut, uuid_set: bool, name: &str) {
        let od = "octavia_defaults";
        if !scale_out.enabled {
            return;
        }
        if uuid_set {
            self.problem(
                od,
                "scale_out",
                true,
                "cannot be combined with [octavia_defaults] l7_router_uuid: the routers of the set are found by \
                 name; leave l7_router_uuid unset (the router named l7_router_name is adopted as the first)"
                    .into(),
            );
        }
        // `<name>-N`: N has at most 10 digits; Octavia names are at most 255 characters.
        if name.len() > 255 - 11 {
            self.problem(
                od,
                "l7_router_name",
                true,
                "with scale_out, must be at most 244 characters (room for -N)".into(),
            );
        }
        if let Some((base, _)) = name.rsplit_once('-')
            && router_index(base, name).is_some()
        {
            self.problem(
                od,
                "l7_router_name",
                true,
                format!(
                    "with scale_out, must not end in -<number>: {:?} is the name of a router of the set {base:?}",
                    name
                ),
            );
        }
    }
}

//! The option table: the single source of truth for names, types, defaults and help of every
//! kuryr.conf option we read. Loading, `check-config` rendering, `etc/kuryr.conf.sample` and
//! `docs/configuration.md` are all derived from (and tested against) [`options()`].

/// Defines a closed set of string values (oslo `choices`), case-sensitive like oslo.
macro_rules! choice_enum {
    (
        $(#[$m:meta])*
        pub enum $name:ident { $($(#[$vm:meta])* $var:ident => $s:literal,)+ }
        default $def:ident
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vm])* $var,)+ }

        impl $name {
            /// The accepted spellings, in documentation order.
            pub const NAMES: &'static [&'static str] = &[$($s),+];

            /// The spelling used in kuryr.conf (and by Octavia/Keystone where applicable).
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$var => $s),+ }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::$def
            }
        }

        impl std::str::FromStr for $name {
            type Err = ();
            fn from_str(s: &str) -> Result<Self, ()> {
                match s {
                    $($s => Ok(Self::$var),)+
                    _ => Err(()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

choice_enum! {
    /// `[octavia_defaults] ssl_redirect_code`: the redirect statuses Octavia accepts.
    pub enum RedirectCode { PermanentKeepMethod => "308", Permanent => "301", Found => "302", SeeOther => "303", TemporaryKeepMethod => "307", }
    default PermanentKeepMethod
}

impl RedirectCode {
    pub fn code(self) -> u16 {
        self.as_str().parse().expect("the names are numbers")
    }
}

choice_enum! {
    /// `[DEFAULT] log_format`.
    pub enum LogFormat { Text => "text", Json => "json", }
    default Text
}

choice_enum! {
    /// Octavia pool `lb_algorithm`.
    pub enum LbAlgorithm {
        RoundRobin => "ROUND_ROBIN",
        LeastConnections => "LEAST_CONNECTIONS",
        SourceIp => "SOURCE_IP",
    }
    default RoundRobin
}

choice_enum! {
    /// How members are addressed: L3 (pod IPs, routed, no subnet on the member), L2 (pod IPs,
    /// member subnet set) or NodePort (the nodes on the Service's node port).
    pub enum MemberMode { L3 => "L3", L2 => "L2", NodePort => "NodePort", }
    default L3
}

choice_enum! {
    /// Zone-aware weighting: local members weighted up, or remote members marked `backup`.
    pub enum ZoneWeightingMode { Weight => "weight", Backup => "backup", }
    default Weight
}

choice_enum! {
    /// Octavia health monitor `type`.
    pub enum HealthMonitorType { Http => "HTTP", Tcp => "TCP", }
    default Http
}

choice_enum! {
    /// Keystone auth plugin (keystoneauth `auth_type` names).
    pub enum AuthType {
        Password => "password",
        ApplicationCredential => "v3applicationcredential",
    }
    default Password
}

choice_enum! {
    /// Keystone catalog endpoint interface.
    pub enum Interface { Public => "public", Internal => "internal", Admin => "admin", }
    default Public
}

/// The type of an option: how its text is parsed and validated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptKind {
    /// oslo booleans: true/false, yes/no, on/off, 1/0, case-insensitive.
    Bool,
    /// Integer within `min..=max`.
    Int { min: i64, max: i64 },
    /// Integer number of seconds, at least `min`.
    Seconds { min: i64 },
    /// Float, at least `min`.
    Float { min: f64 },
    /// Any single-line string.
    Str,
    /// A string never shown in logs, errors or `check-config` output.
    Secret,
    /// An `http://` or `https://` URL.
    Url,
    /// A filesystem path; `must_exist` is checked at load time.
    Path { must_exist: bool },
    /// An IPv4 or IPv6 address.
    Ip,
    /// `IP:port` to listen on (`[::]:port` for IPv6).
    SocketAddr,
    /// A dashed UUID (8-4-4-4-12 hex digits), as Neutron and Octavia ids are.
    Uuid,
    /// One of a fixed set of strings (case-sensitive, as oslo `choices`).
    Choice(&'static [&'static str]),
    /// A string usable as an Octavia/Neutron tag (see [`super::settings::check_tag`]).
    Tag,
    /// A comma-separated list of tags; may continue over indented lines.
    TagList,
}

impl OptKind {
    /// Human description, used in errors, the sample file and the docs.
    pub fn describe(&self) -> String {
        match self {
            OptKind::Bool => "boolean".into(),
            OptKind::Int { min, max } => format!("integer, {min}..{max}"),
            OptKind::Seconds { min } => format!("integer seconds, >= {min}"),
            OptKind::Float { min } => format!("float, >= {min:?}"),
            OptKind::Str => "string".into(),
            OptKind::Secret => "secret string".into(),
            OptKind::Url => "URL".into(),
            OptKind::Path { must_exist: true } => "path to an existing file".into(),
            OptKind::Path { must_exist: false } => "path".into(),
            OptKind::Ip => "IP address".into(),
            OptKind::SocketAddr => "IP:port".into(),
            OptKind::Uuid => "UUID".into(),
            OptKind::Choice(names) => format!("one of {}", names.join(", ")),
            OptKind::Tag => "tag string".into(),
            OptKind::TagList => "list of tag strings".into(),
        }
    }

    /// Whether the value may span several lines (list options only).
    pub(crate) fn is_list(&self) -> bool {
        matches!(self, OptKind::TagList)
    }
}

/// One option of kuryr.conf.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OptionSpec {
    /// Section as written in kuryr.conf (`DEFAULT`, `kubernetes`, ...).
    pub section: &'static str,
    pub key: &'static str,
    pub kind: OptKind,
    /// The default, as it would be written in kuryr.conf; `None`: unset by default.
    pub default: Option<&'static str>,
    pub help: &'static str,
    /// Masked as `********` wherever the value would be shown.
    pub secret: bool,
}

impl OptionSpec {
    /// Human description of the type.
    pub(crate) fn type_description(&self) -> String {
        self.kind.describe()
    }
}

const fn opt(
    section: &'static str,
    key: &'static str,
    kind: OptKind,
    default: Option<&'static str>,
    help: &'static str,
) -> OptionSpec {
    OptionSpec { section, key, kind, default, help, secret: matches!(kind, OptKind::Secret) }
}

/// The sections we own, in rendering order. Other sections of kuryr.conf are ignored.
pub const SECTIONS: &[&str] =
    &["DEFAULT", "kubernetes", "neutron_defaults", "octavia_defaults", "neutron", "status_responder"];

const PORT: OptKind = OptKind::Int { min: 1, max: 65535 };
const D: &str = "DEFAULT";
const K: &str = "kubernetes";
const ND: &str = "neutron_defaults";
const OD: &str = "octavia_defaults";
const N: &str = "neutron";
const SR: &str = "status_responder";
const PATH: OptKind = OptKind::Path { must_exist: false };

#[rustfmt::skip]
static OPTIONS: &[OptionSpec] = &[
    // [DEFAULT]
    opt(D, "debug", OptKind::Bool, Some("false"), "Log at debug level instead of info."),
    opt(D, "log_format", OptKind::Choice(LogFormat::NAMES), Some("text"), "Log line format: human-readable text or one JSON object per line."),
    // [kubernetes]
    opt(K, "api_root", OptKind::Url, None, "Kubernetes API server URL. Unset: the in-cluster service account, or `kubeconfig` when set."),
    opt(K, "ssl_ca_crt_file", PATH, None, "CA bundle used to verify the API server when `api_root` is set."),
    opt(K, "token_file", PATH, None, "Bearer token file used with `api_root`."),
    opt(K, "kubeconfig", PATH, None, "kubeconfig file to use instead of the in-cluster configuration."),
    opt(K, "enable_ingress", OptKind::Bool, Some("false"), "Handle Ingress objects (as kuryr-kubernetes' option of the same name). When true, `[neutron_defaults] lb_subnet` is required."),
    opt(K, "ingress_class", OptKind::Str, Some("kuryr-l7-router"), "IngressClass name (spec.controller and ingressClassName) this controller serves. When unset and `node_pool` is set, the node pool name is used."),
    opt(K, "use_endpoint_slices", OptKind::Bool, Some("true"), "Read Service endpoints from EndpointSlices (discovery.k8s.io/v1) rather than Endpoints."),
    opt(K, "node_pool", OptKind::Str, None, "Serve only this node pool (edge deployments): one router per pool, members from nodes carrying `node_pool_label=<node_pool>`."),
    opt(K, "node_pool_label", OptKind::Str, Some("apps.openyurt.io/nodepool"), "Node label that names a node's pool."),
    opt(K, "cluster_name", OptKind::Tag, Some("kubernetes"), "Name of this cluster, put in the tags of every Octavia object we create so that several clusters can share a project."),
    opt(K, "resync_period", OptKind::Seconds { min: 10 }, Some("600"), "Full reconciliation interval in seconds, on top of watch events."),
    opt(K, "member_change_window_ms", OptKind::Int { min: 0, max: 10000 }, Some("500"), "Change window of a Service's members, in milliseconds: the first endpoint change opens it, the members are written when it closes (one batch PUT per pool per window, whatever happened meanwhile: the latest endpoints win). Bounds the delay of a member change to this window plus the write, even while a rollout keeps changing the endpoints. 0: write at once."),
    opt(K, "leader_election", OptKind::Bool, Some("true"), "Elect a leader through a coordination.k8s.io Lease so that only one replica writes to Octavia."),
    opt(K, "lease_name", OptKind::Str, Some("kuryr-l7-router"), "Name of the leader election Lease."),
    opt(K, "lease_namespace", OptKind::Str, Some("kube-system"), "Namespace of the leader election Lease."),
    opt(K, "health_port", PORT, Some("8080"), "TCP port of the /healthz, /readyz and /metrics HTTP endpoint."),
    opt(K, "default_backend_namespaces", OptKind::TagList, Some(""), "Namespaces whose Ingresses may set the router-wide default backend (comma-separated): an Ingress whose rules name no host (only a `spec.defaultBackend`, or a rule without `host`) catches every request for the hosts that no Ingress names. Host-less rules of other namespaces are refused (`HostlessRuleNotAllowed`). Empty: any namespace, as Kubernetes users expect. An Ingress's default backend always catches the unmatched paths of its own hosts (docs/routing-semantics.md, Tenants)."),
    opt(K, "secret_namespaces", OptKind::TagList, Some(""), "Namespaces whose TLS Secrets the controller reads (comma-separated): it lists and watches the `kubernetes.io/tls` Secrets of each of them (one watch per namespace), and needs only a Role granting `secrets` `list` and `watch` in each (etc/overlays/secret-namespaces), not the cluster-wide grant of etc/manifests. An Ingress or Gateway listener naming a Secret of another namespace is refused with a Warning Event (`SecretNotRead`) or the listener's `ResolvedRefs: False` (`InvalidCertificateRef`) naming the Secret and this option; its hosts keep the last good certificate stored on the router, if any, as for a missing Secret. Empty (the default): every namespace, through one cluster-wide watch (docs/deployment.md, Secrets in some namespaces only)."),
    opt(K, "host_ownership", OptKind::Bool, Some("false"), "The namespace of the oldest object naming a host owns it, whichever kind: an Ingress (its rules or spec.tls), an HTTPRoute (its hostnames on a Gateway listener of ours) or a Gateway (its listeners' exact hostnames). Other namespaces' Ingress rules and TLS entries for that host are refused with a Warning Event naming the owner; their HTTPRoutes get `Accepted: False` (`NotAllowedByListeners`) naming it, unless the owner is the namespace of the Gateway they attach to. A wildcard owns the hosts it covers that nobody claimed before it. Owners are remembered in ConfigMaps of the controller's namespace (`lease_namespace`; sharded, so thousands of hosts fit), so ownership survives the owner's re-creation of its Ingress."),
    opt(K, "host_ownership_grace_period", OptKind::Seconds { min: 0 }, Some("3600"), "With `host_ownership`: seconds a namespace keeps its hosts after its last object (Ingress, HTTPRoute, Gateway) naming them went (a Helm reinstall, `kubectl replace`), before the next oldest claimant takes them."),
    // [neutron_defaults]
    opt(ND, "external_svc_subnet", OptKind::Uuid, None, "Subnet ID from which floating IPs for the router VIP are allocated."),
    opt(ND, "l7_router_ip", OptKind::Ip, None, "An existing floating IP to associate with the L7 router's VIP port (it must be free or already on that port). Unset: one is allocated on the external network of external_svc_subnet and found again after a restart."),
    opt(ND, "lb_subnet", OptKind::Uuid, None, "Subnet ID of the L7 router VIP. Required when `[kubernetes] enable_ingress` is true."),
    opt(ND, "pod_subnet", OptKind::Uuid, None, "Subnet ID of the pods: the subnet members are created on (`subnet_id`) in L2 member mode (required there)."),
    opt(ND, "resource_tags", OptKind::TagList, Some(""), "Extra tags put on every OpenStack object we create (Octavia load balancer, listeners, pools, members, health monitors, L7 policies and rules; the Neutron floating IP we allocate), after our own ownership tags, which alone decide what is ours. Set on creation: existing objects are not retagged. Comma-separated."),
    // [octavia_defaults]
    opt(OD, "l7_router_name", OptKind::Str, Some("kuryr-l7-router"), "Name of the shared Octavia load balancer (the L7 router). Also names this controller instance: its load balancers carry the tag `router-set:<name>` (hashed beyond 255 characters), so two instances in one cluster (another IngressClass or node pool) MUST have different names (docs/operations.md)."),
    opt(OD, "l7_router_uuid", OptKind::Uuid, None, "ID of an existing load balancer to use as the L7 router instead of finding or creating it by name."),
    opt(OD, "lb_algorithm", OptKind::Choice(LbAlgorithm::NAMES), Some("ROUND_ROBIN"), "Pool load balancing algorithm."),
    opt(OD, "provider", OptKind::Str, Some(""), "Octavia provider driver; empty: Octavia's default provider."),
    opt(OD, "availability_zone", OptKind::Str, None, "Octavia availability zone the L7 router is created in (most clouds define none: leave unset there). Also the router zone for zone-aware weighting when `router_zone` is unset."),
    opt(OD, "router_zone", OptKind::Str, None, "Kubernetes zone (the nodes' `topology.kubernetes.io/zone` label) the router's traffic is considered to come from, for zone-aware member weighting. Unset: `availability_zone`. A zone no Ready node reports gives even weights."),
    opt(OD, "member_mode", OptKind::Choice(MemberMode::NAMES), Some("L3"), "Where members come from. L3: the pods' IPs from the EndpointSlices, routed (no `subnet_id`): pods on Neutron ports (Kuryr CNI) or a pod network Neutron routes. L2: the same, every member we create carrying `subnet_id` = `[neutron_defaults] pod_subnet` (required), as Kuryr does. NodePort: the Ready, schedulable nodes of the node pool on the Service's node port (the Service must be type NodePort or LoadBalancer), for overlay pod networks the amphorae cannot reach (Calico, Cilium, Flannel); endpoint changes then cost no Octavia write. Applies to members written from then on (docs/configuration.md, \"Member modes\")."),
    opt(OD, "member_mode_annotation", OptKind::Bool, Some("false"), "Let a Service choose the member mode of its own pools with the annotation `kuryr-l7-router.openstack.org/member-mode: L3 | NodePort` (mixed clusters: some pods routed, some on an overlay). Only L3 and NodePort replace each other; with `member_mode = L2` the annotation cannot ask for NodePort. Off: the annotation is ignored with a Warning Event on the Service."),
    opt(OD, "listener_port", PORT, Some("80"), "Port of the HTTP listener of the L7 router."),
    opt(OD, "fully_populated_create", OptKind::Bool, Some("true"), "Create a new L7 router with all its pools, members, policies and rules in one call (Octavia's fully-populated create). Octavia releases before 11.0.1 (Zed; 10.1.0 on Yoga), such as Debian 12's 11.0.0, leave the children of that call in PENDING_CREATE: the driver detects it, deletes the new router and builds it with one write per object; set False on such clouds to skip the wasted create."),
    opt(OD, "lb_create_timeout", OptKind::Seconds { min: 1 }, Some("600"), "Seconds to wait for a new load balancer to become ACTIVE."),
    opt(OD, "write_timeout", OptKind::Seconds { min: 1 }, Some("300"), "Seconds to wait for the load balancer to become ACTIVE again after a change."),
    opt(OD, "parallel_writes", OptKind::Int { min: 1, max: 64 }, Some("4"), "Writes (Octavia, Barbican, Neutron) in flight at once across all the L7 routers of this process, load balancer creates apart (`parallel_creates`), each held until its router is ACTIVE again; one router writes one at a time whatever this says. Octavia's API and workers are shared, so parallel writes stretch each other, but on the local 2025.1 (2 cores, heavily loaded) 4 member writes on 4 routers at once still made 4.0 writes a minute against 2.6 with 2 and 1.9 with 1 (each 57 s against 45 s and 31 s; docs/benchmarks.md), and below the number of routers a change on an idle router waits for another router's write. Set it to about the number of routers of the set (`scale_out`), up to what the cloud's Octavia workers take at once."),
    opt(OD, "parallel_creates", OptKind::Int { min: 1, max: 64 }, Some("4"), "Load balancer creates in flight at once across all the L7 routers of this process (the routers of the set and the Gateways' routers), each held until its new load balancer is ACTIVE, up to `lb_create_timeout`; the deletes of a create gone wrong count here too. A pool of its own, apart from `parallel_writes`, so that member updates and every other write never wait behind creates: four creates at 600 s each used to hold every write permit. A create spends its minutes in Nova booting the amphora, little in Octavia's API, so 4 keeps the creates of a scale-out or of new Gateways going at the pace they had when both shared one pool; lower it when the cloud's amphora boots queue."),
    opt(OD, "scale_out", OptKind::Bool, Some("false"), "Spread the Ingresses of the class over a set of small routers (`l7_router_name`, `l7_router_name`-2, ...) that together act as one logical L7 router, each host group on one of them (docs/scale-out.md). `run` drives every router of the set: it creates routers as host groups need them, deletes the emptied ones (`empty_router_grace`) and moves groups between them make-before-break (`move_dns_grace`); `apply` converges each router of the placement once; `plan` shows the placement. Off: the single router `l7_router_name`; the routers of a set an earlier run left drain into it make-before-break, then are deleted with their floating IPs (`kuryr-l7-router teardown` removes a whole set)."),
    opt(OD, "verify_per_resync", OptKind::Int { min: 1, max: 100000 }, Some("10"), "Fast restart: the policies, and as many pools, that each convergence after a process's first reads although the stamps of an earlier read still vouch for them (docs/scale-out.md, \"Fast restart\"). Every such parent is read within ceil(trusted / this) convergences (one per `resync_period` when nothing changes), and drift no stamp can see (an edit of Octavia's database behind its API) is repaired by then; each costs one child GET. Raise it to repair such drift sooner on a large router, lower it to spare Octavia's API."),
    opt(OD, "max_create_body_bytes", OptKind::Int { min: 4096, max: 1073741824 }, Some("114688"), "The largest request body Octavia's API takes (oslo.middleware's `max_request_body_size`, 114,688 bytes by default; larger bodies are refused with a 413). A new router's fully-populated create (`fully_populated_create`) that would be larger carries its listener, the first L7 policies that fit (~660 bytes each) and their pools; the convergence that follows writes the rest one object at a time. A 413 answer halves the body and tries again, so a cloud with a smaller limit still gets its router; raise this where the cloud's limit is raised."),
    opt(OD, "max_policies_per_router", OptKind::Int { min: 2, max: 10000 }, Some("100"), "With `scale_out`: L7 policies (both listeners, redirects included) a router takes before new host groups go to another router. Each write holds the whole load balancer PENDING_UPDATE for a time that grows with its size (measured on 2025.1: 2.0 s per member write at 20 policies, 12.2-13.0 s at 200): at 100 a change waiting behind one write in flight stays under 15 s. It also keeps a router's fully-populated create under Octavia's default request limit (max_request_body_size, 114,688 bytes: ~660 bytes a policy, so 100 policies is 66 KB; 200 was refused with a 413). A single host group larger than this gets a router of its own (Warning Event)."),
    opt(OD, "max_certificates_per_router", OptKind::Int { min: 1, max: 1000 }, Some("24"), "With `scale_out`: SNI certificates a router's HTTPS listener takes (the default certificate included). Octavia fetches every certificate of the listener from Barbican again on each listener write; 24 is the cap of Zalando's kube-ingress-aws-controller (not measured here yet)."),
    opt(OD, "dns_record_ttl", OptKind::Seconds { min: 0 }, Some("3600"), "With `scale_out`: the TTL of the DNS records that publish the Ingresses' addresses (external-dns's records; the `external-dns.alpha.kubernetes.io/ttl` annotation, else the zone's TTL: 3600 s is Designate's default `default_ttl`). A resolver may keep answering the old address this long after the record changed, so it sets `move_dns_grace` when that is unset. Set it to the TTL your records have."),
    opt(OD, "move_dns_grace", OptKind::Seconds { min: 0 }, None, "With `scale_out`: seconds a moved host group is published with both routers' addresses before only the new router's is, and again before its routes leave the old router. Unset: `dns_record_ttl` + 60 s (external-dns's default interval), 3660 s by default. Set it only to override that (shorter moves where records change faster than their TTL says, or a longer external-dns interval)."),
    opt(OD, "gateway_kept_grace", OptKind::Seconds { min: 0 }, Some("0"), "Seconds a Gateway's load balancer is kept while the Gateway exists but is not served (its class deleted, not readable or another controller's, or not accepted because of the class) before it is deleted with its floating IP, with a Warning Event on the Gateway. 0 (the default): never; a Gateway's load balancer and address go only when the Gateway is deleted (docs/gateway-api.md, \"A Gateway keeps its address\"). Counted from when the leader first saw it so."),
    opt(OD, "gateways_per_namespace", OptKind::Int { min: 0, max: 1000000 }, Some("5"), "Gateways of ours served in one namespace; 0: unlimited. Each Gateway costs a load balancer (an amphora, two with ACTIVE_STANDBY) and a floating IP of the controller's project, which every tenant shares: a few per namespace serve a tenant's environments, and one namespace cannot spend the project's quota alone. The Gateways served are the oldest (creationTimestamp, then name), those already served first, so that a new Gateway never takes the place of one served; one over the limit gets `Accepted: False` (reason `LimitExceeded`) and no load balancer. A load balancer built before the limit was lowered is kept as it is (its address too, `gateway_kept_grace` not applying) until the Gateway is deleted or fits again."),
    opt(OD, "gateways_per_cluster", OptKind::Int { min: 0, max: 1000000 }, Some("0"), "Gateways of ours served in the whole cluster; 0 (the default): unlimited, the project's Octavia and Neutron quotas (checked before each Gateway's create) being the cluster-wide bound. Chosen as `gateways_per_namespace` chooses; one over the limit gets `Accepted: False` (reason `LimitExceeded`) and no load balancer."),
    opt(OD, "gateway_address_tag", OptKind::Str, Some(""), "A Neutron tag: a floating IP carrying it may be named in a Gateway's `spec.addresses` (a tenant's static address). With `gateway_addresses`, either allows an address. Both empty (the default): no Gateway may name an address (each gets one allocated), since any free floating IP of the controller's project, another tenant's reserved one included, could otherwise be taken. An address not allowed gets `Programmed: False` (reason `AddressNotUsable`) and no load balancer."),
    opt(OD, "gateway_addresses", OptKind::TagList, Some(""), "Floating IP addresses a Gateway's `spec.addresses` may name (comma-separated), besides those tagged `gateway_address_tag`."),
    opt(OD, "move_target_timeout", OptKind::Seconds { min: 1 }, Some("1200"), "With `scale_out`: seconds a move of a host group waits for its target router to be ACTIVE with the group's routes. Past it the move is rolled back: the group stays on its source (which served it throughout), the target's routes for it are removed, the status keeps the source's address only, and a Warning Event `MoveRolledBack` names the group, the target and why. The same move is not started again for as long again (an operator's request is removed: ask again with `kuryr-l7-router move`). 1200 s covers a new router's create (`lb_create_timeout`, 600 s) and its first convergence."),
    opt(OD, "empty_router_grace", OptKind::Seconds { min: 0 }, Some("3600"), "With `scale_out`: seconds a router other than the first stays empty before it is deleted (a new host group placed meanwhile keeps it)."),
    opt(OD, "move_request_namespaces", OptKind::TagList, Some(""), "With `scale_out`: namespaces whose Ingresses may ask for a move of their host group with the `placement.kuryr-l7-router.openstack.org/move-to` annotation (comma-separated). Empty (the default): no namespace may; the operator asks with `kuryr-l7-router move`. A refused ask gets a Warning Event `MoveRefused` naming the reason (docs/scale-out.md)."),
    opt(OD, "request_timeout", OptKind::Seconds { min: 1 }, Some("30"), "Timeout of one Octavia API request, in seconds."),
    opt(OD, "zone_aware_default", OptKind::Bool, Some("false"), "Use zone-aware member weighting for Services that do not say otherwise."),
    opt(OD, "zone_weighting_mode", OptKind::Choice(ZoneWeightingMode::NAMES), Some("weight"), "weight: members in the router's zone get a higher weight; backup: members in other zones are backup members (needs `health_monitor`)."),
    opt(OD, "zone_overload_threshold", OptKind::Float { min: 0.0 }, Some("0.2"), "Topology Aware Routing overload threshold: no endpoint is expected to carry more than (1 + this) times its even share; a Service whose zones cannot be held under it gets even weights. 0.2 = 20%, as Kubernetes."),
    opt(OD, "zone_overload_factor", OptKind::Float { min: 1.0 }, Some("2.0"), "Deprecated: use `zone_overload_threshold`. When set and `zone_overload_threshold` is not, the threshold is this factor minus 1."),
    opt(OD, "zone_min_local_endpoints", OptKind::Int { min: 1, max: 65535 }, Some("1"), "Minimum number of ready local endpoints before zone-aware weighting applies. 1: only the Topology Aware Routing rules decide (a stricter extra rule of ours when raised)."),
    opt(OD, "health_monitor", OptKind::Bool, Some("false"), "Create a health monitor on every pool."),
    opt(OD, "health_monitor_type", OptKind::Choice(HealthMonitorType::NAMES), Some("HTTP"), "Health monitor type."),
    opt(OD, "health_monitor_url_path", OptKind::Str, Some("/"), "HTTP path probed by HTTP health monitors."),
    opt(OD, "health_monitor_expected_codes", OptKind::Str, Some("200"), "HTTP status codes that mean healthy: a code, a list (200,202) or a range (200-204)."),
    opt(OD, "health_monitor_delay", OptKind::Seconds { min: 1 }, Some("5"), "Seconds between health probes."),
    opt(OD, "health_monitor_timeout", OptKind::Seconds { min: 1 }, Some("3"), "Seconds a probe may take; must not exceed `health_monitor_delay`."),
    opt(OD, "https_listener_port", PORT, Some("443"), "Port of the TERMINATED_HTTPS listener of the L7 router, created once an Ingress of the class has `spec.tls` (and deleted with the last one)."),
    opt(OD, "default_tls_secret", OptKind::Str, None, "`namespace/name` of the kubernetes.io/tls Secret served to HTTPS clients whose SNI matches no certificate. Unset: the first certificate of the oldest Ingress with TLS."),
    opt(OD, "ssl_redirect", OptKind::Bool, Some("false"), "Redirect plain-HTTP requests for TLS hosts to HTTPS (never `/.well-known/acme-challenge/`). Off by default: the Ingress API does not ask for a redirect (nor do GKE, AWS or Traefik redirect unless asked). An Ingress overrides it with the annotation `kuryr-l7-router.openstack.org/ssl-redirect: \"true\"|\"false\"`."),
    opt(OD, "ssl_redirect_code", OptKind::Choice(RedirectCode::NAMES), Some("308"), "HTTP status of the HTTP to HTTPS redirect (Octavia `redirect_http_code`, API 2.9)."),
    opt(OD, "tls_secret_read_users", OptKind::TagList, Some(""), "Keystone user IDs put in the read ACL of every certificate secret the controller stores in Barbican (comma-separated), e.g. Octavia's service user. Octavia adds its own user when it first uses a secret, with the controller's token; set this where that is not allowed (docs/tls.md, Roles and ACLs)."),
    opt(OD, "preflight_role_check", OptKind::Bool, Some("true"), "At start-up, warn when the token has none of the roles Octavia's default policy lets write load balancers (`load-balancer_member`, `load-balancer_admin`, `admin`). Never a refusal: clouds with Octavia's keystone-default-roles policy let `member` write. `false` skips the check."),
    opt(OD, "insert_forwarded_headers", OptKind::Bool, Some("true"), "Insert X-Forwarded-For, X-Forwarded-Port and X-Forwarded-Proto into requests on both listeners."),
    opt(OD, "health_monitor_max_retries", OptKind::Int { min: 1, max: 10 }, Some("3"), "Successful probes needed to mark a member ONLINE (Octavia: 1..10)."),
    // [neutron]
    opt(N, "auth_url", OptKind::Url, None, "Keystone identity URL (required)."),
    opt(N, "auth_type", OptKind::Choice(AuthType::NAMES), Some("password"), "Keystone authentication method."),
    opt(N, "username", OptKind::Str, None, "User name (password auth; or with application_credential_name)."),
    opt(N, "user_id", OptKind::Str, None, "User ID, instead of `username`."),
    opt(N, "password", OptKind::Secret, None, "Password (password auth)."),
    opt(N, "user_domain_name", OptKind::Str, Some("Default"), "Domain name of the user."),
    opt(N, "user_domain_id", OptKind::Str, None, "Domain ID of the user, instead of `user_domain_name`."),
    opt(N, "project_name", OptKind::Str, None, "Project to scope the token to (password auth)."),
    opt(N, "project_id", OptKind::Str, None, "Project ID to scope the token to, instead of `project_name`."),
    opt(N, "project_domain_name", OptKind::Str, Some("Default"), "Domain name of the project."),
    opt(N, "project_domain_id", OptKind::Str, None, "Domain ID of the project, instead of `project_domain_name`."),
    opt(N, "application_credential_id", OptKind::Str, None, "Application credential ID (v3applicationcredential auth)."),
    opt(N, "application_credential_name", OptKind::Str, None, "Application credential name; needs `username` or `user_id`."),
    opt(N, "application_credential_secret", OptKind::Secret, None, "Application credential secret (v3applicationcredential auth)."),
    opt(N, "region_name", OptKind::Str, None, "Region of the endpoints to use from the service catalog."),
    opt(N, "interface", OptKind::Choice(Interface::NAMES), Some("public"), "Service catalog endpoint interface."),
    opt(N, "cafile", OptKind::Path { must_exist: true }, None, "CA bundle to verify Keystone, Neutron and Octavia TLS certificates."),
    opt(N, "insecure", OptKind::Bool, Some("false"), "Do not verify TLS certificates (testing only)."),
    opt(N, "timeout", OptKind::Seconds { min: 1 }, Some("30"), "Timeout of one Keystone/Neutron request, in seconds."),
    // [status_responder]
    opt(SR, "service", OptKind::Str, None, "`namespace/name` of the status responder's Service (`kuryr-l7-router status-responder`). Its ready endpoints become the members of the reserved pools `kuryr-status-404` (the listeners' default pool when no Ingress sets a default backend: requests no route matches get 404) and `kuryr-status-503` (routes whose backend cannot be served get 503 with a reason). Unset: no responder; requests no route matches get Octavia's 503 and unservable routes an empty pool's 503."),
    opt(SR, "service_not_found_port", OptKind::Str, Some("not-found"), "Port (name or number) of the responder's Service that answers 404 (the responder's `not_found_listen`)."),
    opt(SR, "service_unavailable_port", OptKind::Str, Some("unavailable"), "Port (name or number) of the responder's Service that answers 503 (the responder's `unavailable_listen`)."),
    opt(SR, "service_server_error_port", OptKind::Str, Some("server-error"), "Port (name or number) of the responder's Service that answers 500 (the responder's `server_error_listen`): the reserved pool `kuryr-status-500` of Gateway API rules whose backendRefs are all invalid or not permitted."),
    opt(SR, "not_found_listen", OptKind::SocketAddr, Some("0.0.0.0:8404"), "Where `status-responder` answers 404 Not Found (\"no route for host H path P\") to every request."),
    opt(SR, "unavailable_listen", OptKind::SocketAddr, Some("0.0.0.0:8503"), "Where `status-responder` answers 503 Service Unavailable (\"the backend of host H path P is unavailable\") to every request."),
    opt(SR, "server_error_listen", OptKind::SocketAddr, Some("0.0.0.0:8500"), "Where `status-responder` answers 500 Internal Server Error (\"the route of host H path P has no valid backend\") to every request."),
    opt(SR, "health_listen", OptKind::SocketAddr, Some("0.0.0.0:8405"), "Where `status-responder` serves `/healthz` for its own probes (kept off the two answer ports, where every path must get the answer)."),
];

/// Every option, grouped by section in [`SECTIONS`] order.
pub fn options() -> &'static [OptionSpec] {
    OPTIONS
}

/// The spec of one option; `section` as written in kuryr.conf (`DEFAULT`, not `default`).
pub fn find(section: &str, key: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|o| o.section == section && o.key == key)
}

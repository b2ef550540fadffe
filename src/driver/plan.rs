//! The writes a plan is made of, each one Octavia call on the router, and how they are shown in
//! the `apply` transcript and the logs.

use super::ownership::{Ownership, Tags};
use crate::model::HealthMonitorSpec;
use crate::model::{CompareType, Member, Rule, RuleType};
use std::net::IpAddr;

/// Octavia's spelling of a rule `type`: the one spelling the diff, the writes and the REST bodies
/// use (the REST client does not know the domain model).
pub fn rule_type_str(t: RuleType) -> &'static str {
    match t {
        RuleType::HostName => "HOST_NAME",
        RuleType::Path => "PATH",
        RuleType::Header => "HEADER",
    }
}

/// A rule's type as the transcript shows it: a HEADER rule with its header name.
fn rule_type_label(r: &Rule) -> String {
    match (&r.key, r.rule_type) {
        (Some(key), RuleType::Header) => format!("HEADER {key}"),
        _ => rule_type_str(r.rule_type).to_string(),
    }
}

/// Octavia's spelling of a rule `compare_type` (see [`rule_type_str`]).
pub fn compare_type_str(c: CompareType) -> &'static str {
    match c {
        CompareType::EqualTo => "EQUAL_TO",
        CompareType::StartsWith => "STARTS_WITH",
        CompareType::EndsWith => "ENDS_WITH",
        CompareType::Contains => "CONTAINS",
        CompareType::Regex => "REGEX",
    }
}

/// A pool that exists (by id) or is created earlier in the same plan (by name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PoolRef {
    Id(String),
    New(String),
}

/// An HTTP→HTTPS redirect: Octavia's REDIRECT_PREFIX with `redirect_http_code`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrefixRedirect {
    pub prefix: String,
    pub code: u16,
}

/// A redirect to one fixed URL: Octavia's REDIRECT_TO_URL with `redirect_http_code`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlRedirect {
    pub url: String,
    pub code: u16,
}

/// What a policy does with the requests its rules match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyAction {
    /// REDIRECT_TO_POOL.
    Pool(PoolRef),
    /// REDIRECT_PREFIX.
    Redirect(PrefixRedirect),
    /// REDIRECT_TO_URL.
    RedirectUrl(UrlRedirect),
}

/// A policy that exists (by id) or is created earlier in the same plan (by name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyRef {
    Id(String),
    New(String),
}

/// A member's name as Octavia stores it, held only when it is not `address:port` (the name of
/// every member whose endpoint names no Pod): a `String` per member was ~5 MiB per 100,000
/// members in a plan, and as much again in the router read back. Made whole when it is sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberName(Option<Box<str>>);

impl MemberName {
    /// The name Octavia returned for the member at `address`:`port`.
    pub fn read(name: &str, address: IpAddr, port: u16) -> Self {
        let derived = name.strip_prefix(&*address.to_string()).and_then(|r| r.strip_prefix(':'));
        if derived == Some(&*port.to_string()) { MemberName(None) } else { MemberName(Some(name.into())) }
    }

    /// The name as sent to Octavia for the member at `address`:`port`.
    pub fn whole(&self, address: IpAddr, port: u16) -> String {
        self.0.as_deref().map_or_else(|| format!("{address}:{port}"), String::from)
    }
}

/// A name given as it is (a Pod's name; tests).
impl From<&str> for MemberName {
    fn from(name: &str) -> Self {
        MemberName(Some(name.into()))
    }
}

impl From<String> for MemberName {
    fn from(name: String) -> Self {
        MemberName(Some(name.into()))
    }
}

/// One member in a batch member update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberSpec {
    /// See [`MemberName`]; [`MemberName::whole`] gives it whole.
    pub name: MemberName,
    pub address: IpAddr,
    pub protocol_port: u16,
    pub weight: u16,
    pub backup: bool,
    pub admin_state_up: bool,
    /// Octavia `monitor_port` (None: the health monitor probes `protocol_port`).
    pub monitor_port: Option<u16>,
    /// Empty for foreign members carried over unchanged. Shared by the pool's members.
    pub tags: Tags,
}

/// One Octavia write on the router.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    CreatePool {
        name: String,
        lb_algorithm: String,
        tags: Tags,
    },
    UpdatePool {
        id: String,
        name: String,
        lb_algorithm: String,
    },
    /// `PUT /v2/lbaas/pools/{id}/members`: the complete member list of the pool.
    SetMembers {
        pool: PoolRef,
        pool_name: String,
        members: Vec<MemberSpec>,
    },
    DeletePool {
        id: String,
        name: String,
    },
    CreateHealthMonitor {
        pool: PoolRef,
        pool_name: String,
        spec: HealthMonitorSpec,
        tags: Tags,
    },
    UpdateHealthMonitor {
        id: String,
        pool_name: String,
        spec: HealthMonitorSpec,
    },
    DeleteHealthMonitor {
        id: String,
        pool_name: String,
    },
    /// Created disabled when it will have more than one rule (see module docs).
    CreatePolicy {
        name: String,
        position: u32,
        action: PolicyAction,
        admin_state_up: bool,
        description: String,
        tags: Tags,
    },
    CreateRule {
        policy: PolicyRef,
        policy_name: String,
        rule: Rule,
        tags: Tags,
    },
    UpdateRule {
        policy_id: String,
        rule_id: String,
        policy_name: String,
        rule: Rule,
    },
    DeleteRule {
        policy_id: String,
        rule_id: String,
        policy_name: String,
    },
    UpdatePolicy {
        policy: PolicyRef,
        name: String,
        position: Option<u32>,
        pool: Option<PoolRef>,
        redirect: Option<PrefixRedirect>,
        /// A new REDIRECT_TO_URL target (the update also sets the action).
        redirect_url: Option<UrlRedirect>,
        admin_state_up: Option<bool>,
    },
    DeletePolicy {
        id: String,
        name: String,
    },
    SetDefaultPool {
        listener_id: String,
        pool: Option<PoolRef>,
    },
}

impl Write {
    /// Short kind label, for the write summary and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Write::CreatePool { .. } => "create_pool",
            Write::UpdatePool { .. } => "update_pool",
            Write::SetMembers { .. } => "batch_members",
            Write::DeletePool { .. } => "delete_pool",
            Write::CreateHealthMonitor { .. } => "create_healthmonitor",
            Write::UpdateHealthMonitor { .. } => "update_healthmonitor",
            Write::DeleteHealthMonitor { .. } => "delete_healthmonitor",
            Write::CreatePolicy { .. } => "create_policy",
            Write::CreateRule { .. } => "create_rule",
            Write::UpdateRule { .. } => "update_rule",
            Write::DeleteRule { .. } => "delete_rule",
            Write::UpdatePolicy { .. } => "update_policy",
            Write::DeletePolicy { .. } => "delete_policy",
            Write::SetDefaultPool { .. } => "set_default_pool",
        }
    }
}

impl std::fmt::Display for Write {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Write::CreatePool { name, lb_algorithm, .. } => write!(f, "create pool {name} ({lb_algorithm})"),
            Write::UpdatePool { name, lb_algorithm, .. } => {
                write!(f, "update pool {name}: lb_algorithm={lb_algorithm}")
            }
            Write::SetMembers { pool_name, members, .. } => {
                write!(f, "set members of pool {pool_name}: {} member(s)", members.len())
            }
            Write::DeletePool { name, .. } => write!(f, "delete pool {name}"),
            Write::CreateHealthMonitor { pool_name, spec, .. } => {
                write!(f, "create {} health monitor on pool {pool_name}", spec.monitor_type)
            }
            Write::UpdateHealthMonitor { pool_name, .. } => write!(f, "update health monitor of pool {pool_name}"),
            Write::DeleteHealthMonitor { pool_name, .. } => write!(f, "delete health monitor of pool {pool_name}"),
            Write::CreatePolicy { name, position, admin_state_up, action, .. } => write!(
                f,
                "create policy {name} at position {position}{}{}",
                match action {
                    PolicyAction::Pool(_) => String::new(),
                    PolicyAction::Redirect(r) => format!(" redirecting to {} ({})", r.prefix, r.code),
                    PolicyAction::RedirectUrl(r) => format!(" redirecting to exactly {} ({})", r.url, r.code),
                },
                if *admin_state_up { "" } else { " (disabled until its rules exist)" }
            ),
            Write::CreateRule { policy_name, rule, .. } => write!(
                f,
                "create rule on {policy_name}: {} {} {}",
                rule_type_label(rule),
                compare_type_str(rule.compare_type),
                rule.value
            ),
            Write::UpdateRule { policy_name, rule, .. } => write!(
                f,
                "update rule on {policy_name}: {} {} {}",
                rule_type_label(rule),
                compare_type_str(rule.compare_type),
                rule.value
            ),
            Write::DeleteRule { policy_name, rule_id, .. } => write!(f, "delete rule {rule_id} of {policy_name}"),
            Write::UpdatePolicy { name, position, pool, redirect, redirect_url, admin_state_up, .. } => {
                write!(f, "update policy {name}:")?;
                if let Some(p) = position {
                    write!(f, " position={p}")?;
                }
                if let Some(p) = pool {
                    write!(f, " pool={}", pool_ref_label(p))?;
                }
                if let Some(r) = redirect {
                    write!(f, " redirect={} ({})", r.prefix, r.code)?;
                }
                if let Some(r) = redirect_url {
                    write!(f, " redirect_url={} ({})", r.url, r.code)?;
                }
                if let Some(e) = admin_state_up {
                    write!(f, " enabled={e}")?;
                }
                Ok(())
            }
            Write::DeletePolicy { name, .. } => write!(f, "delete policy {name}"),
            Write::SetDefaultPool { pool, .. } => match pool {
                Some(p) => write!(f, "set listener default pool to {}", pool_ref_label(p)),
                None => write!(f, "clear listener default pool"),
            },
        }
    }
}

fn pool_ref_label(p: &PoolRef) -> &str {
    match p {
        PoolRef::Id(id) => id,
        PoolRef::New(name) => name,
    }
}

/// Something the plan could not do without touching a foreign object; reported, never forced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub message: String,
}

/// The writes that converge the router, in the order they must run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WritePlan {
    pub writes: Vec<Write>,
    pub conflicts: Vec<Conflict>,
}

/// Options of the diff that come from configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct DiffOptions {
    pub ownership: Ownership,
    pub health_monitor: Option<HealthMonitorSpec>,
}

/// One member of ours in a batch member update: named after the pod it reaches when known,
/// else after address:port. The one spelling of a member for the diff and the fully-populated
/// create.
pub(crate) fn member_spec(m: &Member, tags: &Tags) -> MemberSpec {
    MemberSpec {
        name: m.target.as_deref().map(MemberName::from).unwrap_or_default(),
        address: m.address,
        protocol_port: m.protocol_port,
        weight: m.weight,
        backup: m.backup,
        admin_state_up: true,
        monitor_port: m.monitor_port,
        tags: tags.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::MemberName;
    use std::net::IpAddr;

    /// `address:port` is held as nothing and given back whole; any other name (a Pod's, a
    /// foreign member's, an empty one) is kept as read.
    #[test]
    fn a_member_name_holds_only_what_address_and_port_do_not_say() {
        let v4: IpAddr = "10.0.0.1".parse().unwrap();
        let v6: IpAddr = "fd00:42::7".parse().unwrap();
        assert_eq!(MemberName::read("10.0.0.1:8080", v4, 8080), MemberName::default());
        assert_eq!(MemberName::read("fd00:42::7:8080", v6, 8080), MemberName::default());
        assert_eq!(MemberName::default().whole(v6, 8080), "fd00:42::7:8080");
        for kept in ["web-0", "", "10.0.0.1:80", "10.0.0.1:8080x", "10.0.0.10:8080"] {
            let name = MemberName::read(kept, v4, 8080);
            assert_eq!(name, MemberName::from(kept), "{kept:?}");
            assert_eq!(name.whole(v4, 8080), kept);
        }
        assert!(std::mem::size_of::<MemberName>() < std::mem::size_of::<String>());
    }
}

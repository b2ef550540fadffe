//! `kuryr-l7-router teardown`: removes every object of this instance's router set (issue 36,
//! item 2): each router's load balancer (cascade), the floating IP allocated for it, its
//! Barbican secrets, and the controller's ConfigMaps of the set (its records, the operator's
//! move requests, each router's stamps).
//!
//! Only what is ours: the routers are `<l7_router_name>` (found by name AND our ownership tags,
//! as the controller finds it) and the `<l7_router_name>-N` load balancers carrying this
//! instance's set tag; a load balancer of the same name without our set tag (made before set
//! tags, possibly another instance's) or with another instance's is listed and kept. A floating
//! IP is deleted only when its description names the router as ours (an `l7_router_ip` the
//! operator made is kept), a router adopted with `l7_router_uuid` is the operator's and kept,
//! and the secrets are those named for the router. Gateways' routers are not the set's: deleting
//! the Gateways deletes them.

use crate::config::Settings;
use crate::placement::{RouterIndex, router_index, router_name};
use std::collections::BTreeSet;

/// What teardown will delete, found before asking.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub base: String,
    /// Indices of the routers of the set (0 always: found by name and our tags at deletion).
    pub routers: BTreeSet<RouterIndex>,
    /// Load balancers named like the set but not carrying our set tag: kept.
    pub kept: Vec<String>,
}

impl Plan {
    /// The routers by name, the first one last (deleted last: it is the one an upgrade kept).
    pub fn names(&self) -> Vec<String> {
        self.routers.iter().rev().map(|i| router_name(&self.base, *i)).collect()
    }

    /// What the operator is asked to confirm.
    pub fn text(&self, namespace: &str) -> String {
        let mut out = format!(
            "teardown of router set {:?} deletes:\n  load balancers (cascade), with the floating IPs allocated for them and \
             their Barbican secrets: {}\n  ConfigMaps in namespace {namespace}: the set's records, the move requests, \
             each router's stamps\n",
            self.base,
            self.names().join(", ")
        );
        if !self.kept.is_empty() {
            out.push_str(&format!("  kept (not tagged as this set's): {}\n", self.kept.join(", ")));
        }
        out.push_str(
            "Stop the controller first (scale it to 0 replicas): a running controller creates the routers again.\n",
        );
        out
    }
}

/// The set's routers on Octavia, through the first router's driver (our ownership tags).
pub async fn plan(settings: &Settings) -> Result<Plan, String> {
    let base = settings.octavia_defaults.l7_router_name.clone();
    let first = crate::wiring::router(settings).map_err(|e| e.to_string())?;
    let found = first.set_load_balancers().await.map_err(|e| format!("listing the load balancers: {e}"))?;
    let mut plan = Plan { base: base.clone(), routers: [0].into(), kept: Vec::new() };
    for lb in found {
        match router_index(&base, &lb.name).filter(|i| *i > 0) {
            Some(i) if !lb.untagged => {
                plan.routers.insert(i);
            }
            Some(_) => plan.kept.push(lb.name),
            None => {}
        }
    }
    Ok(plan)
}

/// Whether the operator confirmed: `--yes`, else on a terminal the set's name typed back;
/// without a terminal and without `--yes`, refused (a script must say so).
pub fn confirmed(
    base: &str,
    yes: bool,
    terminal: bool,
    read_line: impl FnOnce() -> Option<String>,
) -> Result<(), String> {
    if yes {
        return Ok(());
    }
    if !terminal {
        return Err("teardown deletes the router set: refused without --yes when stdin is not a terminal".into());
    }
    eprint!("Type the set's name ({base}) to delete it: ");
    match read_line() {
        Some(line) if line.trim() == base => Ok(()),
        _ => Err("not confirmed: nothing deleted".into()),
    }
}

/// Deletes every router of `plan` (the first last), then the set's ConfigMaps; each step is
/// printed. Every step is tried; the errors are returned together.
pub async fn run(settings: &Settings, plan: &Plan) -> Result<(), String> {
    let mut errors = Vec::new();
    let first = crate::wiring::router(settings).map_err(|e| e.to_string())?;
    let permits = first.write_permits().clone();
    for index in plan.routers.iter().rev() {
        let name = router_name(&plan.base, *index);
        let router = match index {
            0 => first.clone(),
            i => crate::wiring::router_observed_at(settings, None, *i, permits.clone()).map_err(|e| e.to_string())?,
        };
        if *index == 0 && settings.octavia_defaults.l7_router_uuid.is_some() {
            println!("load balancer {name}: kept (adopted with l7_router_uuid: the operator's)");
            continue;
        }
        match router.delete_router().await {
            Ok(true) => println!("load balancer {name}: deleted, with its floating IP if ours and its secrets"),
            Ok(false) => println!("load balancer {name}: none of ours (its secrets, if any, deleted)"),
            Err(e) => errors.push(format!("load balancer {name}: {e}")),
        }
    }
    if let Err(e) = delete_config_maps(settings, plan).await {
        errors.push(e);
    }
    if errors.is_empty() { Ok(()) } else { Err(errors.join("; ")) }
}

/// The set's records (by label), the move requests and each router's stamps, in the controller's
/// namespace; a missing one is no error.
async fn delete_config_maps(settings: &Settings, plan: &Plan) -> Result<(), String> {
    use crate::controller::router_set::store::{SetStore, asks_name};
    let k = &settings.kubernetes;
    let client = crate::controller::client::client_of(k).await.map_err(|e| format!("Kubernetes: {e}"))?;
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(client, &k.lease_namespace);
    let store: SetStore = SetStore::new(api.clone(), &plan.base);
    let records = store.delete_all().await.map_err(|e| format!("the set's records: {e}"))?;
    println!("ConfigMaps of the set's records: {records} deleted");
    let names = plan.names().into_iter().map(|n| crate::controller::stamp_store::config_map_name(&n));
    for name in std::iter::once(asks_name(&plan.base)).chain(names) {
        match api.delete(&name, &Default::default()).await {
            Ok(_) => println!("ConfigMap {name}: deleted"),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(format!("ConfigMap {name}: {e}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn teardown_asks_unless_told_yes_and_refuses_without_a_terminal() {
        assert!(confirmed("edge", true, false, || None).is_ok());
        let why = confirmed("edge", false, false, || Some("edge".into())).unwrap_err();
        assert!(why.contains("--yes"), "{why}");
        assert!(confirmed("edge", false, true, || Some("edge\n".into())).is_ok());
        assert!(confirmed("edge", false, true, || Some("y\n".into())).is_err());
        assert!(confirmed("edge", false, true, || None).is_err());
    }

    #[test]
    fn the_plan_names_the_first_router_last_and_says_what_is_kept() {
        let plan = Plan { base: "edge".into(), routers: [0, 1, 3].into(), kept: vec!["edge-3".into()] };
        assert_eq!(plan.names(), ["edge-4", "edge-2", "edge"]);
        let text = plan.text("kube-system");
        assert!(
            text.contains("edge-4, edge-2, edge") && text.contains("kept (not tagged as this set's): edge-3"),
            "{text}"
        );
    }
}

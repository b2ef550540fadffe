//! `plan` for Gateway API objects: the Gateways of ours in manifests, each with its router (the
//! load balancer it becomes, [`translate_gateway`]) and the status the controller would write
//! (with no data plane: `Programmed` is Pending), the way `plan` shows the Ingresses' router.

use super::build::{Programmed, RouterFailures, Translation, translate, translate_with_failures};
use super::router::{GatewayRouter, translate_gateway};
use super::status::Cond;
use super::world::World;
use crate::translate::{Inputs, TranslateOptions};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::PathBuf;

pub struct GatewayPlan {
    pub translation: Translation,
    /// One per accepted Gateway of ours, in (namespace, name) order.
    pub routers: Vec<GatewayRouter>,
    /// The objects read, for the status once the routers are converged ([`GatewayPlan::status_after`]).
    world: World,
}

impl GatewayPlan {
    /// The hosts the Gateway API objects claim (empty with host ownership off), for the
    /// Ingress translation's `Inputs::gateway_claims`.
    pub fn host_claims(&self) -> Vec<crate::translate::host_claims::HostClaim> {
        self.translation.host_claims.clone()
    }

    /// The status the controller would write once the data plane answered: each Gateway's load
    /// balancer address in `programmed`, or its error in `failures` (`apply`, after converging
    /// the routers). The routers are the plan's: the data plane's answer changes no route.
    pub(crate) fn status_after(&self, programmed: &Programmed, failures: &RouterFailures) -> Translation {
        translate_with_failures(&self.world, programmed, failures)
    }
}

/// The Gateway plan of the manifest files' `texts` (`None` when they hold no Gateway API
/// object), the same texts the Ingress translation read (`translate::manifest::read_manifests`:
/// the files are read once); `inputs` are those manifests as the Ingress translation reads them
/// (Services, endpoints, Secrets, and with `[kubernetes] host_ownership` the Ingresses' host
/// claims). Translate the Ingresses after it, with the plan's [`GatewayPlan::host_claims`] in
/// their inputs, so that the Ingress side loses the hosts an older Gateway API object claims.
pub fn plan(
    texts: &[(PathBuf, String)],
    inputs: &Inputs,
    opts: &TranslateOptions,
) -> Result<Option<GatewayPlan>, String> {
    let mut world = World::default();
    for (f, text) in texts {
        world.add_yaml(text).map_err(|e| format!("{}: {e}", f.display()))?;
    }
    if world.classes.is_empty() && world.gateways.is_empty() && world.routes.is_empty() {
        return Ok(None);
    }
    // One owner index for both kinds, as the controller keeps it: the Ingresses' claims (and the
    // owners remembered on our IngressClass) decide with the Gateway API's. The Ingress side
    // gets the Gateway API's claims back from the translation (`Translation::host_claims`).
    world.hosts = super::host_owners::ingress_tenancy(inputs, opts, None);
    let translation = translate(&world, &Programmed::new());
    let routers = translation.routers.iter().map(|r| translate_gateway(r, inputs, opts)).collect();
    Ok(Some(GatewayPlan { translation, routers, world }))
}

fn cond_text(c: &Cond) -> String {
    format!("{}={} ({}: {})", c.kind, if c.ok { "True" } else { "False" }, c.reason, c.message)
}

fn cond_json(conds: &[Cond]) -> Value {
    conds.iter().map(|c| json!({"type": c.kind, "status": if c.ok { "True" } else { "False" }, "reason": c.reason, "message": c.message})).collect()
}

/// The plan as text: each Gateway's status and router, then each HTTPRoute's parents.
pub fn render_table(p: &GatewayPlan) -> String {
    render(&p.translation, &p.routers, true)
}

/// The status of `translation` as [`render_table`] prints it, each Gateway's load balancer
/// named but without its desired router (`apply` prints the writes made to it instead).
pub fn render_status(translation: &Translation, routers: &[GatewayRouter]) -> String {
    render(translation, routers, false)
}

fn render(translation: &Translation, routers: &[GatewayRouter], with_router: bool) -> String {
    let mut s = String::new();
    for c in &translation.classes {
        let _ = writeln!(s, "GATEWAYCLASS {}: {}", c.name, cond_text(&c.accepted));
    }
    for g in &translation.gateways {
        let _ = writeln!(s, "\nGATEWAY {}/{}", g.namespace, g.name);
        g.conditions.iter().for_each(|c| _ = writeln!(s, "  {}", cond_text(c)));
        if !g.addresses.is_empty() {
            let addresses: Vec<&str> = g.addresses.iter().map(|a| a.value.as_str()).collect();
            let _ = writeln!(s, "  addresses {}", addresses.join(", "));
        }
        for l in &g.listeners {
            let _ = writeln!(s, "  listener {} (attachedRoutes {})", l.name, l.attached_routes);
            l.conditions.iter().for_each(|c| _ = writeln!(s, "    {}", cond_text(c)));
        }
        if let Some(r) = routers.iter().find(|r| r.owner.namespace == g.namespace && r.owner.name == g.name) {
            let port = r.http_port.map_or("-".to_string(), |p| p.to_string());
            let _ = writeln!(s, "  load balancer {} (HTTP port {port})", r.name);
            if !with_router {
                continue;
            }
            for line in crate::translate::render_table(&r.desired).lines() {
                let _ = writeln!(s, "  {line}");
            }
        }
    }
    for r in &translation.routes {
        let _ = writeln!(s, "\nHTTPROUTE {}/{}", r.namespace, r.name);
        for parent in &r.parents {
            let _ = writeln!(s, "  parent {}", parent.parent_ref.name);
            parent.conditions.iter().for_each(|c| _ = writeln!(s, "    {}", cond_text(c)));
        }
    }
    s
}

/// The plan as JSON: `gatewayClasses`, `gateways` and `httpRoutes` by name.
pub(crate) fn to_json(p: &GatewayPlan) -> Value {
    let classes: serde_json::Map<String, Value> =
        p.translation.classes.iter().map(|c| (c.name.clone(), cond_json(std::slice::from_ref(&c.accepted)))).collect();
    let mut gateways = serde_json::Map::new();
    for g in &p.translation.gateways {
        let router = p.routers.iter().find(|r| r.owner.namespace == g.namespace && r.owner.name == g.name);
        let listeners: Vec<Value> = g
            .listeners
            .iter()
            .map(|l| json!({"name": l.name, "attachedRoutes": l.attached_routes, "conditions": cond_json(&l.conditions)}))
            .collect();
        let v = json!({
            "conditions": cond_json(&g.conditions),
            "listeners": listeners,
            "loadBalancer": router.map(|r| r.name.clone()),
            "httpPort": router.and_then(|r| r.http_port),
            "router": router.map(|r| serde_json::to_value(&r.desired).unwrap_or_default()),
        });
        gateways.insert(format!("{}/{}", g.namespace, g.name), v);
    }
    let routes: serde_json::Map<String, Value> = p
        .translation
        .routes
        .iter()
        .map(|r| {
            let parents: Vec<Value> = r
                .parents
                .iter()
                .map(|x| json!({"parent": x.parent_ref.name, "conditions": cond_json(&x.conditions)}))
                .collect();
            (format!("{}/{}", r.namespace, r.name), Value::Array(parents))
        })
        .collect();
    json!({"gatewayClasses": classes, "gateways": gateways, "httpRoutes": routes})
}

//! How `plan` shows a placement: each router of the set with its groups and their cost, the
//! router of each Ingress, and the warnings (text), or the same with each router's desired
//! state (JSON).

use std::collections::BTreeSet;
use std::fmt::Write;

use serde_json::{Value, json};

use super::split::RouterSet;
use super::{Capacity, Cost, MovePhase, MovePlan, PlacementWarning, RouterFate, RouterIndex, router_name};

fn cost_text(c: Cost) -> String {
    format!("{} policies, {} certificates", c.policies, c.certificates)
}

/// One sentence per warning, naming the routers by name.
pub(crate) fn warning_text(base: &str, w: &PlacementWarning) -> String {
    let groups = |g: &BTreeSet<String>| g.iter().cloned().collect::<Vec<_>>().join(", ");
    match w {
        PlacementWarning::OversizedGroup { group, cost, router } => format!(
            "OversizedGroup: host group {group} needs {} with the shared part, more than a router takes; it has router {} to itself",
            cost_text(*cost),
            router_name(base, *router)
        ),
        PlacementWarning::OverCapacity { router, cost, groups: g } => format!(
            "OverCapacity: router {} holds {} (groups {}): a group that grew there moves out by itself (one move per router at a time), groups that did not change stay; an operator may move one",
            router_name(base, *router),
            cost_text(*cost),
            groups(g)
        ),
        PlacementWarning::SharedOverCapacity { cost } => format!(
            "SharedOverCapacity: the part copied to every router (host-less rules, default certificate) alone needs {}, more than a router takes: more routers do not help",
            cost_text(*cost)
        ),
    }
}

fn fate_text(fate: RouterFate) -> String {
    match fate {
        RouterFate::Keep => String::new(),
        RouterFate::Empty { delete_at, .. } => {
            format!("  (empty: deleted at {delete_at} unless a group is placed on it)")
        }
        RouterFate::Delete => "  (empty for the whole grace: to delete)".into(),
    }
}

/// Text view for `plan -o table`.
pub(crate) fn render_placement(base: &str, capacity: Capacity, set: &RouterSet) -> String {
    let p = &set.placement;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "PLACEMENT ({} routers; at most {} policies and {} certificates each; the placement recorded on the Ingresses kept)",
        p.routers.len(),
        capacity.max_policies,
        capacity.max_certificates
    );
    let _ = writeln!(s, "  shared by every router: {}", cost_text(p.shared));
    for (&index, load) in &p.routers {
        let _ = writeln!(s, "  ROUTER {}  {}{}", router_name(base, index), cost_text(load.cost), fate_text(load.fate));
        for group in p.groups.iter().filter(|g| load.groups.contains(&g.id)) {
            let _ = writeln!(s, "    group {}  {}", group.id, cost_text(group.cost));
            let _ = writeln!(s, "      hosts: {}", group.hosts.iter().cloned().collect::<Vec<_>>().join(", "));
            let _ = writeln!(s, "      ingresses: {}", group.ingresses.iter().cloned().collect::<Vec<_>>().join(", "));
        }
    }
    let _ =
        writeln!(s, "  INGRESSES (status address: their router's; host-less only: every router, the first's address)");
    for (ingress, &r) in &p.ingress_router {
        let _ = writeln!(s, "    {ingress} -> {}", router_name(base, r));
    }
    for m in &p.moves {
        let hosts = m.hosts.iter().cloned().collect::<Vec<_>>().join(", ");
        let (from, to) = (router_name(base, m.from), router_name(base, m.to));
        let _ = writeln!(s, "  MOVE {hosts}: {from} -> {to} (make-before-break)");
    }
    let _ = writeln!(s, "\nPLACEMENT WARNINGS ({})", p.warnings.len());
    for w in &p.warnings {
        let _ = writeln!(s, "  {}", warning_text(base, w));
    }
    s
}

/// JSON view for `plan -o json` with `scale_out`: the placement and, by router name, each
/// router's index, cost, groups and desired state.
pub(crate) fn placement_json(base: &str, set: &RouterSet) -> Value {
    let p = &set.placement;
    let name = |i: RouterIndex| router_name(base, i);
    let routers: serde_json::Map<String, Value> = set
        .routers
        .iter()
        .map(|(&i, desired)| {
            let load = &p.routers[&i];
            (
                name(i),
                json!({"index": i, "cost": load.cost, "fate": load.fate, "groups": load.groups, "desired": desired}),
            )
        })
        .collect();
    let ingresses: serde_json::Map<String, Value> =
        p.ingress_router.iter().map(|(ing, &r)| (ing.clone(), Value::String(name(r)))).collect();
    let warnings: Vec<String> = p.warnings.iter().map(|w| warning_text(base, w)).collect();
    json!({
        "shared": p.shared,
        "groups": p.groups,
        "ingresses": ingresses,
        "moves": p.moves,
        "warnings": warnings,
        "routers": routers,
    })
}

/// A move's phase in words, with the Unix time it was entered.
fn phase_text(phase: MovePhase) -> String {
    match phase {
        MovePhase::CreateOnTarget { since } => format!("creating the routes on the target since {since}"),
        MovePhase::PublishBoth { since } => format!("both addresses published since {since}"),
        MovePhase::PublishTarget { since } => format!("only the target's address published since {since}"),
        MovePhase::DeleteOld { since } => format!("deleting the old routes since {since}"),
        MovePhase::Done { at } => format!("done at {at}"),
    }
}

fn move_line(base: &str, m: &MovePlan) -> (String, String, String) {
    let hosts = m.hosts.iter().cloned().collect::<Vec<_>>().join(", ");
    (hosts, router_name(base, m.from), router_name(base, m.to))
}

/// `plan`'s moves (text): those recorded in progress on the Ingresses, with their phase, and
/// those `run` would start, with why.
pub(crate) fn render_moves(base: &str, in_progress: &[MovePlan], starting: &[MovePlan]) -> String {
    let mut s = String::new();
    let (n, m) = (in_progress.len(), starting.len());
    let _ = writeln!(s, "MOVES ({}: {n} in progress, {m} to start)", n + m);
    for plan in in_progress {
        let (hosts, from, to) = move_line(base, plan);
        let _ = writeln!(s, "  MOVE {hosts}: {from} -> {to}  in progress: {}", phase_text(plan.phase));
    }
    for plan in starting {
        let (hosts, from, to) = move_line(base, plan);
        let _ = writeln!(s, "  MOVE {hosts}: {from} -> {to}  to start: {}", plan.cause.text(&from, &to));
    }
    s
}

/// `plan`'s moves (JSON): one object per move, routers by name.
pub(crate) fn moves_json(base: &str, in_progress: &[MovePlan], starting: &[MovePlan]) -> Value {
    let one = |m: &MovePlan, in_progress: bool| {
        let (from, to) = (router_name(base, m.from), router_name(base, m.to));
        let why = if in_progress { phase_text(m.phase) } else { m.cause.text(&from, &to) };
        json!({"hosts": m.hosts, "from": from, "to": to, "inProgress": in_progress, "why": why})
    };
    let all = in_progress.iter().map(|m| one(m, true)).chain(starting.iter().map(|m| one(m, false)));
    Value::Array(all.collect())
}

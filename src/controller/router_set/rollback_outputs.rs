//! What a rollback does to the router set (`rollback` decides which moves go back): the group
//! placed on its source again, the way back recorded, the holds kept, the operator's requests
//! removed; and what it tells: a Warning Event on each Ingress of the group naming the group, the
//! target and why (`MoveRolledBack`, `MoveCancelled`), or why a cancel is refused
//! (`MoveCancelRefused`), published as soon as the placement decided it, before any router's
//! write (the target may hang).

use crate::controller::outputs::events::UserEvent;
use crate::controller::router_set::RouterSet;
use crate::controller::router_set::moves::{MoveAsk, Moves, ingress_hosts, ingress_key};
use crate::controller::router_set::rollback::{Rollbacks, Told, Why, hold_after, roll_back};
use crate::placement::{MovePhase, MovePlan, RouterIndex, UnixSeconds};
use k8s_openapi::api::networking::v1::Ingress;
use kube::Resource;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

impl RouterSet {
    /// Rolls back the moves of `moves` (the moves in progress for the placement being made) whose
    /// target is late, and those the operator cancels: a group dropped at once is placed on its
    /// source again (`current`), the way back replaces a move that served already. Returns the
    /// steps to tell (the ways back), and the Ingresses whose requests to remove from the store
    /// (the cancels handled, the operator's requests of the moves rolled back).
    pub(crate) fn roll_back(
        &self,
        moves: &mut Moves,
        current: &mut BTreeMap<String, RouterIndex>,
        ingresses: &[Arc<Ingress>],
        asks: &[MoveAsk],
        now: UnixSeconds,
    ) -> (Vec<MovePlan>, Vec<String>) {
        let cancels: Vec<String> = std::mem::take(&mut *self.rollbacks.cancels.lock().expect("lock"));
        let hosts_of =
            |key: &str| ingresses.iter().find(|i| ingress_key(i) == key).map(|i| ingress_hosts(i)).unwrap_or_default();
        let named: Vec<(String, BTreeSet<String>)> = cancels.iter().map(|k| (k.clone(), hosts_of(k))).collect();
        let timeout = self.scale_out.move_target_timeout.as_secs();
        let out = roll_back(moves, now, timeout, &named, &|i| self.name_of(i));
        let mut clear: Vec<String> = cancels.clone();
        self.rollbacks.handled.lock().expect("lock").extend(cancels);
        let timings = self.scale_out.move_timings();
        let mut steps = Vec::new();
        {
            // `records` before `moves`, the order `RouterSet::record` takes them in: a router's
            // job recording while a rollback ran deadlocked both (found by the merged suite).
            let mut records = self.records.lock().expect("lock");
            let mut known = self.moves.lock().expect("lock");
            let mut holds = self.rollbacks.holds.lock().expect("lock");
            let mut told = self.rollbacks.told.lock().expect("lock");
            for r in &out.rolled {
                let hold = hold_after(r, now, timeout, timings);
                let p = &r.plan;
                match &r.back {
                    Some(back) => {
                        known.insert(p.group.clone(), back.clone());
                        steps.push(back.clone());
                    }
                    None => {
                        known.remove(&p.group);
                        records.moves.remove(&p.group);
                        current.extend(p.hosts.iter().map(|h| (h.clone(), p.from)));
                    }
                }
                // The operator's request for this move would start it again.
                let asked = asks.iter().filter(|a| a.target == Ok(p.to) && !hosts_of(&a.ingress).is_disjoint(&p.hosts));
                clear.extend(asked.map(|a| a.ingress.clone()));
                let (source, target) = (self.name_of(p.from), self.name_of(p.to));
                let hold_secs = hold.until.saturating_sub(now);
                tracing::warn!(group = %p.group, %source, %target, why = ?r.why, "move rolled back");
                told.push(Told::RolledBack { rolled: Box::new(r.clone()), source, target, hold_secs });
                holds.push(hold);
            }
            for (ingress, why) in &out.refused {
                told.push(Told::Refused { ingress: ingress.clone(), why: why.clone() });
            }
        }
        self.operator_asks.lock().expect("lock").retain(|a| !clear.contains(&a.ingress));
        if !out.rolled.is_empty() {
            self.move_changed.notify_one();
        }
        (steps, clear)
    }

    /// The first deadline of a move waiting for its target (its start plus
    /// `move_target_timeout`), if any.
    pub(crate) fn next_target_deadline(&self) -> Option<UnixSeconds> {
        let timeout = self.scale_out.move_target_timeout.as_secs();
        let moves = self.moves.lock().expect("lock");
        let waiting = moves.values().filter_map(|m| match m.phase {
            MovePhase::CreateOnTarget { since } => Some(since.saturating_add(timeout)),
            _ => None,
        });
        waiting.min()
    }

    /// Whether a move is in progress (not done).
    pub(crate) fn moves_in_progress(&self) -> bool {
        self.moves.lock().expect("lock").values().any(|m| !matches!(m.phase, MovePhase::Done { .. }))
    }

    /// The rollbacks' state.
    pub(crate) fn rollbacks(&self) -> &Rollbacks {
        &self.rollbacks
    }
}

impl crate::controller::context::Context {
    /// Tells what the last placements rolled back, and the cancels refused: a Warning Event on
    /// each Ingress of the group (a refused cancel: on the Ingress it named). Called right after
    /// the placement, so a target that hangs delays nothing of it.
    pub(crate) async fn tell_rollbacks(&self, set: &RouterSet) {
        let told = set.rollbacks().take_told();
        if told.is_empty() {
            return;
        }
        let cached = self.stores.ingresses.state();
        for t in told {
            let (reason, message, on): (&str, String, Vec<&Arc<Ingress>>) = match &t {
                Told::RolledBack { rolled, source, target, hold_secs } => {
                    let p = &rolled.plan;
                    let hosts = p.hosts.iter().map(String::as_str).collect::<Vec<_>>().join(", ");
                    let (reason, why) = match &rolled.why {
                        Why::TargetTimeout { secs } => (
                            "MoveRolledBack",
                            format!(
                                "{target} was not ACTIVE with the group's routes within {secs} s \
                                 ([octavia_defaults] move_target_timeout)"
                            ),
                        ),
                        Why::Cancelled { ingress } => (
                            "MoveCancelled",
                            format!("cancelled by the operator (kuryr-l7-router move {ingress} --cancel)"),
                        ),
                    };
                    let what = match &rolled.back {
                        None => format!(
                            "the group stays on {source}, which served it throughout; its routes on {target} are removed \
                             and the status shows {source} only"
                        ),
                        Some(_) => format!(
                            "{target} served it already: it goes back to {source} make-before-break (the status shows \
                             {source}, both serve for the DNS grace, then its routes on {target} are removed)"
                        ),
                    };
                    let message = format!(
                        "move of group {} ({hosts}) from {source} to {target} rolled back: {why}; {what}; not moved to \
                         {target} again for {hold_secs} s",
                        p.group
                    );
                    let ours = cached.iter().filter(|i| self.keeps_status_of(i));
                    let on = ours.filter(|i| !ingress_hosts(i).is_disjoint(&p.hosts)).collect();
                    (reason, message, on)
                }
                Told::Refused { ingress, why } => {
                    ("MoveCancelRefused", why.clone(), cached.iter().filter(|i| ingress_key(i) == *ingress).collect())
                }
            };
            for ing in on {
                self.publish(&UserEvent::warning(reason, "Move", message.clone()), &ing.object_ref(&())).await;
            }
        }
    }
}

/// How often [`move_watch`] looks at the moves' deadlines.
const WATCH_TICK: std::time::Duration = std::time::Duration::from_secs(1);
/// How often [`move_watch`] reads the operator's requests while a move is in progress.
const CANCEL_READ: std::time::Duration = std::time::Duration::from_secs(5);

/// Makes a Sync of the set when a move's target is past its `move_target_timeout`, and when the
/// operator asks to cancel a move in progress (read every [`CANCEL_READ`] while one is): the
/// resync loop may be waiting on the very router that hangs, so this one never waits on a
/// Sync (each runs on its own task; its placement rolls the move back, its writes go on).
/// Aborted at shutdown with the other background tasks.
pub(crate) async fn move_watch(ctx: Arc<crate::controller::context::Context>, set: Arc<RouterSet>) {
    let mut triggered: Option<UnixSeconds> = None;
    let mut last_read = std::time::Instant::now();
    loop {
        tokio::time::sleep(WATCH_TICK).await;
        let now = unix_now();
        let late = set.next_target_deadline().filter(|d| *d <= now && triggered != Some(*d));
        let mut cancel = false;
        if set.moves_in_progress() && last_read.elapsed() >= CANCEL_READ {
            last_read = std::time::Instant::now();
            set.read_operator_asks().await;
            cancel = set.rollbacks().cancel_waits();
        }
        if late.is_none() && !cancel {
            continue;
        }
        triggered = late.or(triggered);
        let ctx = ctx.clone();
        tokio::spawn(async move {
            if let Err(e) = ctx.sync_for(false, crate::controller::outputs::Scope::Sync).await {
                tracing::warn!(error = %e, "sync for a move's rollback failed");
            }
        });
    }
}

fn unix_now() -> UnixSeconds {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

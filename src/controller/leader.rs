//! Leader election on a Kubernetes Lease (kube-lease-manager): only the leader writes to Octavia
//! or Kubernetes. A standby runs no caches and no handlers (two writers on one router would fight
//! over it); it only waits for the lease, and on taking it over lists everything afresh.
//!
//! Timing (see [`LeaderSettings`]): the holder renews `grace` seconds before the lease's
//! `duration` runs out; a standby takes the lease once `duration` has passed without a renewal, so
//! failover after a crash takes at most `duration` (+ the standby's poll). On SIGTERM,
//! [`Leadership::release`] frees the lease at once, so a rolling update hands over immediately.
//!
//! Renew deadline: while leader, the Lease is read back every `grace / 2`, and this replica may
//! start writes only until `renewTime + duration - grace`, the `renewTime` being the one our own
//! manager wrote (our clock). A standby takes the lease at `renewTime + duration`, so a write
//! begun before the deadline has `grace` seconds to end before another replica may write. The
//! manager renews `2 * grace` before expiry (so `grace` must be under half the `duration`), so that a healthy leader
//! has read its renewal back well before its deadline and never flaps. The deadline is a timer,
//! not the end of a read: a leader cut off from the API server stops at the deadline, while its
//! read still hangs in the client's retries. (It was anchored once on the time of the last
//! successful read, which may come up to `duration - grace` after the renewal: a partitioned
//! leader then kept writing after the standby took over.)
//!
//! Safety over availability: when the lease cannot be checked (API errors), `is_leader` drops to
//! `false` and the manager is rebuilt after a backoff; as soon as the API answers and the lease is
//! still ours (same identity), `is_leader` returns to `true`. Consumers must not *start* writes
//! while `is_leader` is `false`.

use crate::controller::ControllerError;
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::config::LeaderSettings;

impl LeaderSettings {
    /// kube-lease-manager panics on bad timings; we reject them as configuration errors instead.
    pub fn validate(&self) -> Result<(), ControllerError> {
        let bad = |why: &str| Err(ControllerError::ClientConfig(format!("leader election: {why}")));
        if self.lease_name.is_empty() || self.namespace.is_empty() || self.identity.is_empty() {
            return bad("lease name, namespace and identity must be set");
        }
        if self.duration_secs == 0 || self.grace_secs == 0 {
            return bad("lease duration and grace must be greater than zero");
        }
        if self.grace_secs * 2 >= self.duration_secs {
            // the manager renews 2 x grace before expiry, and writes stop grace before it
            return bad("lease grace must be shorter than half the lease duration");
        }
        Ok(())
    }
}

/// This replica's identity: `POD_NAME` (downward API), else `HOSTNAME` (the pod name in
/// Kubernetes), else `fallback`.
pub(crate) fn default_identity(fallback: &str) -> String {
    identity_from(std::env::var("POD_NAME").ok(), std::env::var("HOSTNAME").ok(), fallback)
}

fn identity_from(pod_name: Option<String>, hostname: Option<String>, fallback: &str) -> String {
    pod_name.filter(|s| !s.is_empty()).or(hostname.filter(|s| !s.is_empty())).unwrap_or_else(|| fallback.to_string())
}

/// Backoff after a lease API error: 1 s, 2 s, 4 s ... capped at 30 s.
pub(crate) fn error_backoff(consecutive_errors: u32) -> Duration {
    Duration::from_secs(1u64 << consecutive_errors.min(5)).min(Duration::from_secs(30))
}

/// A running election: the background task keeps trying to acquire, then renews.
pub struct Leadership {
    is_leader: watch::Receiver<bool>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), ControllerError>>,
}

impl Leadership {
    /// Starts campaigning. Returns at once; watch [`is_leader`](Self::is_leader) or await
    /// [`acquired`](Self::acquired).
    pub fn start(client: Client, settings: LeaderSettings) -> Result<Self, ControllerError> {
        settings.validate()?;
        let (tx, rx) = watch::channel(false);
        let (stop, stop_rx) = oneshot::channel();
        let task = tokio::spawn(campaign(client, settings, tx, stop_rx));
        Ok(Self { is_leader: rx, stop: Some(stop), task })
    }

    /// `true` while this replica holds the lease.
    pub fn is_leader(&self) -> watch::Receiver<bool> {
        self.is_leader.clone()
    }

    /// Waits until this replica is the leader. Errors if the election task ended.
    pub async fn acquired(&self) -> Result<(), ControllerError> {
        let mut rx = self.is_leader.clone();
        rx.wait_for(|l| *l)
            .await
            .map(|_| ())
            .map_err(|_| ControllerError::LeaderStopped("before the lease was acquired".into()))
    }

    /// Stops campaigning and releases the lease if held (graceful shutdown: call after the write
    /// in flight finished, so the next leader does not race it).
    pub async fn release(mut self) -> Result<(), ControllerError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match (&mut self.task).await {
            Ok(r) => r,
            Err(e) => Err(ControllerError::LeaderStopped(e.to_string())),
        }
    }
}

/// How early the manager renews: `2 * grace` before expiry (shorter than `duration`: validated),
/// so that the renewal is read back before the write deadline, `grace` before expiry.
fn renew_margin(s: &LeaderSettings) -> u64 {
    s.grace_secs * 2
}

/// How long after a renewal this replica may start writes: `duration - grace`.
fn writes_for(s: &LeaderSettings) -> Duration {
    Duration::from_secs(s.duration_secs.saturating_sub(s.grace_secs).max(1))
}

async fn build(client: &Client, s: &LeaderSettings) -> Result<LeaseManager, ControllerError> {
    Ok(LeaseManagerBuilder::new(client.clone(), &s.lease_name)
        .with_namespace(&s.namespace)
        .with_identity(&s.identity)
        .with_duration(s.duration_secs)
        .with_grace(renew_margin(s))
        .build()
        .await?)
}

async fn campaign(
    client: Client,
    settings: LeaderSettings,
    tx: watch::Sender<bool>,
    mut stop: oneshot::Receiver<()>,
) -> Result<(), ControllerError> {
    let mut errors = 0u32;
    loop {
        let manager = tokio::select! {
            biased;
            _ = &mut stop => return Ok(()),
            m = build(&client, &settings) => m,
        };
        let manager = match manager {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, lease = %settings.lease_name, "cannot set up the leader lease");
                errors += 1;
                tokio::select! {
                    _ = &mut stop => return Ok(()),
                    _ = tokio::time::sleep(error_backoff(errors)) => continue,
                }
            }
        };
        // The write deadline (see the module docs), moved on by each renewal read back.
        let mut check = tokio::time::interval(Duration::from_millis((settings.grace_secs * 500).max(250)));
        let mut writes_until = Instant::now() + writes_for(&settings);
        loop {
            let leading = *tx.borrow();
            tokio::select! {
                biased;
                _ = &mut stop => return release(&settings, &tx, &manager).await,
                changed = manager.changed() => match changed {
                    Ok(leader) => {
                        errors = 0;
                        // Acquired now: the manager has just written renewTime.
                        writes_until = Instant::now() + writes_for(&settings);
                        tracing::info!(lease = %settings.lease_name, identity = %settings.identity, leader, "leadership changed");
                        tx.send_replace(leader);
                    }
                    Err(e) if leading && Instant::now() < writes_until => {
                        // A failed check is not a lost lease (an API server restarting, a
                        // control-plane upgrade): the Lease is ours until it expires, and the
                        // write deadline, moved on only by a renewal read back, still ends this
                        // leadership in time. Check again shortly; the deadline branch below
                        // steps down if no renewal comes. (Was: step down and stop the process
                        // at the first failed check; found by the real API server's restart.)
                        tracing::warn!(error = %e, lease = %settings.lease_name,
                            "leader lease check failed: leading until the write deadline, checking again");
                        let pause = Duration::from_millis(500).min(writes_until.saturating_duration_since(Instant::now()));
                        tokio::select! {
                            biased;
                            _ = &mut stop => return release(&settings, &tx, &manager).await,
                            _ = tokio::time::sleep(pause) => {}
                        }
                    }
                    Err(e) => {
                        // Cannot confirm the lease: stop acting as leader, rebuild the manager.
                        tracing::warn!(error = %e, lease = %settings.lease_name, "leader lease check failed");
                        tx.send_replace(false);
                        errors += 1;
                        break;
                    }
                },
                _ = tokio::time::sleep_until(writes_until.into()), if leading => {
                    step_down(&settings, &tx);
                    errors += 1;
                    break;
                }
                _ = check.tick(), if leading => {
                    let within = writes_until.saturating_duration_since(Instant::now());
                    if let Some(renewed) = our_renewal(&client, &settings, within).await {
                        writes_until = writes_until.max(renewed + writes_for(&settings));
                    }
                    if Instant::now() >= writes_until {
                        step_down(&settings, &tx);
                        errors += 1;
                        break;
                    }
                }
            }
        }
        tokio::select! {
            _ = &mut stop => return Ok(()),
            _ = tokio::time::sleep(error_backoff(errors)) => {}
        }
    }
}

/// Stopping: no longer leading, and the lease released for the next leader at once.
async fn release(
    settings: &LeaderSettings,
    tx: &watch::Sender<bool>,
    manager: &LeaseManager,
) -> Result<(), ControllerError> {
    tx.send_replace(false);
    tracing::info!(lease = %settings.lease_name, "releasing the leader lease");
    Ok(manager.release().await?)
}

fn step_down(settings: &LeaderSettings, tx: &watch::Sender<bool>) {
    tracing::warn!(
        lease = %settings.lease_name,
        "leader lease not renewed within the renew deadline (duration - grace): stepping down"
    );
    tx.send_replace(false);
}

/// When our manager last renewed the Lease, as an instant of this process (the `renewTime` is
/// written with our own clock), or `None` when the Lease is not ours or cannot be read within
/// `within` (capped at `grace`: a partitioned client's retries must not outlast the deadline).
async fn our_renewal(client: &Client, s: &LeaderSettings, within: Duration) -> Option<Instant> {
    let api: Api<Lease> = Api::namespaced(client.clone(), &s.namespace);
    let within = within.min(Duration::from_secs(s.grace_secs.max(1)));
    let lease = tokio::time::timeout(within, api.get(&s.lease_name)).await.ok()?.ok()?;
    let spec = lease.spec?;
    if spec.holder_identity.as_deref() != Some(s.identity.as_str()) {
        return None;
    }
    let renewed = std::time::SystemTime::from(spec.renew_time?.0);
    let age = std::time::SystemTime::now().duration_since(renewed).unwrap_or_default();
    Instant::now().checked_sub(age)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_validation() {
        let ok = LeaderSettings::new("kuryr-l7-router", "kube-system", "pod-a");
        assert!(ok.validate().is_ok());
        assert!(LeaderSettings { grace_secs: 15, ..ok.clone() }.validate().is_err());
        // renewed 2 x grace before expiry: grace must be under half the duration
        assert!(LeaderSettings { duration_secs: 10, grace_secs: 5, ..ok.clone() }.validate().is_err());
        assert!(LeaderSettings { duration_secs: 11, grace_secs: 5, ..ok.clone() }.validate().is_ok());
        assert!(LeaderSettings { duration_secs: 0, ..ok.clone() }.validate().is_err());
        assert!(LeaderSettings { grace_secs: 0, ..ok.clone() }.validate().is_err());
        assert!(LeaderSettings { identity: String::new(), ..ok }.validate().is_err());
    }

    #[test]
    fn a_renewal_is_due_before_the_write_deadline_which_comes_grace_before_expiry() {
        let s = LeaderSettings::new("kuryr-l7-router", "kube-system", "pod-a");
        let (duration, grace) = (s.duration_secs, s.grace_secs);
        // renewed at R + duration - 2 grace, writes until R + duration - grace, a standby at R + duration
        assert_eq!(duration - renew_margin(&s), duration - 2 * grace);
        assert_eq!(writes_for(&s), Duration::from_secs(duration - grace));
        assert!(duration - renew_margin(&s) < writes_for(&s).as_secs());
    }

    #[test]
    fn identity_precedence() {
        assert_eq!(identity_from(Some("pod".into()), Some("host".into()), "fb"), "pod");
        assert_eq!(identity_from(Some(String::new()), Some("host".into()), "fb"), "host");
        assert_eq!(identity_from(None, None, "fb"), "fb");
    }

    #[test]
    fn backoff_grows_and_caps() {
        let secs: Vec<u64> = (0..8).map(|n| error_backoff(n).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 30, 30, 30]);
    }
}

//! The writer's queue order: Members jobs of pools on the router before a queued Sync from the
//! caches (see the module docs of `controller::writer`).

use super::*;
use crate::driver::ownership::Ownership;
use crate::driver::plan::DiffOptions;
use crate::testing::{SimBackend, desired_with, member, pool};
use std::time::Duration;

fn sim() -> SimBackend {
    let opts = DiffOptions { ownership: Ownership::new("test-cluster"), health_monitor: None };
    SimBackend::new(opts, Some("172.24.4.10".parse().unwrap()))
}

enum Op {
    /// A Sync to a desired state given at submission.
    Sync(&'static [&'static str]),
    /// A Sync from the caches, translated when it runs.
    CacheSync,
    /// Members for a pool not known to be on the router.
    Members(&'static str, u16),
    /// Members for a pool the router holds.
    OnRouter(&'static str, u16),
    Pop,
}

#[test]
fn members_of_pools_on_the_router_overtake_a_sync_from_the_caches() {
    struct Case {
        name: &'static str,
        ops: Vec<Op>,
        want: Vec<&'static str>,
    }
    let cases = vec![
        Case {
            name: "members of a pool on the router run before a queued sync from the caches",
            ops: vec![Op::CacheSync, Op::Members("q", 1), Op::OnRouter("p", 1)],
            want: vec!["members:p", "sync", "members:q"],
        },
        Case {
            name: "a sync from the caches supersedes only members of pools not on the router",
            ops: vec![Op::OnRouter("p", 1), Op::Members("q", 1), Op::CacheSync, Op::CacheSync],
            want: vec!["members:p", "sync"],
        },
        Case {
            name: "members on the router: latest wins ahead of the sync",
            ops: vec![Op::CacheSync, Op::OnRouter("p", 1), Op::OnRouter("q", 1), Op::OnRouter("p", 2)],
            want: vec!["members:p", "members:q", "sync"],
        },
        Case {
            name: "a sync given at submission may predate the change: members run after it",
            ops: vec![Op::Sync(&["p"]), Op::OnRouter("p", 1)],
            want: vec!["sync", "members:p"],
        },
        Case {
            name: "a sync given at submission carries the members queued before it",
            ops: vec![Op::OnRouter("p", 1), Op::Sync(&["p"])],
            want: vec!["sync"],
        },
        Case {
            name: "an overtaking members job is gone once run",
            ops: vec![Op::CacheSync, Op::OnRouter("p", 1), Op::Pop],
            want: vec!["sync"],
        },
    ];
    for c in cases {
        let mut q = WriteQueue::default();
        for op in c.ops {
            match op {
                Op::Sync(pools) => q.push_sync(desired_with(pools), None),
                Op::CacheSync => q.push_sync_from_caches(false, None),
                Op::Members(p, w) => q.push_members(pool(p, vec![member("10.0.0.1", w)]), None),
                Op::OnRouter(p, w) => q.push_members_on_router(pool(p, vec![member("10.0.0.1", w)]), None),
                Op::Pop => {
                    q.pop();
                }
            }
        }
        assert_eq!(q.describe(), c.want, "case: {}", c.name);
        assert_eq!(q.len(), c.want.len(), "case: {}", c.name);
    }
}

/// A stream of endpoint changes over many pools cannot starve a queued Sync: it is overtaken by
/// at most `MEMBERS_MEMBERS_AHEAD_OF_A_SYNC_OF_A_SYNC` Members jobs, then runs; the count starts again for the next.
#[test]
fn write_queue_bounds_the_members_jobs_ahead_of_a_sync() {
    let mut q = WriteQueue::default();
    q.push_sync_from_caches(false, None);
    let names: Vec<String> = (0..MEMBERS_AHEAD_OF_A_SYNC + 5).map(|i| format!("p{i}")).collect();
    for n in &names {
        q.push_members_on_router(pool(n, vec![member("10.0.0.1", 1)]), None);
    }
    assert_eq!(q.describe()[MEMBERS_AHEAD_OF_A_SYNC], "sync");
    let ran: Vec<&str> = (0..=MEMBERS_AHEAD_OF_A_SYNC).map(|_| q.pop().unwrap().kind()).collect();
    assert_eq!(ran[..MEMBERS_AHEAD_OF_A_SYNC], vec!["members"; MEMBERS_AHEAD_OF_A_SYNC][..]);
    assert_eq!(ran[MEMBERS_AHEAD_OF_A_SYNC], "sync", "the Sync runs after {MEMBERS_AHEAD_OF_A_SYNC} Members jobs");
    // The next Sync may be overtaken again.
    q.push_sync_from_caches(false, None);
    assert_eq!(q.describe(), ["members:p32", "members:p33", "members:p34", "members:p35", "members:p36", "sync"]);
}

/// A Delete (an emptied router of a set) runs before anything queued, its waiters share one
/// job, and at shutdown they are answered with the error like every waiter.
#[test]
fn a_queued_delete_runs_first_and_is_shared() {
    let mut q = WriteQueue::default();
    q.push_sync_from_caches(false, None);
    q.push_members_on_router(pool("p", vec![member("10.0.0.1", 1)]), None);
    let (a, mut ra) = tokio::sync::oneshot::channel();
    let (b, mut rb) = tokio::sync::oneshot::channel();
    q.push_delete(a);
    q.push_delete(b);
    assert_eq!(q.describe(), ["delete", "members:p", "sync"]);
    assert_eq!(q.len(), 3);
    assert_eq!(q.pop().unwrap().kind(), "delete");
    q.push_delete(tokio::sync::oneshot::channel().0);
    q.fail_all(&WriteError::shutdown());
    assert!(q.is_empty());
    // The popped job was dropped unanswered here: its waiters see a closed channel.
    assert!(ra.try_recv().is_err() && rb.try_recv().is_err());
}

/// An endpoint change does not wait behind whole-router Syncs: with a Sync in flight and another
/// one from the caches queued, a Members job for a pool the router holds runs before the queued
/// Sync (one batch write). That Sync translates the caches after it, so it carries the same
/// endpoints and makes no member write.
#[tokio::test]
async fn writer_runs_members_of_a_pool_on_the_router_before_a_queued_sync() {
    let mut backend = sim();
    backend.delay = Duration::from_millis(100);
    let puts = backend.member_puts.clone();
    let writer = Writer::spawn(backend, WriterMetrics::default());
    let h = writer.handle();
    // The caches: pool p with the endpoints the test sets. Each translation notes how many batch
    // member writes the router had had by then.
    let endpoints = Arc::new(std::sync::Mutex::new(Vec::new()));
    let puts_at_translation = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (caches, seen, counted) = (endpoints.clone(), puts_at_translation.clone(), puts.clone());
    h.set_translate(Arc::new(move || {
        seen.lock().unwrap().push(counted.load(std::sync::atomic::Ordering::SeqCst));
        let mut d = desired_with(&["p"]);
        d.pools.get_mut("p").unwrap().members = caches.lock().unwrap().clone();
        d
    }));
    h.sync_from_caches(true).await.unwrap();
    let sync = |h: WriterHandle| tokio::spawn(async move { h.sync_from_caches(true).await });
    let in_flight = sync(h.clone());
    tokio::time::sleep(Duration::from_millis(30)).await;
    let queued = sync(h.clone());
    while h.depth() == 0 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // The endpoint change: in the caches, and the Service handler's Members job.
    *endpoints.lock().unwrap() = vec![member("10.0.0.1", 1)];
    let members = h.submit_members(pool("p", vec![member("10.0.0.1", 1)]));
    assert_eq!(h.depth(), 2);
    assert_eq!(members.await.unwrap().unwrap(), MembersOutcome::Updated, "its own batch write");
    let after = queued.await.unwrap().unwrap();
    assert_eq!(
        *puts_at_translation.lock().unwrap(),
        [0, 0, 1],
        "the queued Sync started after the members were written"
    );
    assert!(after.report.writes.iter().all(|w| w.kind != "batch_members"), "the Sync found the members right");
    assert_eq!(puts.load(std::sync::atomic::Ordering::SeqCst), 1);
    in_flight.await.unwrap().unwrap();
    writer.shutdown().await;
}

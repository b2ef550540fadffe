//! The TLS Secrets of some namespaces only (`[kubernetes] secret_namespaces`): one watch per
//! namespace (RBAC then needs a Role per namespace, no cluster-wide grant), merged into the one
//! event stream that feeds the one Secret cache, with the meaning a single watch's events have
//! for a reflector's store:
//!
//! - the first list: one `Init`, every namespace's `InitApply`, one `InitDone` once every
//!   namespace has listed (the store is replaced then, by all of them). Changes of a namespace
//!   that listed before the others are held until that `InitDone`: applied earlier, they would
//!   be wiped by it.
//! - a later re-list of one namespace (its watch restarted: 410 Gone, an error): not an `Init`
//!   of the store (that would wipe the other namespaces' Secrets), but its Secrets as `Apply`,
//!   then a `Delete` for each cached Secret of that namespace the list no longer has (deleted
//!   while the watch was away).
//!
//! A namespace that re-lists during the first list (its first attempt failed) adds its Secrets
//! again; one deleted in between stays cached until its namespace's next re-list: harmless (a
//! Secret nothing names is held without data; a named one would be re-listed).

use futures::{Stream, StreamExt, stream};
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::reflector::Store;
use kube::runtime::watcher::{self, Event};
use std::collections::BTreeSet;

type Item = watcher::Result<Event<Secret>>;

/// One stream of the namespaces' watches (`(namespace, its watch)`), as one watch of them all
/// would give (see the module docs). `cache`: the store the stream feeds, for the deletions a
/// namespace's re-list finds.
pub fn merged<S>(watches: Vec<(String, S)>, cache: Store<Secret>) -> impl Stream<Item = Item> + Send + 'static
where
    S: Stream<Item = Item> + Send + 'static,
{
    let namespaces: Vec<String> = watches.iter().map(|(ns, _)| ns.clone()).collect();
    let tagged =
        stream::select_all(watches.into_iter().enumerate().map(|(i, (_, s))| s.map(move |ev| (i, ev)).boxed()));
    let mut merge = Merge::new(namespaces, cache);
    tagged.flat_map(move |(i, ev)| stream::iter(merge.step(i, ev)))
}

/// The merge's state (see the module docs).
struct Merge {
    namespaces: Vec<String>,
    cache: Store<Secret>,
    /// Until every namespace has listed once.
    first: Option<FirstList>,
    /// Per namespace: the names of its re-list in progress.
    relisting: Vec<Option<BTreeSet<String>>>,
}

struct FirstList {
    init_sent: bool,
    listed: Vec<bool>,
    held: Vec<Event<Secret>>,
}

impl Merge {
    fn new(namespaces: Vec<String>, cache: Store<Secret>) -> Merge {
        let n = namespaces.len();
        let first = FirstList { init_sent: false, listed: vec![false; n], held: Vec::new() };
        Merge { namespaces, cache, first: Some(first), relisting: vec![None; n] }
    }

    /// The events to pass on for event `ev` of namespace `i`.
    fn step(&mut self, i: usize, ev: Item) -> Vec<Item> {
        let ev = match ev {
            Ok(ev) => ev,
            Err(e) => return vec![Err(e)],
        };
        if let Some(first) = &mut self.first {
            return match ev {
                Event::Init if first.init_sent => Vec::new(),
                Event::Init => {
                    first.init_sent = true;
                    vec![Ok(Event::Init)]
                }
                Event::InitApply(s) => vec![Ok(Event::InitApply(s))],
                Event::InitDone => {
                    first.listed[i] = true;
                    if !first.listed.iter().all(|l| *l) {
                        return Vec::new();
                    }
                    let held = std::mem::take(&mut first.held);
                    self.first = None;
                    std::iter::once(Event::InitDone).chain(held).map(Ok).collect()
                }
                ev @ (Event::Apply(_) | Event::Delete(_)) => {
                    first.held.push(ev);
                    Vec::new()
                }
            };
        }
        match ev {
            Event::Init => {
                self.relisting[i] = Some(BTreeSet::new());
                Vec::new()
            }
            Event::InitApply(s) => {
                if let Some(seen) = &mut self.relisting[i] {
                    seen.insert(s.metadata.name.clone().unwrap_or_default());
                }
                vec![Ok(Event::Apply(s))]
            }
            Event::InitDone => {
                let seen = self.relisting[i].take().unwrap_or_default();
                let ns = self.namespaces[i].as_str();
                let gone = self.cache.state().into_iter().filter(|s| {
                    s.metadata.namespace.as_deref() == Some(ns)
                        && !seen.contains(s.metadata.name.as_deref().unwrap_or_default())
                });
                gone.map(|s| Ok(Event::Delete((*s).clone()))).collect()
            }
            ev => vec![Ok(ev)],
        }
    }
}

#[cfg(test)]
#[path = "secret_namespaces_tests.rs"]
mod tests;

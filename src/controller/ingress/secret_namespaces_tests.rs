use super::*;
use kube::runtime::reflector;

fn secret(ns: &str, name: &str) -> Secret {
    let mut s = Secret::default();
    s.metadata.namespace = Some(ns.into());
    s.metadata.name = Some(name.into());
    s
}

/// The store's Secrets as `ns/name`, sorted.
fn names(store: &Store<Secret>) -> Vec<String> {
    let mut v: Vec<String> = store
        .state()
        .iter()
        .map(|s| format!("{}/{}", s.metadata.namespace.as_deref().unwrap(), s.metadata.name.as_deref().unwrap()))
        .collect();
    v.sort();
    v
}

struct Fixture {
    merge: Merge,
    writer: reflector::store::Writer<Secret>,
    store: Store<Secret>,
}

impl Fixture {
    fn new() -> Fixture {
        let (store, writer) = reflector::store();
        Fixture { merge: Merge::new(vec!["a".into(), "b".into()], store.clone()), writer, store }
    }

    /// Event `ev` of namespace `i` through the merge into the store; the events passed on.
    fn feed(&mut self, i: usize, ev: Event<Secret>) -> Vec<String> {
        let out = self.merge.step(i, Ok(ev));
        out.into_iter()
            .map(|ev| {
                let ev = ev.unwrap();
                self.writer.apply_watcher_event(&ev);
                match ev {
                    Event::Init => "Init".to_string(),
                    Event::InitDone => "InitDone".to_string(),
                    Event::InitApply(s) => format!("InitApply {}", s.metadata.name.unwrap()),
                    Event::Apply(s) => format!("Apply {}", s.metadata.name.unwrap()),
                    Event::Delete(s) => format!("Delete {}", s.metadata.name.unwrap()),
                }
            })
            .collect()
    }
}

#[test]
fn the_first_list_is_one_list_of_every_namespace_and_changes_meanwhile_are_kept() {
    let mut f = Fixture::new();
    assert_eq!(f.feed(0, Event::Init), ["Init"]);
    assert_eq!(f.feed(0, Event::InitApply(secret("a", "x"))), ["InitApply x"]);
    assert!(f.feed(0, Event::InitDone).is_empty(), "b has not listed yet");
    // a's watch goes on while b lists: held, not lost to the store's replacement at InitDone
    assert!(f.feed(0, Event::Apply(secret("a", "y"))).is_empty());
    assert!(f.feed(1, Event::Init).is_empty(), "one Init");
    assert_eq!(f.feed(1, Event::InitApply(secret("b", "z"))), ["InitApply z"]);
    assert!(names(&f.store).is_empty(), "nothing in the store before every namespace listed");
    assert_eq!(f.feed(1, Event::InitDone), ["InitDone", "Apply y"]);
    assert_eq!(names(&f.store), ["a/x", "a/y", "b/z"]);
}

#[test]
fn a_namespace_relisting_after_410_keeps_the_others_and_drops_its_deleted() {
    let mut f = Fixture::new();
    for (i, ns, name) in [(0, "a", "x"), (1, "b", "z")] {
        f.feed(i, Event::Init);
        f.feed(i, Event::InitApply(secret(ns, name)));
    }
    f.feed(0, Event::InitDone);
    f.feed(1, Event::InitDone);
    f.feed(0, Event::Apply(secret("a", "y")));
    assert_eq!(names(&f.store), ["a/x", "a/y", "b/z"]);
    // a's watch restarted (410 Gone): a/x was deleted meanwhile
    assert!(f.feed(0, Event::Init).is_empty(), "no Init: it would wipe b's Secrets");
    assert_eq!(f.feed(0, Event::InitApply(secret("a", "y"))), ["Apply y"]);
    assert_eq!(names(&f.store), ["a/x", "a/y", "b/z"], "nothing lost while a lists");
    assert_eq!(f.feed(0, Event::InitDone), ["Delete x"]);
    assert_eq!(names(&f.store), ["a/y", "b/z"]);
    // and the ordinary events of a watch pass as they are
    assert_eq!(f.feed(1, Event::Delete(secret("b", "z"))), ["Delete z"]);
    assert_eq!(names(&f.store), ["a/y"]);
}

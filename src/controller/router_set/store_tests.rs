use super::*;
use crate::placement::MovePlan;
use crate::placement::assign::MoveRequest;
use std::collections::BTreeSet;

/// `hosts` hosts of 40-60 characters, in groups of 4, on 100 routers, each with its group's
/// cost, and a move of one group in 50.
fn records(hosts: usize) -> SetRecords {
    let mut out = SetRecords::default();
    for i in 0..hosts {
        let host = format!("service-{i:05}.team-{:03}.apps.example-cluster.example.com", i % 977);
        let group = format!("service-{:05}.team-{:03}.apps.example-cluster.example.com", i - i % 4, (i - i % 4) % 977);
        let cost = Cost { policies: 4 + (i % 7) as u32, certificates: (i % 3) as u32 };
        out.hosts.insert(host, HostRecord::on((i % 100) as u32).with_cost(group, cost));
    }
    let groups: BTreeSet<GroupId> = out.hosts.values().filter_map(|r| r.group.clone()).collect();
    for (n, g) in groups.iter().enumerate().filter(|(n, _)| n % 50 == 0) {
        let hosts: BTreeSet<String> =
            out.hosts.iter().filter(|(_, r)| r.group.as_ref() == Some(g)).map(|(h, _)| h.clone()).collect();
        let request = MoveRequest { group: g.clone(), hosts, from: (n % 100) as u32, to: ((n + 1) % 100) as u32 };
        out.moves.insert(g.clone(), MovePlan::start(&request, 1_800_000_000));
    }
    out
}

/// The size of a ConfigMap as the API server stores it (its JSON).
fn object_bytes(cm: &ConfigMap) -> usize {
    serde_json::to_vec(cm).unwrap().len()
}

/// 10k hosts (and 10k moving hosts' worth of move records) are stored in ConfigMaps that each
/// stay under the object limit, with their data under the shard bound, and read back whole.
#[test]
fn ten_thousand_hosts_round_trip_within_the_object_limit() {
    let want = records(10_000);
    let cms = config_maps("kuryr-l7-router", &want, 7);
    assert!(cms.len() > 1, "10k hosts need more than one object");
    for cm in &cms {
        let data: usize = cm.data.as_ref().unwrap().values().map(String::len).sum();
        assert!(data <= SHARD_BYTES, "{:?}: data {data} bytes", cm.metadata.name);
        assert!(object_bytes(cm) < OBJECT_LIMIT, "{:?}: {} bytes", cm.metadata.name, object_bytes(cm));
    }
    let loaded = read_config_maps("kuryr-l7-router", &cms).unwrap();
    assert_eq!(loaded.records.as_ref(), Some(&want));
    assert_eq!(loaded.layout, Some((cms.len(), 7)));
    assert!(loaded.stale.is_empty());
    // Few records fit in one object.
    assert_eq!(config_maps("kuryr-l7-router", &records(10), 1).len(), 1);
}

/// Another set's ConfigMaps are no records of ours; no ConfigMap at all is "no store yet"
/// (the upgrade then runs), which an empty store is not.
#[test]
fn only_the_sets_own_config_maps_are_read() {
    let ours = config_maps("edge", &records(3), 1);
    let theirs = config_maps("other", &records(5), 1);
    let all: Vec<ConfigMap> = ours.iter().chain(&theirs).cloned().collect();
    assert_eq!(read_config_maps("edge", &all).unwrap().records, Some(records(3)));
    assert_eq!(read_config_maps("edge", &theirs).unwrap().records, None);
    let empty = config_maps("edge", &SetRecords::default(), 1);
    assert_eq!(read_config_maps("edge", &empty).unwrap().records, Some(SetRecords::default()));
}

/// A write of a new layout cut short (the old layout whole, the new one in part): the old one
/// is read, and the new one's shards are stale. Both whole: the newer epoch wins.
#[test]
fn the_newest_whole_layout_is_read_and_the_rest_is_stale() {
    let old = config_maps("edge", &records(10), 1);
    let mut new_records = records(10);
    new_records.hosts.values_mut().for_each(|r| r.router = 9);
    let big = records(5000);
    let partial: Vec<ConfigMap> = config_maps("edge", &big, 2).into_iter().take(1).collect();
    let cms: Vec<ConfigMap> = old.iter().chain(&partial).cloned().collect();
    let loaded = read_config_maps("edge", &cms).unwrap();
    assert_eq!(loaded.records, Some(records(10)));
    assert_eq!(loaded.stale, partial.iter().map(|c| c.metadata.name.clone().unwrap()).collect());
    let newer = config_maps("edge", &new_records, 3);
    let both: Vec<ConfigMap> = old.iter().chain(&newer).cloned().collect();
    let loaded = read_config_maps("edge", &both).unwrap();
    assert_eq!(loaded.records, Some(new_records));
}

/// A damaged shard is an error, not an empty store (which would place every group as new).
#[test]
fn a_damaged_shard_is_an_error() {
    let mut cms = config_maps("edge", &records(3), 1);
    cms[0].data.as_mut().unwrap().insert(HOSTS_KEY.into(), "{not json".into());
    let err = read_config_maps("edge", &cms).unwrap_err();
    assert!(err.contains("kuryr-l7-router-set-edge-1-0") && err.contains(HOSTS_KEY), "{err}");
}

#[test]
fn shard_names_are_valid_whatever_the_set_name() {
    assert_eq!(shard_name("edge", 4, 2), "kuryr-l7-router-set-edge-4-2");
    for base in ["Edge_Router", &"r".repeat(300), "gw:ns/x"] {
        let name = shard_name(base, 1024, 1023);
        assert!(name.len() <= 253, "{name}");
        assert!(name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'), "{name}");
    }
    assert_ne!(shard_name("Edge", 1, 0), shard_name("edge", 1, 0));
}

/// The operator's requests are keyed `namespace.name`; a key that is not an Ingress's is
/// refused by the command, a router outside the set by the controller with its reason.
#[test]
fn operator_requests_read_back_by_ingress() {
    assert_eq!(ask_key("shop/web.v2").as_deref(), Some("shop.web.v2"));
    for bad in ["shop", "shop/", "/web", "sh.op/web", "shop/we b"] {
        assert_eq!(ask_key(bad), None, "{bad}");
    }
    let cm = ConfigMap {
        data: Some(BTreeMap::from([
            ("shop.web.v2".to_string(), "edge-3".to_string()),
            ("shop.api".to_string(), "other".to_string()),
        ])),
        ..ConfigMap::default()
    };
    let asks = read_asks("edge", &cm);
    assert_eq!(asks[0].ingress, "shop/api");
    assert!(asks[0].target.as_ref().is_err_and(|e| e.contains("\"other\"")), "{:?}", asks[0]);
    assert_eq!(asks[1], MoveAsk { ingress: "shop/web.v2".into(), target: Ok(2) });
    assert_ne!(asks_name("edge"), shard_name("edge", 1, 0));
}

/// The rollbacks' holds are kept with the records, each with its expiry, and read back whole
/// (over several shards too); records without holds write no holds key at all (the shards of a
/// set that never rolled back are what they were before holds were kept).
#[test]
fn the_holds_of_rolled_back_moves_round_trip_with_their_expiry() {
    use crate::controller::router_set::rollback::Hold;
    let mut want = records(10_000);
    let hold = |h: &str, to, until| Hold { hosts: [h.to_string()].into(), to, until };
    want.holds = vec![hold("a.example.com", 3, 1_800_000_100), hold("b.example.com", 2, 1_800_000_200)];
    let cms = config_maps("edge", &want, 7);
    let mut got = read_config_maps("edge", &cms).unwrap().records.unwrap();
    got.holds.sort_by_key(|h| h.until);
    assert_eq!(got, want);
    let without = config_maps("edge", &records(10), 1);
    assert!(without.iter().all(|cm| !cm.data.as_ref().unwrap().contains_key("holds")), "{without:?}");
}

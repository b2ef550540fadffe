//! The hosts a router routes, read back from its L7 rules: shared by the scale-out tests on the
//! simulated Octavia (tests/it/controller_router_set.rs) and on the real one (functional/router_set.rs,
//! through functional/leader.rs).

use kuryr_l7_router::driver::actual::ActualRouter;

/// The host of every HOST_NAME rule of `router`, in rule order: the rule's value with its leading
/// `^`, everything from the first `(` on and the regex escapes taken off.
pub fn routed_hosts(router: &ActualRouter) -> impl Iterator<Item = String> + '_ {
    router
        .policies
        .iter()
        .flat_map(|p| p.rules.iter())
        .filter(|r| r.rule_type == "HOST_NAME")
        .map(|r| r.value.trim_start_matches('^').split('(').next().unwrap().replace('\\', ""))
}

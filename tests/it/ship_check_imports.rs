//! scripts/check-imports on small fixture trees: it must report each offence the layering
//! forbids (issue 36 found two it let pass: `model.rs`, a single-file module, naming
//! `crate::translate`, and `translate/gateway.rs` naming `crate::gateway`, a module it did not
//! place), and pass a clean tree. Then on the repository itself.

use std::path::Path;
use std::process::Command;

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-imports")
}

/// A tree with `src/` holding `files` (path, text) and an allow-list, checked: (passed, stdout).
fn check(files: &[(&str, &str)], allow: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = dir.path().join("src").join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("scripts")).unwrap();
    std::fs::write(dir.path().join("scripts/import-circles.allow"), allow).unwrap();
    let out = Command::new("python3").arg(script()).arg(dir.path()).output().expect("python3 runs");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    (out.status.success(), stdout)
}

const LIB: (&str, &str) = ("lib.rs", "pub mod driver;\npub mod gateway;\npub mod model;\npub mod translate;\n");
const MODEL: (&str, &str) =
    ("model.rs", "pub struct RouterQuota;\npub struct DesiredRouter { pub quota: RouterQuota }\n");
const TRANSLATE: (&str, &str) = ("translate/mod.rs", "pub mod budget;\n");
const BUDGET: (&str, &str) =
    ("translate/budget.rs", "use crate::model::DesiredRouter;\npub fn f(_: &DesiredRouter) {}\n");
const GATEWAY: (&str, &str) = (
    "gateway/mod.rs",
    "pub struct GatewayRoutes;\npub fn g(r: &crate::model::DesiredRouter) { crate::translate::budget::f(r) }\n",
);
const DRIVER: (&str, &str) = ("driver/mod.rs", "use crate::model::DesiredRouter;\npub fn d(_: &DesiredRouter) {}\n");

fn clean() -> Vec<(&'static str, &'static str)> {
    vec![LIB, MODEL, TRANSLATE, BUDGET, GATEWAY, DRIVER]
}

/// `files` with one replaced or added.
fn with(
    mut files: Vec<(&'static str, &'static str)>,
    file: (&'static str, &'static str),
) -> Vec<(&'static str, &'static str)> {
    files.retain(|(p, _)| *p != file.0);
    files.push(file);
    files
}

#[test]
fn a_clean_tree_passes() {
    let (ok, out) = check(&clean(), "");
    assert!(ok, "{out}");
    assert!(out.contains("no import circle and no upward import"), "{out}");
}

/// The circle one field type made: the single-file module `model.rs` names a type of translate,
/// which names the model.
#[test]
fn a_single_file_module_naming_a_higher_layer_fails() {
    let model = ("model.rs", "pub struct DesiredRouter { pub quota: crate::translate::budget::RouterQuota }\n");
    let (ok, out) = check(&with(clean(), model), "");
    assert!(!ok, "{out}");
    assert!(out.lines().any(|l| l == "layer model -> crate::translate"), "{out}");
    assert!(out.lines().any(|l| l == "circle crate::model -> crate::translate"), "{out}");
    assert!(out.lines().any(|l| l == "circle crate::translate -> crate::model"), "{out}");
}

/// `translate/gateway.rs` naming `crate::gateway`: the Gateway front end is above translate.
#[test]
fn a_translate_file_naming_the_gateway_module_fails() {
    let files = with(
        with(clean(), ("translate/mod.rs", "pub mod budget;\npub mod gateway;\n")),
        ("translate/gateway.rs", "use crate::gateway::{self as gw, GatewayRoutes};\npub fn t(_: &GatewayRoutes) {}\n"),
    );
    let (ok, out) = check(&files, "");
    assert!(!ok, "{out}");
    assert!(out.lines().any(|l| l == "layer translate::gateway -> crate::gateway"), "{out}");
    assert!(out.lines().any(|l| l == "circle crate::translate -> crate::gateway"), "{out}");
}

/// A directory module's root (`mod.rs`) is checked like its files.
#[test]
fn a_module_root_naming_a_higher_layer_fails() {
    let driver = ("driver/mod.rs", "pub fn d(_: &crate::gateway::GatewayRoutes) {}\n");
    let (ok, out) = check(&with(clean(), driver), "");
    assert!(!ok, "{out}");
    assert!(out.lines().any(|l| l == "layer driver::mod -> crate::gateway"), "{out}");
}

/// Modules of one layer may use each other, but not in a circle.
#[test]
fn a_circle_within_one_layer_fails() {
    let driver = ("driver/mod.rs", "pub fn d() { crate::translate::budget::f(todo!()) }\n");
    let budget = ("translate/budget.rs", "pub fn f(_: &crate::model::DesiredRouter) { crate::driver::d() }\n");
    let (ok, out) = check(&with(with(clean(), driver), budget), "");
    assert!(!ok, "{out}");
    assert!(out.lines().any(|l| l == "circle crate::driver -> crate::translate"), "{out}");
    assert!(out.lines().any(|l| l == "circle crate::translate -> crate::driver"), "{out}");
    // Only the same layer: no upward import.
    assert!(!out.contains("layer "), "{out}");
}

/// A module the layers do not place is checked against nothing: refused, by name.
#[test]
fn an_unlayered_module_fails() {
    let (ok, out) = check(&with(clean(), ("rooms.rs", "pub fn r() {}\n")), "");
    assert!(!ok, "{out}");
    assert!(out.lines().any(|l| l == "unlayered crate::rooms"), "{out}");
}

/// An allowed edge is not an offence; an allow-list line that matches nothing is stale.
#[test]
fn the_allow_list_admits_its_lines_and_names_the_stale_ones() {
    let model = ("model.rs", "pub struct DesiredRouter { pub quota: crate::translate::budget::RouterQuota }\n");
    let allow = "# known\nlayer model -> crate::translate\ncircle crate::model -> crate::translate\n\
                 circle crate::translate -> crate::model\nlayer config -> crate::controller\n";
    let (ok, out) = check(&with(clean(), model), allow);
    assert!(ok, "{out}");
    assert!(
        out.contains(
            "stale allow-list line (remove it from scripts/import-circles.allow): layer config -> crate::controller"
        ),
        "{out}"
    );
}

#[test]
fn the_repository_passes() {
    let out = Command::new("python3").arg(script()).output().expect("python3 runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

/// A subfolder that is a module (`driver/room/` with its `mod.rs`) is one node of its parent's
/// graph: a file of the room naming a file of the parent, which names the room back, is a circle
/// (the controller's rooms hid such knots from the script until it saw subfolders). `super::`
/// from a room's files counts too, at its depth.
#[test]
fn a_circle_through_a_subfolder_module_is_reported() {
    let room_up = ("driver/room/deep.rs", "pub fn e() { crate::driver::plan::p() }\n");
    let files = with(
        with(
            with(
                with(clean(), ("driver/mod.rs", "pub mod plan;\npub mod room;\n")),
                ("driver/room/mod.rs", "pub mod deep;\n"),
            ),
            room_up,
        ),
        ("driver/plan.rs", "pub fn p() {}\npub fn q() { crate::driver::room::deep::e() }\n"),
    );
    let (ok, out) = check(&files, "");
    assert!(!ok, "{out}");
    assert!(out.lines().any(|l| l == "circle driver::room -> driver::plan"), "{out}");
    assert!(out.lines().any(|l| l == "circle driver::plan -> driver::room"), "{out}");
    // the same edge by `super::super::` from the room's file
    let files = with(files, ("driver/room/deep.rs", "pub fn e() { super::super::plan::p() }\n"));
    let (ok, out) = check(&files, "");
    assert!(!ok && out.lines().any(|l| l == "circle driver::room -> driver::plan"), "{out}");
    // one way only: passes
    let files = with(files, ("driver/plan.rs", "pub fn p() {}\n"));
    let (ok, out) = check(&files, "");
    assert!(ok, "{out}");
}

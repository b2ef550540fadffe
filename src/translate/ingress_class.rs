//! Which Ingresses are ours (IngressClass, legacy annotation, default class), in age order. Part
//! of the Ingress front end; tenancy, the quota and the controller ask it too.

use std::borrow::Borrow;

use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::names::namespace_of;
use super::options::{Source, TranslateOptions};

const LEGACY_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
const DEFAULT_CLASS_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";

/// Is this Ingress served by us? `spec.ingressClassName` naming our IngressClass (right name and
/// controller), else the legacy annotation equal to our class, else no class at all while our
/// IngressClass is marked default.
/// `classes` owned, borrowed or the cache's `Arc`s.
pub(crate) fn is_ours<C: Borrow<IngressClass>>(ing: &Ingress, classes: &[C], opts: &TranslateOptions) -> bool {
    let ours = |c: &&IngressClass| {
        c.metadata.name.as_deref() == Some(opts.ingress_class.as_str())
            && c.spec.as_ref().and_then(|s| s.controller.as_deref()) == Some(opts.controller.as_str())
    };
    let spec_class = ing.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref());
    if let Some(name) = spec_class {
        return name == opts.ingress_class && classes.iter().map(Borrow::borrow).any(|c| ours(&c));
    }
    if let Some(a) = ing.metadata.annotations.as_ref().and_then(|a| a.get(LEGACY_CLASS_ANNOTATION)) {
        return *a == opts.ingress_class;
    }
    classes.iter().map(Borrow::borrow).filter(ours).any(|c| {
        c.metadata.annotations.as_ref().and_then(|a| a.get(DEFAULT_CLASS_ANNOTATION)).map(String::as_str)
            == Some("true")
    })
}

/// Our IngressClass (right name and controller), if it exists.
pub(crate) fn our_class<'a, C: Borrow<IngressClass>>(
    classes: &'a [C],
    opts: &TranslateOptions,
) -> Option<&'a IngressClass> {
    classes.iter().map(Borrow::borrow).find(|c| {
        c.metadata.name.as_deref() == Some(opts.ingress_class.as_str())
            && c.spec.as_ref().and_then(|s| s.controller.as_deref()) == Some(opts.controller.as_str())
    })
}

/// The age order of Ingresses: creationTimestamp, then namespace/name.
pub(crate) type Age<'a> = (Option<&'a Time>, &'a str, &'a str);

pub fn age(ing: &Ingress) -> Age<'_> {
    (ing.metadata.creation_timestamp.as_ref(), namespace_of(&ing.metadata), ing.metadata.name.as_deref().unwrap_or(""))
}

/// Our Ingresses, oldest first: conflicts are won by the first claimant in this order.
pub(crate) fn ours_by_age<'a>(inputs: &'a (impl Source + ?Sized), opts: &TranslateOptions) -> Vec<&'a Ingress> {
    let inputs = inputs.view();
    let mut ours: Vec<&Ingress> =
        inputs.ingresses.iter().copied().filter(|i| is_ours(i, &inputs.ingress_classes, opts)).collect();
    ours.sort_by(|a, b| age(a).cmp(&age(b)));
    ours
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::networking::v1::IngressSpec;

    fn ingress(class: Option<&str>) -> Ingress {
        Ingress {
            spec: Some(IngressSpec { ingress_class_name: class.map(String::from), ..IngressSpec::default() }),
            ..Ingress::default()
        }
    }

    #[test]
    fn an_ingress_naming_a_class_that_does_not_exist_is_not_ours() {
        let opts = TranslateOptions::default();
        let none: [IngressClass; 0] = [];
        assert!(!is_ours(&ingress(Some("kuryr")), &none, &opts));
        assert!(!is_ours(&ingress(None), &none, &opts));
    }
}

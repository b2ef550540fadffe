//! Pure translation from Kubernetes objects to the desired L7 router.
